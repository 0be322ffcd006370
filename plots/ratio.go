package plots

import (
	"errors"
	"fmt"
	"math"
	"sort"

	"github.com/gccl/gccl/ci"
	"github.com/gccl/gccl/results"
)

// Pair is one configuration measured in both sets of a comparison, and
// what the regression gate (package ci) says of it at every size both
// measured.
type Pair struct {
	Label      string
	Base, Cand Curve
	Ratio      []GatePoint // by size
}

// GatePoint is the gate's comparison of one size of a pair.
type GatePoint struct {
	Bytes int64
	// Ratio is the candidate's metric over the baseline's, of the medians
	// the gate compares (ci.Comparison.Ratio).
	Ratio float64
	// Lo and Hi are the ratio's bootstrap confidence interval; NaN when
	// the gate had too few samples to test and judged the plain ratio.
	Lo, Hi float64
	// Threshold is the gate's threshold at this size, and Verdict its
	// verdict.
	Threshold float64
	Verdict   ci.Verdict
}

// Geomean is the geometric mean of the pair's ratios (NaN without any).
func (p Pair) Geomean() float64 {
	if len(p.Ratio) == 0 {
		return math.NaN()
	}
	s := 0.0
	for _, r := range p.Ratio {
		s += math.Log(r.Ratio)
	}
	return math.Exp(s / float64(len(p.Ratio)))
}

// GateOptions are the gate's options for a comparison of metric m with
// thresholds th: busBW and algBW compare as the gate's busbw (the same
// ratio), the normalised busBW as busbw normalised by the copy bandwidth,
// and time as time; significance and confidence as tune gate's defaults.
func GateOptions(m Metric, th ci.Thresholds) ci.Options {
	opt := ci.DefaultOptions()
	opt.Thresholds = th
	switch m {
	case Time:
		opt.Metric = ci.Time
	case BusBWNorm:
		opt.Normalize = ci.NormCopy
	}
	return opt
}

// Pairs matches the curves of two sets by group. When each set has exactly
// one curve they pair whatever their groups (a run against a log that does
// not record its configuration). Unmatched curves come back as warnings:
// they are drawn without a ratio.
func Pairs(base, cand []Curve) ([]Pair, []string) {
	if len(base) == 1 && len(cand) == 1 {
		p := Pair{Label: cand[0].Label, Base: base[0], Cand: cand[0]}
		if base[0].ID() != cand[0].ID() {
			p.Label = fmt.Sprintf("%s vs %s", cand[0].Label, base[0].Label)
		}
		return []Pair{p}, nil
	}
	var warns []string
	byID := make(map[string]int, len(base))
	for i, c := range base {
		byID[c.ID()] = i
	}
	matched := map[string]bool{}
	var out []Pair
	for _, c := range cand {
		i, ok := byID[c.ID()]
		if !ok {
			warns = append(warns, fmt.Sprintf("%s: only in the candidate", c.Label))
			continue
		}
		matched[c.ID()] = true
		out = append(out, Pair{Label: c.Label, Base: base[i], Cand: c})
	}
	for _, c := range base {
		if !matched[c.ID()] {
			warns = append(warns, fmt.Sprintf("%s: only in the baseline", c.Label))
		}
	}
	return out, warns
}

// Gate runs the gate (ci.Compare) on each pair's records and sets the
// pairs' Ratio. A pair made across configurations (one curve a side) is
// compared as one configuration. Pairs with no size in common, or no
// usable record, keep no ratio and come back as warnings; a size no
// threshold covers is an error, as it is to tune gate.
func Gate(pairs []Pair, opt ci.Options) ([]Pair, []string, error) {
	out := make([]Pair, len(pairs))
	var warns []string
	for i, p := range pairs {
		out[i] = p
		cand := p.Cand.recs
		if p.Base.ID() != p.Cand.ID() && len(p.Base.recs) > 0 {
			cand = rekey(cand, p.Base.recs[0])
		}
		rep, err := ci.Compare(p.Base.recs, cand, opt)
		switch {
		case errors.Is(err, ci.ErrNoThreshold):
			return nil, nil, err
		case errors.Is(err, ci.ErrNoCommonKeys):
			warns = append(warns, fmt.Sprintf("%s: no size measured in both sets", p.Label))
			continue
		case err != nil:
			warns = append(warns, fmt.Sprintf("%s: %v", p.Label, err))
			continue
		}
		for _, c := range rep.Comparisons {
			if !(c.Ratio > 0) || math.IsInf(c.Ratio, 0) {
				continue
			}
			out[i].Ratio = append(out[i].Ratio, GatePoint{Bytes: c.Key.Size, Ratio: c.Ratio, Lo: c.RatioLo, Hi: c.RatioHi, Threshold: c.Threshold, Verdict: c.Verdict})
		}
		sort.SliceStable(out[i].Ratio, func(a, b int) bool { return out[i].Ratio[a].Bytes < out[i].Ratio[b].Bytes })
		// The gate skips records without the metric, and a ratio of 0
		// says nothing: say so rather than leave a gap unexplained.
		if common := commonSizes(p.Base, p.Cand); len(out[i].Ratio) < common {
			why := ""
			if opt.Metric == ci.BusBW {
				why = " (a bandwidth printed as 0.00)"
			}
			warns = append(warns, fmt.Sprintf("%s: %d of the %d sizes both sides measured have no ratio: the gate finds no usable %s there%s",
				p.Label, common-len(out[i].Ratio), common, opt.Metric, why))
		}
	}
	return out, warns, nil
}

// commonSizes counts the sizes both curves measured.
func commonSizes(a, b Curve) int {
	in := map[int64]bool{}
	for _, p := range a.Points {
		in[p.Bytes] = true
	}
	n := 0
	for _, p := range b.Points {
		if in[p.Bytes] {
			n++
		}
	}
	return n
}

// rekey gives the candidate's records the configuration and shape of
// base, so the gate's keys pair them.
func rekey(recs []results.Record, base results.Record) []results.Record {
	out := make([]results.Record, len(recs))
	for i, r := range recs {
		r.Collective, r.Type, r.Op = base.Collective, base.Type, base.Op
		r.Algorithm, r.Protocol, r.Channels, r.BuffSize = base.Algorithm, base.Protocol, base.Channels, base.BuffSize
		r.NRanks, r.NHosts = base.NRanks, base.NHosts
		out[i] = r
	}
	return out
}

// ThresholdStep is a stretch of the ratio panel's size axis (log2 bytes)
// with one gate threshold: the band 1-Frac to 1+Frac.
type ThresholdStep struct {
	X0, X1 float64
	Frac   float64
}

// ThresholdSteps lays the gate's thresholds along the size axis from lo
// to hi for the measured sizes: each size's threshold (th.For) from
// halfway to the size before it to halfway to the next, neighbours of one
// threshold merged. The band steps between measured sizes, so every
// point's column lies in its own size band's threshold; sizes no
// threshold covers are left out.
func ThresholdSteps(th ci.Thresholds, sizes []int64, lo, hi float64) []ThresholdStep {
	s := append([]int64(nil), sizes...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	var xs []float64
	var fracs []float64
	for i, b := range s {
		if i > 0 && b == s[i-1] {
			continue
		}
		f, ok := th.For(b)
		if !ok {
			continue
		}
		xs, fracs = append(xs, X(b)), append(fracs, f)
	}
	var out []ThresholdStep
	for i, x := range xs {
		x0, x1 := lo, hi
		if i > 0 {
			x0 = (xs[i-1] + x) / 2
		}
		if i < len(xs)-1 {
			x1 = (x + xs[i+1]) / 2
		}
		if n := len(out); n > 0 && out[n-1].Frac == fracs[i] {
			out[n-1].X1 = x1
			continue
		}
		out = append(out, ThresholdStep{X0: x0, X1: x1, Frac: fracs[i]})
	}
	return out
}
