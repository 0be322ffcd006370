package plots

import (
	"math"
	"reflect"
	"strings"
	"testing"

	"github.com/gccl/gccl/results"
)

func pts(xy ...float64) []Point {
	var out []Point
	for i := 0; i+1 < len(xy); i += 2 {
		out = append(out, Point{Bytes: int64(xy[i]), Y: xy[i+1], N: 1})
	}
	return out
}

func TestRatio(t *testing.T) {
	curve := func(ref float64, p ...Point) Curve { return Curve{Points: p, RefCopy: ref} }
	// Bandwidths: from the times where both have them (8 B: printed 0 and
	// 0.01, times 20 and 10 us), else from the values (16, 32 B); 64 and
	// 128 B are on one side only.
	base := curve(10, Point{Bytes: 8, Y: 0, Us: 20}, Point{Bytes: 16, Y: 2}, Point{Bytes: 32, Y: 4}, Point{Bytes: 64, Y: 8})
	cand := curve(5, Point{Bytes: 8, Y: 0.01, Us: 10}, Point{Bytes: 16, Y: 3}, Point{Bytes: 32, Y: 2}, Point{Bytes: 128, Y: 5})
	if got, want := Ratio(base, cand, BusBW), pts(8, 2, 16, 1.5, 32, 0.5); !reflect.DeepEqual(got, want) {
		t.Errorf("busBW ratio = %v, want %v", got, want)
	}
	// Normalised by copy bandwidths of 10 and 5: twice as fast on a machine
	// half as fast at copying is four times the normalised busBW.
	if got := Ratio(base, cand, BusBWNorm); got[0].Y != 4 {
		t.Errorf("normalised ratio at 8 B = %v, want 4", got[0].Y)
	}
	// Times divide as they are.
	bt := curve(0, Point{Bytes: 8, Y: 20, Us: 20}, Point{Bytes: 16, Y: 30, Us: 30})
	ct := curve(0, Point{Bytes: 8, Y: 10, Us: 10}, Point{Bytes: 16, Y: 60, Us: 60})
	if got, want := Ratio(bt, ct, Time), pts(8, 0.5, 16, 2); !reflect.DeepEqual(got, want) {
		t.Errorf("time ratio = %v, want %v", got, want)
	}
	// A baseline of 0 without times has no ratio.
	if got := Ratio(curve(0, Point{Bytes: 8, Y: 0}), curve(0, Point{Bytes: 8, Y: 1}), AlgBW); len(got) != 0 {
		t.Errorf("ratio over 0: %v", got)
	}

	p := Pair{Ratio: pts(16, 2, 32, 0.5, 64, 1)}
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
	ps, warns := Pairs(base, cand, BusBW)
	if len(ps) != 1 || ps[0].Label != "Ring/LL" {
		t.Fatalf("pairs %+v", ps)
	}
	for _, r := range ps[0].Ratio {
		if math.Abs(r.Y-1.5) > 1e-12 {
			t.Errorf("ratio %v, want 1.5", r)
		}
	}
	if len(ps[0].Ratio) != len(sizes) {
		t.Errorf("%d ratios, want %d", len(ps[0].Ratio), len(sizes))
	}
	w := strings.Join(warns, "\n")
	if !strings.Contains(w, "Tree/LL: only in the candidate") || !strings.Contains(w, "Ring/Simple: only in the baseline") {
		t.Errorf("warnings %q", warns)
	}

	// Our run against an nccl-tests log with no configuration.
	ours, _ := BuildCurves(sweep(sizes, 2, cfg("Ring", "Simple", 2)), CurveOptions{By: CompareBy})
	log, _ := BuildCurves(faster(sweep(sizes, 2, func(r *results.Record) { r.Algorithm, r.Protocol, r.Backend = "", "", "nccl-tests" }), 2), CurveOptions{By: CompareBy})
	setLabels(CompareBy, log, ours)
	ps, warns = Pairs(log, ours, BusBW)
	if len(ps) != 1 || len(warns) != 0 || ps[0].Label != "Ring/Simple/2ch vs auto" || math.Abs(ps[0].Ratio[0].Y-0.5) > 1e-12 {
		t.Errorf("one a side: pairs %+v, warnings %q", ps, warns)
	}
}
