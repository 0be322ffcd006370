package reduce

import (
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"testing"
)

// randomElems fills b with random elements of t: raw random bits (wrapping
// integers; floats across the whole range, Inf and NaN included, though NaN
// only at every other odd index) for odd indexes, small values for even ones
// so that sums and products stay interesting.
func randomElems(rng *rand.Rand, t DataType, b []byte) {
	size := t.Size()
	for i := 0; i < len(b); i += size {
		e := b[i : i+size]
		for j := range e {
			e[j] = byte(rng.Uint32())
		}
		if (i/size)%2 == 1 {
			if (i/size)%4 == 1 && t.IsFloat() && math.IsNaN(getElem(t, e, 0).f) {
				e[size-1] &^= 0x40 // clear the top exponent bit: finite
			}
			continue
		}
		// Small values: -32..32 in steps of 1/4 for floats; for integer
		// types small numbers sign-extended into the high bytes.
		v := int64(rng.IntN(257)) - 128
		switch t {
		case Float16:
			putLE(e, uint64(F16FromFloat64(float64(v)/4)))
		case Bfloat16:
			putLE(e, uint64(BF16FromFloat64(float64(v)/4)))
		case Float32:
			putLE(e, uint64(math.Float32bits(float32(v)/4)))
		case Float64:
			putLE(e, math.Float64bits(float64(v)/4))
		default:
			putLE(e, uint64(v))
		}
	}
}

func putLE(e []byte, v uint64) {
	for j := range e {
		e[j] = byte(v >> (8 * j))
	}
}

// kernelConfigs lists (scalar, nRanks) cases for op on t.
func kernelConfigs(t DataType, op Op) [][2]float64 {
	switch op {
	case PreMulSum:
		if t.IsFloat() {
			return [][2]float64{{0.3, 1}, {-2.75, 1}, {1e-3, 1}}
		}
		if isSigned(t) {
			return [][2]float64{{3, 1}, {-7, 1}}
		}
		return [][2]float64{{3, 1}, {201, 1}}
	case Avg:
		return [][2]float64{{0, 1}, {0, 3}, {0, 300}} // 300 does not fit int8/uint8
	}
	return [][2]float64{{0, 4}}
}

// TestKernelMatchesReference runs every method of every DataType x Op kernel
// against refModel, for several lengths, in and out of place, aligned and
// unaligned, with the vector loops and with the portable ones.
func TestKernelMatchesReference(t *testing.T) { forEachPath(t, testKernelMatchesReference) }

func testKernelMatchesReference(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 11))
	lengths := []int{0, 1, 3, 17, 1000, 1500} // 1500 crosses a staging chunk and a half block
	if raceEnabled {
		lengths = []int{0, 1, 3, 17, 300}
	}
	for _, dt := range AllDataTypes() {
		for _, op := range AllOps() {
			for _, cfg := range kernelConfigs(dt, op) {
				scalar, nRanks := cfg[0], int(cfg[1])
				name := fmt.Sprintf("%v/%v/s=%v/n=%d", dt, op, scalar, nRanks)
				t.Run(name, func(t *testing.T) {
					k, err := NewKernel(dt, op, scalar, nRanks)
					if err != nil {
						t.Fatal(err)
					}
					if k.DataType() != dt || k.Op() != op {
						t.Fatalf("kernel reports %v/%v", k.DataType(), k.Op())
					}
					m := newRefModel(dt, op, scalar, nRanks)
					for _, n := range lengths {
						for _, off := range []int{0, 1} {
							checkKernel(t, rng, k, m, n, off)
						}
					}
				})
			}
		}
	}
}

// checkKernel checks all methods on n elements at byte offset off.
func checkKernel(t *testing.T, rng *rand.Rand, k *Kernel, m refModel, n, off int) {
	t.Helper()
	size := k.DataType().Size()
	nb := n * size
	buf := func() []byte { // a fresh slice at offset off of a bigger buffer
		b := make([]byte, nb+off+8)
		return b[off : off+nb]
	}
	x, y := buf(), buf()
	randomElems(rng, m.t, x)
	randomElems(rng, m.t, y)
	// A few inputs of the same value make Max/Min ties and cancellations.
	if n > 2 {
		copy(y[size:2*size], x[size:2*size])
	}

	type binaryCase struct {
		name string
		call func(dst, a, b []byte)
		want func(a, b elem) elem
	}
	binaries := []binaryCase{
		{"Reduce", func(d, a, b []byte) { k.Reduce(d, a, b, false) }, func(a, b elem) elem { return m.combine(a, m.pre(b)) }},
		{"Reduce+post", func(d, a, b []byte) { k.Reduce(d, a, b, true) }, func(a, b elem) elem { return m.post(m.combine(a, m.pre(b))) }},
		{"Combine", func(d, a, b []byte) { k.Combine(d, a, b, false) }, func(a, b elem) elem { return m.combine(a, b) }},
		{"Combine+post", func(d, a, b []byte) { k.Combine(d, a, b, true) }, func(a, b elem) elem { return m.post(m.combine(a, b)) }},
	}
	for _, c := range binaries {
		for _, alias := range []string{"out", "dst=a", "dst=b"} {
			a, b, d := clone(x, off), clone(y, off), buf()
			switch alias {
			case "dst=a":
				d = a
			case "dst=b":
				d = b
			}
			c.call(d, a, b)
			for i := range n {
				want := c.want(getElem(m.t, x, i), getElem(m.t, y, i))
				if got := getElem(m.t, d, i); !m.equal(got, want) {
					t.Fatalf("%s (%s, n=%d, offset %d) element %d: %v OP %v = %+v, want %+v",
						c.name, alias, n, off, i, getElem(m.t, x, i), getElem(m.t, y, i), got, want)
				}
			}
		}
	}

	type unaryCase struct {
		name string
		call func(dst, src []byte)
		want func(elem) elem
	}
	unaries := []unaryCase{
		{"Pre", k.Pre, m.pre},
		{"Post", k.Post, m.post},
		{"PrePost", k.PrePost, func(e elem) elem { return m.post(m.pre(e)) }},
	}
	for _, c := range unaries {
		for _, inPlace := range []bool{false, true} {
			s, d := clone(x, off), buf()
			if inPlace {
				d = s
			}
			c.call(d, s)
			for i := range n {
				want := c.want(getElem(m.t, x, i))
				if got := getElem(m.t, d, i); !m.equal(got, want) {
					t.Fatalf("%s (in place %v, n=%d, offset %d) element %d: f(%+v) = %+v, want %+v",
						c.name, inPlace, n, off, i, getElem(m.t, x, i), got, want)
				}
			}
		}
	}
}

// clone copies b into a new buffer at the same offset.
func clone(b []byte, off int) []byte {
	c := make([]byte, len(b)+off+8)[off : off+len(b)]
	copy(c, b)
	return c
}

func TestNewKernelErrors(t *testing.T) {
	tests := []struct {
		t      DataType
		op     Op
		scalar float64
		nRanks int
		want   []string // substrings of the error
	}{
		{DataType(-1), Sum, 0, 2, []string{"data type", "DataType(-1)", "valid:", "bfloat16"}},
		{DataType(10), Sum, 0, 2, []string{"data type", "DataType(10)"}},
		{Float32, Op(6), 0, 2, []string{"op", "Op(6)", "valid:", "premulsum"}},
		{Float32, Op(-1), 0, 2, []string{"Op(-1)"}},
		{Float32, Sum, 0, 0, []string{"rank count 0", "[1, 2147483647]"}},
		{Float32, Avg, 0, 1 << 31, []string{"rank count 2147483648"}},
		{Int32, Avg, 0, -3, []string{"rank count -3"}},
		{Int32, PreMulSum, 1.5, 2, []string{"scalar 1.5", "int32", "integer in [-2147483648, 2147483647]"}},
		{Int8, PreMulSum, 128, 2, []string{"scalar 128", "int8", "[-128, 127]"}},
		{Int8, PreMulSum, -129, 2, []string{"[-128, 127]"}},
		{Uint8, PreMulSum, -1, 2, []string{"uint8", "[0, 255]"}},
		{Uint8, PreMulSum, 256, 2, []string{"[0, 255]"}},
		{Uint32, PreMulSum, 1 << 32, 2, []string{"uint32"}},
		{Int64, PreMulSum, 1 << 63, 2, []string{"int64"}},
		{Uint64, PreMulSum, 1 << 64, 2, []string{"uint64"}},
		{Int32, PreMulSum, math.NaN(), 2, []string{"NaN"}},
		{Int32, PreMulSum, math.Inf(1), 2, []string{"+Inf"}},
		{Float32, PreMulSum, math.NaN(), 2, []string{"scalar NaN", "float", "finite"}},
		{Float64, PreMulSum, math.Inf(-1), 2, []string{"-Inf", "double", "finite"}},
		{Float32, PreMulSum, 1e39, 2, []string{"float", "finite"}},
		{Float16, PreMulSum, 65520, 2, []string{"half", "65504"}},
		{Bfloat16, PreMulSum, math.MaxFloat32, 2, []string{"bfloat16"}},
	}
	for _, tt := range tests {
		k, err := NewKernel(tt.t, tt.op, tt.scalar, tt.nRanks)
		if err == nil {
			t.Errorf("NewKernel(%v, %v, %v, %d) = %v, want an error", tt.t, tt.op, tt.scalar, tt.nRanks, k)
			continue
		}
		for _, w := range tt.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("NewKernel(%v, %v, %v, %d) error %q does not mention %q", tt.t, tt.op, tt.scalar, tt.nRanks, err, w)
			}
		}
	}
}

func TestNewKernelAccepts(t *testing.T) {
	tests := []struct {
		t      DataType
		scalar float64
	}{
		{Int8, -128}, {Int8, 127}, {Uint8, 255}, {Uint8, 0}, {Int32, -2147483648},
		{Uint32, 4294967295}, {Int64, -(1 << 63)}, {Uint64, 1<<64 - 2048}, {Int32, math.Copysign(0, -1)},
		{Float16, 65504}, {Float16, 65519}, {Float16, 1e-30}, {Bfloat16, -1e38},
		{Float32, math.MaxFloat32}, {Float32, 0.1}, {Float64, math.MaxFloat64},
	}
	for _, tt := range tests {
		if _, err := NewKernel(tt.t, PreMulSum, tt.scalar, 1); err != nil {
			t.Errorf("NewKernel(%v, premulsum, %v): %v", tt.t, tt.scalar, err)
		}
	}
	// The scalar is ignored by every other op, even when unusable.
	for _, op := range []Op{Sum, Prod, Max, Min, Avg} {
		if _, err := NewKernel(Int8, op, math.NaN(), 1); err != nil {
			t.Errorf("NewKernel(int8, %v, NaN): %v", op, err)
		}
	}
}

// TestKernelScalarExact checks PreMulSum's extreme integer scalars convert
// exactly (no float rounding on the way to the element type).
func TestKernelScalarExact(t *testing.T) {
	k, err := NewKernel(Uint64, PreMulSum, 1<<64-2048, 1)
	if err != nil {
		t.Fatal(err)
	}
	src, dst := make([]byte, 8), make([]byte, 8)
	src[0] = 1
	k.Pre(dst, src)
	if got := getElem(Uint64, dst, 0).i; uint64(got) != 1<<64-2048 {
		t.Fatalf("1 * (2^64-2048) = %d", uint64(got))
	}
	k, _ = NewKernel(Int64, PreMulSum, -(1 << 63), 1)
	k.Pre(dst, src)
	if got := getElem(Int64, dst, 0).i; got != math.MinInt64 {
		t.Fatalf("1 * -2^63 = %d", got)
	}
}

// TestMaxMinNaN pins the documented NaN behaviour: the second operand wins
// whenever the comparison is false.
func TestMaxMinNaN(t *testing.T) { forEachPath(t, testMaxMinNaN) }

func testMaxMinNaN(t *testing.T) {
	nan := math.NaN()
	for _, op := range []Op{Max, Min} {
		k, _ := NewKernel(Float64, op, 0, 1)
		a := f64bytes(nan, 1, -0.0, 0)
		b := f64bytes(1, nan, 0, math.Copysign(0, -1))
		d := make([]byte, len(a))
		k.Combine(d, a, b, false)
		got := []float64{getElem(Float64, d, 0).f, getElem(Float64, d, 1).f, getElem(Float64, d, 2).f, getElem(Float64, d, 3).f}
		want := []float64{1, nan, 0, math.Copysign(0, -1)}
		for i := range want {
			if !sameValue(got[i], want[i]) {
				t.Errorf("%v element %d = %v, want %v", op, i, got[i], want[i])
			}
		}
	}
}

func f64bytes(xs ...float64) []byte {
	b := make([]byte, 8*len(xs))
	for i, x := range xs {
		putLE(b[8*i:8*i+8], math.Float64bits(x))
	}
	return b
}

func TestKernelPanicsOnBadLengths(t *testing.T) {
	k, _ := NewKernel(Float32, Sum, 0, 1)
	for _, tc := range []struct {
		name string
		f    func()
	}{
		{"mismatch", func() { k.Reduce(make([]byte, 8), make([]byte, 8), make([]byte, 4), false) }},
		{"partial element", func() { k.Combine(make([]byte, 6), make([]byte, 6), make([]byte, 6), false) }},
		{"unary mismatch", func() { k.Pre(make([]byte, 8), make([]byte, 4)) }},
	} {
		func() {
			defer func() {
				r := recover()
				if r == nil || !strings.Contains(fmt.Sprint(r), "float") {
					t.Errorf("%s: panic %v, want one naming the type", tc.name, r)
				}
			}()
			tc.f()
		}()
	}
}

func TestSwapBytes(t *testing.T) {
	b := []byte{1, 2, 3, 4, 5, 6, 7, 8}
	swapBytes(b, 4)
	if string(b) != string([]byte{4, 3, 2, 1, 8, 7, 6, 5}) {
		t.Fatalf("swapBytes(4) = %v", b)
	}
	swapBytes(b, 8)
	if string(b) != string([]byte{5, 6, 7, 8, 1, 2, 3, 4}) {
		t.Fatalf("swapBytes(8) = %v", b)
	}
}

// TestKernelNoAllocs checks the aligned hot path allocates nothing.
func TestKernelNoAllocs(t *testing.T) { forEachPath(t, testKernelNoAllocs) }

func testKernelNoAllocs(t *testing.T) {
	for _, dt := range []DataType{Float32, Float16, Int8} {
		k, _ := NewKernel(dt, Sum, 0, 2)
		a, b := make([]byte, 4096), make([]byte, 4096)
		if n := testing.AllocsPerRun(10, func() { k.Reduce(a, a, b, true) }); n != 0 {
			t.Errorf("%v Reduce allocates %v times per call", dt, n)
		}
	}
}

// TestHalfSumMatchesBlocks checks the fused 16-bit sum against the blocked
// loop it replaces, on every pair of a spread of bit patterns.
func TestHalfSumMatchesBlocks(t *testing.T) {
	for _, f := range []halfFormat{fmtF16, fmtBF16} {
		var a, b []byte
		for i := 0; i < 1<<16; i += 97 {
			for j := 0; j < 1<<16; j += 1031 {
				a = append(a, byte(i), byte(i>>8))
				b = append(b, byte(j), byte(j>>8))
			}
		}
		want, got := make([]byte, len(a)), make([]byte, len(a))
		halfBinary(f, hAdd, 0)(want, a, b)
		halfSum(f)(got, a, b)
		isNaN := func(h uint16) bool { // both formats: exponent all ones, fraction non-zero
			if f == fmtF16 {
				return h&0x7fff > 0x7c00
			}
			return h&0x7fff > 0x7f80
		}
		for i := 0; i < len(a); i += 2 {
			g, w := uint16(got[i])|uint16(got[i+1])<<8, uint16(want[i])|uint16(want[i+1])<<8
			if g != w && !(isNaN(g) && isNaN(w)) { // which NaN payload wins may differ
				t.Fatalf("format %d: %#04x + %#04x: fused %#04x, blocked %#04x", f,
					uint16(a[i])|uint16(a[i+1])<<8, uint16(b[i])|uint16(b[i+1])<<8,
					g, w)
			}
		}
	}
}

// TestKernelConcurrent shares one kernel between goroutines, unaligned so
// that the staging scratch pool is exercised (run with -race).
func TestKernelConcurrent(t *testing.T) { forEachPath(t, testKernelConcurrent) }

func testKernelConcurrent(t *testing.T) {
	k, _ := NewKernel(Float32, Avg, 0, 4)
	m := newRefModel(Float32, Avg, 0, 4)
	done := make(chan error)
	for g := range 4 {
		go func() {
			rng := rand.New(rand.NewPCG(uint64(g), 9))
			n := 3000 // > one staging chunk
			a, b := make([]byte, 4*n+1)[1:], make([]byte, 4*n+1)[1:]
			randomElems(rng, Float32, a)
			randomElems(rng, Float32, b)
			d := make([]byte, 4*n+3)[3:]
			for range 20 {
				k.Reduce(d, a, b, true)
			}
			for i := range n {
				want := m.post(m.combine(getElem(Float32, a, i), getElem(Float32, b, i)))
				if got := getElem(Float32, d, i); !m.equal(got, want) {
					done <- fmt.Errorf("goroutine %d element %d: %+v, want %+v", g, i, got, want)
					return
				}
			}
			done <- nil
		}()
	}
	for range 4 {
		if err := <-done; err != nil {
			t.Error(err)
		}
	}
}

// TestHalfUnaryExhaustive runs Pre (PreMulSum) and Post (Avg) of the 16-bit
// types over all 65536 bit patterns.
func TestHalfUnaryExhaustive(t *testing.T) {
	src := make([]byte, 2<<16)
	for i := range 1 << 16 {
		src[2*i], src[2*i+1] = byte(i), byte(i>>8)
	}
	dst := make([]byte, len(src))
	for _, dt := range []DataType{Float16, Bfloat16} {
		for _, cfg := range []struct {
			op     Op
			scalar float64
			n      int
		}{{Avg, 0, 3}, {Avg, 0, 7}, {Avg, 0, 300}, {PreMulSum, 0.3, 1}, {PreMulSum, -1.0 / 3, 1}} {
			k, err := NewKernel(dt, cfg.op, cfg.scalar, cfg.n)
			if err != nil {
				t.Fatal(err)
			}
			m := newRefModel(dt, cfg.op, cfg.scalar, cfg.n)
			k.PrePost(dst, src)
			for i := range 1 << 16 {
				want := m.post(m.pre(getElem(dt, src, i)))
				if got := getElem(dt, dst, i); !m.equal(got, want) {
					t.Fatalf("%v %v (scalar %v, n %d) of %#04x: %+v, want %+v", dt, cfg.op, cfg.scalar, cfg.n, i, got, want)
				}
			}
		}
	}
}
