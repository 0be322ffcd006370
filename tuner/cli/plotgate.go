package cli

import (
	"errors"
	"fmt"
	"math"
	"sort"

	"github.com/gccl/gccl/ci"
	"github.com/gccl/gccl/plots"
	"github.com/gccl/gccl/results"
)

// tune plot --baseline: package plots pairs the two sets' configurations
// and draws them; the regression gate (package ci) judges the pairs here,
// and its ratios, verdicts and thresholds go to plots as plots' own plain
// types, so that plots (and perf, which draws through it) import no ci.

// compareFigure pairs base and cand, gates every pair with thresholds th
// as tune gate would, and draws the comparison.
func compareFigure(base, cand plots.Set, o plots.Options, th ci.Thresholds) (*plots.Figure, error) {
	cmp, err := plots.PairSets(base, cand, o)
	if err != nil {
		return nil, err
	}
	if err := gateComparison(cmp, th); err != nil {
		return nil, err
	}
	return plots.CompareFigure(cmp)
}

// gateComparison runs the gate with thresholds th on cmp's pairs, in
// cmp's metric, and hands plots the outcome: each pair's ratios, the
// thresholds for the ratio panel's band, and the gate's notes.
func gateComparison(cmp *plots.Comparison, th ci.Thresholds) error {
	pairs, warns, err := gatePairs(cmp.Pairs, gateOptions(cmp.Options.Metric, th))
	if err != nil {
		return err
	}
	cmp.Pairs = pairs
	cmp.Threshold = plotThreshold(th)
	cmp.Warnings = append(cmp.Warnings, warns...)
	return nil
}

// gateOptions are the gate's options for a comparison of metric m with
// thresholds th: busBW and algBW compare as the gate's busbw (the same
// ratio), the normalised busBW as busbw normalised by the copy bandwidth,
// and time as time; significance and confidence as tune gate's defaults.
func gateOptions(m plots.Metric, th ci.Thresholds) ci.Options {
	opt := ci.DefaultOptions()
	opt.Thresholds = th
	switch m {
	case plots.Time:
		opt.Metric = ci.Time
	case plots.BusBWNorm:
		opt.Normalize = ci.NormCopy
	}
	return opt
}

// gatePairs runs the gate (ci.Compare) on each pair's records and sets
// the pairs' Ratio. A pair made across configurations (one curve a side)
// is compared as one configuration. Pairs with no size in common, or no
// usable record, keep no ratio and come back as warnings; a size no
// threshold covers is an error, as it is to tune gate.
func gatePairs(pairs []plots.Pair, opt ci.Options) ([]plots.Pair, []string, error) {
	out := make([]plots.Pair, len(pairs))
	var warns []string
	for i, p := range pairs {
		out[i] = p
		out[i].Ratio = nil
		base, cand := p.Base.Records(), p.Cand.Records()
		if p.Base.ID() != p.Cand.ID() && len(base) > 0 {
			cand = rekey(cand, base[0])
		}
		rep, err := ci.Compare(base, cand, opt)
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
			out[i].Ratio = append(out[i].Ratio, gatePoint(c))
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
func commonSizes(a, b plots.Curve) int {
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

// The adapter: the gate's results as plots' types.

// gatePoint is one key's comparison as the ratio panel draws it.
func gatePoint(c ci.Comparison) plots.GatePoint {
	return plots.GatePoint{Bytes: c.Key.Size, Ratio: c.Ratio, Lo: c.RatioLo, Hi: c.RatioHi,
		Threshold: c.Threshold, Verdict: plotVerdict(c.Verdict)}
}

// plotVerdict is the gate's verdict as plots marks it.
func plotVerdict(v ci.Verdict) plots.Verdict {
	switch v {
	case ci.Regression:
		return plots.Regression
	case ci.Noisy:
		return plots.Noisy
	case ci.Improvement:
		return plots.Improvement
	}
	return plots.Unchanged
}

// plotThreshold is the gate's thresholds as the ratio panel shades them.
func plotThreshold(th ci.Thresholds) plots.Threshold {
	out := plots.Threshold{Default: th.Default}
	for _, b := range th.Bands {
		out.Bands = append(out.Bands, plots.ThresholdBand{Lo: b.Lo, Hi: b.Hi, Frac: b.Frac})
	}
	return out
}
