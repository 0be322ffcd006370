package reduce

import (
	"encoding/binary"
	"math"
)

// Independent references for the tests: decoding by formula (math.Ldexp),
// rounding by scaling to an integer multiple of the ulp in float64
// (math.RoundToEven), element access through encoding/binary, arithmetic in
// int64 (wrapping) or float64. None of it uses the code under test.

// floatFormat describes a binary floating-point format for refRound.
type floatFormat struct {
	prec int     // significand bits, implicit bit included
	emin int     // exponent of the smallest normal
	max  float64 // largest finite value
}

var (
	f16Format  = floatFormat{prec: 11, emin: -14, max: 65504}
	bf16Format = floatFormat{prec: 8, emin: -126, max: 0x1.fep127}
	f32Format  = floatFormat{prec: 24, emin: -126, max: math.MaxFloat32}
)

// refRound rounds x to format f, to nearest with ties to even, subnormals
// included, overflowing to ±Inf.
func refRound(x float64, f floatFormat) float64 {
	if x == 0 || math.IsNaN(x) || math.IsInf(x, 0) {
		return x
	}
	_, e := math.Frexp(x) // |x| in [2^(e-1), 2^e)
	e--
	if e < f.emin {
		e = f.emin
	}
	ulp := math.Ldexp(1, e-(f.prec-1))
	r := math.RoundToEven(x/ulp) * ulp // exact scalings by powers of two
	if math.Abs(r) > f.max {
		return math.Copysign(math.Inf(1), x)
	}
	return math.Copysign(r, x) // keeps the sign of a zero result
}

// refF16Decode is the value of binary16 bits h, by formula.
func refF16Decode(h uint16) float64 {
	sign := 1.0
	if h&0x8000 != 0 {
		sign = -1
	}
	e, m := int(h>>10&0x1f), float64(h&0x3ff)
	switch e {
	case 0:
		return sign * math.Ldexp(m, -24)
	case 31:
		if m == 0 {
			return math.Inf(int(sign))
		}
		return math.NaN()
	}
	return sign * math.Ldexp(1+m/1024, e-15)
}

// refBF16Decode is the value of bfloat16 bits h, by formula.
func refBF16Decode(h uint16) float64 {
	sign := 1.0
	if h&0x8000 != 0 {
		sign = -1
	}
	e, m := int(h>>7&0xff), float64(h&0x7f)
	switch e {
	case 0:
		return sign * math.Ldexp(m, -133)
	case 255:
		if m == 0 {
			return math.Inf(int(sign))
		}
		return math.NaN()
	}
	return sign * math.Ldexp(1+m/128, e-127)
}

// sameValue reports whether got and want are the same float: equal with the
// same sign (so -0 != +0), or both NaN.
func sameValue(got, want float64) bool {
	if math.IsNaN(got) || math.IsNaN(want) {
		return math.IsNaN(got) && math.IsNaN(want)
	}
	return got == want && math.Signbit(got) == math.Signbit(want)
}

// elem is one element's value: i for integer types (sign-extended for signed
// types, zero-extended for unsigned ones, uint64 as its bits), f for floats.
type elem struct {
	i int64
	f float64
}

func isSigned(t DataType) bool { return t == Int8 || t == Int32 || t == Int64 }

// wrap truncates x to t's width and extends it back.
func wrap(t DataType, x int64) int64 {
	switch t {
	case Int8:
		return int64(int8(x))
	case Uint8:
		return int64(uint8(x))
	case Int32:
		return int64(int32(x))
	case Uint32:
		return int64(uint32(x))
	}
	return x
}

// roundTo rounds x to float type t.
func roundTo(t DataType, x float64) float64 {
	switch t {
	case Float16:
		return refRound(x, f16Format)
	case Bfloat16:
		return refRound(x, bf16Format)
	case Float32:
		return refRound(x, f32Format)
	}
	return x
}

// getElem reads element i of buffer b.
func getElem(t DataType, b []byte, i int) elem {
	le := binary.LittleEndian
	switch t {
	case Int8, Uint8:
		return elem{i: wrap(t, int64(b[i]))}
	case Int32, Uint32:
		return elem{i: wrap(t, int64(le.Uint32(b[4*i:])))}
	case Int64, Uint64:
		return elem{i: int64(le.Uint64(b[8*i:]))}
	case Float16:
		return elem{f: refF16Decode(le.Uint16(b[2*i:]))}
	case Bfloat16:
		return elem{f: refBF16Decode(le.Uint16(b[2*i:]))}
	case Float32:
		return elem{f: float64(math.Float32frombits(le.Uint32(b[4*i:])))}
	}
	return elem{f: math.Float64frombits(le.Uint64(b[8*i:]))}
}

// refModel computes one kernel's expected results element by element.
type refModel struct {
	t      DataType
	op     Op
	scalar elem // PreMulSum's scalar in t
	n      int64
}

func newRefModel(t DataType, op Op, scalar float64, nRanks int) refModel {
	m := refModel{t: t, op: op, n: int64(nRanks)}
	switch {
	case t.IsFloat():
		m.scalar.f = roundTo(t, scalar)
	case scalar < 0:
		m.scalar.i = wrap(t, int64(scalar))
	default:
		m.scalar.i = wrap(t, int64(uint64(scalar)))
	}
	return m
}

// combine is a OP b.
func (m refModel) combine(a, b elem) elem {
	t := m.t
	if t.IsFloat() {
		switch m.op {
		case Prod:
			return elem{f: roundTo(t, a.f*b.f)}
		case Max:
			if a.f > b.f {
				return a
			}
			return b
		case Min:
			if a.f < b.f {
				return a
			}
			return b
		}
		return elem{f: roundTo(t, a.f+b.f)}
	}
	less := func(x, y int64) bool { // x < y in t's order
		if t == Uint64 {
			return uint64(x) < uint64(y)
		}
		return x < y
	}
	switch m.op {
	case Prod:
		return elem{i: wrap(t, a.i*b.i)}
	case Max:
		if less(b.i, a.i) {
			return a
		}
		return b
	case Min:
		if less(a.i, b.i) {
			return a
		}
		return b
	}
	return elem{i: wrap(t, a.i+b.i)}
}

// pre is PreMulSum's multiplication, identity otherwise.
func (m refModel) pre(x elem) elem {
	if m.op != PreMulSum {
		return x
	}
	if m.t.IsFloat() {
		return elem{f: roundTo(m.t, x.f*m.scalar.f)}
	}
	return elem{i: wrap(m.t, x.i*m.scalar.i)}
}

// post is Avg's division, identity otherwise.
func (m refModel) post(x elem) elem {
	switch {
	case m.op != Avg:
		return x
	case m.t.IsFloat():
		return elem{f: roundTo(m.t, x.f/float64(m.n))}
	case isSigned(m.t):
		return elem{i: wrap(m.t, x.i/m.n)}
	}
	return elem{i: wrap(m.t, int64(uint64(x.i)/uint64(m.n)))}
}

func (m refModel) equal(got, want elem) bool {
	if m.t.IsFloat() {
		return sameValue(got.f, want.f)
	}
	return got.i == want.i
}
