package results

import (
	"math"
	"slices"
)

// Thin returns at most n evenly spaced order statistics of v (the
// (i+0.5)/n quantiles), sorted; v itself sorted when it has no more than n
// values. v is not modified. Non-positive and non-finite values are dropped.
func Thin(v []float64, n int) []float64 {
	s := make([]float64, 0, len(v))
	for _, x := range v {
		if x > 0 && !math.IsInf(x, 0) {
			s = append(s, x)
		}
	}
	slices.Sort(s)
	if n <= 0 || len(s) <= n {
		return s
	}
	out := make([]float64, n)
	for i := range out {
		out[i] = s[(2*i+1)*len(s)/(2*n)]
	}
	return out
}
