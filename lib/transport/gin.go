// GIN's use of Net (the device API's one-sided puts and signals across
// processes, lib/ccl): a connection opened with the job's handshake under
// a key, and the header of one GIN operation on it. The proxies that
// write and read these frames live with the memory they serve (lib/ccl).

package transport

import (
	"encoding/binary"
	"net"
	"time"
)

// DialNet connects to the NetListener at addr under key with the job's
// token (the handshake of every Net connection), retrying until timeout
// or until stop says the job aborted. The listener's process takes it
// with Await(key).
func DialNet(addr, token, key string, timeout time.Duration, stop func() bool) (net.Conn, error) {
	return dialNet(addr, token, key, timeout, stop)
}

// GinKind is what a GIN frame asks of the receiving proxy.
type GinKind uint8

const (
	// GinPut writes the payload into the destination window at Off.
	GinPut GinKind = iota + 1
	// GinSignal carries no payload: only the remote action.
	GinSignal
	// GinArrive is a barrier arrival: Index and Epoch (in Off).
	GinArrive
)

// GinHeader is the header of one GIN frame, little-endian on the wire
// (GinHeaderBytes): kind u8, 3 bytes zero, Dst u32, Win i32, Sig i32,
// Off u64, Add u64, N u32, Index u32. N bytes of payload follow.
type GinHeader struct {
	Kind  GinKind
	Dst   int    // the destination's world rank
	Win   int    // the destination window's index (GinPut)
	Sig   int    // the signal to add Add to once the payload landed; -1: none
	Off   uint64 // the byte offset in the window; a barrier's epoch
	Add   uint64
	N     int // payload bytes
	Index int // a barrier's index
}

// GinHeaderBytes is a GIN frame header's size.
const GinHeaderBytes = 40

// Put encodes h into b[:GinHeaderBytes].
func (h GinHeader) Put(b []byte) {
	b[0], b[1], b[2], b[3] = byte(h.Kind), 0, 0, 0
	binary.LittleEndian.PutUint32(b[4:], uint32(h.Dst))
	binary.LittleEndian.PutUint32(b[8:], uint32(int32(h.Win)))
	binary.LittleEndian.PutUint32(b[12:], uint32(int32(h.Sig)))
	binary.LittleEndian.PutUint64(b[16:], h.Off)
	binary.LittleEndian.PutUint64(b[24:], h.Add)
	binary.LittleEndian.PutUint32(b[32:], uint32(h.N))
	binary.LittleEndian.PutUint32(b[36:], uint32(h.Index))
}

// ParseGinHeader decodes b[:GinHeaderBytes].
func ParseGinHeader(b []byte) GinHeader {
	return GinHeader{
		Kind:  GinKind(b[0]),
		Dst:   int(binary.LittleEndian.Uint32(b[4:])),
		Win:   int(int32(binary.LittleEndian.Uint32(b[8:]))),
		Sig:   int(int32(binary.LittleEndian.Uint32(b[12:]))),
		Off:   binary.LittleEndian.Uint64(b[16:]),
		Add:   binary.LittleEndian.Uint64(b[24:]),
		N:     int(binary.LittleEndian.Uint32(b[32:])),
		Index: int(binary.LittleEndian.Uint32(b[36:])),
	}
}
