package ci

import (
	"hash/fnv"
	"math"
	"math/rand/v2"
	"slices"
)

// minUTestP is the smallest two-sided p-value a Mann-Whitney U test can
// give for samples of n1 and n2 values (no ties): 2/C(n1+n2, n1). Below
// alpha, the test can detect a difference; above it, it never will.
func minUTestP(n1, n2 int) float64 {
	if n1 < 1 || n2 < 1 {
		return 1
	}
	lg := func(x int) float64 { v, _ := math.Lgamma(float64(x) + 1); return v }
	logC := lg(n1+n2) - lg(n1) - lg(n2)
	return math.Min(1, 2*math.Exp(-logC))
}

// minRunsFor is the smallest n such that n vs n samples can reach alpha.
func minRunsFor(alpha float64) int {
	for n := 2; n < 100; n++ {
		if minUTestP(n, n) <= alpha {
			return n
		}
	}
	return 100
}

// median of a sorted slice.
func median(s []float64) float64 {
	n := len(s)
	if n == 0 {
		return math.NaN()
	}
	return (s[(n-1)/2] + s[n/2]) / 2
}

// bootstrapResamples is the number of resamples for the ratio's interval.
const bootstrapResamples = 2000

// ratioCI is a percentile bootstrap confidence interval for
// median(c)/median(b) at the given confidence. b and c are sorted. The
// random stream is seeded from seed, so a report is reproducible.
func ratioCI(b, c []float64, confidence float64, seed string) (lo, hi float64) {
	h := fnv.New64a()
	h.Write([]byte(seed))
	rng := rand.New(rand.NewPCG(h.Sum64(), 0x9e3779b97f4a7c15))
	rb, rc := newResampler(b), newResampler(c)
	ratios := make([]float64, bootstrapResamples)
	for i := range ratios {
		ratios[i] = rc.median(rng) / rb.median(rng)
	}
	slices.Sort(ratios)
	tail := (1 - confidence) / 2
	at := func(q float64) float64 {
		return ratios[min(len(ratios)-1, max(0, int(math.Round(q*float64(len(ratios)-1)))))]
	}
	return at(tail), at(1 - tail)
}

// resampler draws the median of a bootstrap resample of a sorted sample:
// n indices drawn with replacement, counted, and the middle ones looked up
// (the values are sorted, so the median of the values is the value at the
// median index). O(n) per draw.
type resampler struct {
	v     []float64
	count []int
}

func newResampler(v []float64) *resampler { return &resampler{v: v, count: make([]int, len(v))} }

func (r *resampler) median(rng *rand.Rand) float64 {
	n := len(r.v)
	if n == 1 {
		return r.v[0]
	}
	clear(r.count)
	for range n {
		r.count[rng.IntN(n)]++
	}
	lo, hi := (n-1)/2, n/2 // ranks of the middle element(s)
	var vlo, vhi float64
	seen := 0
	for i, k := range r.count {
		if k == 0 {
			continue
		}
		if seen <= lo && lo < seen+k {
			vlo = r.v[i]
		}
		if seen <= hi && hi < seen+k {
			vhi = r.v[i]
			break
		}
		seen += k
	}
	return (vlo + vhi) / 2
}
