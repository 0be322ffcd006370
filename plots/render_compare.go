package plots

import (
	"fmt"
	"image/color"
	"math"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"

	"github.com/gccl/gccl/ci"
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

// CompareFigure draws two result sets on one figure, the candidate solid
// and the baseline dotted, one colour and marker per configuration, and
// under them the ratio the regression gate (package ci) compares, with
// the 1.0 line, the gate's threshold band of each size band shaded, its
// confidence interval where it could test, and its regressions ringed:
// a point outside the band is what tune gate, with the same
// --threshold, calls beyond the threshold. Curves are grouped by o.By,
// CompareBy when empty, so that the configurations pair up; more of them
// than a panel takes are split into panels (PlanFacets).
func CompareFigure(base, cand Set, o Options) (*Figure, error) {
	if len(o.By) == 0 {
		o.By = CompareBy
	}
	th := ci.Uniform(DefaultThreshold)
	if o.Thresholds != nil {
		th = *o.Thresholds
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
	pairs, gw, err := Gate(pairs, GateOptions(o.Metric, th))
	if err != nil {
		return nil, err
	}
	warns = append(warns, gw...)

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
func compareLegend(fig *Figure, cs []compared, plan Facets, base, cand Set, th ci.Thresholds, marks [3]bool) {
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
func thresholdText(th ci.Thresholds) string {
	if len(th.Bands) == 0 {
		return fmt.Sprintf("±%.3g%%", 100*th.Default)
	}
	return th.String()
}

// ratioRange is the ratio panel's range: the points and the threshold
// bands, with room, never below 0. The confidence intervals are left out
// (a wide one would flatten every point) and cut at the panel's edges.
func ratioRange(rs []GatePoint, th ci.Thresholds) (float64, float64) {
	widest := th.Default
	if math.IsNaN(widest) {
		widest = 0
	}
	for _, b := range th.Bands {
		widest = math.Max(widest, b.Frac)
	}
	lo, hi := 1-1.6*widest, 1+1.6*widest
	for _, r := range rs {
		lo, hi = math.Min(lo, r.Ratio), math.Max(hi, r.Ratio)
	}
	lo, hi = clampRange(lo, hi, 0.02)
	pad := (hi - lo) * 0.06
	return math.Max(0, lo-pad), hi + pad
}

// Marks of the gate's verdicts.
var (
	regressionRed = color.RGBA{0xc0, 0x00, 0x00, 0xff}
	noisyGrey     = color.RGBA{0x80, 0x80, 0x80, 0xff}
	markRadius    = vg.Points(4.5)
)

// ringMark is a bold ring around a point, so a verdict shows whatever
// the point's own marker and colour.
type ringMark struct{}

func (ringMark) DrawGlyph(c *draw.Canvas, sty draw.GlyphStyle, pt vg.Point) {
	c.SetLineStyle(draw.LineStyle{Color: sty.Color, Width: vg.Points(1.2)})
	var p vg.Path
	p.Move(vg.Point{X: pt.X + sty.Radius, Y: pt.Y})
	p.Arc(pt, sty.Radius, 0, 2*math.Pi)
	p.Close()
	c.Stroke(p)
}

// addRatio draws a pair's gate ratios: a line with markers, the
// confidence intervals as bars, the verdicts as rings. It reports which
// of regression rings, noisy rings and bars it drew.
func addRatio(p *plot.Plot, rs []GatePoint, line draw.LineStyle, glyph draw.GlyphStyle) [3]bool {
	var drew [3]bool
	pts := make([]Point, len(rs))
	for i, r := range rs {
		pts[i] = Point{Bytes: r.Bytes, Y: r.Ratio}
	}
	glyph.Radius = vg.Points(2)
	bar := line
	bar.Width = vg.Points(0.8)
	for _, r := range rs {
		if finite(r.Lo) && finite(r.Hi) {
			x := X(r.Bytes)
			lo, hi := math.Max(r.Lo, p.Y.Min), math.Min(r.Hi, p.Y.Max)
			addXYLine(p, plotter.XYs{{X: x, Y: lo}, {X: x, Y: hi}}, bar)
			drew[2] = true
		}
	}
	addLine(p, BusBW, pts, line, &glyph) // ratios are linear whatever the metric
	for _, r := range rs {
		var col color.Color
		switch r.Verdict {
		case ci.Regression:
			col, drew[0] = regressionRed, true
		case ci.Noisy:
			col, drew[1] = noisyGrey, true
		default:
			continue
		}
		s, err := plotter.NewScatter(plotter.XYs{{X: X(r.Bytes), Y: r.Ratio}})
		if err == nil {
			s.GlyphStyle = draw.GlyphStyle{Color: col, Radius: markRadius, Shape: ringMark{}}
			p.Add(s)
		}
	}
	return drew
}

// steps is the plotter of the gate's threshold band: shaded per size
// band, its threshold written at its upper edge where there is room.
type steps []ThresholdStep

func addSteps(p *plot.Plot, s []ThresholdStep) {
	if len(s) > 0 {
		p.Add(steps(s))
	}
}

func (s steps) Plot(c draw.Canvas, p *plot.Plot) {
	tx, ty := p.Transforms(&c)
	lab := textStyle(sans, noteSize, textGrey)
	lab.XAlign, lab.YAlign = draw.XLeft, draw.YBottom
	for _, st := range s {
		r := vg.Rectangle{Min: vg.Point{X: tx(st.X0), Y: ty(1 - st.Frac)}, Max: vg.Point{X: tx(st.X1), Y: ty(1 + st.Frac)}}
		c.SetColor(bandShade)
		c.Fill(r.Path())
		if len(s) > 1 {
			t := fmt.Sprintf("±%.3g%%", 100*st.Frac)
			if lab.Width(t)+4 < r.Size().X && r.Max.Y+lab.Height(t) < c.Max.Y {
				c.FillText(lab, vg.Point{X: r.Min.X + 2, Y: r.Max.Y + 1}, t)
			}
		}
	}
}
