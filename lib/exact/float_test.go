package exact

import (
	"math"
	"math/rand/v2"
	"testing"
)

// The general rounding routine, instantiated for binary32, must agree with
// Go's float64 -> float32 conversion (hardware round to nearest even),
// including ties, subnormals, underflow and overflow.
func TestRoundSmallMatchesFloat32(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	check := func(x float64) {
		got := roundSmall(x, f32Exp, f32Mant)
		want := uint64(math.Float32bits(float32(x)))
		if math.IsNaN(x) {
			if got&0x7fffffff <= 0x7f800000 {
				t.Fatalf("roundSmall(NaN) = %#x, not a NaN", got)
			}
			return
		}
		if got != want {
			t.Fatalf("roundSmall(%v [%#x]) = %#x, want %#x", x, math.Float64bits(x), got, want)
		}
	}
	for _, x := range []float64{0, math.Copysign(0, -1), 1, -1, math.MaxFloat32, -math.MaxFloat32,
		math.SmallestNonzeroFloat32, math.SmallestNonzeroFloat32 / 2, math.SmallestNonzeroFloat32 * 0.75,
		math.Inf(1), math.Inf(-1), math.NaN(), math.MaxFloat64, math.SmallestNonzeroFloat64, 1e-300, 1e300} {
		check(x)
	}
	iters := 30000
	if raceEnabled {
		iters = 3000
	}
	for range iters {
		// Random bits (any exponent) and values near float32's range.
		check(math.Float64frombits(rng.Uint64()))
		f := math.Float32frombits(rng.Uint32())
		if math.IsNaN(float64(f)) {
			continue
		}
		g := math.Nextafter32(f, float32(math.Inf(1)))
		mid := (float64(f) + float64(g)) / 2 // exact: a tie
		check(mid)
		check(math.Nextafter(mid, math.Inf(1)))
		check(math.Nextafter(mid, math.Inf(-1)))
		check(float64(f))
	}
}

// exhaustiveSmall checks the conversions of a 16-bit format for every
// pattern: exact round trips, ties to even at every midpoint, and correct
// rounding just off every midpoint (including the overflow threshold).
func exhaustiveSmall(t *testing.T, from func(float64) uint16, to func(uint16) float64, expBits, mantBits uint) {
	inf := uint16((1<<expBits - 1) << mantBits)
	for a := uint16(0); a < inf; a++ {
		for _, sign := range []uint16{0, 0x8000} {
			x := to(a | sign)
			if got := from(x); got != a|sign {
				t.Fatalf("round trip of %#x: %v -> %#x", a|sign, x, got)
			}
			var y float64
			if a+1 == inf {
				y = math.Ldexp(1, int(1<<(expBits-1))) // 2^(emax+1)
			} else {
				y = to(a + 1)
			}
			if sign != 0 {
				y = -y
			}
			mid := (x + y) / 2 // exact in float64
			even := a | sign
			if a&1 == 1 {
				even = (a + 1) | sign
			}
			if got := from(mid); got != even {
				t.Fatalf("tie %v between %#x and %#x -> %#x, want %#x", mid, a|sign, (a+1)|sign, got, even)
			}
			if got := from(math.Nextafter(mid, x)); got != a|sign {
				t.Fatalf("%v just below the midpoint -> %#x, want %#x", math.Nextafter(mid, x), got, a|sign)
			}
			if got := from(math.Nextafter(mid, y)); got != (a+1)|sign {
				t.Fatalf("%v just above the midpoint -> %#x, want %#x", math.Nextafter(mid, y), got, (a+1)|sign)
			}
		}
	}
	if got := from(math.Inf(-1)); got != inf|0x8000 {
		t.Fatalf("-Inf -> %#x", got)
	}
	if got := from(math.Ldexp(1, 1<<(expBits-1)+1)); got != inf {
		t.Fatalf("2^(emax+2) -> %#x", got)
	}
	if got := from(math.NaN()); got&0x7fff <= inf {
		t.Fatalf("NaN -> %#x", got)
	}
	if !math.IsNaN(to(inf | 1)) {
		t.Fatalf("%#x is not NaN", inf|1)
	}
	if got := from(1e-60); got != 0 {
		t.Fatalf("1e-60 -> %#x", got)
	}
	if got := from(-1e-60); got != 0x8000 {
		t.Fatalf("-1e-60 -> %#x", got)
	}
}

func TestFloat16Exhaustive(t *testing.T) {
	exhaustiveSmall(t, f16FromF64, f16ToF64, f16Exp, f16Mant)
	for _, c := range []struct {
		x    float64
		bits uint16
	}{
		{1, 0x3c00}, {-2, 0xc000}, {65504, 0x7bff}, {65519.99, 0x7bff}, {65520, 0x7c00},
		{0.5, 0x3800}, {1.0 / 3, 0x3555}, {math.Ldexp(1, -24), 0x0001}, {math.Ldexp(1, -25), 0},
		{math.Ldexp(3, -26), 0x0001}, {math.Ldexp(1, -14), 0x0400}, {2049, 0x6800}, {2051, 0x6802},
	} {
		if got := f16FromF64(c.x); got != c.bits {
			t.Errorf("f16(%v) = %#x, want %#x", c.x, got, c.bits)
		}
	}
}

func TestBfloat16Exhaustive(t *testing.T) {
	exhaustiveSmall(t, bf16FromF64, bf16ToF64, bf16Exp, bf16Mant)
	// Against the usual bit trick on float32 inputs.
	rng := rand.New(rand.NewPCG(3, 4))
	for range 200000 {
		u := rng.Uint32()
		f := math.Float32frombits(u)
		if math.IsNaN(float64(f)) {
			continue
		}
		want := uint16((u + 0x7fff + (u>>16)&1) >> 16)
		if got := bf16FromF64(float64(f)); got != want {
			t.Fatalf("bf16(%v [%#x]) = %#x, want %#x", f, u, got, want)
		}
	}
	for _, c := range []struct {
		x    float64
		bits uint16
	}{{1, 0x3f80}, {-1, 0xbf80}, {257, 0x4380}, {259, 0x4382}, {256.5, 0x4380}, {3.0 / 64, 0x3d40}} {
		if got := bf16FromF64(c.x); got != c.bits {
			t.Errorf("bf16(%v) = %#x, want %#x", c.x, got, c.bits)
		}
	}
}
