package reduce

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
	"unsafe"
)

// The vector loops must give exactly the portable loops' bits: every type
// and loop, every length up to a few vectors past the unrolled block, starts
// that are element-aligned but not vector-aligned, in and out of place, on
// inputs rich in special values. Float NaN results need only be NaN where
// the portable result is (which operand's payload wins is unspecified),
// except for max and min, which select an operand and must pick the same.

// forEachPath runs f with NewKernel using the vector loops (where the CPU
// has them) and then the portable ones.
func forEachPath(t *testing.T, f func(t *testing.T)) {
	t.Helper()
	defer func(saved bool) { useVectorLoops = saved }(useVectorLoops)
	paths := []bool{false}
	if hasVectorLoops {
		paths = []bool{true, false}
	}
	for _, vec := range paths {
		useVectorLoops = vec
		name := "portable"
		if vec {
			name = "vector"
		}
		t.Run(name, f)
	}
}

// loopCase is one loop of loops, as a binary function (unary loops ignore b).
type loopCase struct {
	name    string
	get     func(l loops) binaryFn
	selects bool // the loop selects an operand: NaN bits must match too
}

var loopCases = []loopCase{
	{"add", func(l loops) binaryFn { return l.add }, false},
	{"mul", func(l loops) binaryFn { return l.mul }, false},
	{"max", func(l loops) binaryFn { return l.max }, true},
	{"min", func(l loops) binaryFn { return l.min }, true},
	{"addScaled", func(l loops) binaryFn { return l.addScaled }, false},
	{"addDiv", func(l loops) binaryFn { return l.addDiv }, false},
	{"scale", func(l loops) binaryFn { return asBinary(l.scale) }, false},
	{"div", func(l loops) binaryFn { return asBinary(l.div) }, false},
}

// asBinary makes a unary loop a binary one over a (b is ignored).
func asBinary(f unaryFn) binaryFn { return func(d, a, _ []byte) { f(d, a) } }

func TestVectorLoopsMatchPortable(t *testing.T) {
	if !hasVectorLoops {
		t.Skip("no vector loops on this CPU or build")
	}
	lengths := []int{4099, 1 << 14}
	for n := 0; n <= 130; n++ {
		lengths = append(lengths, n)
	}
	if raceEnabled {
		lengths = []int{0, 1, 7, 8, 31, 32, 33, 63, 64, 65, 130, 4099}
	}
	rng := rand.New(rand.NewPCG(3, 5))
	for _, dt := range AllDataTypes() {
		// scalar and nRanks as PreMulSum and Avg would use them.
		cfgs := [][2]float64{{3, 3}, {201, 1}}
		switch {
		case dt.IsFloat():
			cfgs = [][2]float64{{0.3, 3}, {-2.75, 7}, {1e-3, 1}}
		case isSigned(dt):
			cfgs = [][2]float64{{3, 3}, {-7, 300}}
		}
		for _, cfg := range cfgs {
			portable := portableLoops(dt, cfg[0], int(cfg[1]))
			vector := vectorLoops(dt, portable, cfg[0], int(cfg[1]))
			for _, lc := range loopCases {
				name := fmt.Sprintf("%v/%s/s=%v/n=%v", dt, lc.name, cfg[0], cfg[1])
				t.Run(name, func(t *testing.T) {
					for _, n := range lengths {
						checkVectorLoop(t, rng, dt, lc, lc.get(vector), lc.get(portable), n)
					}
				})
			}
		}
	}
}

// checkVectorLoop compares vec and ref on n elements of dt, at several
// element-aligned misalignments of each operand, in and out of place.
func checkVectorLoop(t *testing.T, rng *rand.Rand, dt DataType, lc loopCase, vec, ref binaryFn, n int) {
	t.Helper()
	size := dt.Size()
	a, b := make([]byte, n*size), make([]byte, n*size)
	specialElems(rng, dt, a)
	specialElems(rng, dt, b)
	want := make([]byte, len(a))
	ref(want, a, b)

	for _, offs := range [][3]int{{0, 0, 0}, {1, 1, 1}, {3, 1, 0}, {0, 5, 2}} {
		for _, alias := range []string{"out", "dst=a", "dst=b"} {
			va, vb := atOffset(a, offs[1]*size), atOffset(b, offs[2]*size)
			vd := atOffset(make([]byte, len(a)), offs[0]*size)
			switch alias {
			case "dst=a":
				vd = va
			case "dst=b":
				vd = vb
			}
			vec(vd, va, vb)
			if i, ok := sameBits(dt, vd, want, !lc.selects); !ok {
				t.Fatalf("n=%d offsets %v %s: element %d is %#x, portable loop gives %#x (a %#x, b %#x)",
					n, offs, alias, i, vd[i*size:(i+1)*size], want[i*size:(i+1)*size],
					a[i*size:(i+1)*size], b[i*size:(i+1)*size])
			}
		}
	}
}

// atOffset copies b to a buffer starting off bytes past a 64-byte boundary.
func atOffset(b []byte, off int) []byte {
	buf := make([]byte, len(b)+off+64)
	pad := int(-uintptr(unsafe.Pointer(&buf[0])) & 63)
	c := buf[pad+off : pad+off+len(b)]
	copy(c, b)
	return c
}

// sameBits reports the first element where got and want differ in bits
// (anyNaN: or where both are NaNs, whatever their bits).
func sameBits(dt DataType, got, want []byte, anyNaN bool) (int, bool) {
	size := dt.Size()
	for i := 0; i < len(want)/size; i++ {
		g, w := got[i*size:(i+1)*size], want[i*size:(i+1)*size]
		if string(g) == string(w) {
			continue
		}
		if anyNaN && dt.IsFloat() && math.IsNaN(getElem(dt, g, 0).f) && math.IsNaN(getElem(dt, w, 0).f) {
			continue
		}
		return i, false
	}
	return 0, true
}

// specialElems fills b with elements of dt: half of them edge values (for
// floats NaNs of both signs, quiet and signalling, ±Inf, ±0, subnormals,
// the extremes; for integers the extremes, 0 and ±1) and half random bits,
// so that every vector mixes both.
func specialElems(rng *rand.Rand, dt DataType, b []byte) {
	var specials []uint64
	switch dt {
	case Float32:
		for _, x := range []uint32{0x7fc00000, 0xffc00001, 0x7f800001, 0x7fa5a5a5, 0x7f800000, 0xff800000,
			0, 0x80000000, 1, 0x80000001, 0x007fffff, 0x00800000, 0x7f7fffff, 0xff7fffff, 0x3f800000, 0xbf800000} {
			specials = append(specials, uint64(x))
		}
	case Float64:
		specials = []uint64{0x7ff8000000000000, 0xfff8000000000001, 0x7ff0000000000001, 0x7ff4a5a5a5a5a5a5,
			0x7ff0000000000000, 0xfff0000000000000, 0, 1 << 63, 1, 1<<63 | 1, 0x000fffffffffffff,
			0x0010000000000000, 0x7fefffffffffffff, 0xffefffffffffffff, 0x3ff0000000000000, 0xbff0000000000000}
	case Float16, Bfloat16:
		specials = []uint64{0x7e00, 0xfe01, 0x7c01, 0x7f80, 0xff81, 0x7c00, 0xfc00, 0, 0x8000, 1, 0x8001, 0x3c00}
	default:
		bits := 8 * dt.Size()
		top := uint64(1) << (bits - 1)
		specials = []uint64{0, 1, math.MaxUint64, top, top - 1, top + 1, 2, math.MaxUint64 - 1}
	}
	size := dt.Size()
	for i := 0; i+size <= len(b); i += size {
		v := rng.Uint64()
		if rng.IntN(2) == 0 {
			v = specials[rng.IntN(len(specials))]
		}
		putLE(b[i:i+size], v)
	}
}

// TestVectorSpecialPairs runs every pair of a sample of edge values through
// the loops of both paths (each pair once, in some vector lane).
func TestVectorSpecialPairs(t *testing.T) {
	if !hasVectorLoops {
		t.Skip("no vector loops on this CPU or build")
	}
	rng := rand.New(rand.NewPCG(1, 2))
	for _, dt := range []DataType{Float32, Float64, Int64, Uint64, Int32, Uint32, Int8, Uint8} {
		size := dt.Size()
		one := make([]byte, 64*size)
		specialElems(rng, dt, one)
		// Every element of one against every other, in lane order.
		n := len(one) / size
		a, b := make([]byte, 0, n*n*size), make([]byte, 0, n*n*size)
		for i := range n {
			for j := range n {
				a = append(a, one[i*size:(i+1)*size]...)
				b = append(b, one[j*size:(j+1)*size]...)
			}
		}
		portable := portableLoops(dt, 0.3, 3)
		if !dt.IsFloat() {
			portable = portableLoops(dt, 3, 3)
		}
		vector := vectorLoops(dt, portable, 0.3, 3)
		if !dt.IsFloat() {
			vector = vectorLoops(dt, portable, 3, 3)
		}
		for _, lc := range loopCases {
			want, got := make([]byte, len(a)), make([]byte, len(a))
			lc.get(portable)(want, a, b)
			lc.get(vector)(got, a, b)
			if i, ok := sameBits(dt, got, want, !lc.selects); !ok {
				t.Errorf("%v %s: %#x OP %#x = %#x, portable loop gives %#x", dt, lc.name,
					a[i*size:(i+1)*size], b[i*size:(i+1)*size], got[i*size:(i+1)*size], want[i*size:(i+1)*size])
			}
		}
	}
}

// TestVectorLoopsConcurrent shares vector loops between goroutines that
// each work in place on their own buffers (run with -race).
func TestVectorLoopsConcurrent(t *testing.T) {
	forEachPath(t, func(t *testing.T) {
		k, err := NewKernel(Float64, Sum, 0, 1)
		if err != nil {
			t.Fatal(err)
		}
		done := make(chan error)
		for g := range 4 {
			go func() {
				n := 1000 + g
				acc, one := make([]byte, 8*n), make([]byte, 8*n)
				for i := range n {
					putLE(one[8*i:8*i+8], math.Float64bits(1))
				}
				for range 50 {
					k.Reduce(acc, acc, one, false)
				}
				for i := range n {
					if got := getElem(Float64, acc, i).f; got != 50 {
						done <- fmt.Errorf("goroutine %d element %d = %v, want 50", g, i, got)
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
	})
}

// TestVectorF16SumExhaustive adds every float16 bit pattern to edge values
// and to a shuffle of all patterns on both paths: exact bits, except that
// NaN sums need only be quiet NaNs on both.
func TestVectorF16SumExhaustive(t *testing.T) {
	if !hasVectorLoops {
		t.Skip("no vector loops on this CPU or build")
	}
	portable := portableLoops(Float16, 0, 1)
	vector := vectorLoops(Float16, portable, 0, 1)
	a := make([]byte, 2<<16)
	for i := range 1 << 16 {
		putLE(a[2*i:2*i+2], uint64(i))
	}
	shuffled := make([]byte, len(a))
	for i, j := range rand.New(rand.NewPCG(5, 8)).Perm(1 << 16) {
		putLE(shuffled[2*i:2*i+2], uint64(j))
	}
	b, want, got := make([]byte, len(a)), make([]byte, len(a)), make([]byte, len(a))
	isNaN := func(h uint16) bool { return h&0x7fff > 0x7c00 }
	for _, c := range []int{-1, 0, 0x8000, 1, 0x8001, 0x03ff, 0x0400, 0x3c00, 0xbc00, 0x7bff, 0xfbff, 0x7c00, 0xfc00, 0x7e00, 0x7d00} {
		if c < 0 {
			copy(b, shuffled)
		} else {
			for i := 0; i < len(b); i += 2 {
				putLE(b[i:i+2], uint64(c))
			}
		}
		portable.add(want, a, b)
		vector.add(got, a, b)
		for i := 0; i < len(a); i += 2 {
			g, w := uint16(got[i])|uint16(got[i+1])<<8, uint16(want[i])|uint16(want[i+1])<<8
			if g == w || isNaN(g) && isNaN(w) && g&0x0200 != 0 {
				continue
			}
			t.Fatalf("%#04x + %#04x: vector %#04x, portable %#04x", i/2, uint16(b[i])|uint16(b[i+1])<<8, g, w)
		}
	}
}
