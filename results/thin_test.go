package results

import (
	"math"
	"slices"
	"testing"
)

func TestThin(t *testing.T) {
	v := []float64{5, 3, 1, 4, 2, 0, -1, math.Inf(1)}
	if got := Thin(v, 10); !slices.Equal(got, []float64{1, 2, 3, 4, 5}) {
		t.Errorf("Thin keeps %v", got)
	}
	if v[0] != 5 {
		t.Error("Thin modified its input")
	}
	var big []float64
	for i := range 1000 {
		big = append(big, float64(999-i))
	}
	got := Thin(big, 100)
	if len(got) != 100 || got[0] != 5 || got[99] != 995 || !slices.IsSorted(got) {
		t.Errorf("Thin(0..999, 100): %d values, %v ... %v", len(got), got[0], got[len(got)-1])
	}
	if m := (got[49] + got[50]) / 2; m != 500 {
		t.Errorf("thinned median %v, want 500", m)
	}
}
