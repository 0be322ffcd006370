package reduce

import (
	"fmt"
	"math"
	"math/big"
	"math/rand/v2"
	"os"
	"runtime"
	"sort"
	"sync"
	"testing"
)

// halfCase describes one 16-bit format for the table-driven tests.
type halfCase struct {
	name     string
	format   floatFormat
	decode   func(uint16) float64 // reference
	toF32    func(uint16) float32 // under test
	fromF32  func(float32) uint16 // under test
	fromF64  func(float64) uint16 // under test
	maxBits  uint16               // largest finite positive
	infBits  uint16
	quietBit uint16
}

var halfCases = []halfCase{
	{"float16", f16Format, refF16Decode, F16ToFloat32, F16FromFloat32, F16FromFloat64, 0x7bff, 0x7c00, 0x0200},
	{"bfloat16", bf16Format, refBF16Decode, BF16ToFloat32, BF16FromFloat32, BF16FromFloat64, 0x7f7f, 0x7f80, 0x0040},
}

func (c halfCase) isNaN(h uint16) bool { return h&0x7fff > c.infBits }

// midpoints returns, for each positive finite value k (bits 0..maxBits), the
// float64 midpoint between it and the next value up (for maxBits: the
// overflow threshold, max + half an ulp).
func (c halfCase) midpoints() []float64 {
	mids := make([]float64, int(c.maxBits)+1)
	for k := range mids {
		lo := c.decode(uint16(k))
		var hi float64
		if uint16(k) == c.maxBits {
			hi = lo + (lo - c.decode(uint16(k-1))) // next value with an unbounded exponent
		} else {
			hi = c.decode(uint16(k + 1))
		}
		mids[k] = (lo + hi) / 2
	}
	return mids
}

// checkNarrow compares c.fromF32(x) with the reference rounding of x.
func (c halfCase) checkNarrow(t *testing.T, x float32) bool {
	got := c.fromF32(x)
	want := refRound(float64(x), c.format)
	if math.IsNaN(float64(x)) {
		if !c.isNaN(got) || got&c.quietBit == 0 || got>>15 != uint16(math.Float32bits(x)>>31) {
			t.Errorf("%s(NaN %#08x) = %#04x, want a quiet NaN with the same sign", c.name, math.Float32bits(x), got)
			return false
		}
		return true
	}
	if c.isNaN(got) || !sameValue(c.decode(got), want) {
		t.Errorf("%sFromFloat32(%g = %#08x) = %#04x (%g), want %g", c.name, x, math.Float32bits(x), got, c.decode(got), want)
		return false
	}
	return true
}

func TestHalfDecodeExhaustive(t *testing.T) {
	for _, c := range halfCases {
		t.Run(c.name, func(t *testing.T) {
			for i := range 1 << 16 {
				h := uint16(i)
				got, want := float64(c.toF32(h)), c.decode(h)
				if !sameValue(got, want) {
					t.Fatalf("%sToFloat32(%#04x) = %g, want %g", c.name, h, got, want)
				}
			}
		})
	}
}

func TestHalfRoundTripExhaustive(t *testing.T) {
	for _, c := range halfCases {
		t.Run(c.name, func(t *testing.T) {
			for i := range 1 << 16 {
				h := uint16(i)
				back := c.fromF32(c.toF32(h))
				switch {
				case c.isNaN(h):
					if !c.isNaN(back) || back&c.quietBit == 0 || back&0x8000 != h&0x8000 {
						t.Fatalf("NaN %#04x came back as %#04x, want a quiet NaN of the same sign", h, back)
					}
					if h&c.quietBit != 0 && back != h {
						t.Fatalf("quiet NaN %#04x came back as %#04x, want the same bits", h, back)
					}
				case back != h:
					t.Fatalf("%#04x -> %g -> %#04x", h, c.toF32(h), back)
				}
			}
		})
	}
}

// TestHalfFromFloat32Dense checks rounding at and around every rounding
// boundary (each midpoint and 2 float32 ulps either side, both signs), a
// stride through all float32 bit patterns, and named special cases.
func TestHalfFromFloat32Dense(t *testing.T) {
	for _, c := range halfCases {
		t.Run(c.name, func(t *testing.T) {
			var xs []float32
			for i, m := range c.midpoints() {
				if raceEnabled && i%8 != 0 {
					continue
				}
				x := float32(m)
				if float64(x) != m {
					t.Fatalf("midpoint %g is not a float32", m)
				}
				lo, hi := x, x
				for range 2 {
					lo, hi = math.Nextafter32(lo, 0), math.Nextafter32(hi, float32(math.Inf(1)))
					xs = append(xs, lo, hi)
				}
				xs = append(xs, x)
			}
			stride := uint64(4099)
			if raceEnabled {
				stride = 65537
			}
			for b := uint64(0); b < 1<<32; b += stride {
				xs = append(xs, math.Float32frombits(uint32(b)))
			}
			m := float32(c.decode(c.maxBits))
			xs = append(xs, 0, m, math.Nextafter32(m, 0), float32(math.Inf(1)), float32(math.NaN()),
				math.MaxFloat32, math.SmallestNonzeroFloat32, math.Float32frombits(0x7f800001),
				math.Float32frombits(0x7fffffff), math.Float32frombits(0x7fc00000))
			for _, x := range c.named() {
				xs = append(xs, x)
			}
			bad := 0
			for _, x := range xs {
				for _, y := range []float32{x, -x} {
					if !c.checkNarrow(t, y) {
						if bad++; bad > 10 {
							t.Fatal("too many errors")
						}
					}
				}
			}
		})
	}
}

// named lists hand-picked inputs with the expected bits, checked against
// both the code and the reference.
func (c halfCase) named() []float32 {
	if c.name == "float16" {
		return []float32{
			0x1p-24, 0x1p-25, 0x1.000002p-25, 0x1.7ffffep-25, 0x1.8p-24, 0x1.4p-23, // smallest subnormal area, ties
			0x1p-14, 0x1.ff8p-15, 0x1.ffcp-15, 0x1.ffep-15, // largest subnormal -> smallest normal
			65504, 65519, 65519.996, 65520, 65536, 1e9, // overflow threshold
			1 + 0x1p-11, 1 + 0x3p-11, 1 + 0x1p-11 + 0x1p-23, // ties to even, just above
		}
	}
	return []float32{
		0x1p-133, 0x1p-134, 0x1.8p-133, 0x1p-126, 0x1.fcp-127,
		1 + 0x1p-8, 1 + 0x3p-8, 1 + 0x1p-8 + 0x1p-23,
		0x1.fep127, 0x1.fefffep127, 0x1.ffp127, math.MaxFloat32,
	}
}

func TestHalfNamedBits(t *testing.T) {
	tests := []struct {
		f    float32
		f16  uint16
		bf16 uint16
	}{
		{0, 0x0000, 0x0000},
		{float32(math.Copysign(0, -1)), 0x8000, 0x8000},
		{1, 0x3c00, 0x3f80},
		{-2, 0xc000, 0xc000},
		{65504, 0x7bff, 0x4780},
		{65280, 0x7bf8, 0x477f},
		{65520, 0x7c00, 0x4780}, // f16: tie between max and Inf goes to Inf (even)
		{0x1p-24, 0x0001, 0x3380},
		{0x1p-25, 0x0000, 0x3300}, // f16: tie between 0 and 2^-24 goes to 0 (even)
		{0x1.8p-24, 0x0002, 0x33c0},
		{1 + 0x1p-11, 0x3c00, 0x3f80}, // tie -> even (1.0)
		{1 + 0x3p-11, 0x3c02, 0x3f80}, // tie -> even (up)
		{1 + 0x1p-8, 0x3c04, 0x3f80},  // bf16 tie -> even
		{1 + 0x3p-8, 0x3c0c, 0x3f82},  // bf16 tie -> even (up)
		{float32(math.Inf(-1)), 0xfc00, 0xff80},
		{math.MaxFloat32, 0x7c00, 0x7f80},
		{math.Float32frombits(0x7fa00000), 0x7f00, 0x7fe0}, // signaling NaN gets quiet
	}
	for _, tt := range tests {
		if got := F16FromFloat32(tt.f); got != tt.f16 {
			t.Errorf("F16FromFloat32(%g) = %#04x, want %#04x", tt.f, got, tt.f16)
		}
		if got := BF16FromFloat32(tt.f); got != tt.bf16 {
			t.Errorf("BF16FromFloat32(%g) = %#04x, want %#04x", tt.f, got, tt.bf16)
		}
	}
}

// TestHalfFromFloat64 checks the one-rounding float64 conversions where
// float64 -> float32 -> 16 bits would round twice: just off each midpoint.
func TestHalfFromFloat64(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for _, c := range halfCases {
		t.Run(c.name, func(t *testing.T) {
			check := func(x float64) {
				got := c.fromF64(x)
				want := refRound(x, c.format)
				if math.IsNaN(x) {
					if !c.isNaN(got) {
						t.Fatalf("%sFromFloat64(NaN) = %#04x, want a NaN", c.name, got)
					}
					return
				}
				if c.isNaN(got) || !sameValue(c.decode(got), want) {
					t.Fatalf("%sFromFloat64(%v) = %#04x (%g), want %g", c.name, x, got, c.decode(got), want)
				}
			}
			mids := c.midpoints()
			for i := 0; i < len(mids); i += 7 {
				if raceEnabled && i%5 != 0 {
					continue
				}
				m := mids[i]
				for _, x := range []float64{m, m * (1 + 0x1p-40), m * (1 - 0x1p-40), math.Nextafter(m, 0), math.Nextafter(m, math.Inf(1))} {
					check(x)
					check(-x)
				}
			}
			samples := 100000
			if raceEnabled {
				samples = 10000
			}
			for range samples {
				check(math.Float64frombits(rng.Uint64()))
				check(rng.NormFloat64() * math.Ldexp(1, rng.IntN(60)-40))
			}
			for _, x := range []float64{0, math.Inf(1), math.Inf(-1), 1e300, 1e-300, math.MaxFloat64, 5e-324} {
				check(x)
			}
			if !c.isNaN(c.fromF64(math.NaN())) {
				t.Fatal("NaN did not stay NaN")
			}
		})
	}
}

// TestRefRoundAgainstBig validates refRound itself against math/big in the
// normal range, where big.Float (unbounded exponent) rounds the same way.
func TestRefRoundAgainstBig(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for _, c := range halfCases {
		minNormal := math.Ldexp(1, c.format.emin)
		for range 20000 {
			// 53 random significand bits, any exponent of the normal range.
			x := math.Ldexp(1+rng.Float64(), rng.IntN(2*-c.format.emin)+c.format.emin)
			if x < minNormal || x > c.format.max {
				continue
			}
			b, _ := new(big.Float).SetMode(big.ToNearestEven).SetPrec(uint(c.format.prec)).SetFloat64(x).Float64()
			if got := refRound(x, c.format); got != b {
				t.Fatalf("%s: refRound(%v) = %v, math/big says %v", c.name, x, got, b)
			}
		}
	}
}

// TestHalfFromFloat32Exhaustive checks every float32 against the midpoint
// table. It takes tens of seconds, so it runs only with GCCL_EXHAUSTIVE=1.
func TestHalfFromFloat32Exhaustive(t *testing.T) {
	if testing.Short() || os.Getenv("GCCL_EXHAUSTIVE") == "" {
		t.Skip("set GCCL_EXHAUSTIVE=1 to check all 2^32 float32 inputs")
	}
	for _, c := range halfCases {
		t.Run(c.name, func(t *testing.T) {
			mids := c.midpoints()
			const inf = 0x7f800000
			workers := runtime.GOMAXPROCS(0)
			chunk := uint32(inf/workers + 1)
			var wg sync.WaitGroup
			errs := make([]error, workers)
			for w := range workers {
				wg.Add(1)
				go func() {
					defer wg.Done()
					lo, hi := uint32(w)*chunk, min(uint64(w+1)*uint64(chunk), inf)
					// k: number of midpoints below x, maintained as x grows.
					k := sort.SearchFloat64s(mids, float64(math.Float32frombits(lo)))
					for b := uint64(lo); b < hi; b++ {
						x := math.Float32frombits(uint32(b))
						for k < len(mids) && mids[k] < float64(x) {
							k++
						}
						want := uint16(k)
						if k < len(mids) && mids[k] == float64(x) && k&1 == 1 {
							want++ // tie: to the even neighbour
						}
						if got := c.fromF32(x); got != want {
							errs[w] = fmt.Errorf("%#08x: got %#04x want %#04x", b, got, want)
							return
						}
						if got := c.fromF32(-x); got != want|0x8000 {
							errs[w] = fmt.Errorf("-%#08x: got %#04x want %#04x", b, got, want|0x8000)
							return
						}
					}
				}()
			}
			wg.Wait()
			for _, err := range errs {
				if err != nil {
					t.Fatal(err)
				}
			}
			for b := uint32(inf + 1); b < 0x80000000; b += 97 { // NaNs, sampled
				for _, s := range []uint32{0, 0x80000000} {
					x := math.Float32frombits(b | s)
					if got := c.fromF32(x); !c.isNaN(got) || got&c.quietBit == 0 || got&0x8000 != uint16(s>>16) {
						t.Fatalf("NaN %#08x -> %#04x", b|s, got)
					}
				}
			}
		})
	}
}
