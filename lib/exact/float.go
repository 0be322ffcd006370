package exact

import (
	"math"

	"github.com/gccl/gccl/lib/reduce"
)

// Private conversions between float64 and the narrow float formats. They are
// deliberately independent of package reduce so that the checker does not
// share code (and bugs) with the kernels it checks.

// Bit layouts (exponent bits, explicit mantissa bits) of the formats.
const (
	f16Exp, f16Mant   = 5, 10 // IEEE 754 binary16
	bf16Exp, bf16Mant = 8, 7  // bfloat16
	f32Exp, f32Mant   = 8, 23 // IEEE 754 binary32 (used only to test roundSmall)
)

// roundSmall rounds x to the binary format with expBits exponent bits and
// mantBits explicit mantissa bits (IEEE layout: sign, biased exponent,
// mantissa), round to nearest, ties to even, with gradual underflow and
// overflow to infinity. It returns the format's bits. NaN becomes a quiet NaN
// of the same sign. mantBits must be below 52.
func roundSmall(x float64, expBits, mantBits uint) uint64 {
	b := math.Float64bits(x)
	sign := (b >> 63) << (expBits + mantBits)
	expMax := uint64(1)<<expBits - 1
	inf := expMax << mantBits
	abs := b &^ (1 << 63)
	switch {
	case abs == 0:
		return sign
	case abs == 0x7ff<<52:
		return sign | inf
	case abs > 0x7ff<<52:
		return sign | inf | 1<<(mantBits-1)
	}
	bias := int(expMax >> 1)
	emin := 1 - bias
	m := abs & (1<<52 - 1)
	e := int(abs>>52) - 1023
	if abs>>52 == 0 {
		e = -1022 // float64 subnormal: m has no implicit bit
	} else {
		m |= 1 << 52
	}
	// x = m * 2^(e-52). Keep mantBits fraction bits below the leading bit
	// at 2^e, or fewer when the result is subnormal in the target format.
	shift := 52 - int(mantBits)
	if e < emin {
		shift += emin - e
	}
	if shift >= 64 {
		return sign // below a quarter of the smallest subnormal
	}
	q := m >> shift
	rem := m & (1<<shift - 1)
	half := uint64(1) << (shift - 1)
	if rem > half || (rem == half && q&1 == 1) {
		q++
	}
	var r uint64
	if e < emin {
		r = q // subnormal; a carry out lands on the smallest normal
	} else {
		// q holds the implicit bit; a carry to 2^(mantBits+1) bumps the exponent.
		r = uint64(e+bias)<<mantBits + q - 1<<mantBits
	}
	if r >= inf {
		r = inf
	}
	return sign | r
}

// smallToF64 converts bits of the format (expBits, mantBits) to float64
// exactly.
func smallToF64(b uint64, expBits, mantBits uint) float64 {
	expMax := uint64(1)<<expBits - 1
	bias := int(expMax >> 1)
	neg := (b>>(expBits+mantBits))&1 == 1
	ef := (b >> mantBits) & expMax
	m := b & (1<<mantBits - 1)
	var v float64
	switch ef {
	case expMax:
		if m != 0 {
			return math.NaN()
		}
		v = math.Inf(1)
	case 0:
		v = math.Ldexp(float64(m), 1-bias-int(mantBits))
	default:
		v = math.Ldexp(float64(m|1<<mantBits), int(ef)-bias-int(mantBits))
	}
	if neg {
		v = math.Copysign(v, -1)
	}
	return v
}

func f16FromF64(x float64) uint16  { return uint16(roundSmall(x, f16Exp, f16Mant)) }
func bf16FromF64(x float64) uint16 { return uint16(roundSmall(x, bf16Exp, bf16Mant)) }
func f16ToF64(b uint16) float64    { return smallToF64(uint64(b), f16Exp, f16Mant) }
func bf16ToF64(b uint16) float64   { return smallToF64(uint64(b), bf16Exp, bf16Mant) }

// floatBits rounds x (round to nearest even) to the float type t and returns
// its bits in the low t.Size()*8 bits.
func floatBits(t reduce.DataType, x float64) uint64 {
	switch t {
	case reduce.Float16:
		return uint64(f16FromF64(x))
	case reduce.Bfloat16:
		return uint64(bf16FromF64(x))
	case reduce.Float32:
		return uint64(math.Float32bits(float32(x)))
	case reduce.Float64:
		return math.Float64bits(x)
	}
	panic("exact: not a float type: " + t.String())
}

// floatValue converts bits of the float type t to float64 exactly.
func floatValue(t reduce.DataType, b uint64) float64 {
	switch t {
	case reduce.Float16:
		return f16ToF64(uint16(b))
	case reduce.Bfloat16:
		return bf16ToF64(uint16(b))
	case reduce.Float32:
		return float64(math.Float32frombits(uint32(b)))
	case reduce.Float64:
		return math.Float64frombits(b)
	}
	panic("exact: not a float type: " + t.String())
}

// mantissaBits is the number of explicit mantissa bits of the float type t
// (the precision is one more).
func mantissaBits(t reduce.DataType) uint {
	switch t {
	case reduce.Float16:
		return f16Mant
	case reduce.Bfloat16:
		return bf16Mant
	case reduce.Float32:
		return 23
	case reduce.Float64:
		return 52
	}
	panic("exact: not a float type: " + t.String())
}
