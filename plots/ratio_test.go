package plots

import (
	"image/color"
	"math"
	"strings"
	"testing"

	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/vgimg"

	"github.com/gccl/gccl/ci"
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
	ps, _, err := Gate(ps, GateOptions(BusBW, ci.Uniform(0.05)))
	if err != nil {
		t.Fatal(err)
	}
	if len(ps[0].Ratio) != len(sizes) {
		t.Fatalf("%d ratios, want %d", len(ps[0].Ratio), len(sizes))
	}
	for _, r := range ps[0].Ratio {
		if math.Abs(r.Ratio-1.5) > 1e-9 || r.Verdict != ci.Improvement {
			t.Errorf("%+v, want ratio 1.5, an improvement", r)
		}
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
	ps, warns, err = Gate(ps, GateOptions(BusBW, ci.Uniform(0.05)))
	if err != nil || len(warns) != 0 || len(ps[0].Ratio) != len(sizes) || math.Abs(ps[0].Ratio[0].Ratio-0.5) > 1e-9 || ps[0].Ratio[0].Verdict != ci.Regression {
		t.Errorf("one a side: %+v, %q, %v", ps, warns, err)
	}
}

// noisy gives every record iterations spread around its time, so that
// the gate can test them.
func noisy(recs []results.Record) []results.Record {
	out := make([]results.Record, len(recs))
	for i, r := range recs {
		r.IterTimesUs = nil
		for k := 0; k < 20; k++ {
			r.IterTimesUs = append(r.IterTimesUs, r.TimeUs*(0.98+0.002*float64(k)))
		}
		out[i] = r
	}
	return out
}

// The ratio panel is the gate's: its points are ci.Compare's ratios with
// their intervals and verdicts, key by key, in the metric's direction and
// with the threshold of each size band; a point beyond its band is one
// the gate calls beyond the threshold.
func TestGateAgreesWithCompare(t *testing.T) {
	th, err := ci.ParseThresholds("8B-64K=15%,64K-=5%")
	if err != nil {
		t.Fatal(err)
	}
	base := noisy(sweep(pow2s(3, 20), 1, cfg("Ring", "LL", 1)))
	for _, m := range []Metric{BusBW, Time} {
		cand := noisy(faster(base, 1/1.1)) // 10% slower everywhere
		bc, _ := BuildCurves(base, CurveOptions{Metric: m, By: CompareBy})
		cc, _ := BuildCurves(cand, CurveOptions{Metric: m, By: CompareBy})
		ps, _ := Pairs(bc, cc)
		opt := GateOptions(m, th)
		ps, warns, err := Gate(ps, opt)
		if err != nil || len(warns) != 0 {
			t.Fatalf("%v: %v %q", m, err, warns)
		}
		rep, err := ci.Compare(base, cand, opt)
		if err != nil {
			t.Fatal(err)
		}
		want := map[int64]ci.Comparison{}
		for _, c := range rep.Comparisons {
			want[c.Key.Size] = c
		}
		if len(ps[0].Ratio) != len(want) {
			t.Fatalf("%v: %d points, the gate compared %d keys", m, len(ps[0].Ratio), len(want))
		}
		for _, r := range ps[0].Ratio {
			c := want[r.Bytes]
			if r.Ratio != c.Ratio || r.Lo != c.RatioLo || r.Hi != c.RatioHi || r.Verdict != c.Verdict || r.Threshold != c.Threshold {
				t.Errorf("%v %d B: plot %+v, gate %+v", m, r.Bytes, r, c)
			}
			// 10% slower: within 15% below 64K, a significant regression from 64K.
			wantV := ci.Unchanged
			if r.Bytes >= 64<<10 {
				wantV = ci.Regression
			}
			outside := math.Abs(r.Ratio-1) > r.Threshold
			if r.Verdict != wantV || outside != (wantV == ci.Regression) {
				t.Errorf("%v %d B: ratio %.3f, band ±%g, verdict %v; want %v", m, r.Bytes, r.Ratio, r.Threshold, r.Verdict, wantV)
			}
			if m == Time && r.Ratio < 1 || m == BusBW && r.Ratio > 1 {
				t.Errorf("%v %d B: ratio %.3f points the wrong way for a slowdown", m, r.Bytes, r.Ratio)
			}
			if !finite(r.Lo) || !finite(r.Hi) || r.Lo > r.Ratio || r.Hi < r.Ratio {
				t.Errorf("%v %d B: interval [%v, %v] around %v", m, r.Bytes, r.Lo, r.Hi, r.Ratio)
			}
		}
	}

	// A size no threshold covers is the gate's error.
	bc, _ := BuildCurves(base, CurveOptions{By: CompareBy})
	ps, _ := Pairs(bc, bc)
	narrow, _ := ci.ParseThresholds("8B-64K=15%")
	if _, _, err := Gate(ps, GateOptions(BusBW, narrow)); err == nil || !strings.Contains(err.Error(), "no threshold") {
		t.Errorf("uncovered size: %v", err)
	}
}

// The band steps at the measured sizes: every size's column lies in the
// band of its own threshold, and the steps cover the axis.
func TestThresholdSteps(t *testing.T) {
	th, _ := ci.ParseThresholds("8B-1K=30%,1K-64K=15%,5%")
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

// The comparison figure shades the gate's band of each size band and
// marks what the gate calls regressions.
func TestCompareFigureGate(t *testing.T) {
	th, _ := ci.ParseThresholds("8B-64K=15%,64K-=5%")
	base := sweep(pow2s(3, 20), 1, cfg("Ring", "LL", 1))
	cand := faster(base, 1/1.1)
	fig, err := CompareFigure(Set{"base", base}, Set{"cand", cand}, Options{Thresholds: &th})
	if err != nil {
		t.Fatal(err)
	}
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
	if !strings.Contains(l, "gate threshold "+th.String()) || !strings.Contains(l, "gate: regression") {
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

// Sizes the gate cannot compare (no time and no bandwidth: a busBW
// printed as 0.00 alone would be derived from the time) are left out of
// the ratio panel, and said so.
func TestGateZeroBandwidth(t *testing.T) {
	base := sweep(pow2s(3, 6), 1, cfg("Ring", "LL", 1))
	base[0].BusBw, base[0].AlgBw, base[0].TimeUs = 0, 0, 0
	bc, _ := BuildCurves(base, CurveOptions{By: CompareBy})
	cc, _ := BuildCurves(sweep(pow2s(3, 6), 1, cfg("Ring", "LL", 1)), CurveOptions{By: CompareBy})
	ps, _ := Pairs(bc, cc)
	ps, warns, err := Gate(ps, GateOptions(BusBW, ci.Uniform(0.05)))
	if err != nil || len(ps[0].Ratio) != 3 || ps[0].Ratio[0].Bytes != 16 {
		t.Fatalf("ratios %+v, %v", ps, err)
	}
	if len(warns) != 1 || !strings.Contains(warns[0], "1 of the 4 sizes both sides measured have no ratio") {
		t.Errorf("warnings %q", warns)
	}
}
