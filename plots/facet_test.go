package plots

import (
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/gccl/gccl/results"
)

// configs sweeps every algorithm x protocol x channels given, with
// busBW differing by configuration.
func configs(algos, protos []string, nchs []int, opts ...func(*results.Record)) []results.Record {
	var recs []results.Record
	bw := 1.0
	for _, a := range algos {
		for _, p := range protos {
			for _, n := range nchs {
				recs = append(recs, sweep(pow2s(3, 16), bw, append([]func(*results.Record){cfg(a, p, n)}, opts...)...)...)
				bw += 0.5
			}
		}
	}
	return recs
}

// Twelve configurations make three panels, one per protocol (four curves
// each, where per algorithm would leave six), on shared axes, each
// configuration one colour and marker in every panel.
func TestFacetsByProtocol(t *testing.T) {
	recs := configs([]string{"Ring", "Tree"}, []string{"LL", "LL128", "Simple"}, []int{1, 2})
	fig, err := CurvesFigure(recs, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if len(fig.cells) != 3 {
		t.Fatalf("%d panels, want 3", len(fig.cells))
	}
	var titles []string
	for _, cell := range fig.cells {
		titles = append(titles, cell[0].p.Title.Text)
		p, q := cell[0].p, fig.cells[0][0].p
		if p.X.Min != q.X.Min || p.X.Max != q.X.Max || p.Y.Min != q.Y.Min || p.Y.Max != q.Y.Max {
			t.Errorf("%s: axes %v..%v x %v..%v, not the first panel's", p.Title.Text, p.X.Min, p.X.Max, p.Y.Min, p.Y.Max)
		}
	}
	if want := []string{"protocol LL", "protocol LL128", "protocol Simple"}; !reflect.DeepEqual(titles, want) {
		t.Errorf("panel titles %q, want %q", titles, want)
	}
	if !strings.Contains(fig.Subtitle, "one panel per protocol") {
		t.Errorf("subtitle %q does not say how the panels split", fig.Subtitle)
	}
	var legend []string
	for _, e := range fig.legend {
		legend = append(legend, e.name)
	}
	if want := []string{"Ring/1ch", "Ring/2ch", "Tree/1ch", "Tree/2ch"}; !reflect.DeepEqual(legend, want) {
		t.Errorf("legend %q, want %q (one entry per configuration, shared by the panels)", legend, want)
	}

	curves, _ := BuildCurves(recs, CurveOptions{})
	plan := PlanFacets(DefaultBy, curves)
	for j, idx := range plan.Panels {
		if len(idx) != 4 {
			t.Errorf("panel %d holds %d curves, want 4", j, len(idx))
		}
		seen := map[string]bool{}
		for _, i := range idx {
			k := fmt.Sprint(curveColor(plan.Styles[i]), curveGlyph(plan.Styles[i]))
			if seen[k] {
				t.Errorf("panel %d: two curves drawn alike (%s)", j, k)
			}
			seen[k] = true
		}
	}
	// A configuration keeps its style across panels.
	style := map[string]int{}
	for i, l := range plan.Labels {
		if s, ok := style[l]; ok && s != plan.Styles[i] {
			t.Errorf("%s drawn in styles %d and %d", l, s, plan.Styles[i])
		}
		style[l] = plan.Styles[i]
	}
	checkPNG(t, render(t, fig, "png", small), small, curveColor(0), curveColor(1), curveColor(2), curveColor(3))
}

// The field that splits most evenly wins; one field not enough, both;
// eight curves or fewer stay in one panel.
func TestPlanFacets(t *testing.T) {
	// 3 algorithms x 2 protocols x 2: per algorithm 4 a panel, per protocol 6.
	curves, _ := BuildCurves(configs([]string{"CollNet", "Ring", "Tree"}, []string{"LL", "Simple"}, []int{1, 2}), CurveOptions{})
	if plan := PlanFacets(DefaultBy, curves); !reflect.DeepEqual(plan.By, []Field{FieldAlgo}) || len(plan.Panels) != 3 {
		t.Errorf("split by %v into %d panels, want algorithm, 3", plan.By, len(plan.Panels))
	}
	// 12 configurations on 3 rank counts: 36 curves, 12 a panel by one
	// field; by both, 6.
	var recs []results.Record
	for _, n := range []int{2, 4, 8} {
		recs = append(recs, configs([]string{"Ring", "Tree"}, []string{"LL", "LL128", "Simple"}, []int{1, 2}, ranks(n))...)
	}
	curves, _ = BuildCurves(recs, CurveOptions{})
	plan := PlanFacets(DefaultBy, curves)
	if !reflect.DeepEqual(plan.By, []Field{FieldProto, FieldAlgo}) || len(plan.Panels) != 6 || plan.Titles[0] != "protocol LL, algorithm Ring" {
		t.Errorf("split by %v into %d panels (%q)", plan.By, len(plan.Panels), plan.Titles)
	}
	for _, p := range plan.Panels {
		if len(p) > maxCurvesPerPanel {
			t.Errorf("a panel of %d curves", len(p))
		}
	}
	if plan.Labels[0] != "2 ranks 1ch" {
		t.Errorf("label %q, want the fields other than the panels'", plan.Labels[0])
	}
	// Three configurations: one panel, labelled as before.
	curves, _ = BuildCurves(threeConfigs(), CurveOptions{})
	if plan := PlanFacets(DefaultBy, curves); plan.By != nil || len(plan.Panels) != 1 || plan.Labels[0] != "Ring/LL/1ch" {
		t.Errorf("three curves: %+v", plan)
	}
}

// Colour and marker pairs never repeat before 64 curves, and the first 8
// curves differ in both.
func TestStylesDistinct(t *testing.T) {
	seen := map[string]int{}
	for i := 0; i < 64; i++ {
		k := fmt.Sprintf("%v %T", curveColor(i), curveGlyph(i))
		if j, ok := seen[k]; ok {
			t.Errorf("curves %d and %d drawn alike", j, i)
		}
		seen[k] = i
	}
	for i := 0; i < 8; i++ {
		for j := 0; j < i; j++ {
			if curveColor(i) == curveColor(j) || reflect.TypeOf(curveGlyph(i)) == reflect.TypeOf(curveGlyph(j)) {
				t.Errorf("curves %d and %d share a colour or a marker", j, i)
			}
		}
	}
	for i, c := range palette {
		if l := luminance(c); l > 0.75 {
			t.Errorf("colour %d (%v) too light on white: luminance %.2f", i, c, l)
		}
	}
}

// A comparison of twelve configurations: a curves panel over a ratio
// panel for each protocol.
func TestCompareFacets(t *testing.T) {
	base := configs([]string{"Ring", "Tree"}, []string{"LL", "LL128", "Simple"}, []int{1, 2})
	fig := compareFig(t, Set{"base", base}, Set{"cand", faster(base, 1.02)}, Options{}, UniformThreshold(DefaultThreshold))
	if len(fig.cells) != 3 {
		t.Fatalf("%d cells, want 3", len(fig.cells))
	}
	for _, cell := range fig.cells {
		if len(cell) != 2 || !strings.HasPrefix(cell[0].p.Title.Text, "protocol ") || cell[1].yLabel != "ratio" {
			t.Errorf("cell of %d panels, %q over %q", len(cell), cell[0].p.Title.Text, cell[len(cell)-1].yLabel)
		}
	}
	checkPNG(t, render(t, fig, "png", DefaultPage), DefaultPage, curveColor(0), curveColor(3))
}
