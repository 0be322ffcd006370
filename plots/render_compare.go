package plots

import (
	"fmt"
	"image/color"
	"math"

	"gonum.org/v1/plot"
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

// CompareFigure draws two result sets on one figure, the candidate solid
// and the baseline dotted, one colour per configuration, and underneath
// the candidate/baseline ratio of every configuration both measured, with
// the 1.0 line and a shaded band of +-o.Threshold. Curves are grouped by
// o.By, CompareBy when empty, so that the configurations pair up.
func CompareFigure(base, cand Set, o Options) (*Figure, error) {
	if len(o.By) == 0 {
		o.By = CompareBy
	}
	thr := o.Threshold
	if thr <= 0 {
		thr = DefaultThreshold
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
	pairs, warns := Pairs(bc, cc, o.Metric)

	all := append(placed(base.Records, o.CurveOptions), placed(cand.Records, o.CurveOptions)...)
	fig := &Figure{Title: o.Title, Warnings: warns,
		Subtitle: subtitle(o.CurveOptions, fmt.Sprintf("; %s", Title(all)))}
	if fig.Title == "" {
		fig.Title = fmt.Sprintf("%s: %s vs %s", o.Metric.Name(), cand.Name, base.Name)
	}

	// Colours: one per pair, then the unpaired curves of either side.
	type drawn struct {
		c     Curve
		color int
		base  bool
	}
	var ds []drawn
	paired := map[string]bool{}
	for i, p := range pairs {
		ds = append(ds, drawn{p.Cand, i, false}, drawn{p.Base, i, true})
		paired["c"+p.Cand.ID()], paired["b"+p.Base.ID()] = true, true
	}
	next := len(pairs)
	for _, side := range []struct {
		cs   []Curve
		tag  string
		base bool
	}{{cc, "c", false}, {bc, "b", true}} {
		for _, c := range side.cs {
			if !paired[side.tag+c.ID()] {
				ds = append(ds, drawn{c, next, side.base})
				next++
			}
		}
	}

	top := newPlot()
	var curves []Curve
	var sets [][]Point
	for _, d := range ds {
		curves = append(curves, d.c)
		sets = append(sets, d.c.Points)
	}
	xlo, xhi := curvesXRange(curves)
	setSizeAxis(top, xlo, xhi, false)
	setMetricAxis(top, o.Metric, sets)
	top.Add(grid())
	for _, d := range ds {
		line, glyph := curveStyle(d.color)
		if d.base {
			line.Dashes, line.Width = baseDashes, vg.Points(1.3)
			glyph.Radius = vg.Points(2)
		}
		addLine(top, o.Metric, d.c.Points, line, &glyph)
	}

	ratio := newPlot()
	setSizeAxis(ratio, xlo, xhi, true)
	ratio.Y.Label.Text = "cand / base"
	if !o.Metric.HigherIsBetter() {
		ratio.Y.Label.Text = "time cand / base"
	}
	lo, hi := 1-2*thr, 1+2*thr
	for _, p := range pairs {
		for _, r := range p.Ratio {
			lo, hi = math.Min(lo, r.Y), math.Max(hi, r.Y)
		}
	}
	pad := (hi - lo) * 0.06
	ratio.Y.Min, ratio.Y.Max = math.Max(0, lo-pad), hi+pad
	ratio.Y.Tick.Marker = ticker(LinearTicks(ratio.Y.Min, ratio.Y.Max, 5))
	band, err := plotter.NewPolygon(plotter.XYs{{X: xlo, Y: 1 - thr}, {X: xhi, Y: 1 - thr}, {X: xhi, Y: 1 + thr}, {X: xlo, Y: 1 + thr}})
	if err == nil {
		band.Color, band.LineStyle.Width = bandShade, 0
		ratio.Add(band)
	}
	ratio.Add(grid())
	one := draw.LineStyle{Color: color.Black, Width: vg.Points(0.8)}
	addXYLine(ratio, plotter.XYs{{X: xlo, Y: 1}, {X: xhi, Y: 1}}, one)
	for i, p := range pairs {
		line, glyph := curveStyle(i)
		glyph.Radius = vg.Points(2)
		addLine(ratio, BusBW, p.Ratio, line, &glyph) // ratios are linear whatever the metric
	}

	for i, p := range pairs {
		line, glyph := curveStyle(i)
		g := p.Geomean()
		fig.addLegend(fmt.Sprintf("%s (×%.2f)", p.Label, g), lineThumb{line: line, glyph: &glyph})
	}
	for _, d := range ds[2*len(pairs):] {
		line, glyph := curveStyle(d.color)
		side := "candidate only"
		if d.base {
			side = "baseline only"
			line.Dashes = baseDashes
		}
		fig.addLegend(fmt.Sprintf("%s (%s)", d.c.Label, side), lineThumb{line: line, glyph: &glyph})
	}
	black := draw.LineStyle{Color: color.Black, Width: vg.Points(1.3)}
	dotted := black
	dotted.Dashes = baseDashes
	fig.addLegend("candidate: "+cand.Name, lineThumb{line: black})
	fig.addLegend("baseline: "+base.Name, lineThumb{line: dotted})
	fig.addLegend(fmt.Sprintf("ratio within ±%.3g%%", 100*thr), swatch{bandShade})
	if len(pairs) > 0 {
		fig.addLegend("(×r: geometric mean ratio)")
	}
	fig.addPanel(top, 0.64)
	fig.addPanel(ratio, 0.36)
	return fig, nil
}

// addXYLine adds a plain line.
func addXYLine(p *plot.Plot, xys plotter.XYs, style draw.LineStyle) {
	l, err := plotter.NewLine(xys)
	if err != nil {
		return
	}
	l.LineStyle = style
	p.Add(l)
}
