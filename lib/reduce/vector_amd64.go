//go:build !purego

package reduce

import "golang.org/x/sys/cpu"

// The AVX2 loops (add_amd64.s, maxmin_amd64.s, scaled_amd64.s,
// half_amd64.s) work on whole 32-byte vectors of native-order elements,
// with unaligned loads and stores (callers align elements, not vectors);
// the portable Go loop they replace finishes the tail. Without AVX2 the
// portable loops run unchanged (the compiler's scalar SSE2 code).

// hasVectorLoops reports whether this CPU (and OS) can run the AVX2 loops.
var hasVectorLoops = cpu.X86.HasAVX2

// vectorLoops replaces l's loops for t by AVX2 ones where AVX2 has the
// instruction (no 8-bit or 64-bit multiply, no integer divide: those stay
// scalar). Of the 16-bit float loops only the float16 sum is vectorised (with
// F16C); the others keep their blocked float32 loops. scalar and nRanks are
// those NewKernel resolved l with, converted here exactly as there.
func vectorLoops(t DataType, l loops, scalar float64, nRanks int) loops {
	switch t {
	case Int8:
		l.add = vectorBinary(avx2Add8, l.add)
		l.max = vectorBinary(avx2MaxI8, l.max)
		l.min = vectorBinary(avx2MinI8, l.min)
	case Uint8:
		l.add = vectorBinary(avx2Add8, l.add)
		l.max = vectorBinary(avx2MaxU8, l.max)
		l.min = vectorBinary(avx2MinU8, l.min)
	case Int32, Uint32:
		k := uint32(int64(scalar)) // the bits of int32(scalar) or uint32(scalar)
		l.add = vectorBinary(avx2Add32, l.add)
		l.mul = vectorBinary(avx2Mul32, l.mul)
		l.addScaled = vectorBinaryK(avx2AddScaled32, k, l.addScaled)
		l.scale = vectorUnaryK(avx2Scale32, k, l.scale)
		if t == Int32 {
			l.max = vectorBinary(avx2MaxI32, l.max)
			l.min = vectorBinary(avx2MinI32, l.min)
		} else {
			l.max = vectorBinary(avx2MaxU32, l.max)
			l.min = vectorBinary(avx2MinU32, l.min)
		}
	case Int64:
		l.add = vectorBinary(avx2Add64, l.add)
		l.max = vectorBinary(avx2MaxI64, l.max)
		l.min = vectorBinary(avx2MinI64, l.min)
	case Uint64:
		l.add = vectorBinary(avx2Add64, l.add)
		l.max = vectorBinary(avx2MaxU64, l.max)
		l.min = vectorBinary(avx2MinU64, l.min)
	case Float16:
		if cpu.X86.HasF16C {
			l.add = vectorBinary(avx2SumF16, l.add)
		}
	case Float32:
		k, n := float32(scalar), float32(nRanks)
		l.add = vectorBinary(avx2AddF32, l.add)
		l.mul = vectorBinary(avx2MulF32, l.mul)
		l.max = vectorBinary(avx2MaxF32, l.max)
		l.min = vectorBinary(avx2MinF32, l.min)
		l.addScaled = vectorBinaryK(avx2AddScaledF32, k, l.addScaled)
		l.addDiv = vectorBinaryK(avx2AddDivF32, n, l.addDiv)
		l.scale = vectorUnaryK(avx2ScaleF32, k, l.scale)
		l.div = vectorUnaryK(avx2DivF32, n, l.div)
	case Float64:
		k, n := scalar, float64(nRanks)
		l.add = vectorBinary(avx2AddF64, l.add)
		l.mul = vectorBinary(avx2MulF64, l.mul)
		l.max = vectorBinary(avx2MaxF64, l.max)
		l.min = vectorBinary(avx2MinF64, l.min)
		l.addScaled = vectorBinaryK(avx2AddScaledF64, k, l.addScaled)
		l.addDiv = vectorBinaryK(avx2AddDivF64, n, l.addDiv)
		l.scale = vectorUnaryK(avx2ScaleF64, k, l.scale)
		l.div = vectorUnaryK(avx2DivF64, n, l.div)
	}
	return l
}

// vecBytes is one AVX2 vector; the assembly takes whole vectors only.
const vecBytes = 32

// vectorBinary runs vec over the whole vectors of its operands and tail
// over the rest.
func vectorBinary(vec func(d, a, b *byte, nbytes int), tail binaryFn) binaryFn {
	return func(d, a, b []byte) {
		if len(d) < vecBytes { // short (the one-shot's tiny messages): no slicing
			tail(d, a, b)
			return
		}
		a, b = a[:len(d)], b[:len(d)] // the assembly reads len(d) bytes of each
		n := len(d) &^ (vecBytes - 1)
		if n > 0 {
			vec(&d[0], &a[0], &b[0], n)
		}
		if n < len(d) {
			tail(d[n:], a[n:], b[n:])
		}
	}
}

// vectorBinaryK is vectorBinary for a loop with a constant operand k.
func vectorBinaryK[K uint32 | float32 | float64](vec func(d, a, b *byte, nbytes int, k K), k K, tail binaryFn) binaryFn {
	return func(d, a, b []byte) {
		if len(d) < vecBytes { // short (the one-shot's tiny messages): no slicing
			tail(d, a, b)
			return
		}
		a, b = a[:len(d)], b[:len(d)]
		n := len(d) &^ (vecBytes - 1)
		if n > 0 {
			vec(&d[0], &a[0], &b[0], n, k)
		}
		if n < len(d) {
			tail(d[n:], a[n:], b[n:])
		}
	}
}

// vectorUnaryK is vectorBinaryK for a one-operand loop.
func vectorUnaryK[K uint32 | float32 | float64](vec func(d, s *byte, nbytes int, k K), k K, tail unaryFn) unaryFn {
	return func(d, s []byte) {
		s = s[:len(d)]
		n := len(d) &^ (vecBytes - 1)
		if n > 0 {
			vec(&d[0], &s[0], n, k)
		}
		if n < len(d) {
			tail(d[n:], s[n:])
		}
	}
}
