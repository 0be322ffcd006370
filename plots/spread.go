package plots

import (
	"math"
	"sort"

	"github.com/gccl/gccl/results"
)

// SpreadKind is what a curve's shaded band shows: how the iterations of
// its records spread around the point.
type SpreadKind int

const (
	NoSpread     SpreadKind = iota // the records hold no per-iteration statistics
	SpreadIQR                      // the interquartile range of the per-iteration times (-I, --precision)
	SpreadMinMax                   // from the fastest to the slowest iteration (min_us, max_us)
)

// Legend says what the band is, for the legend.
func (k SpreadKind) Legend() string {
	switch k {
	case SpreadIQR:
		return "interquartile range of iterations"
	case SpreadMinMax:
		return "min–max of iterations"
	}
	return ""
}

// Interval is a range of the metric.
type Interval struct{ Lo, Hi float64 }

// minIQRSamples is the fewest iteration values a point needs for an
// interquartile range that means something.
const minIQRSamples = 4

// spreadKind chooses one kind for a figure, so that every band in it
// means the same: the interquartile range when any record kept its
// iteration times, else min-max when any recorded those.
func spreadKind(recs []results.Record) SpreadKind {
	kind := NoSpread
	for _, r := range recs {
		switch {
		case len(r.IterTimesUs) >= 2:
			return SpreadIQR
		case r.MinUs > 0 && r.MaxUs > 0:
			kind = SpreadMinMax
		}
	}
	return kind
}

// atTime is the metric of record r had an iteration taken us: bandwidths
// scale as bytes over time, from the record's reported time.
func (m Metric) atTime(r results.Record, us float64) (float64, bool) {
	if !(us > 0) || (m != Time && !(r.TimeUs > 0)) {
		return 0, false
	}
	var v float64
	switch m {
	case Time:
		v = us
	case AlgBW:
		v = r.AlgBw * r.TimeUs / us
	case BusBW:
		v = r.BusBw * r.TimeUs / us
	case BusBWNorm:
		if !(r.RefCopyGBps > 0) {
			return 0, false
		}
		v = r.BusBw * r.TimeUs / us / r.RefCopyGBps
	}
	return v, finite(v) && v >= 0
}

// spreadAcc pools the spread of the records of one point.
type spreadAcc struct {
	vals   []float64 // the metric of every iteration (IQR)
	lo, hi float64   // the extremes (min-max)
	ok     bool      // lo and hi are set
}

func (a *spreadAcc) add(m Metric, kind SpreadKind, r results.Record) {
	switch kind {
	case SpreadIQR:
		for _, us := range r.IterTimesUs {
			if v, ok := m.atTime(r, us); ok {
				a.vals = append(a.vals, v)
			}
		}
	case SpreadMinMax:
		// The fastest iteration is the highest bandwidth and the lowest time.
		v1, ok1 := m.atTime(r, r.MinUs)
		v2, ok2 := m.atTime(r, r.MaxUs)
		if !ok1 || !ok2 {
			return
		}
		lo, hi := math.Min(v1, v2), math.Max(v1, v2)
		if !a.ok {
			a.lo, a.hi, a.ok = lo, hi, true
		}
		a.lo, a.hi = math.Min(a.lo, lo), math.Max(a.hi, hi)
	}
}

// interval is the pooled spread; nil when the records give none.
func (a *spreadAcc) interval(kind SpreadKind) *Interval {
	switch {
	case kind == SpreadIQR && len(a.vals) >= minIQRSamples:
		sort.Float64s(a.vals)
		return &Interval{Lo: quantile(a.vals, 0.25), Hi: quantile(a.vals, 0.75)}
	case kind == SpreadMinMax && a.ok:
		return &Interval{Lo: a.lo, Hi: a.hi}
	}
	return nil
}

// quantile is the q-quantile of sorted values, interpolated linearly
// between order statistics.
func quantile(s []float64, q float64) float64 {
	pos := q * float64(len(s)-1)
	i := int(math.Floor(pos))
	if i+1 >= len(s) {
		return s[len(s)-1]
	}
	return s[i] + (pos-float64(i))*(s[i+1]-s[i])
}
