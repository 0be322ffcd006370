// table_boundary.go: where one pick gives way to the next: the crossing of
// their models between measured sizes, and past the largest measured size.

package tuner

import (
	"math"
)

// boundary is the first byte count of q's range, where p's range (ending at
// measured size p.bytes) gives way to q's (starting by measured size
// q.bytes): in (p.bytes, q.bytes].
func (b *shapeBuilder) boundary(p, q pick) int64 {
	lo, hi := p.bytes, q.bytes
	fp, okp := b.fits[p.key]
	fq, okq := b.fits[q.key]
	if okp && okq {
		if x, ok := crossing(fp.Predict, fq.Predict, lo, hi); ok {
			return x
		}
	}
	// The line through each pick's times at the two sizes.
	tp0, ok1 := p.times[p.key]
	tq0, ok2 := p.times[q.key]
	tp1, ok3 := q.times[p.key]
	tq1, ok4 := q.times[q.key]
	if ok1 && ok2 && ok3 && ok4 {
		if x, ok := crossing(line(lo, tp0, hi, tp1), line(lo, tq0, hi, tq1), lo, hi); ok {
			return x
		}
	}
	return geoMid(lo, hi)
}

// extrapolate picks among the candidates measured at the largest size, by
// their models at extrapolateFactor times it; ok is false when none has a
// model.
func (b *shapeBuilder) extrapolate(last pick, auto *Key) (pick, bool) {
	far := last.bytes * extrapolateFactor
	if last.bytes > math.MaxInt64/extrapolateFactor {
		far = math.MaxInt64
	}
	var cs []contender
	for _, s := range b.cands {
		f, ok := b.fits[s.Key]
		if !ok || s.Samples[len(s.Samples)-1].Bytes != last.bytes {
			continue
		}
		if us := f.Predict(far); us > 0 && !math.IsInf(us, 0) {
			cs = append(cs, contender{key: s.Key, us: us})
		}
	}
	if _, ok := b.fits[last.key]; !ok || len(cs) == 0 {
		return pick{}, false // the last pick has no model to be judged by
	}
	prev := last.key
	return b.choose(far, cs, auto, &prev), true
}

// crossing returns the least x in (lo, hi] at which tq(x) < tp(x), given
// that tp(lo) <= tq(lo) and tq(hi) < tp(hi); ok is false when the ends do
// not satisfy that. Between the ends it bisects on integers, which finds the
// exact crossing of two lines (or of any pair with one crossing).
func crossing(tp, tq func(int64) float64, lo, hi int64) (int64, bool) {
	qWins := func(x int64) bool { return tq(x) < tp(x) }
	if lo >= hi || qWins(lo) || !qWins(hi) {
		return 0, false
	}
	// Invariant: !qWins(lo) && qWins(hi).
	for hi-lo > 1 {
		mid := lo + (hi-lo)/2
		if qWins(mid) {
			hi = mid
		} else {
			lo = mid
		}
	}
	return hi, true
}

// line is the straight line through (x0, y0) and (x1, y1): the alpha-beta
// model through two measured points.
func line(x0 int64, y0 float64, x1 int64, y1 float64) func(int64) float64 {
	slope := (y1 - y0) / float64(x1-x0)
	return func(x int64) float64 { return y0 + slope*float64(x-x0) }
}

// geoMid is the geometric midpoint of lo < hi, as a byte count in (lo, hi].
func geoMid(lo, hi int64) int64 {
	x := int64(math.Round(math.Sqrt(float64(max(lo, 1)) * float64(hi))))
	return min(max(x, lo+1), hi)
}
