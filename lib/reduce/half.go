package reduce

import "math"

// 16-bit floating-point formats.
//
// float16 is IEEE 754 binary16: 1 sign bit, 5 exponent bits (bias 15) and 10
// fraction bits; largest finite value 65504, smallest subnormal 2^-24.
// bfloat16 is the upper half of an IEEE binary32: 1 sign bit, 8 exponent bits
// (bias 127) and 7 fraction bits.
//
// Both widen to float32 exactly. Narrowing rounds to nearest, ties to even,
// overflows to ±Inf, and keeps NaN a (quiet) NaN.

// F16ToFloat32 converts an IEEE binary16 value to float32. It is exact; a
// NaN's payload moves to the top of the float32 fraction.
func F16ToFloat32(h uint16) float32 {
	x := uint32(h&0x7fff) << 13 // exponent and fraction in float32's place
	switch {
	case x-0x00800000 < 0x0f000000: // exponent field 1..30: normal
		x += (127 - 15) << 23 // rebias
	case x >= 0x0f800000: // Inf or NaN
		x |= 0x7f800000
	default: // zero or subnormal: fraction * 2^-24, exact in float32
		x = math.Float32bits(float32(x>>13) * 0x1p-24)
	}
	return math.Float32frombits(x | uint32(h&0x8000)<<16)
}

// F16FromFloat32 rounds f to the nearest IEEE binary16 value, ties to even,
// with correct subnormal results. Values of magnitude 65520 or more (and
// ±Inf) become ±Inf; a NaN becomes a quiet NaN with the sign and the top of
// the payload kept.
func F16FromFloat32(f float32) uint16 {
	b := math.Float32bits(f)
	if f16Normal(b) { // (the 16-bit loops repeat this test, to inline it)
		return f16FromNormal(b)
	}
	return f16FromFloat32Slow(b)
}

// f16Normal reports whether float32 bits b round to a normal binary16:
// 2^-14 <= |f| < 65520.
func f16Normal(b uint32) bool { return b&0x7fffffff-0x38800000 < 0x477ff000-0x38800000 }

// f16FromNormal rounds float32 bits b, for which f16Normal holds, to binary16.
func f16FromNormal(b uint32) uint16 {
	a := b&0x7fffffff - (127-15)<<23 // rebias the exponent
	a += 0xfff + (a>>13)&1           // round to nearest even at bit 13; a carry bumps the exponent
	return uint16(b>>16)&0x8000 | uint16(a>>13)
}

// f16FromFloat32Slow handles NaN, overflow, subnormal and zero results.
func f16FromFloat32Slow(b uint32) uint16 {
	sign := uint16(b>>16) & 0x8000
	a := b & 0x7fffffff
	switch {
	case a > 0x7f800000: // NaN: set the quiet bit, keep the payload's top bits
		return sign | 0x7e00 | uint16(a>>13)&0x3ff
	case a >= 0x477ff000: // >= 65504 + half an ulp, or Inf
		return sign | 0x7c00
	}
	// |f| < 2^-14: the result is a multiple of 2^-24 (subnormal or zero).
	exp := a >> 23
	if exp < 102 { // |f| < 2^-25: below half the smallest subnormal
		return sign
	}
	m := a&0x7fffff | 0x800000 // |f| = m * 2^(exp-150)
	shift := 126 - exp         // |f| / 2^-24 = m >> shift, shift in [14, 24]
	q := m >> shift
	rem := m & (1<<shift - 1)
	half := uint32(1) << (shift - 1)
	if rem > half || rem == half && q&1 == 1 {
		q++ // may carry into the smallest normal, 0x0400: still correct
	}
	return sign | uint16(q)
}

// BF16ToFloat32 converts a bfloat16 value to float32. It is exact.
func BF16ToFloat32(b uint16) float32 {
	return math.Float32frombits(uint32(b) << 16)
}

// BF16FromFloat32 rounds f to the nearest bfloat16, ties to even, with
// subnormals and overflow to ±Inf handled like IEEE. A NaN stays a NaN: the
// quiet bit is set instead of rounding (which could carry it into Inf).
func BF16FromFloat32(f float32) uint16 {
	b := math.Float32bits(f)
	if b&0x7fffffff > 0x7f800000 {
		return uint16(b>>16) | 0x40
	}
	b += 0x7fff + (b>>16)&1
	return uint16(b >> 16)
}

// F16FromFloat64 rounds x to the nearest binary16, ties to even, in one
// rounding (not float64 -> float32 -> binary16, which could round twice).
func F16FromFloat64(x float64) uint16 { return F16FromFloat32(float32RoundOdd(x)) }

// BF16FromFloat64 rounds x to the nearest bfloat16, ties to even, in one
// rounding.
func BF16FromFloat64(x float64) uint16 { return BF16FromFloat32(float32RoundOdd(x)) }

// float32RoundOdd narrows x to float32 rounding to odd: truncate toward
// zero, and if that was inexact set the last fraction bit. Rounding that
// result to nearest-even at 2 or more fewer bits equals rounding x directly,
// so it is a safe intermediate for binary16 and bfloat16 (including their
// subnormals, which sit at least 16 bits above float32's).
func float32RoundOdd(x float64) float32 {
	f := float32(x)
	if float64(f) == x || x != x {
		return f
	}
	if math.Abs(float64(f)) > math.Abs(x) {
		f = math.Nextafter32(f, 0)
	}
	return math.Float32frombits(math.Float32bits(f) | 1)
}
