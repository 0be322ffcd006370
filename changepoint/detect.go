package changepoint

import (
	"fmt"
	"math"
	"slices"
	"sort"
)

// Defaults (Otava's where it has one).
const (
	DefaultPValue       = 0.001
	DefaultWindow       = 50
	DefaultPermutations = 1999 // the smallest p-value it can show is 1/2000
	DefaultMinSize      = 3    // a step needs this many points on each side
)

// Options tune Detect; a zero field takes its default.
type Options struct {
	// PValue: a change point is reported when its permutation p-value is at
	// most this, in (0, 1]. Default 0.001.
	PValue float64
	// Window: the series is searched in overlapping windows of this many
	// points, and a change point is tested against at most this many points
	// on each side. Default 50.
	Window int
	// Permutations per test, at least 1/PValue - 1 (fewer could never show
	// a p-value that small). Default 1999.
	Permutations int
	// MinSize: the fewest points on each side of a change point, at least 2.
	// Default 3, so that one or two outlying runs are not a step.
	MinSize int
	// MinChange: change points whose relative change |After/Before - 1| is
	// below this are dropped. Default 0 (none are).
	MinChange float64
}

// A ChangePoint is a step in a series.
type ChangePoint struct {
	Index  int     `json:"index"`   // the first point after the change
	PValue float64 `json:"p_value"` // its permutation p-value against its neighbours
	Before float64 `json:"before"`  // the median of the segment before it
	After  float64 `json:"after"`   // the median of the segment after it
	Change float64 `json:"change"`  // After/Before - 1: -0.05 is a 5% drop
}

// Regression says whether the change is for the worse: a drop when higher
// is better (bandwidth), a rise otherwise (time).
func (c ChangePoint) Regression(higherIsBetter bool) bool {
	if higherIsBetter {
		return c.Change < 0
	}
	return c.Change > 0
}

func (o Options) resolve() (Options, error) {
	if o.PValue == 0 {
		o.PValue = DefaultPValue
	}
	if o.Window == 0 {
		o.Window = DefaultWindow
	}
	if o.Permutations == 0 {
		o.Permutations = DefaultPermutations
	}
	if o.MinSize == 0 {
		o.MinSize = DefaultMinSize
	}
	switch {
	case !(o.PValue > 0 && o.PValue <= 1):
		return o, fmt.Errorf("changepoint: p-value %v: want a probability in (0, 1], e.g. 0.001", o.PValue)
	case o.MinSize < 2:
		return o, fmt.Errorf("changepoint: minimum segment size %d: want at least 2 points (a segment's spread needs a pair)", o.MinSize)
	case o.Window < 2*o.MinSize:
		return o, fmt.Errorf("changepoint: window %d: want at least twice the minimum segment size (%d)", o.Window, 2*o.MinSize)
	case o.Permutations < 1 || o.Permutations > 1_000_000:
		return o, fmt.Errorf("changepoint: %d permutations: want 1 to 1000000", o.Permutations)
	case 1/float64(o.Permutations+1) > o.PValue:
		return o, fmt.Errorf("changepoint: %d permutations cannot show a p-value of %v (the smallest is 1/%d): want at least %d",
			o.Permutations, o.PValue, o.Permutations+1, int(math.Ceil(1/o.PValue))-1)
	case !(o.MinChange >= 0) || math.IsInf(o.MinChange, 0):
		return o, fmt.Errorf("changepoint: minimum change %v: want a non-negative fraction, e.g. 0.02 for 2%%", o.MinChange)
	}
	return o, nil
}

// checkSeries refuses what a performance series cannot hold.
func checkSeries(values []float64) error {
	for i, v := range values {
		if !(v > 0) || math.IsInf(v, 0) {
			return fmt.Errorf("changepoint: value %d of %d is %v: a series holds finite positive measurements (times or bandwidths)", i, len(values), v)
		}
	}
	return nil
}

// Detect returns the change points of values (oldest first), in order. A
// series too short to hold a step on MinSize points each side, or constant,
// has none. values is not modified.
func Detect(values []float64, opts Options) ([]ChangePoint, error) {
	o, err := opts.resolve()
	if err != nil {
		return nil, err
	}
	if err := checkSeries(values); err != nil {
		return nil, err
	}
	if len(values) < 2*o.MinSize || slices.Min(values) == slices.Max(values) {
		return nil, nil
	}
	d := &detector{o: o}
	return d.merge(values, d.candidates(values)), nil
}

// detector is one Detect call: its options and buffers.
type detector struct {
	o   Options
	s   scratch
	buf []float64 // the clipped stretch
}

// clipSDs: a stretch is tested with its values clipped to its median ± this
// many robust standard deviations (1.4826 x the median absolute deviation).
// A run stalled by the scheduler can be 20x the others; unclipped, its
// distances would outweigh a real step of a few percent.
const clipSDs = 5

// clipped is x as tested: clipped to its median ± clipSDs robust standard
// deviations (x itself when that deviation is 0). The clip depends on x as
// a set, not on its order, so the permutation test stays exact.
func (d *detector) clipped(x []float64) []float64 {
	n := len(x)
	if cap(d.buf) < n {
		d.buf = make([]float64, n)
	}
	r := d.buf[:n]
	copy(r, x)
	slices.Sort(r)
	med := r[n/2]
	for i, v := range x {
		r[i] = math.Abs(v - med)
	}
	slices.Sort(r)
	sd := madScale * r[n/2]
	if sd == 0 {
		return x
	}
	lo, hi := med-clipSDs*sd, med+clipSDs*sd
	for i, v := range x {
		r[i] = min(max(v, lo), hi)
	}
	return r
}

// candidates bisects each window of the series with a looser screen (10x
// the p-value, a tenth of the permutations): the merge decides. Windows of
// Window points start every Window/2 points, and the last one always ends at
// the newest point, so a step near the end is searched with a full window
// of history before it.
func (d *detector) candidates(x []float64) []int {
	n, w := len(x), d.o.Window
	var starts []int
	for lo := 0; lo+w < n; lo += w / 2 {
		starts = append(starts, lo)
	}
	starts = append(starts, max(0, n-w))
	alpha := min(1, 10*d.o.PValue)
	perms := max((d.o.Permutations+1)/10-1, int(math.Ceil(1/alpha))-1)
	seen := map[int]bool{}
	var out []int
	for _, lo := range starts {
		for _, c := range d.bisect(x[lo:min(lo+w, n)], alpha, perms) {
			if !seen[lo+c] {
				seen[lo+c] = true
				out = append(out, lo+c)
			}
		}
	}
	sort.Ints(out)
	return out
}

// bisect splits x at its best split while that is significant, then each
// part the same way, and returns the splits (indexes into x).
func (d *detector) bisect(x []float64, alpha float64, perms int) []int {
	type span struct{ lo, hi int }
	var out []int
	todo := []span{{0, len(x)}}
	for len(todo) > 0 {
		sp := todo[len(todo)-1]
		todo = todo[:len(todo)-1]
		seg := x[sp.lo:sp.hi]
		if len(seg) < 2*d.o.MinSize || slices.Min(seg) == slices.Max(seg) {
			continue
		}
		v := d.clipped(seg)
		tau, q, _ := d.s.curve(v, d.o.MinSize, -1)
		if d.s.permTest(v, q, d.o.MinSize, perms, alpha) > alpha {
			continue
		}
		out = append(out, sp.lo+tau)
		todo = append(todo, span{sp.lo, sp.lo + tau}, span{sp.lo + tau, sp.hi})
	}
	return out
}

// cand is a candidate change point and its test against its neighbours.
type cand struct {
	at    int
	q     float64 // Q at the split, within the tested stretch
	p     float64
	stale bool // a neighbour changed since p was computed
}

// merge re-tests each candidate on the stretch between its neighbours (at
// most Window points each side) and removes the weakest failing one (a
// p-value above PValue, a change below MinChange, or a segment shorter than
// MinSize), until none fails.
func (d *detector) merge(x []float64, at []int) []ChangePoint {
	cs := make([]cand, len(at))
	for i, a := range at {
		cs[i] = cand{at: a, stale: true}
	}
	for {
		worst := -1
		for i := range cs {
			if cs[i].stale {
				d.test(x, cs, i)
			}
			if d.fails(x, cs, i) && (worst < 0 || weaker(cs[i], cs[worst])) {
				worst = i
			}
		}
		if worst < 0 {
			break
		}
		if worst > 0 {
			cs[worst-1].stale = true
		}
		if worst+1 < len(cs) {
			cs[worst+1].stale = true
		}
		cs = slices.Delete(cs, worst, worst+1)
	}
	out := make([]ChangePoint, len(cs))
	for i, c := range cs {
		lo, hi := bounds(cs, i, len(x))
		b, a := median(x[lo:c.at]), median(x[c.at:hi])
		out[i] = ChangePoint{Index: c.at, PValue: c.p, Before: b, After: a, Change: a/b - 1}
	}
	return out
}

// weaker orders failing candidates: the higher p-value goes first, then the
// smaller Q.
func weaker(a, b cand) bool {
	if a.p != b.p {
		return a.p > b.p
	}
	return a.q < b.q
}

// bounds is the segment around candidate i: from the previous candidate to
// the next (the series' ends for the first and last).
func bounds(cs []cand, i, n int) (lo, hi int) {
	lo, hi = 0, n
	if i > 0 {
		lo = cs[i-1].at
	}
	if i+1 < len(cs) {
		hi = cs[i+1].at
	}
	return lo, hi
}

// test computes candidate i's Q and p-value on its stretch: the Q of its
// own split against the best Q of permutations of the stretch.
func (d *detector) test(x []float64, cs []cand, i int) {
	c := &cs[i]
	c.stale = false
	lo, hi := bounds(cs, i, len(x))
	lo, hi = max(lo, c.at-d.o.Window), min(hi, c.at+d.o.Window)
	if c.at-lo < d.o.MinSize || hi-c.at < d.o.MinSize {
		// Too close to a neighbour: it fails, and its Q over the window
		// alone says which of the two is the weaker.
		c.p = 1
		lo, hi = max(0, c.at-d.o.Window), min(len(x), c.at+d.o.Window)
		c.q = math.Inf(-1)
		if c.at-lo >= d.o.MinSize && hi-c.at >= d.o.MinSize {
			_, _, c.q = d.s.curve(d.clipped(x[lo:hi]), d.o.MinSize, c.at-lo)
		}
		return
	}
	v := d.clipped(x[lo:hi])
	_, _, c.q = d.s.curve(v, d.o.MinSize, c.at-lo)
	c.p = d.s.permTest(v, c.q, d.o.MinSize, d.o.Permutations, d.o.PValue)
}

// fails says whether candidate i must go.
func (d *detector) fails(x []float64, cs []cand, i int) bool {
	if cs[i].p > d.o.PValue {
		return true
	}
	if d.o.MinChange > 0 {
		lo, hi := bounds(cs, i, len(x))
		b, a := median(x[lo:cs[i].at]), median(x[cs[i].at:hi])
		return math.Abs(a/b-1) < d.o.MinChange
	}
	return false
}

// median of v (not modified); v is not empty.
func median(v []float64) float64 {
	s := slices.Clone(v)
	slices.Sort(s)
	n := len(s)
	if n%2 == 1 {
		return s[n/2]
	}
	return (s[n/2-1] + s[n/2]) / 2
}
