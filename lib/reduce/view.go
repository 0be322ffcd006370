package reduce

import (
	"sync"
	"unsafe"
)

// Byte buffers hold little-endian elements. When the host is little-endian
// and every slice of a call is aligned for the element type, the loops work
// on typed views of the bytes (no copy). Otherwise the call is staged: the
// operands go, a bounded chunk at a time, through aligned scratch buffers
// (byte-swapped on a big-endian host), the same loops run there, and the
// result is copied back.

// binaryFn and unaryFn are resolved loops over aligned, native-order bytes.
type (
	binaryFn func(dst, a, b []byte)
	unaryFn  func(dst, src []byte)
)

// hostLE reports whether the host stores integers little-endian.
var hostLE = func() bool {
	x := uint16(1)
	return *(*byte)(unsafe.Pointer(&x)) == 1
}()

// view reinterprets b, aligned for T and a whole number of T long, as []T.
func view[T any](b []byte) []T {
	if len(b) == 0 {
		return nil
	}
	var z T
	return unsafe.Slice((*T)(unsafe.Pointer(unsafe.SliceData(b))), uintptr(len(b))/unsafe.Sizeof(z))
}

// addr is b's start address (0 for an empty slice, which needs no alignment).
func addr(b []byte) uintptr {
	if len(b) == 0 {
		return 0
	}
	return uintptr(unsafe.Pointer(unsafe.SliceData(b)))
}

// stageBytes is the chunk staged at a time: a multiple of every element size.
const stageBytes = 4096

type stageBufs struct{ a, b [stageBytes / 8]uint64 } // uint64: 8-byte aligned

func (s *stageBufs) bytes() (a, b []byte) {
	return unsafe.Slice((*byte)(unsafe.Pointer(&s.a[0])), stageBytes),
		unsafe.Slice((*byte)(unsafe.Pointer(&s.b[0])), stageBytes)
}

// stagePool recycles scratch; the loops are called through function values,
// so scratch passed to them would escape anyway.
var stagePool = sync.Pool{New: func() any { return new(stageBufs) }}

// stageBinary runs fn(dst, a, b) through aligned, native-order scratch.
// dst may be exactly a or b: each chunk is read in full before it is written.
func stageBinary(fn binaryFn, dst, a, b []byte, size int) {
	s := stagePool.Get().(*stageBufs)
	sa, sb := s.bytes()
	for off := 0; off < len(dst); off += stageBytes {
		end := min(off+stageBytes, len(dst))
		x, y := sa[:end-off], sb[:end-off]
		load(x, a[off:end], size)
		load(y, b[off:end], size)
		fn(x, x, y)
		load(dst[off:end], x, size)
	}
	stagePool.Put(s)
}

// stageUnary runs fn(dst, src) through aligned, native-order scratch.
func stageUnary(fn unaryFn, dst, src []byte, size int) {
	s := stagePool.Get().(*stageBufs)
	sa, _ := s.bytes()
	for off := 0; off < len(dst); off += stageBytes {
		end := min(off+stageBytes, len(dst))
		x := sa[:end-off]
		load(x, src[off:end], size)
		fn(x, x)
		load(dst[off:end], x, size)
	}
	stagePool.Put(s)
}

// load copies elements of size bytes from src to dst, converting between
// little-endian and host order (the conversion is its own inverse, so the
// same call stores).
func load(dst, src []byte, size int) {
	copy(dst, src)
	if !hostLE {
		swapBytes(dst, size)
	}
}

// swapBytes reverses the bytes of every size-byte element of b in place.
func swapBytes(b []byte, size int) {
	for i := 0; i+size <= len(b); i += size {
		e := b[i : i+size]
		for j, k := 0, size-1; j < k; j, k = j+1, k-1 {
			e[j], e[k] = e[k], e[j]
		}
	}
}
