package plots

import (
	"fmt"
	"image/color"

	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"

	"github.com/gccl/gccl/results"
)

// Set is one side of a comparison: its records and the name the figure
// gives it (a file name, "embedded", "NCCL").
type Set struct {
	Name    string
	Records []results.Record
}

// compared is one configuration of a comparison: a pair, or a curve of
// one side only.
type compared struct {
	rep  Curve // the candidate's curve of a pair; names and groups it
	pair *Pair
	only *Curve // a curve of one side only
	base bool   // only is the baseline's
}

// CompareFigure draws a comparison (PairSets, judged by the caller's
// gate): the candidate solid and the baseline dotted, one colour and
// marker per configuration, and under them the gate's ratios, with the
// 1.0 line, its threshold of each size band shaded, its confidence
// intervals where it could test, and its regressions ringed: a point
// outside the band is what tune gate, with the same --threshold, calls
// beyond the threshold. More configurations than a panel takes are split
// into panels (PlanFacets).
func CompareFigure(cmp *Comparison) (*Figure, error) {
	if cmp == nil {
		return nil, fmt.Errorf("no comparison to draw (build one with PairSets)")
	}
	o, base, cand, th := cmp.Options, cmp.Base, cmp.Cand, cmp.Threshold
	bc, cc, pairs := cmp.BaseCurves, cmp.CandCurves, cmp.Pairs
	warns := append([]string(nil), cmp.Warnings...)

	all := append(placed(base.Records, o.CurveOptions), placed(cand.Records, o.CurveOptions)...)
	fig := &Figure{Title: o.Title, Warnings: warns,
		Subtitle: subtitle(o.CurveOptions, fmt.Sprintf("; %s; ratio: candidate/baseline of tune gate's medians, and its verdicts (%s 1 is better)", Title(all), better(o.Metric)))}
	if fig.Title == "" {
		fig.Title = fmt.Sprintf("%s: %s vs %s", o.Metric.Name(), cand.Name, base.Name)
	}

	cs := comparedOf(pairs, bc, cc)
	reps := make([]Curve, len(cs))
	var sets [][]Point
	var ratios []GatePoint
	for i, c := range cs {
		reps[i] = c.rep
		if c.pair != nil {
			sets = append(sets, c.pair.Base.Points, c.pair.Cand.Points)
			ratios = append(ratios, c.pair.Ratio...)
		} else {
			sets = append(sets, c.only.Points)
		}
	}
	plan := PlanFacets(o.By, reps)
	xlo, xhi := curvesXRange(append(append([]Curve(nil), bc...), cc...))
	ylo, yhi := metricRange(o.Metric, sets)
	rlo, rhi := ratioRange(ratios, th)
	var sizes []int64
	for _, r := range ratios {
		sizes = append(sizes, r.Bytes)
	}
	bands := ThresholdSteps(th, sizes, xlo, xhi)
	fig.ratioSteps = bands
	ratioLabel := "ratio"
	if !o.Metric.HigherIsBetter() {
		ratioLabel = "time ratio"
	}

	var marks [3]bool // regression, noisy, error bars drawn
	for j, idx := range plan.Panels {
		top := newPlot()
		top.Title.Text = plan.Titles[j]
		fx := setSizeAxis(top, xlo, xhi, false)
		fy := setMetricAxis(top, o.Metric, ylo, yhi)
		top.Add(grid())
		ratio := newPlot()
		rx := setSizeAxis(ratio, xlo, xhi, true)
		ry := setLinearAxis(ratio, rlo, rhi, 5)
		addSteps(ratio, bands)
		ratio.Add(grid())
		addXYLine(ratio, plotter.XYs{{X: xlo, Y: 1}, {X: xhi, Y: 1}}, draw.LineStyle{Color: color.Black, Width: vg.Points(0.8)})
		for _, i := range idx {
			c := cs[i]
			line, glyph := curveStyle(plan.Styles[i])
			if c.pair == nil {
				if c.base {
					line.Dashes, line.Width, glyph.Radius = baseDashes, vg.Points(1.3), vg.Points(2)
				}
				addLine(top, o.Metric, c.only.Points, line, &glyph)
				continue
			}
			bl, bg := line, glyph
			bl.Dashes, bl.Width, bg.Radius = baseDashes, vg.Points(1.3), vg.Points(2)
			addLine(top, o.Metric, c.pair.Base.Points, bl, &bg)
			addLine(top, o.Metric, c.pair.Cand.Points, line, &glyph)
			m := addRatio(ratio, c.pair.Ratio, line, glyph)
			for k := range marks {
				marks[k] = marks[k] || m[k]
			}
		}
		fig.newCell()
		fig.addPanel(panel{p: top, weight: 0.6, yLabel: o.Metric.Axis(), fit: fitBoth(fx, fy), title: top.Title.Text})
		fig.addPanel(panel{p: ratio, weight: 0.4, xLabel: sizeAxisLabel, yLabel: ratioLabel, fit: fitBoth(rx, ry)})
	}

	compareLegend(fig, cs, plan, base, cand, th, marks)
	return fig, nil
}

// better says which side of ratio 1 is an improvement.
func better(m Metric) string {
	if m.HigherIsBetter() {
		return "above"
	}
	return "below"
}

// comparedOf lists the configurations: the pairs, then the candidate's
// and the baseline's curves that did not pair.
func comparedOf(pairs []Pair, bc, cc []Curve) []compared {
	var out []compared
	paired := map[string]bool{}
	for i := range pairs {
		p := &pairs[i]
		rep := p.Cand
		rep.Label = p.Label
		out = append(out, compared{rep: rep, pair: p})
		paired["c"+p.Cand.ID()], paired["b"+p.Base.ID()] = true, true
	}
	for _, side := range []struct {
		cs   []Curve
		tag  string
		base bool
	}{{cc, "c", false}, {bc, "b", true}} {
		for i := range side.cs {
			if c := &side.cs[i]; !paired[side.tag+c.ID()] {
				out = append(out, compared{rep: *c, only: c, base: side.base})
			}
		}
	}
	return out
}

// compareLegend names the configurations (with their geometric mean ratio
// when the figure is one panel), the sides, and what the ratio panel
// marks.
func compareLegend(fig *Figure, cs []compared, plan Facets, base, cand Set, th Threshold, marks [3]bool) {
	seen := map[int]bool{}
	geomean := len(plan.Panels) == 1
	for i, c := range cs {
		s := plan.Styles[i]
		if seen[s] {
			continue
		}
		seen[s] = true
		line, glyph := curveStyle(s)
		name := plan.Labels[i]
		switch {
		case c.pair == nil && c.base:
			name += " (baseline only)"
			line.Dashes = baseDashes
		case c.pair == nil:
			name += " (candidate only)"
		case geomean && len(c.pair.Ratio) > 0:
			name += fmt.Sprintf(" (×%.2f)", c.pair.Geomean())
		}
		fig.addLegend(name, lineThumb{line: line, glyph: &glyph})
	}
	black := draw.LineStyle{Color: color.Black, Width: vg.Points(1.3)}
	dotted := black
	dotted.Dashes = baseDashes
	fig.addLegend("candidate: "+cand.Name, lineThumb{line: black})
	fig.addLegend("baseline: "+base.Name, lineThumb{line: dotted})
	fig.addLegend("gate threshold "+thresholdText(th), swatch{bandShade})
	if marks[0] {
		fig.addLegend("gate: regression", lineThumb{glyph: &draw.GlyphStyle{Color: regressionRed, Radius: markRadius, Shape: ringMark{}}})
	}
	if marks[1] {
		fig.addLegend("gate: beyond, not significant", lineThumb{glyph: &draw.GlyphStyle{Color: noisyGrey, Radius: markRadius, Shape: ringMark{}}})
	}
	if marks[2] {
		fig.addLegend("bars: the ratio's 95% CI", lineThumb{line: draw.LineStyle{Color: color.Black, Width: vg.Points(0.8)}, vertical: true})
	}
	if geomean && len(cs) > 0 && cs[0].pair != nil {
		fig.addLegend("(×r: geometric mean ratio)")
	}
}

// thresholdText is the thresholds as the band's legend gives them:
// "±5%", or tune gate's band syntax "8B-64K=15%,64K-=5%".
func thresholdText(th Threshold) string {
	if len(th.Bands) == 0 {
		return fmt.Sprintf("±%.3g%%", 100*th.Default)
	}
	return th.String()
}
