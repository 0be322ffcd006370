package plots

import (
	"image/color"
	"math"
	"strings"
	"testing"

	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/vgimg"

	"github.com/gccl/gccl/results"
)

func TestGeomean(t *testing.T) {
	p := Pair{Ratio: []GatePoint{{Bytes: 16, Ratio: 2}, {Bytes: 32, Ratio: 0.5}, {Bytes: 64, Ratio: 1}}}
	if g := p.Geomean(); math.Abs(g-1) > 1e-12 {
		t.Errorf("Geomean = %v, want 1", g)
	}
	if !math.IsNaN((Pair{}).Geomean()) {
		t.Error("Geomean of no ratio is not NaN")
	}
}

// Pairs match by group; one curve a side pairs whatever the groups;
// unmatched curves are warnings.
func TestPairs(t *testing.T) {
	sizes := pow2s(3, 6)
	base, _ := BuildCurves(append(sweep(sizes, 1, cfg("Ring", "LL", 1)), sweep(sizes, 2, cfg("Ring", "Simple", 1))...), CurveOptions{By: CompareBy})
	cand, _ := BuildCurves(append(faster(sweep(sizes, 1, cfg("Ring", "LL", 1)), 1.5), sweep(sizes, 1, cfg("Tree", "LL", 1))...), CurveOptions{By: CompareBy})
	setLabels(CompareBy, base, cand)
	ps, warns := Pairs(base, cand)
	if len(ps) != 1 || ps[0].Label != "Ring/LL" {
		t.Fatalf("pairs %+v", ps)
	}
	w := strings.Join(warns, "\n")
	if !strings.Contains(w, "Tree/LL: only in the candidate") || !strings.Contains(w, "Ring/Simple: only in the baseline") {
		t.Errorf("warnings %q", warns)
	}
	// Our run against an nccl-tests log with no configuration: the gate
	// compares them as one configuration.
	ours, _ := BuildCurves(sweep(sizes, 2, cfg("Ring", "Simple", 2)), CurveOptions{By: CompareBy})
	log, _ := BuildCurves(faster(sweep(sizes, 2, func(r *results.Record) { r.Algorithm, r.Protocol, r.Backend = "", "", "nccl-tests" }), 2), CurveOptions{By: CompareBy})
	setLabels(CompareBy, log, ours)
	ps, warns = Pairs(log, ours)
	if len(ps) != 1 || len(warns) != 0 || ps[0].Label != "Ring/Simple/2ch vs auto" {
		t.Fatalf("one a side: pairs %+v, warnings %q", ps, warns)
	}
	if ps[0].Base.ID() == ps[0].Cand.ID() || len(ps[0].Base.Records()) != len(sizes) || len(ps[0].Cand.Records()) != len(sizes) {
		t.Errorf("one a side: %+v", ps[0])
	}
}

// The band steps at the measured sizes: every size's column lies in the
// band of its own threshold, and the steps cover the axis.
func TestThresholdSteps(t *testing.T) {
	th := Threshold{Bands: []ThresholdBand{{Lo: 8, Hi: 1 << 10, Frac: 0.3}, {Lo: 1 << 10, Hi: 64 << 10, Frac: 0.15}}, Default: 0.05}
	sizes := pow2s(3, 20)
	steps := ThresholdSteps(th, sizes, 2, 21)
	if len(steps) != 3 || steps[0].X0 != 2 || steps[len(steps)-1].X1 != 21 {
		t.Fatalf("steps %+v", steps)
	}
	for i := 1; i < len(steps); i++ {
		if steps[i].X0 != steps[i-1].X1 {
			t.Errorf("gap between %+v and %+v", steps[i-1], steps[i])
		}
	}
	for _, b := range sizes {
		want, _ := th.For(b)
		x := X(b)
		found := false
		for _, s := range steps {
			if s.X0 < x && x < s.X1 {
				found = true
				if s.Frac != want {
					t.Errorf("%d B: band ±%g, the gate's threshold %g", b, s.Frac, want)
				}
			}
		}
		if !found {
			t.Errorf("%d B lies on a step", b)
		}
	}
	// 512 B and 1 KiB straddle the 1K edge: the step is halfway.
	if steps[1].X0 != 9.5 {
		t.Errorf("1K step at %v, want 9.5", steps[1].X0)
	}
}

// The comparison figure shades the band of the threshold the caller's
// gate judged each size by and marks what the gate calls regressions.
func TestCompareFigureGate(t *testing.T) {
	th := Threshold{Bands: []ThresholdBand{{Lo: 8, Hi: 64 << 10, Frac: 0.15}, {Lo: 64 << 10, Frac: 0.05}}, Default: math.NaN()}
	base := sweep(pow2s(3, 20), 1, cfg("Ring", "LL", 1))
	cand := faster(base, 1/1.1)
	fig := compareFig(t, Set{"base", base}, Set{"cand", cand}, Options{}, th)
	for _, b := range pow2s(3, 20) {
		want, _ := th.For(b)
		for _, s := range fig.ratioSteps {
			if s.X0 < X(b) && X(b) < s.X1 && s.Frac != want {
				t.Errorf("%d B: band ±%g, the gate's threshold %g", b, s.Frac, want)
			}
		}
	}
	var legend []string
	for _, e := range fig.legend {
		legend = append(legend, e.name)
	}
	l := strings.Join(legend, "|")
	if !strings.Contains(l, "gate threshold 8-64K=15%,64K-=5%") || !strings.Contains(l, "gate: regression") {
		t.Errorf("legend %q", l)
	}

	// Drawn, the band's edges are the thresholds: inside them its shade,
	// outside none.
	p := newPlot()
	setSizeAxis(p, 3, 20, true)
	setLinearAxis(p, 0.6, 1.4, 5)
	addSteps(p, fig.ratioSteps)
	c := canvasOf(Page{Width: 6 * vg.Inch, Height: 4 * vg.Inch, DPI: 100})
	img := c.Canvas.(*vgimg.Canvas)
	p.Draw(c)
	d := p.DataCanvas(c)
	tx, ty := p.Transforms(&d)
	inside := func(x, y float64) bool {
		px, py := tx(x), ty(y)
		// Image rows run down from the top; points run up.
		col := color.RGBAModel.Convert(img.Image().At(int(px/72*100), int((c.Max.Y-py)/72*100))).(color.RGBA)
		return col != color.RGBA{255, 255, 255, 255} && col.G > col.R // the band's green
	}
	for _, tc := range []struct {
		bytes int64
		frac  float64
	}{{64, 0.15}, {4 << 10, 0.15}, {256 << 10, 0.05}} {
		x := X(tc.bytes)
		if !inside(x, 1+tc.frac-0.01) || !inside(x, 1-tc.frac+0.01) {
			t.Errorf("%d B: no shade just inside ±%g", tc.bytes, tc.frac)
		}
		if inside(x, 1+tc.frac+0.01) || inside(x, 1-tc.frac-0.01) {
			t.Errorf("%d B: shade beyond ±%g", tc.bytes, tc.frac)
		}
	}
}

// The ratio panel marks the caller's verdicts, whatever the ratios: a
// regression ring where the gate said regression, a grey one where it
// said noisy, none where it said unchanged or improvement.
func TestCompareFigureDrawsVerdicts(t *testing.T) {
	base := sweep(pow2s(3, 12), 1, cfg("Ring", "LL", 1))
	legendOf := func(v ...Verdict) string {
		cmp, err := PairSets(Set{"base", base}, Set{"cand", faster(base, 1.01)}, Options{})
		if err != nil {
			t.Fatal(err)
		}
		judge(cmp, UniformThreshold(0.05))
		for i := range cmp.Pairs[0].Ratio {
			if cmp.Pairs[0].Ratio[i].Verdict != Unchanged {
				t.Fatalf("1%% faster judged %v", cmp.Pairs[0].Ratio[i].Verdict)
			}
			if i < len(v) {
				cmp.Pairs[0].Ratio[i].Verdict = v[i]
			}
		}
		fig, err := CompareFigure(cmp)
		if err != nil {
			t.Fatal(err)
		}
		var names []string
		for _, e := range fig.legend {
			names = append(names, e.name)
		}
		return strings.Join(names, "|")
	}
	const reg, noisy = "gate: regression", "gate: beyond, not significant"
	for _, c := range []struct {
		v          []Verdict
		reg, noisy bool
	}{
		{nil, false, false},
		{[]Verdict{Improvement, Unchanged}, false, false},
		{[]Verdict{Unchanged, Regression}, true, false},
		{[]Verdict{Noisy}, false, true},
		{[]Verdict{Noisy, Regression}, true, true},
	} {
		l := legendOf(c.v...)
		if strings.Contains(l, reg) != c.reg || strings.Contains(l, noisy) != c.noisy {
			t.Errorf("verdicts %v: legend %q", c.v, l)
		}
		if !strings.Contains(l, "gate threshold ±5%") {
			t.Errorf("verdicts %v: legend %q lacks the threshold", c.v, l)
		}
	}
	if _, err := CompareFigure(nil); err == nil {
		t.Error("CompareFigure(nil) drew something")
	}
}

func TestThreshold(t *testing.T) {
	th := Threshold{Bands: []ThresholdBand{{Lo: 8, Hi: 64 << 10, Frac: 0.15}, {Lo: 1 << 20, Frac: 0.025}}, Default: math.NaN()}
	if s := th.String(); s != "8-64K=15%,1M-=2.5%" {
		t.Errorf("String %q", s)
	}
	for _, c := range []struct {
		size int64
		frac float64
		ok   bool
	}{{8, 0.15, true}, {64<<10 - 1, 0.15, true}, {64 << 10, 0, false}, {4, 0, false}, {1 << 30, 0.025, true}} {
		f, ok := th.For(c.size)
		if ok != c.ok || ok && f != c.frac {
			t.Errorf("For(%d) = %v, %v; want %v, %v", c.size, f, ok, c.frac, c.ok)
		}
	}
	th.Default = 0.05
	if f, ok := th.For(64 << 10); !ok || f != 0.05 || th.String() != "8-64K=15%,1M-=2.5%,5%" {
		t.Errorf("with a default: For(64K) = %v, %v; %q", f, ok, th)
	}
	if u := UniformThreshold(0.1); u.String() != "10%" || thresholdText(u) != "±10%" || thresholdText(th) != th.String() {
		t.Errorf("uniform %q, legend %q; banded legend %q", u, thresholdText(u), thresholdText(th))
	}
	if w := th.widest(); w != 0.15 {
		t.Errorf("widest %v", w)
	}
	for v, want := range map[Verdict]string{Unchanged: "unchanged", Regression: "regression", Noisy: "noisy", Improvement: "improvement", 9: "Verdict(9)"} {
		if v.String() != want {
			t.Errorf("%d: %q, want %q", int(v), v, want)
		}
	}
}

// PairSets names the side whose records give no curve.
func TestPairSetsErrors(t *testing.T) {
	good := sweep(pow2s(3, 6), 1, cfg("Ring", "LL", 1))
	var inPlace []results.Record
	for _, r := range good {
		r.Placement = results.InPlace
		inPlace = append(inPlace, r)
	}
	if _, err := PairSets(Set{"b.jsonl", inPlace}, Set{"c.jsonl", good}, Options{}); err == nil || !strings.Contains(err.Error(), "baseline b.jsonl") {
		t.Errorf("baseline without points: %v", err)
	}
	if _, err := PairSets(Set{"b.jsonl", good}, Set{"c.jsonl", nil}, Options{}); err == nil || !strings.Contains(err.Error(), "candidate c.jsonl") {
		t.Errorf("candidate without points: %v", err)
	}
	cmp, err := PairSets(Set{"b", good}, Set{"c", good}, Options{})
	if err != nil || len(cmp.Pairs) != 1 || len(cmp.Pairs[0].Ratio) != 0 || cmp.Threshold.String() != "5%" || len(cmp.Options.By) == 0 {
		t.Errorf("unjudged comparison %+v, %v", cmp, err)
	}
}
