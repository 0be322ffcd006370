package plots

import (
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"

	"github.com/gccl/gccl/results"
)

// A comparison's ratio panel draws what the caller's regression gate
// decided (tune plot runs package ci): plots pairs the configurations
// (PairSets), the caller judges each pair's sizes into GatePoints and
// gives the Threshold it judged by, and CompareFigure draws them. plots
// imports neither ci nor tuner (TestPlotsImports).

// Verdict is the gate's verdict on one size of a pair, as the ratio panel
// marks it.
type Verdict int

const (
	Unchanged   Verdict = iota // within the threshold, or better but not significantly: unmarked
	Regression                 // worse beyond the threshold, and significant: ringed red
	Noisy                      // worse beyond the threshold, not significant: ringed grey
	Improvement                // better beyond the threshold, and significant: unmarked
)

func (v Verdict) String() string {
	switch v {
	case Unchanged:
		return "unchanged"
	case Regression:
		return "regression"
	case Noisy:
		return "noisy"
	case Improvement:
		return "improvement"
	}
	return fmt.Sprintf("Verdict(%d)", int(v))
}

// ThresholdBand is a size range [Lo, Hi) with its threshold.
type ThresholdBand struct {
	Lo   int64   // inclusive
	Hi   int64   // exclusive; 0: no upper bound
	Frac float64 // the band's half-width: 0.05 shades 0.95 to 1.05
}

func (b ThresholdBand) contains(size int64) bool { return size >= b.Lo && (b.Hi == 0 || size < b.Hi) }

func (b ThresholdBand) String() string {
	hi := ""
	if b.Hi > 0 {
		hi = results.SizeLabel(b.Hi)
	}
	return fmt.Sprintf("%s-%s=%s", results.SizeLabel(b.Lo), hi, pct(b.Frac))
}

// Threshold is the gate's threshold by message size, which the ratio
// panel shades around 1: the bands first, then Default for sizes in no
// band (NaN: none, and such a size gets no shade).
type Threshold struct {
	Bands   []ThresholdBand // sorted, disjoint
	Default float64
}

// UniformThreshold is one threshold for every size.
func UniformThreshold(frac float64) Threshold { return Threshold{Default: frac} }

// For returns the threshold of a size; false when no band covers it and
// there is no default.
func (t Threshold) For(size int64) (float64, bool) {
	for _, b := range t.Bands {
		if b.contains(size) {
			return b.Frac, true
		}
	}
	return t.Default, !math.IsNaN(t.Default)
}

// String writes the thresholds in tune gate's --threshold syntax:
// "8B-64K=15%,64K-=5%".
func (t Threshold) String() string {
	var parts []string
	for _, b := range t.Bands {
		parts = append(parts, b.String())
	}
	if !math.IsNaN(t.Default) {
		parts = append(parts, pct(t.Default))
	}
	return strings.Join(parts, ",")
}

func pct(f float64) string {
	return strconv.FormatFloat(100*f, 'f', -1, 64) + "%"
}

// widest is the largest threshold of any size (0 with none).
func (t Threshold) widest() float64 {
	w := t.Default
	if math.IsNaN(w) {
		w = 0
	}
	for _, b := range t.Bands {
		w = math.Max(w, b.Frac)
	}
	return w
}

// Pair is one configuration measured in both sets of a comparison, and
// what the caller's regression gate says of it at every size both
// measured.
type Pair struct {
	Label      string
	Base, Cand Curve
	Ratio      []GatePoint // by size; the caller's gate sets them
}

// GatePoint is the gate's comparison of one size of a pair.
type GatePoint struct {
	Bytes int64
	// Ratio is the candidate's metric over the baseline's, of the medians
	// the gate compares.
	Ratio float64
	// Lo and Hi are the ratio's confidence interval; NaN when the gate
	// had too few samples to test and judged the plain ratio.
	Lo, Hi float64
	// Threshold is the gate's threshold at this size, and Verdict its
	// verdict.
	Threshold float64
	Verdict   Verdict
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

// Comparison is two result sets paired configuration by configuration
// (PairSets), for the caller to judge and CompareFigure to draw.
type Comparison struct {
	Base, Cand Set
	// Options are the figure's options, By defaulted to CompareBy.
	Options Options
	// BaseCurves and CandCurves are the sets' curves, labelled together.
	BaseCurves, CandCurves []Curve
	// Pairs are the configurations both sets measured; the caller sets
	// their Ratio.
	Pairs []Pair
	// Threshold is what the caller judged the pairs by, shaded around
	// ratio 1.
	Threshold Threshold
	// Warnings are the curves that did not pair; the caller adds its own.
	Warnings []string
}

// PairSets builds the curves of both sets, grouped by o.By (CompareBy when
// empty) so that the configurations pair up, and pairs them (Pairs). The
// pairs have no ratio yet and the threshold is DefaultThreshold at every
// size: the caller's gate sets both.
func PairSets(base, cand Set, o Options) (*Comparison, error) {
	if len(o.By) == 0 {
		o.By = CompareBy
	}
	bc, err := BuildCurves(base.Records, o.CurveOptions)
	if err != nil {
		return nil, fmt.Errorf("baseline %s: %w", base.Name, err)
	}
	cc, err := BuildCurves(cand.Records, o.CurveOptions)
	if err != nil {
		return nil, fmt.Errorf("candidate %s: %w", cand.Name, err)
	}
	setLabels(o.By, bc, cc)
	pairs, warns := Pairs(bc, cc)
	return &Comparison{Base: base, Cand: cand, Options: o, BaseCurves: bc, CandCurves: cc,
		Pairs: pairs, Threshold: UniformThreshold(DefaultThreshold), Warnings: warns}, nil
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
func ThresholdSteps(th Threshold, sizes []int64, lo, hi float64) []ThresholdStep {
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
