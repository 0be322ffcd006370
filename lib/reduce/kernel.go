package reduce

import (
	"fmt"
	"math"
	"strings"
)

// A Kernel is the reduction of one (DataType, Op, scalar, nRanks), with its
// typed loops resolved once by NewKernel. It is immutable and safe for
// concurrent use.
//
// Every method takes raw little-endian element bytes. All its slices must
// have the same length, a multiple of the type's Size(); a method panics
// otherwise. Slices may start at any byte offset (ones not aligned for the
// element type are staged through aligned scratch: exact, but slower). The
// destination may be exactly the same slice as a source (in place), but it
// must not partially overlap one. Empty slices are fine.
//
// Semantics, per element:
//   - OP is + for Sum, Avg and PreMulSum, * for Prod, and a > b ? a : b
//     (Max) or a < b ? a : b (Min) with a the first operand. Integers wrap
//     like Go's. For floats a NaN makes the comparison false, so Max and Min
//     return the second operand (NaN in b propagates, NaN in a is dropped);
//     equal operands (such as -0 and +0) also give the second.
//   - pre is PreMulSum's multiplication by the scalar (converted to the
//     type); identity for every other op.
//   - post is Avg's division by nRanks (Go's truncating division for
//     integers, one correctly rounded division for floats); identity for
//     every other op.
//   - float16 and bfloat16 compute in float32 and round back to nearest even
//     after every operation (so pre's product, the sum and the quotient are
//     each rounded to the 16-bit type, as if stored between steps).
//     float32 and float64 round each operation in their own type; PreMulSum
//     never fuses its product and sum into an FMA. Avg divides by
//     float32(nRanks) or float64(nRanks), exact up to 2^24 ranks.
//   - A NaN result is a NaN; which operand's payload it carries is
//     unspecified. 16-bit NaN results are quiet.
type Kernel struct {
	t    DataType
	op   Op
	size int

	combine     binaryFn // a OP b
	combinePost binaryFn // post(a OP b)
	reduce      binaryFn // a OP pre(b)
	reducePost  binaryFn // post(a OP pre(b))
	pre         unaryFn  // nil: copy
	post        unaryFn  // nil: copy
	prePost     unaryFn  // post(pre(x)); nil: copy
}

// useVectorLoops makes NewKernel use the CPU's vector loops where it has
// them (vector_amd64.go). Tests clear it to check the portable loops too.
var useVectorLoops = hasVectorLoops

// loops is every loop a Kernel can be built from, for one type.
type loops struct {
	add, mul, max, min binaryFn
	addScaled          binaryFn // a + pre(b)
	addDiv             binaryFn // post(a + b)
	scale, div         unaryFn  // pre, post
}

// NewKernel resolves the kernel for type t and operator op. scalar is
// PreMulSum's multiplier and is ignored for other ops; it must be
// representable in t: for integer types an integer within t's range, for
// float types finite and not overflowing t (it is rounded to t, nearest
// even). nRanks, in [1, MaxInt32], is Avg's divisor.
func NewKernel(t DataType, op Op, scalar float64, nRanks int) (*Kernel, error) {
	if !t.Valid() {
		return nil, fmt.Errorf("reduce: invalid data type %v (valid: %s)", t, joinNames(AllDataTypes()))
	}
	if !op.Valid() {
		return nil, fmt.Errorf("reduce: invalid reduction op %v (valid: %s)", op, joinNames(AllOps()))
	}
	if nRanks < 1 || nRanks > math.MaxInt32 {
		return nil, fmt.Errorf("reduce: invalid rank count %d for %v (must be in [1, %d])", nRanks, op, math.MaxInt32)
	}
	if op != PreMulSum {
		scalar = 1
	} else if err := checkScalar(t, scalar); err != nil {
		return nil, err
	}

	l := portableLoops(t, scalar, nRanks)
	if useVectorLoops {
		l = vectorLoops(t, l, scalar, nRanks)
	}

	k := &Kernel{t: t, op: op, size: t.Size()}
	switch op {
	case Prod:
		k.combine = l.mul
	case Max:
		k.combine = l.max
	case Min:
		k.combine = l.min
	default: // Sum, Avg, PreMulSum
		k.combine = l.add
	}
	k.combinePost, k.reduce, k.reducePost = k.combine, k.combine, k.combine
	switch op {
	case Avg:
		k.combinePost, k.reducePost = l.addDiv, l.addDiv
		k.post, k.prePost = l.div, l.div
	case PreMulSum:
		k.reduce, k.reducePost = l.addScaled, l.addScaled
		k.pre, k.prePost = l.scale, l.scale
	}
	return k, nil
}

// portableLoops builds t's loops in Go, for PreMulSum's scalar (already
// checked) and Avg's nRanks.
func portableLoops(t DataType, scalar float64, nRanks int) loops {
	var l loops
	switch t {
	case Int8:
		l = nativeLoops(int8(scalar), int32(nRanks), maxLoop[int8], minLoop[int8])
		l.add = addBytes
	case Uint8:
		l = nativeLoops(uint8(scalar), uint32(nRanks), maxLoop[uint8], minLoop[uint8])
		l.add = addBytes
	case Int32:
		l = nativeLoops(int32(scalar), int32(nRanks), maxLoop[int32], minLoop[int32])
	case Uint32:
		l = nativeLoops(uint32(scalar), uint32(nRanks), maxLoop[uint32], minLoop[uint32])
	case Int64:
		l = nativeLoops(int64(scalar), int64(nRanks), maxLoop[int64], minLoop[int64])
	case Uint64:
		l = nativeLoops(uint64(scalar), uint64(nRanks), maxLoop[uint64], minLoop[uint64])
	case Float32:
		l = nativeLoops(float32(scalar), float32(nRanks), maxFloat[float32, uint32], minFloat[float32, uint32])
	case Float64:
		l = nativeLoops(scalar, float64(nRanks), maxFloat[float64, uint64], minFloat[float64, uint64])
	case Float16:
		l = halfLoops(fmtF16, F16ToFloat32(F16FromFloat64(scalar)), float32(nRanks))
	case Bfloat16:
		l = halfLoops(fmtBF16, BF16ToFloat32(BF16FromFloat64(scalar)), float32(nRanks))
	}
	return l
}

// nativeLoops builds the loops for a Go numeric type T. k is PreMulSum's
// scalar in T; n is Avg's divisor in the type W the division is done in;
// maxFn and minFn are T's Max and Min loops (integers and floats differ).
func nativeLoops[T, W number](k T, n W, maxFn, minFn func(d, a, b []T)) loops {
	return loops{
		add:       func(d, a, b []byte) { add(view[T](d), view[T](a), view[T](b)) },
		mul:       func(d, a, b []byte) { mul(view[T](d), view[T](a), view[T](b)) },
		max:       func(d, a, b []byte) { maxFn(view[T](d), view[T](a), view[T](b)) },
		min:       func(d, a, b []byte) { minFn(view[T](d), view[T](a), view[T](b)) },
		addScaled: func(d, a, b []byte) { addScaled(view[T](d), view[T](a), view[T](b), k) },
		addDiv:    func(d, a, b []byte) { addDiv(view[T](d), view[T](a), view[T](b), n) },
		scale:     func(d, s []byte) { scale(view[T](d), view[T](s), k) },
		div:       func(d, s []byte) { div(view[T](d), view[T](s), n) },
	}
}

// halfLoops builds the loops for a 16-bit float format; k is the scalar
// already rounded to the format, n the divisor.
func halfLoops(f halfFormat, k, n float32) loops {
	return loops{
		add:       halfSum(f),
		mul:       halfBinary(f, hMul, 0),
		max:       halfBinary(f, hMax, 0),
		min:       halfBinary(f, hMin, 0),
		addScaled: halfBinary(f, hAddScaled, k),
		addDiv:    halfBinary(f, hAddDiv, n),
		scale:     halfUnary(f, hScale, k),
		div:       halfUnary(f, hDiv, n),
	}
}

// checkScalar reports whether PreMulSum's scalar is representable in t.
func checkScalar(t DataType, s float64) error {
	var lo, hi float64 // integer range: lo <= s < hi
	switch t {
	case Int8:
		lo, hi = math.MinInt8, math.MaxInt8+1
	case Uint8:
		lo, hi = 0, math.MaxUint8+1
	case Int32:
		lo, hi = math.MinInt32, math.MaxInt32+1
	case Uint32:
		lo, hi = 0, math.MaxUint32+1
	case Int64:
		lo, hi = math.MinInt64, -math.MinInt64 // 2^63, exact in float64
	case Uint64:
		lo, hi = 0, 2*-float64(math.MinInt64) // 2^64
	default:
		var largest float64 // largest finite value of t
		var inf bool        // s rounds to ±Inf in t
		switch t {
		case Float16:
			largest, inf = 65504, F16FromFloat64(s)&0x7fff == 0x7c00
		case Bfloat16:
			largest, inf = float64(BF16ToFloat32(0x7f7f)), BF16FromFloat64(s)&0x7fff == 0x7f80
		case Float32:
			largest, inf = math.MaxFloat32, math.IsInf(float64(float32(s)), 0)
		case Float64:
			largest = math.MaxFloat64
		}
		if math.IsNaN(s) || math.IsInf(s, 0) || inf {
			return fmt.Errorf("reduce: premulsum scalar %v is not representable in %v (must be finite and round to at most %g in magnitude)", s, t, largest)
		}
		return nil
	}
	if !(s >= lo && s < hi) || s != math.Trunc(s) {
		return fmt.Errorf("reduce: premulsum scalar %v is not representable in %v (must be an integer in [%.0f, %.0f])", s, t, lo, hi-1)
	}
	return nil
}

func joinNames[E fmt.Stringer](xs []E) string {
	s := make([]string, len(xs))
	for i, x := range xs {
		s[i] = x.String()
	}
	return strings.Join(s, ", ")
}

// DataType is the kernel's element type.
func (k *Kernel) DataType() DataType { return k.t }

// Op is the kernel's operator.
func (k *Kernel) Op() Op { return k.op }

// Pre sets dst = pre(src): PreMulSum multiplies by the scalar; every other
// op copies.
func (k *Kernel) Pre(dst, src []byte) { k.unary("Pre", k.pre, dst, src) }

// Post sets dst = post(src): Avg divides by nRanks; every other op copies.
func (k *Kernel) Post(dst, src []byte) { k.unary("Post", k.post, dst, src) }

// PrePost sets dst = post(pre(src)), a single rank's whole reduction.
func (k *Kernel) PrePost(dst, src []byte) { k.unary("PrePost", k.prePost, dst, src) }

// Reduce sets dst = acc OP pre(local), then dst = post(dst) if post.
func (k *Kernel) Reduce(dst, acc, local []byte, post bool) {
	fn := k.reduce
	if post {
		fn = k.reducePost
	}
	k.binary("Reduce", fn, dst, acc, local)
}

// Combine sets dst = a OP b (no pre on either side), then dst = post(dst)
// if post.
func (k *Kernel) Combine(dst, a, b []byte, post bool) {
	fn := k.combine
	if post {
		fn = k.combinePost
	}
	k.binary("Combine", fn, dst, a, b)
}

func (k *Kernel) binary(name string, fn binaryFn, dst, a, b []byte) {
	n := len(dst)
	if len(a) != n || len(b) != n || n&(k.size-1) != 0 { // sizes are powers of two: no division
		k.badLengths(name, dst, a, b)
	}
	if n == 0 {
		return
	}
	if hostLE && (addr(dst)|addr(a)|addr(b))&uintptr(k.size-1) == 0 {
		fn(dst, a, b)
		return
	}
	stageBinary(fn, dst, a, b, k.size)
}

func (k *Kernel) unary(name string, fn unaryFn, dst, src []byte) {
	n := len(dst)
	if len(src) != n || n&(k.size-1) != 0 {
		k.badLengths(name, dst, src)
	}
	switch {
	case n == 0:
	case fn == nil:
		copy(dst, src)
	case hostLE && (addr(dst)|addr(src))&uintptr(k.size-1) == 0:
		fn(dst, src)
	default:
		stageUnary(fn, dst, src, k.size)
	}
}

func (k *Kernel) badLengths(name string, bufs ...[]byte) {
	lens := make([]string, len(bufs))
	for i, b := range bufs {
		lens[i] = fmt.Sprint(len(b))
	}
	panic(fmt.Sprintf("reduce: %s on %v: slice lengths %s bytes must be equal and a multiple of %d",
		name, k.t, strings.Join(lens, ", "), k.size))
}
