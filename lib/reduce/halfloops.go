package reduce

import "math"

// float16 and bfloat16 loops: each block of up to halfBlock elements is
// widened to float32 scratch, the float32 loops run on it, and the result
// is rounded back (nearest even) once. Rounding a float32 sum, product or
// quotient of two 16-bit floats back to 16 bits gives the correctly rounded
// result, because float32 carries at least 2p+2 bits for both formats.
// Fused steps round their intermediate to 16 bits too, so a fused call
// gives exactly what the separate calls would.

// halfBlock elements per block: two float32 scratch blocks (4 KiB) on the stack.
const halfBlock = 512

// halfFormat selects the 16-bit format.
type halfFormat uint8

const (
	fmtF16 halfFormat = iota
	fmtBF16
)

func (f halfFormat) decode(dst []float32, src []uint16) {
	src = src[:len(dst)]
	if f == fmtF16 {
		for i, h := range src {
			dst[i] = F16ToFloat32(h)
		}
		return
	}
	for i, h := range src {
		dst[i] = BF16ToFloat32(h)
	}
}

func (f halfFormat) encode(dst []uint16, src []float32) {
	src = src[:len(dst)]
	if f == fmtF16 {
		for i, x := range src {
			// F16FromFloat32, with its common case inlined by hand.
			if b := math.Float32bits(x); f16Normal(b) {
				dst[i] = f16FromNormal(b)
			} else {
				dst[i] = f16FromFloat32Slow(b)
			}
		}
		return
	}
	for i, x := range src {
		dst[i] = BF16FromFloat32(x)
	}
}

// round rounds every element of x to the format, in place.
func (f halfFormat) round(x []float32) {
	if f == fmtF16 {
		for i, v := range x {
			x[i] = F16ToFloat32(F16FromFloat32(v))
		}
		return
	}
	for i, v := range x {
		x[i] = BF16ToFloat32(BF16FromFloat32(v))
	}
}

// halfStep is the float32 work done on one block. The switch on it runs once
// per block, not per element.
type halfStep uint8

const (
	hAdd       halfStep = iota // a + b
	hMul                       // a * b
	hMax                       // a > b ? a : b
	hMin                       // a < b ? a : b
	hAddScaled                 // a + round(b * k)
	hAddDiv                    // round(a + b) / k
	hScale                     // s * k (unary)
	hDiv                       // s / k (unary)
)

// halfBinary returns the loop dst = step(a, b) for format f; k is the
// step's float32 constant (the scalar or the divisor).
func halfBinary(f halfFormat, step halfStep, k float32) binaryFn {
	return func(dst, a, b []byte) {
		d, x, y := view[uint16](dst), view[uint16](a), view[uint16](b)
		var fx, fy [halfBlock]float32
		for len(d) > 0 {
			n := min(len(d), halfBlock)
			bx, by := fx[:n], fy[:n]
			f.decode(bx, x[:n])
			f.decode(by, y[:n])
			switch step {
			case hAdd:
				add(bx, bx, by)
			case hMul:
				mul(bx, bx, by)
			case hMax:
				maxFloat[float32, uint32](bx, bx, by)
			case hMin:
				minFloat[float32, uint32](bx, bx, by)
			case hAddScaled:
				scale(by, by, k)
				f.round(by)
				add(bx, bx, by)
			case hAddDiv:
				add(bx, bx, by)
				f.round(bx)
				div(bx, bx, k)
			default:
				panic("reduce: bad binary half step")
			}
			f.encode(d[:n], bx)
			d, x, y = d[n:], x[n:], y[n:]
		}
	}
}

// halfSum returns the fused sum loop of format f: halfBinary(f, hAdd, 0) in
// one pass without scratch, for the commonest 16-bit reduction.
func halfSum(f halfFormat) binaryFn {
	if f == fmtBF16 {
		return bf16Sum
	}
	return f16Sum
}

// f16Sum and bf16Sum are top-level functions, not closures: a closure
// returned by an inlined function gets compiled without its own inlining
// (here the conversions), which made it markedly slower (commit 1063086).
func f16Sum(dst, a, b []byte) {
	d, x, y := view[uint16](dst), view[uint16](a), view[uint16](b)
	x, y = x[:len(d)], y[:len(d)]
	for i := range d {
		// F16FromFloat32, with its common case inlined by hand.
		if s := math.Float32bits(F16ToFloat32(x[i]) + F16ToFloat32(y[i])); f16Normal(s) {
			d[i] = f16FromNormal(s)
		} else {
			d[i] = f16FromFloat32Slow(s)
		}
	}
}

func bf16Sum(dst, a, b []byte) {
	d, x, y := view[uint16](dst), view[uint16](a), view[uint16](b)
	x, y = x[:len(d)], y[:len(d)]
	for i := range d {
		d[i] = BF16FromFloat32(BF16ToFloat32(x[i]) + BF16ToFloat32(y[i]))
	}
}

// halfUnary returns the loop dst = step(src) for format f.
func halfUnary(f halfFormat, step halfStep, k float32) unaryFn {
	return func(dst, src []byte) {
		d, s := view[uint16](dst), view[uint16](src)
		var fx [halfBlock]float32
		for len(d) > 0 {
			n := min(len(d), halfBlock)
			bx := fx[:n]
			f.decode(bx, s[:n])
			switch step {
			case hScale:
				scale(bx, bx, k)
			case hDiv:
				div(bx, bx, k)
			default:
				panic("reduce: bad unary half step")
			}
			f.encode(d[:n], bx)
			d, s = d[n:], s[n:]
		}
	}
}
