package tuner

import (
	"fmt"
	"math"
	"slices"

	"github.com/gccl/gccl/lib/tuning"
)

// Live validation (issue 40's `tune validate --live`): a table's rules run
// inside the stack (or NCCL, through the tuner plugin) beside the stack's
// own choice, on sizes the sweep did not measure, pass after pass. What a
// rule claimed on paper is compared with what it realised.

// LiveVerdict is what live validation says of one rule.
type LiveVerdict string

const (
	// LivePays: the rule realised at least half of its claimed margin, and
	// more than the noise.
	LivePays LiveVerdict = "pays"
	// LiveUnpaid: no size slower beyond the noise, but the gain was less
	// than half the claim, or inside the noise.
	LiveUnpaid LiveVerdict = "unpaid"
	// LiveSlower: at some size the table ran slower than the default beyond
	// the noise.
	LiveSlower LiveVerdict = "slower"
	// LiveUnmeasured: no held-out size fell inside the rule.
	LiveUnmeasured LiveVerdict = "unmeasured"
)

// LivePoint is one held-out size of a rule: the default's and the table's
// times, one per pass.
type LivePoint struct {
	Bytes          int64
	Default, Table []float64 // us, one per pass
	// TableRan and DefaultRan are what the runs said ran ("Ring/LL"), ""
	// when the records do not say.
	TableRan, DefaultRan string
}

// DefaultUs and TableUs are the medians over the passes.
func (p LivePoint) DefaultUs() float64 { return median(p.Default) }
func (p LivePoint) TableUs() float64   { return median(p.Table) }

// Gain is the default's median time over the table's, minus 1: positive
// when the rule made the size faster.
func (p LivePoint) Gain() float64 { return p.DefaultUs()/p.TableUs() - 1 }

// Noise is the larger of the two variants' spreads over the passes
// ((max - min) / median), and at least floor: the smallest difference
// between them that the passes resolve.
func (p LivePoint) Noise(floor float64) float64 {
	return max(floor, passSpread(p.Default), passSpread(p.Table))
}

// passSpread is (max - min) / median of xs; 0 for fewer than two values.
func passSpread(xs []float64) float64 {
	if len(xs) < 2 {
		return 0
	}
	return (slices.Max(xs) - slices.Min(xs)) / median(xs)
}

// LiveRule is one rule of a table, measured live.
type LiveRule struct {
	Index int // the rule's place in the table, from 0
	Rule  tuning.Rule
	// Claimed is the margin the sweep showed: the default's time over the
	// rule's choice's, minus 1, geometric mean over the sweep's sizes inside
	// the rule; NaN when the sweep's records were not given or lack either.
	Claimed float64
	Points  []LivePoint

	// Set by Judge.
	Gain    float64 // geometric mean over the points of the default's time over the table's, minus 1; NaN without points
	Noise   float64 // the median of the points' noise
	Verdict LiveVerdict
	Why     string
}

// Judge sets the rule's gain, noise and verdict; floor is the least noise
// assumed at any point (relative, e.g. 0.01).
func (r *LiveRule) Judge(floor float64) {
	r.Gain, r.Noise = math.NaN(), math.NaN()
	r.Points = slices.DeleteFunc(r.Points, func(p LivePoint) bool { return len(p.Default) == 0 || len(p.Table) == 0 })
	if len(r.Points) == 0 {
		r.Verdict, r.Why = LiveUnmeasured, fmt.Sprintf("no held-out size inside %s bytes was measured", bytesRange(r.Rule.Bytes))
		return
	}
	var logSum float64
	noises := make([]float64, len(r.Points))
	worst, worstAt := math.Inf(1), -1
	for i, p := range r.Points {
		g := p.Gain()
		logSum += math.Log1p(g)
		noises[i] = p.Noise(floor)
		if g < -noises[i] && g < worst {
			worst, worstAt = g, i
		}
	}
	r.Gain = math.Expm1(logSum / float64(len(r.Points)))
	r.Noise = median(noises)
	switch {
	case sameRun(r.Points) != "":
		r.Verdict = LiveUnpaid
		r.Why = fmt.Sprintf("the default already ran %s at every held-out size: the rule changes nothing there (gain %+.1f%%, noise %.1f%%)",
			sameRun(r.Points), 100*r.Gain, 100*r.Noise)
	case worstAt >= 0:
		p := r.Points[worstAt]
		r.Verdict = LiveSlower
		r.Why = fmt.Sprintf("%d B took %.2fx the default's time (%.2f against %.2f us; noise %.1f%%)",
			p.Bytes, p.TableUs()/p.DefaultUs(), p.TableUs(), p.DefaultUs(), 100*noises[worstAt])
	case r.Gain <= r.Noise:
		r.Verdict, r.Why = LiveUnpaid, fmt.Sprintf("gain %+.1f%% inside the noise (%.1f%%)", 100*r.Gain, 100*r.Noise)
	case !math.IsNaN(r.Claimed) && r.Gain < r.Claimed/2:
		r.Verdict, r.Why = LiveUnpaid, fmt.Sprintf("gain %+.1f%%, less than half the %+.1f%% claimed", 100*r.Gain, 100*r.Claimed)
	default:
		r.Verdict, r.Why = LivePays, fmt.Sprintf("gain %+.1f%% beyond the noise (%.1f%%)", 100*r.Gain, 100*r.Noise)
		if !math.IsNaN(r.Claimed) {
			r.Why += fmt.Sprintf(", %.0f%% of the %+.1f%% claimed", 100*r.Gain/r.Claimed, 100*r.Claimed)
		}
	}
}

// sameRun is what both variants ran at every point, where the runs say and
// it is one and the same choice everywhere; "" otherwise.
func sameRun(ps []LivePoint) string {
	ran := ""
	for _, p := range ps {
		if p.DefaultRan == "" || p.DefaultRan != p.TableRan || (ran != "" && p.TableRan != ran) {
			return ""
		}
		ran = p.TableRan
	}
	return ran
}

func bytesRange(r tuning.Range) string {
	if r.Max == -1 {
		return fmt.Sprintf("[%d, inf)", r.Min)
	}
	return fmt.Sprintf("[%d, %d]", r.Min, r.Max)
}

// ClaimedMargin is the margin rule r showed in the sweep's series: over
// the sizes inside r measured both with r's choice and with the stack's
// own ("auto"), the geometric mean of auto's time over the choice's, minus
// 1. NaN when no such size was measured.
func ClaimedMargin(series []Series, s Shape, r tuning.Rule) float64 {
	var auto, pick *Series
	want := keyOfChoice(s, r.Choice)
	for i := range series {
		switch k := series[i].Key; {
		case k.Shape != s:
		case k.Auto():
			auto = &series[i]
		case k == want:
			pick = &series[i]
		}
	}
	if auto == nil || pick == nil {
		return math.NaN()
	}
	var logSum float64
	n := 0
	for _, a := range auto.Samples {
		if !r.Bytes.Contains(a.Bytes) {
			continue
		}
		for _, p := range pick.Samples {
			if p.Bytes == a.Bytes && p.Us > 0 && a.Us > 0 {
				logSum += math.Log(a.Us / p.Us)
				n++
			}
		}
	}
	if n == 0 {
		return math.NaN()
	}
	return math.Expm1(logSum / float64(n))
}

// HeldOutSizes are up to k sizes inside the byte range r that a sweep over
// trained did not measure: the geometric midpoints between consecutive
// trained sizes that lie in r, or, with fewer than two trained sizes, k
// sizes spaced evenly on a log scale strictly inside r (an unbounded r
// ends at maxBytes). Chosen evenly from first to last when there are more
// than k. round maps a size to the one the run will measure (whole
// elements per rank); a size that rounds out of r, or onto a trained size,
// is dropped. Ascending, no repeats.
func HeldOutSizes(r tuning.Range, trained []int64, k int, maxBytes int64, round func(int64) int64) []int64 {
	lo, hi := max(r.Min, 1), r.Max
	if hi == -1 {
		hi = max(maxBytes, lo)
	}
	if k < 1 || hi < lo {
		return nil
	}
	t := slices.Clone(trained)
	slices.Sort(t)
	t = slices.Compact(t)
	var cand []int64
	if len(t) >= 2 {
		for i := 1; i < len(t); i++ {
			if t[i-1] <= 0 {
				continue
			}
			cand = append(cand, int64(math.Round(math.Sqrt(float64(t[i-1])*float64(t[i])))))
		}
	} else {
		for i := 1; i <= k; i++ {
			cand = append(cand, int64(math.Round(float64(lo)*math.Pow(float64(hi)/float64(lo), float64(i)/float64(k+1)))))
		}
	}
	var in []int64
	for _, c := range cand {
		c = round(c)
		if c >= lo && c <= hi && !slices.Contains(t, c) {
			in = append(in, c)
		}
	}
	slices.Sort(in)
	in = slices.Compact(in)
	if len(in) <= k {
		return in
	}
	out := make([]int64, 0, k)
	for i := 0; i < k; i++ {
		j := 0
		if k > 1 {
			j = i * (len(in) - 1) / (k - 1)
		}
		out = append(out, in[j])
	}
	return slices.Compact(out)
}
