package ci

import (
	"math"
	"slices"
	"testing"
)

func TestMinUTestP(t *testing.T) {
	// The exact minimum two-sided p of the U test: 2/C(n1+n2, n1).
	for _, tc := range []struct {
		n1, n2 int
		p      float64
	}{{1, 1, 1}, {2, 2, 1.0 / 3}, {3, 3, 0.1}, {4, 4, 2.0 / 70}, {5, 5, 2.0 / 252}, {1, 20, 2.0 / 21}, {2, 10, 2.0 / 66}} {
		if got := minUTestP(tc.n1, tc.n2); math.Abs(got-tc.p) > 1e-12 {
			t.Errorf("minUTestP(%d, %d) = %v, want %v", tc.n1, tc.n2, got, tc.p)
		}
	}
	if n := minRunsFor(0.05); n != 4 {
		t.Errorf("minRunsFor(0.05) = %d, want 4", n)
	}
}

func TestRatioCI(t *testing.T) {
	b := jitter(1, 30, 100, 0.05)
	c := jitter(2, 30, 120, 0.05)
	slices.Sort(b)
	slices.Sort(c)
	lo, hi := ratioCI(b, c, 0.95, "k")
	r := median(c) / median(b)
	if !(lo < r && r < hi && lo > 1.1 && hi < 1.3) {
		t.Errorf("interval [%v, %v] around %v", lo, hi, r)
	}
	if lo2, hi2 := ratioCI(b, c, 0.95, "k"); lo2 != lo || hi2 != hi {
		t.Error("not reproducible")
	}
	if lo, hi := ratioCI([]float64{2}, []float64{3}, 0.95, "k"); lo != 1.5 || hi != 1.5 {
		t.Errorf("single values: [%v, %v]", lo, hi)
	}
}
