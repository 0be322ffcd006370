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
	"github.com/gccl/gccl/tuner"
)

// Options choose what a curves or comparison figure shows.
type Options struct {
	CurveOptions
	// Fits are fitted models (tune fit) drawn dashed over the curves they
	// match by key.
	Fits []tuner.Fit
	// Threshold is the half-width of the shaded band around 1 in a
	// comparison's ratio panel (0: DefaultThreshold).
	Threshold float64
	// Title replaces the title made from the records.
	Title string
}

// DefaultThreshold is the ratio panel's band: +-5%.
const DefaultThreshold = 0.05

// maxSizeLabels bounds the labelled ticks of a size axis.
const maxSizeLabels = 12

// CurvesFigure draws the metric of every configuration in recs against
// message size, one curve per group, with o.Fits overlaid.
func CurvesFigure(recs []results.Record, o Options) (*Figure, error) {
	curves, err := BuildCurves(recs, o.CurveOptions)
	if err != nil {
		return nil, err
	}
	fig := &Figure{Title: o.Title, Subtitle: subtitle(o.CurveOptions, "")}
	if fig.Title == "" {
		fig.Title = o.Metric.Name() + ": " + Title(placed(recs, o.CurveOptions))
	}
	var fits map[int]tuner.Fit
	if len(o.Fits) > 0 {
		fits, fig.Warnings = MatchFits(curves, o.Fits)
	}

	p := newPlot()
	xlo, xhi := curvesXRange(curves)
	setSizeAxis(p, xlo, xhi, true)
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
	setMetricAxis(p, o.Metric, all)
	p.Add(grid())
	for i, c := range curves {
		line, glyph := curveStyle(i)
		addLine(p, o.Metric, c.Points, line, &glyph)
		if pts, ok := fitPts[i]; ok {
			fl := line
			fl.Dashes, fl.Width = fitDashes, vg.Points(1.1)
			addLine(p, o.Metric, pts, fl, nil)
		}
		fig.addLegend(c.Label, lineThumb{line: line, glyph: &glyph})
	}
	if len(fitPts) > 0 {
		fig.addLegend("fitted model", lineThumb{line: draw.LineStyle{Color: color.Black, Width: vg.Points(1.1), Dashes: fitDashes}})
		fig.Subtitle += "; dashed: fitted alpha-beta models"
	}
	fig.addPanel(p, 1)
	return fig, nil
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

// curveStyle is curve i's line and glyph.
func curveStyle(i int) (draw.LineStyle, draw.GlyphStyle) {
	c := curveColor(i)
	return draw.LineStyle{Color: c, Width: vg.Points(1.4)},
		draw.GlyphStyle{Color: c, Radius: vg.Points(2.6), Shape: curveGlyph(i)}
}

// curvesXRange is the size axis range of curves.
func curvesXRange(cs []Curve) (float64, float64) {
	lo, hi := int64(math.MaxInt64), int64(0)
	for _, c := range cs {
		lo, hi = min(lo, c.MinBytes()), max(hi, c.MaxBytes())
	}
	return SizeRange(lo, hi)
}

// setSizeAxis makes p's x axis a log2 size axis over [lo, hi].
func setSizeAxis(p *plot.Plot, lo, hi float64, labelled bool) {
	p.X.Min, p.X.Max = lo, hi
	p.X.Tick.Marker = ticker(SizeTicks(lo, hi, maxSizeLabels))
	if labelled {
		p.X.Label.Text = "message size (bytes, log2)"
	} else {
		p.X.Tick.Label.Color = color.Transparent
	}
}

// setMetricAxis fits p's y axis to the points: from 0 for bandwidths, whole
// decades for times (log10).
func setMetricAxis(p *plot.Plot, m Metric, sets [][]Point) {
	p.Y.Label.Text = m.Axis()
	lo, hi := math.Inf(1), math.Inf(-1)
	for _, s := range sets {
		for _, pt := range s {
			if m == Time && pt.Y <= 0 {
				continue
			}
			lo, hi = math.Min(lo, pt.Y), math.Max(hi, pt.Y)
		}
	}
	if m == Time {
		if !finite(lo) || !finite(hi) {
			lo, hi = 1, 10
		}
		p.Y.Min, p.Y.Max = TimeRange(lo, hi)
		p.Y.Tick.Marker = ticker(TimeTicks(p.Y.Min, p.Y.Max))
		return
	}
	if !finite(hi) || hi <= 0 {
		hi = 1
	}
	p.Y.Min, p.Y.Max = 0, hi*1.05
	p.Y.Tick.Marker = ticker(LinearTicks(p.Y.Min, p.Y.Max, maxLinearLabels))
}

// maxLinearLabels bounds the labelled ticks of a linear axis.
const maxLinearLabels = 7

// yOf is a metric value in its axis' coordinates.
func yOf(m Metric, v float64) float64 {
	if m == Time {
		return math.Log10(v)
	}
	return v
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

// grid is light grid lines at the labelled ticks.
func grid() *plotter.Grid {
	g := plotter.NewGrid()
	g.Vertical.Color, g.Horizontal.Color = gridGrey, gridGrey
	g.Vertical.Width, g.Horizontal.Width = vg.Points(0.5), vg.Points(0.5)
	return g
}
