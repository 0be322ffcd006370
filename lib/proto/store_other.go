//go:build !amd64 || race

package proto

import "sync/atomic"

// storeRelaxed64 falls back to a sequentially consistent store where a plain
// store would not be ordered (weak memory models), and under the race
// detector, which must see every store to the shared words as synchronising.
func storeRelaxed64(addr *uint64, v uint64) { atomic.StoreUint64(addr, v) }
