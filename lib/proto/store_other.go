//go:build !amd64 || race

package proto

import (
	"encoding/binary"
	"sync/atomic"
	"unsafe"
)

// storeRelaxed64 falls back to a sequentially consistent store where a plain
// store would not be ordered (weak memory models), and under the race
// detector, which must see every store to the shared words as synchronising.
func storeRelaxed64(addr *uint64, v uint64) { atomic.StoreUint64(addr, v) }

// storeFullLines is the assembly's loop in Go, each word one
// storeRelaxed64.
func storeFullLines(words *uint64, data *byte, lines int, flag uint64) {
	ws := unsafe.Slice(words, 2*lines)
	d := unsafe.Slice(data, 8*lines)
	for l := 0; l < lines; l++ {
		v := binary.LittleEndian.Uint64(d[8*l:])
		storeRelaxed64(&ws[2*l], v&0xffffffff|flag)
		storeRelaxed64(&ws[2*l+1], v>>32|flag)
	}
}
