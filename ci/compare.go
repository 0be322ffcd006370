package ci

import (
	"fmt"
	"maps"
	"math"
	"slices"
	"strings"

	"golang.org/x/perf/benchmath"

	"github.com/gccl/gccl/results"
)

// Options configure a comparison. The zero value is not useful: start from
// DefaultOptions.
type Options struct {
	Metric     Metric
	Normalize  Normalization
	Thresholds Thresholds
	MinSize    int64   // keys below this size are left out
	RequireAll bool    // a key on one side only fails the gate
	Alpha      float64 // significance level of the U test
	Confidence float64 // level of the confidence intervals
}

// DefaultOptions: busbw, 5% for every size, alpha 0.05, 95% intervals.
func DefaultOptions() Options {
	return Options{Metric: BusBW, Thresholds: Uniform(0.05), Alpha: 0.05, Confidence: 0.95}
}

func (o Options) validate() error {
	if !(o.Alpha > 0 && o.Alpha < 1) {
		return fmt.Errorf("%w: alpha %v: want a level between 0 and 1 (e.g. 0.05)", ErrBadOption, o.Alpha)
	}
	if !(o.Confidence > 0 && o.Confidence < 1) {
		return fmt.Errorf("%w: confidence %v: want a level between 0 and 1 (e.g. 0.95)", ErrBadOption, o.Confidence)
	}
	if len(o.Thresholds.Bands) == 0 && math.IsNaN(o.Thresholds.Default) {
		return fmt.Errorf("%w: no threshold", ErrBadThreshold)
	}
	return nil
}

// A Verdict classifies one key.
type Verdict int

const (
	Unchanged   Verdict = iota // within the threshold, or better but not significantly
	Regression                 // worse beyond the threshold, and significant (or no test possible)
	Noisy                      // worse beyond the threshold but not significant: passes, with a note
	Improvement                // better beyond the threshold, and significant (or no test possible)
)

func (v Verdict) String() string {
	return [...]string{"unchanged", "regression", "noisy", "improvement"}[v]
}

// order in reports: regressions, then noisy ones, improvements, unchanged.
func (v Verdict) rank() int { return [...]int{3, 0, 1, 2}[v] }

// A Summary is one side of one key: its median and the median's
// confidence interval.
type Summary struct {
	N      int     `json:"n"`      // values in the sample
	Runs   int     `json:"runs"`   // records
	Center float64 `json:"median"` // median of the values
	Lo, Hi float64 // the median's confidence interval; ±Inf when the sample is too small
}

// A Comparison is the outcome for one key present on both sides.
type Comparison struct {
	Key       Key
	Unit      string // UnitRuns or UnitIterations: what one sample value is
	Base      Summary
	Cand      Summary
	Ratio     float64 // Cand.Center / Base.Center
	RatioLo   float64 // the ratio's bootstrap confidence interval; NaN without a test
	RatioHi   float64
	P         float64 // Mann-Whitney U p-value; NaN when no test was possible
	Tested    bool    // false: plain ratio against the threshold (no repeats, or too few)
	Threshold float64 // the threshold of the key's size band
	Verdict   Verdict
	Notes     []string
}

// Delta is the relative change of the metric, candidate against baseline.
func (c Comparison) Delta() float64 { return c.Ratio - 1 }

// A Report is the outcome of a comparison.
type Report struct {
	Options       Options
	Comparisons   []Comparison // ordered: regressions, noisy, improvements, unchanged; by key within each
	OnlyBaseline  []Key        // keys the candidate lacks
	OnlyCandidate []Key        // keys the baseline lacks
	Notes         []string     // about the whole comparison
}

// Count returns how many comparisons have the verdict.
func (r *Report) Count(v Verdict) int {
	n := 0
	for _, c := range r.Comparisons {
		if c.Verdict == v {
			n++
		}
	}
	return n
}

// MissingFails says whether keys on one side only fail the gate.
func (r *Report) MissingFails() bool {
	return r.Options.RequireAll && len(r.OnlyBaseline)+len(r.OnlyCandidate) > 0
}

// Pass says whether the gate passes.
func (r *Report) Pass() bool { return r.Count(Regression) == 0 && !r.MissingFails() }

// ExitCode is ExitPass or ExitRegression.
func (r *Report) ExitCode() int {
	if r.Pass() {
		return ExitPass
	}
	return ExitRegression
}

// Compare gates cand against base. Errors are bad input (ExitBadInput):
// a side without usable records, no key in common, a size in no threshold
// band, records that cannot be normalised.
func Compare(base, cand []results.Record, opt Options) (*Report, error) {
	if err := opt.validate(); err != nil {
		return nil, err
	}
	bs, bUnusable, err := collect(base, opt.Metric, opt.Normalize, opt.MinSize, "baseline")
	if err != nil {
		return nil, err
	}
	cs, cUnusable, err := collect(cand, opt.Metric, opt.Normalize, opt.MinSize, "candidate")
	if err != nil {
		return nil, err
	}
	rep := &Report{Options: opt}
	var common []Key
	for k := range bs {
		if _, ok := cs[k]; ok {
			common = append(common, k)
		} else {
			rep.OnlyBaseline = append(rep.OnlyBaseline, k)
		}
	}
	for k := range cs {
		if _, ok := bs[k]; !ok {
			rep.OnlyCandidate = append(rep.OnlyCandidate, k)
		}
	}
	if len(common) == 0 {
		return nil, fmt.Errorf("%w: %s", ErrNoCommonKeys, whyDisjoint(slices.Collect(maps.Keys(bs)), slices.Collect(maps.Keys(cs))))
	}
	slices.SortFunc(common, compareKeys)
	slices.SortFunc(rep.OnlyBaseline, compareKeys)
	slices.SortFunc(rep.OnlyCandidate, compareKeys)
	for _, k := range common {
		thr, ok := opt.Thresholds.For(k.Size)
		if !ok && k.bench() {
			return nil, fmt.Errorf("%w: %s is a Go benchmark, which has no size, and --threshold (%s) has only size bands; give one threshold (5%%) or a default band (,5%%)",
				ErrNoThreshold, k, opt.Thresholds)
		}
		if !ok {
			return nil, fmt.Errorf("%w: size %s (%s) is in no --threshold band (%s); add a band or a default such as ,5%%",
				ErrNoThreshold, results.SizeLabel(k.Size), k, opt.Thresholds)
		}
		rep.Comparisons = append(rep.Comparisons, compareKey(k, bs[k], cs[k], thr, opt))
	}
	slices.SortStableFunc(rep.Comparisons, func(a, b Comparison) int { return a.Verdict.rank() - b.Verdict.rank() })
	rep.Notes = reportNotes(rep, bs, cs, bUnusable, cUnusable)
	return rep, nil
}

// compareKey summarises both sides of one key, tests them and gives the
// verdict.
func compareKey(k Key, b, c side, thr float64, opt Options) Comparison {
	unit, bv, cv := sampleOf(b, c, opt.Alpha)
	th := &benchmath.Thresholds{CompareAlpha: opt.Alpha}
	bsm, csm := benchmath.NewSample(bv, th), benchmath.NewSample(cv, th) // sorts bv, cv
	summary := func(s *benchmath.Sample, runs int) Summary {
		sum := benchmath.AssumeNothing.Summary(s, opt.Confidence)
		return Summary{N: len(s.Values), Runs: runs, Center: sum.Center, Lo: sum.Lo, Hi: sum.Hi}
	}
	out := Comparison{Key: k, Unit: unit, Base: summary(bsm, len(b)), Cand: summary(csm, len(c)),
		RatioLo: math.NaN(), RatioHi: math.NaN(), P: math.NaN(), Threshold: thr}
	out.Ratio = out.Cand.Center / out.Base.Center

	// worse is the change in the bad direction: positive is a slowdown.
	worse := out.Delta()
	if opt.Metric.HigherIsBetter() {
		worse = -worse
	}
	beyond, better := worse > thr, -worse > thr

	if minUTestP(len(bv), len(cv)) > opt.Alpha {
		// No test can say anything: the plain ratio decides.
		if len(bv) == 1 && len(cv) == 1 {
			out.Notes = append(out.Notes, "no repeats: plain ratio against the threshold")
		} else {
			out.Notes = append(out.Notes, fmt.Sprintf("too few samples for a significance test (%d vs %d %s; it needs %d vs %d at alpha %g): plain ratio against the threshold",
				len(bv), len(cv), unit, minRunsFor(opt.Alpha), minRunsFor(opt.Alpha), opt.Alpha))
		}
		switch {
		case beyond:
			out.Verdict = Regression
		case better:
			out.Verdict = Improvement
		}
		return out
	}
	out.Tested = true
	cmp := benchmath.AssumeNothing.Compare(bsm, csm)
	out.P = cmp.P
	out.RatioLo, out.RatioHi = ratioCI(bsm.Values, csm.Values, opt.Confidence, k.String())
	significant := cmp.P < opt.Alpha
	switch {
	case beyond && significant:
		out.Verdict = Regression
	case beyond:
		out.Verdict = Noisy
		out.Notes = append(out.Notes, fmt.Sprintf("beyond the threshold but not significant (p=%.2g >= %g, %d vs %d %s): passes", cmp.P, opt.Alpha, len(bv), len(cv), unit))
	case better && significant:
		out.Verdict = Improvement
	}
	return out
}

// reportNotes says how the keys were compared, in a few lines.
func reportNotes(rep *Report, bs, cs map[Key]side, bUnusable, cUnusable int) []string {
	var notes []string
	opt := rep.Options
	units := map[string]int{}
	untested := 0
	for _, c := range rep.Comparisons {
		if c.Tested {
			units[c.Unit]++
		} else {
			untested++
		}
	}
	method := fmt.Sprintf("%s compared by median; Mann-Whitney U test at alpha %g, %g%% bootstrap interval of the ratio", opt.Metric, opt.Alpha, 100*opt.Confidence)
	var how []string
	for _, u := range []string{UnitRuns, UnitIterations} {
		if units[u] > 0 {
			how = append(how, plural(units[u], "key")+" on "+u)
		}
	}
	if len(how) > 0 {
		method += " (" + strings.Join(how, ", ") + ")"
	}
	notes = append(notes, method)
	if untested > 0 {
		notes = append(notes, plural(untested, "key")+" without enough repeats for a test judged on the plain ratio: record several runs (perf -N 5, or --precision for per-iteration samples; go test -count 5) on both sides")
	}
	if opt.Normalize == NormCopy {
		notes = append(notes, "normalised by each run's copy() bandwidth (ref_copy_gbps): "+
			fmt.Sprintf("baseline median %.2f GB/s, candidate %.2f GB/s", medianRef(bs), medianRef(cs)))
	}
	if bUnusable+cUnusable > 0 {
		notes = append(notes, fmt.Sprintf("records without a %s skipped: %d baseline, %d candidate", opt.Metric, bUnusable, cUnusable))
	}
	return notes
}

// medianRef is the median ref_copy_gbps over a side's runs.
func medianRef(s map[Key]side) float64 {
	var v []float64
	for _, sd := range s {
		for _, r := range sd {
			if r.ref > 0 {
				v = append(v, r.ref)
			}
		}
	}
	slices.Sort(v)
	return median(v)
}

// whyDisjoint explains why two key sets share no key: the key fields whose
// values do not overlap at all, else an example key of each side.
func whyDisjoint(b, c []Key) string {
	var diffs []string
	for _, f := range keyFields {
		bv, cv := map[string]bool{}, map[string]bool{}
		for _, k := range b {
			bv[f.get(k)] = true
		}
		for _, k := range c {
			cv[f.get(k)] = true
		}
		overlap := false
		for v := range bv {
			overlap = overlap || cv[v]
		}
		if !overlap {
			diffs = append(diffs, fmt.Sprintf("%s: baseline %s, candidate %s", f.name, setString(bv), setString(cv)))
		}
	}
	if len(diffs) > 0 {
		return "the sides differ in " + strings.Join(diffs, "; ") + " (are these runs of the same sweep?)"
	}
	slices.SortFunc(b, compareKeys)
	slices.SortFunc(c, compareKeys)
	return fmt.Sprintf("every field has values in common but no combination matches (baseline has e.g. %q, candidate %q)", b[0], c[0])
}

func setString(m map[string]bool) string {
	v := slices.Sorted(maps.Keys(m))
	if len(v) > 6 {
		v = append(v[:6], fmt.Sprintf("... (%d values)", len(m)))
	}
	return "{" + strings.Join(v, ", ") + "}"
}
