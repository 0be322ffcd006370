package report

import (
	"cmp"
	"math"
	"slices"
)

// change is a change point's relative step, After/Before - 1; NaN when
// Before is 0 (no ratio).
func (c ChangePoint) change() float64 {
	if c.Before == 0 {
		return math.NaN()
	}
	return c.After/c.Before - 1
}

// regression says the change makes the key worse.
func (c ChangePoint) regression(lowerIsBetter bool) bool {
	if lowerIsBetter {
		return c.After > c.Before
	}
	return c.After < c.Before
}

// stepSize is |change| of a change point, infinite when its ratio is
// unknown (Before is 0).
func (c ChangePoint) stepSize() float64 {
	d := math.Abs(c.change())
	if math.IsNaN(d) {
		return math.Inf(1)
	}
	return d
}

// largest is a series' change point of the largest step; the series has
// at least one.
func (s KeySeries) largest() ChangePoint {
	best := s.Changes[0]
	for _, c := range s.Changes[1:] {
		if c.stepSize() > best.stepSize() {
			best = c
		}
	}
	return best
}

// movement is the newest point relative to the median of the ones
// before it, minus 1; NaN with fewer than 2 points or a median of 0.
func (s KeySeries) movement() float64 {
	n := len(s.Points)
	if n < 2 {
		return math.NaN()
	}
	prev := make([]float64, n-1)
	for i, p := range s.Points[:n-1] {
		prev[i] = p.Value
	}
	m := median(prev)
	if m == 0 {
		return math.NaN()
	}
	return s.Points[n-1].Value/m - 1
}

// drawn picks the series drawn in full, at most n of them: those with
// change points first, by their largest change, then those without, by
// how far their newest run moved (keys that did not move at all are not
// drawn). Ties keep the caller's order. It returns indices into series.
func drawn(series []KeySeries, n int) []int {
	type cand struct {
		i       int
		changes bool
		score   float64
	}
	var cs []cand
	for i, s := range series {
		if len(s.Changes) > 0 {
			cs = append(cs, cand{i, true, s.largest().stepSize()})
		} else if m := math.Abs(s.movement()); m > 0 { // NaN > 0 is false
			cs = append(cs, cand{i, false, m})
		}
	}
	slices.SortStableFunc(cs, func(a, b cand) int {
		if a.changes != b.changes {
			if a.changes {
				return -1
			}
			return 1
		}
		return cmp.Compare(b.score, a.score)
	})
	out := make([]int, 0, min(n, len(cs)))
	for _, c := range cs[:min(n, len(cs))] {
		out = append(out, c.i)
	}
	return out
}

// median of xs, which it sorts; NaN when empty.
func median(xs []float64) float64 {
	if len(xs) == 0 {
		return math.NaN()
	}
	slices.Sort(xs)
	m := len(xs) / 2
	if len(xs)%2 == 1 {
		return xs[m]
	}
	return (xs[m-1] + xs[m]) / 2
}
