package reduce

import "unsafe"

// Typed element loops. They are generic over Go numeric types only (the
// element type, and where needed the type a division or a select is done
// in); every instantiation used (int8 ... float64, each a distinct GC shape)
// compiles to its own loop with the operator as a machine instruction, so
// there is no per-element call or dispatch. All take slices of equal length
// (the first one's length rules) and allow the destination to be exactly one
// of the sources: every element is read before the same index is written.
//
// The 4-way unrolled bodies load all operands before storing, which lets the
// compiler schedule them even though the destination may alias a source.

type integer interface {
	~int8 | ~uint8 | ~int32 | ~uint32 | ~int64 | ~uint64
}

type float interface{ ~float32 | ~float64 }

type number interface{ integer | float }

// add: d = a + b (integers wrap).
func add[T number](d, a, b []T) {
	a, b = a[:len(d)], b[:len(d)]
	i := 0
	for ; i+4 <= len(d); i += 4 {
		a4, b4 := a[i:i+4:i+4], b[i:i+4:i+4]
		r0, r1, r2, r3 := a4[0]+b4[0], a4[1]+b4[1], a4[2]+b4[2], a4[3]+b4[3]
		d4 := d[i : i+4 : i+4]
		d4[0], d4[1], d4[2], d4[3] = r0, r1, r2, r3
	}
	for ; i < len(d); i++ {
		d[i] = a[i] + b[i]
	}
}

// addBytes is add for 8-bit integers (signed or not: the bits are the
// same), eight lanes per uint64 (SWAR) where all three slices are 8-byte
// aligned, bytewise elsewhere. Lanes are independent of byte order.
func addBytes(d, a, b []byte) {
	a, b = a[:len(d)], b[:len(d)]
	if n := len(d) &^ 7; n > 0 && (addr(d)|addr(a)|addr(b))&7 == 0 {
		addLanes8(view[uint64](d[:n]), view[uint64](a[:n]), view[uint64](b[:n]))
		d, a, b = d[n:], a[n:], b[n:]
	}
	add(d, a, b)
}

// addLanes8 adds the eight bytes of each word lane by lane: the low 7 bits
// of each lane add without carrying out of it, and each lane's top bit is
// the xor of the operands' top bits and that carry.
func addLanes8(d, a, b []uint64) {
	const top = 0x8080808080808080
	a, b = a[:len(d)], b[:len(d)]
	i := 0
	for ; i+4 <= len(d); i += 4 {
		a4, b4 := a[i:i+4:i+4], b[i:i+4:i+4]
		r0 := (a4[0]&^top + b4[0]&^top) ^ (a4[0]^b4[0])&top
		r1 := (a4[1]&^top + b4[1]&^top) ^ (a4[1]^b4[1])&top
		r2 := (a4[2]&^top + b4[2]&^top) ^ (a4[2]^b4[2])&top
		r3 := (a4[3]&^top + b4[3]&^top) ^ (a4[3]^b4[3])&top
		d4 := d[i : i+4 : i+4]
		d4[0], d4[1], d4[2], d4[3] = r0, r1, r2, r3
	}
	for ; i < len(d); i++ {
		d[i] = (a[i]&^top + b[i]&^top) ^ (a[i]^b[i])&top
	}
}

// mul: d = a * b (integers wrap).
func mul[T number](d, a, b []T) {
	a, b = a[:len(d)], b[:len(d)]
	i := 0
	for ; i+4 <= len(d); i += 4 {
		a4, b4 := a[i:i+4:i+4], b[i:i+4:i+4]
		r0, r1, r2, r3 := a4[0]*b4[0], a4[1]*b4[1], a4[2]*b4[2], a4[3]*b4[3]
		d4 := d[i : i+4 : i+4]
		d4[0], d4[1], d4[2], d4[3] = r0, r1, r2, r3
	}
	for ; i < len(d); i++ {
		d[i] = a[i] * b[i]
	}
}

// maxLoop: d = a > b ? a : b, for integers. Selecting between the loaded
// values compiles to a conditional move, not a branch (which mispredicts
// on random data).
func maxLoop[T integer](d, a, b []T) {
	a, b = a[:len(d)], b[:len(d)]
	for i := range d {
		x, y := a[i], b[i]
		if x > y {
			y = x
		}
		d[i] = y
	}
}

// minLoop: d = a < b ? a : b, for integers.
func minLoop[T integer](d, a, b []T) {
	a, b = a[:len(d)], b[:len(d)]
	for i := range d {
		x, y := a[i], b[i]
		if x < y {
			y = x
		}
		d[i] = y
	}
}

// maxFloat: d = a > b ? a : b, for floats. A NaN makes the comparison
// false, so the result is then b; so is a tie (max(-0, +0) is +0, max(+0,
// -0) is -0).
func maxFloat[F float, U ~uint32 | ~uint64](d, a, b []F) { pickGreater[F, U](d, a, b, a, b) }

// minFloat: d = a < b ? a : b (that is, b > a ? a : b), for floats; NaN and
// ties give b, as for maxFloat.
func minFloat[F float, U ~uint32 | ~uint64](d, a, b []F) { pickGreater[F, U](d, b, a, a, b) }

// pickGreater sets d[i] = x[i] > y[i] ? p[i] : q[i]. It selects the bit
// patterns (U is the unsigned integer of F's size) because the compiler has
// no conditional move for float registers: with a branch, float32 max on
// random data ran several times slower than it does now (commit 65b8fff;
// today's Go loops: docs/PERFORMANCE.md, "Reduction kernels").
func pickGreater[F float, U ~uint32 | ~uint64](d, x, y, p, q []F) {
	x, y = x[:len(d)], y[:len(d)]
	bd, bp, bq := sameSize[U](d), sameSize[U](p), sameSize[U](q)
	bp, bq = bp[:len(bd)], bq[:len(bd)]
	for i := range bd {
		r, s := bp[i], bq[i]
		if x[i] > y[i] {
			s = r
		}
		bd[i] = s
	}
}

// sameSize reinterprets s as a slice of U, a type of the same size as F.
func sameSize[U, F any](s []F) []U {
	if len(s) == 0 {
		return nil
	}
	return unsafe.Slice((*U)(unsafe.Pointer(unsafe.SliceData(s))), len(s))
}

// scale: d = s * k (PreMulSum's pre).
func scale[T number](d, s []T, k T) {
	s = s[:len(d)]
	i := 0
	for ; i+4 <= len(d); i += 4 {
		s4 := s[i : i+4 : i+4]
		r0, r1, r2, r3 := s4[0]*k, s4[1]*k, s4[2]*k, s4[3]*k
		d4 := d[i : i+4 : i+4]
		d4[0], d4[1], d4[2], d4[3] = r0, r1, r2, r3
	}
	for ; i < len(d); i++ {
		d[i] = s[i] * k
	}
}

// addScaled: d = a + (b * k), the product rounded to T before the sum (the
// explicit conversion forbids fusing it into an FMA).
func addScaled[T number](d, a, b []T, k T) {
	a, b = a[:len(d)], b[:len(d)]
	i := 0
	for ; i+4 <= len(d); i += 4 {
		a4, b4 := a[i:i+4:i+4], b[i:i+4:i+4]
		r0 := a4[0] + T(b4[0]*k)
		r1 := a4[1] + T(b4[1]*k)
		r2 := a4[2] + T(b4[2]*k)
		r3 := a4[3] + T(b4[3]*k)
		d4 := d[i : i+4 : i+4]
		d4[0], d4[1], d4[2], d4[3] = r0, r1, r2, r3
	}
	for ; i < len(d); i++ {
		d[i] = a[i] + T(b[i]*k)
	}
}

// div: d = s / n (Avg's post). W is the type the division is done in: for
// integers a signed or unsigned type at least 32 bits wide, so that n need
// not fit in T (Go's truncating division; 32-bit division is much faster
// than 64-bit on x86); for floats T itself (one correctly rounded division).
func div[T, W number](d, s []T, n W) {
	s = s[:len(d)]
	for i := range d {
		d[i] = T(W(s[i]) / n)
	}
}

// addDiv: d = (a + b) / n, the sum rounded (or wrapped) to T first.
func addDiv[T, W number](d, a, b []T, n W) {
	a, b = a[:len(d)], b[:len(d)]
	for i := range d {
		d[i] = T(W(a[i]+b[i]) / n)
	}
}
