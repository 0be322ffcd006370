package plots

import (
	"fmt"
	"image/color"
	"math"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"

	"github.com/gccl/gccl/results"
)

// Options choose what a curves or comparison figure shows.
type Options struct {
	CurveOptions
	// Models finds the fitted model (tune fit's) of each curve, drawn
	// dashed over it; nil draws none.
	Models ModelOf
	// Title replaces the title made from the records.
	Title string
}

// DefaultThreshold is the ratio panel's band until the caller's gate
// sets one (Comparison.Threshold): +-5%, tune gate's default.
const DefaultThreshold = 0.05

// CurvesFigure draws the metric of every configuration in recs against
// message size, one curve per group, with the models o.Models finds
// overlaid and the iterations' spread shaded where the records hold it. More curves than
// a panel takes are split into panels (PlanFacets) on shared axes.
func CurvesFigure(recs []results.Record, o Options) (*Figure, error) {
	curves, err := BuildCurves(recs, o.CurveOptions)
	if err != nil {
		return nil, err
	}
	fig := &Figure{Title: o.Title, Subtitle: subtitle(o.CurveOptions, "")}
	if fig.Title == "" {
		fig.Title = o.Metric.Name() + ": " + Title(placed(recs, o.CurveOptions))
	}
	var fits map[int]Model
	if o.Models != nil {
		fits, fig.Warnings = curveModels(curves, o.Models)
	}
	var all [][]Point
	for _, c := range curves {
		all = append(all, c.Points)
	}
	fitPts := map[int][]Point{}
	for i := range curves {
		f, ok := fits[i]
		if !ok {
			continue
		}
		pts, err := FitPoints(f, curves[i], o.Metric, fitPerOctave)
		if err != nil {
			fig.Warnings = append(fig.Warnings, err.Error())
			continue
		}
		fitPts[i] = pts
		all = append(all, pts)
	}

	plan := PlanFacets(o.by(), curves)
	xlo, xhi := curvesXRange(curves)
	ylo, yhi := metricRange(o.Metric, all)
	spread := false
	for j, idx := range plan.Panels {
		p := newPlot()
		p.Title.Text = plan.Titles[j]
		fx := setSizeAxis(p, xlo, xhi, true)
		fy := setMetricAxis(p, o.Metric, ylo, yhi)
		p.Add(grid())
		for _, i := range idx {
			line, _ := curveStyle(plan.Styles[i])
			spread = addSpread(p, o.Metric, curves[i].Points, line.Color) || spread
		}
		for _, i := range idx {
			line, glyph := curveStyle(plan.Styles[i])
			addLine(p, o.Metric, curves[i].Points, line, &glyph)
			if pts, ok := fitPts[i]; ok {
				fl := line
				fl.Dashes, fl.Width = fitDashes, vg.Points(1.1)
				addLine(p, o.Metric, pts, fl, nil)
			}
		}
		fig.newCell()
		fig.addPanel(panel{p: p, weight: 1, xLabel: sizeAxisLabel, yLabel: o.Metric.Axis(), fit: fitBoth(fx, fy), title: p.Title.Text})
	}

	seen := map[int]bool{}
	for i := range curves {
		s := plan.Styles[i]
		if seen[s] {
			continue
		}
		seen[s] = true
		line, glyph := curveStyle(s)
		fig.addLegend(plan.Labels[i], lineThumb{line: line, glyph: &glyph})
	}
	if spread {
		fig.addLegend("shaded: "+curves[0].Spread.Legend(), swatch{spreadShade(color.Black)})
		if !o.Median {
			// The band is of iterations; say what the line is, since it
			// need not be inside it.
			fig.Subtitle += "; lines: reported mean times"
		}
	}
	if len(fitPts) > 0 {
		fig.addLegend("fitted model", lineThumb{line: draw.LineStyle{Color: color.Black, Width: vg.Points(1.1), Dashes: fitDashes}})
		fig.Subtitle += "; dashed: fitted alpha-beta models"
	}
	if len(plan.By) > 0 {
		fig.Subtitle += "; one panel per " + facetList(plan.By)
	}
	return fig, nil
}

// facetList names the fields a figure is split by: "protocol",
// "algorithm and protocol".
func facetList(by []Field) string {
	names := make([]string, len(by))
	for i, f := range by {
		names[i] = facetNames[f]
	}
	return strings.Join(names, " and ")
}

// placed returns the records the options plot (by placement).
func placed(recs []results.Record, o CurveOptions) []results.Record {
	var out []results.Record
	for _, r := range recs {
		if o.keep(r) {
			out = append(out, r)
		}
	}
	return out
}

// subtitle says what the axes are: "busBW against message size,
// out-of-place".
func subtitle(o CurveOptions, extra string) string {
	pl := o.Placement
	if pl == "" {
		pl = results.OutOfPlace
	}
	if pl == "both" {
		pl = "both placements"
	}
	s := fmt.Sprintf("%s against message size, %s", o.Metric.Name(), pl)
	if o.Median {
		s += ", median iteration times"
	}
	if o.Metric == BusBWNorm {
		s += " (copy bandwidth: ref_copy_gbps)"
	}
	return s + extra
}

// curveStyle is style i's line and glyph.
func curveStyle(i int) (draw.LineStyle, draw.GlyphStyle) {
	c := curveColor(i)
	return draw.LineStyle{Color: c, Width: vg.Points(1.4)},
		draw.GlyphStyle{Color: c, Radius: vg.Points(2.6), Shape: curveGlyph(i)}
}

// spreadShade is a curve's colour made light enough for bands to overlap
// and the lines to show through.
func spreadShade(c color.Color) color.Color {
	r, g, b, _ := c.RGBA()
	return color.NRGBA{uint8(r >> 8), uint8(g >> 8), uint8(b >> 8), 0x33}
}

// curvesXRange is the size axis range of curves.
func curvesXRange(cs []Curve) (float64, float64) {
	lo, hi := int64(math.MaxInt64), int64(0)
	for _, c := range cs {
		lo, hi = min(lo, c.MinBytes()), max(hi, c.MaxBytes())
	}
	return SizeRange(lo, hi)
}

// addLine adds points as a line, with glyphs when glyph is not nil.
func addLine(p *plot.Plot, m Metric, pts []Point, line draw.LineStyle, glyph *draw.GlyphStyle) {
	xys := make(plotter.XYs, 0, len(pts))
	for _, pt := range pts {
		if m == Time && pt.Y <= 0 {
			continue
		}
		xys = append(xys, plotter.XY{X: X(pt.Bytes), Y: yOf(m, pt.Y)})
	}
	if len(xys) == 0 {
		return
	}
	l, err := plotter.NewLine(xys)
	if err != nil {
		return // only NaNs and infinities, which were filtered
	}
	l.LineStyle = line
	p.Add(l)
	if glyph != nil {
		s, err := plotter.NewScatter(xys)
		if err == nil {
			s.GlyphStyle = *glyph
			p.Add(s)
		}
	}
}

// addSpread shades the points' spread in the curve's colour: a band over
// every run of neighbouring points that have one, a bar at a point alone.
// It reports whether it drew anything.
func addSpread(p *plot.Plot, m Metric, pts []Point, col color.Color) bool {
	drew := false
	var run []Point
	flush := func() {
		defer func() { run = run[:0] }()
		if len(run) == 0 {
			return
		}
		drew = true
		if len(run) == 1 {
			pt := run[0]
			x := X(pt.Bytes)
			addXYLine(p, plotter.XYs{{X: x, Y: yOf(m, pt.Spread.Lo)}, {X: x, Y: yOf(m, pt.Spread.Hi)}},
				draw.LineStyle{Color: spreadShade(col), Width: vg.Points(4)})
			return
		}
		xys := make(plotter.XYs, 0, 2*len(run))
		for _, pt := range run {
			xys = append(xys, plotter.XY{X: X(pt.Bytes), Y: yOf(m, pt.Spread.Hi)})
		}
		for i := len(run) - 1; i >= 0; i-- {
			xys = append(xys, plotter.XY{X: X(run[i].Bytes), Y: yOf(m, run[i].Spread.Lo)})
		}
		band, err := plotter.NewPolygon(xys)
		if err != nil {
			return
		}
		band.Color, band.LineStyle.Width = spreadShade(col), 0
		p.Add(band)
	}
	for _, pt := range pts {
		if pt.Spread == nil || (m == Time && !(pt.Spread.Lo > 0)) {
			flush()
			continue
		}
		run = append(run, pt)
	}
	flush()
	return drew
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
