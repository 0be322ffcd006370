// The wire format of Net's connections: a frame's header (encode and
// decode), the padding that aligns a Simple payload in the socket's
// stream, a proxy's frame buffer, and how a slice is cut over the sockets
// of a multi-socket connection.

package transport

import (
	"encoding/binary"

	"github.com/gccl/gccl/lib/proto"
)

// MinSockPart is the least part of a slice a socket of a multi-socket
// connection carries: smaller slices go whole on socket 0.
const MinSockPart = 64 << 10

// sockParts cuts a slice of n bytes over k sockets: part j is
// [off(j), off(j+1)) with off(j) = j*n/k rounded down to 64 bytes, all of
// it on socket 0 when n < k*MinSockPart. Both ends compute it alike.
func sockPart(n, k, j int) (lo, hi int) {
	if k <= 1 || n < k*MinSockPart {
		if j == 0 {
			return 0, n
		}
		return 0, 0
	}
	cut := func(j int) int {
		if j >= k {
			return n
		}
		return j * n / k &^ 63
	}
	return cut(j), cut(j + 1)
}

// frameHeader is a frame's header, little-endian: the slice's first step
// (u64), its steps (u16), the padding before its payload (u16) and its
// payload bytes (u32); the padding (zeros), then the payload follow.
const frameHeader = 16

// frameAlign is where a proxy's Simple payload starts in its socket's byte
// stream: padding puts it at a multiple of 64 bytes, as it sits in the
// rank's buffer, so the kernel's copy into the socket has source and
// destination alike aligned (AMD's rep movsb runs at half speed
// otherwise: a profile of 2 namespaces' 128 MiB allreduce on the EPYC VM
// found _copy_from_iter's share halved once aligned;
// docs/log/performance-2026-11.md 13j). Frames of at most inlineMax that a
// rank writes itself are not padded.
const frameAlign = 64

func putFrameHeader(b []byte, step uint64, steps, pad, n int) {
	binary.LittleEndian.PutUint64(b[0:], step)
	binary.LittleEndian.PutUint16(b[8:], uint16(steps))
	binary.LittleEndian.PutUint16(b[10:], uint16(pad))
	binary.LittleEndian.PutUint32(b[12:], uint32(n))
}

func parseFrameHeader(b []byte) (step uint64, steps, pad, n int) {
	return binary.LittleEndian.Uint64(b[0:]), int(binary.LittleEndian.Uint16(b[8:])),
		int(binary.LittleEndian.Uint16(b[10:])), int(binary.LittleEndian.Uint32(b[12:]))
}

// framePad is the padding a Simple frame whose header starts at byte off
// of its socket's stream puts before its payload.
func framePad(off uint64) int {
	return int((frameAlign - (off+frameHeader)%frameAlign) % frameAlign)
}

// frameBufBytes is a proxy's frame buffer: the header, and for LL and
// LL128 the payload it packs or unpacks (a Simple slice goes between the
// socket and the FIFO or the rank's memory directly, after its padding).
func frameBufBytes(p proto.Protocol, buffSize int) int {
	if p == proto.Simple {
		return frameHeader + frameAlign
	}
	return frameHeader + buffSize
}
