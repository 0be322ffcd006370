package report

import (
	"bytes"
	"cmp"
	"fmt"
	"html/template"
	"image/color"
	"math"
	"slices"
	"strconv"

	xfont "golang.org/x/image/font"
	"gonum.org/v1/plot"
	"gonum.org/v1/plot/font"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgsvg"

	"github.com/gccl/gccl/results"
)

// Chart sizes, in points (a CSS pixel is 0.75 pt).
const (
	curveW, curveH   = 7 * vg.Inch, 3.2 * vg.Inch
	seriesW, seriesH = 7 * vg.Inch, 2.2 * vg.Inch
	sparkW, sparkH   = 1.6 * vg.Inch, 0.3 * vg.Inch
)

// Fonts: Liberation Sans, gonum/plot's own, named in the SVG and not
// embedded (a browser without it uses its sans-serif).
var (
	sans     = font.Font{Typeface: "Liberation", Variant: "Sans"}
	sansBold = font.Font{Typeface: "Liberation", Variant: "Sans", Weight: xfont.WeightBold}
)

// Colours: Okabe and Ito's colour-blind-safe set (as package plots
// uses), and the change points' red and green.
var (
	palette = []color.RGBA{
		{0x00, 0x72, 0xb2, 0xff}, {0xd5, 0x5e, 0x00, 0xff}, {0x00, 0x9e, 0x73, 0xff}, {0xcc, 0x79, 0xa7, 0xff},
		{0xe6, 0x9f, 0x00, 0xff}, {0x56, 0xb4, 0xe9, 0xff}, {0x00, 0x00, 0x00, 0xff}, {0xb8, 0xa9, 0x00, 0xff},
	}
	worse     = color.RGBA{0xc0, 0x1c, 0x28, 0xff}
	better    = color.RGBA{0x1a, 0x7f, 0x37, 0xff}
	medianCol = color.RGBA{0x55, 0x55, 0x55, 0xff}
	gridGrey  = color.RGBA{0xdd, 0xdd, 0xdd, 0xff}
)

// dashes tell apart the curves that share a colour: the first 8 solid,
// the next 8 dashed, then dotted.
var dashes = [][]vg.Length{nil, {vg.Points(5), vg.Points(3)}, {vg.Points(1.5), vg.Points(2)}}

// curveStyle is the line of a curve's i-th series; the HTML legend
// shows the same colour (class c<i%8>) and dash (class d<i/8%3>).
func curveStyle(i int) draw.LineStyle {
	return draw.LineStyle{Color: palette[i%len(palette)], Width: vg.Points(1.5), Dashes: dashes[i/len(palette)%len(dashes)]}
}

func newPlot() *plot.Plot {
	p := plot.New()
	for _, a := range []*plot.Axis{&p.X, &p.Y} {
		a.Label.TextStyle.Font = font.From(sans, 10)
		a.Tick.Label.Font = font.From(sans, 8.5)
		a.Tick.Length = vg.Points(4)
		a.Padding = vg.Points(2)
	}
	p.Title.TextStyle.Font = font.From(sansBold, 10)
	return p
}

func grid() *plotter.Grid {
	g := plotter.NewGrid()
	g.Vertical.Color, g.Horizontal.Color = gridGrey, gridGrey
	g.Vertical.Width, g.Horizontal.Width = vg.Points(0.5), vg.Points(0.5)
	return g
}

// curveSVG draws a curve chart: each series against log2 of the size.
func curveSVG(c Curve) (template.HTML, error) {
	p := newPlot()
	p.X.Label.Text = "message size (bytes)"
	p.Y.Label.Text = c.YLabel
	if p.Y.Label.Text == "" {
		p.Y.Label.Text = "busBW (GB/s)"
	}
	p.Add(grid())
	lo, hi := math.Inf(1), math.Inf(-1)
	for i, s := range c.Series {
		pts := slices.Clone(s.Points)
		slices.SortFunc(pts, func(a, b SizePoint) int { return cmp.Compare(a.Bytes, b.Bytes) })
		xys := make(plotter.XYs, len(pts))
		for k, pt := range pts {
			xys[k] = plotter.XY{X: math.Log2(float64(pt.Bytes)), Y: pt.Value}
			lo, hi = min(lo, xys[k].X), max(hi, xys[k].X)
		}
		l, sc, err := plotter.NewLinePoints(xys)
		if err != nil {
			return "", err
		}
		l.LineStyle = curveStyle(i)
		sc.GlyphStyle = draw.GlyphStyle{Color: l.LineStyle.Color, Radius: vg.Points(1.8), Shape: draw.CircleGlyph{}}
		p.Add(l, sc)
	}
	p.X.Tick.Marker = sizeTicks(lo, hi)
	p.Y.Min = min(0, p.Y.Min)
	p.Y.Tick.Marker = valueTicks
	return inlineSVG(p, curveW, curveH, "curve")
}

// sizeTicks labels a log2 size axis at powers of two, at most 9 of them.
func sizeTicks(lo, hi float64) plot.Ticker {
	a, b := int(math.Floor(lo)), int(math.Ceil(hi))
	step := max(1, (b-a+8)/9)
	var ts plot.ConstantTicks
	for k := a; k <= b; k++ {
		if k < 0 || k > 62 {
			continue
		}
		label := ""
		if (k-a)%step == 0 {
			label = results.SizeLabel(int64(1) << k)
		}
		ts = append(ts, plot.Tick{Value: float64(k), Label: label})
	}
	return ts
}

// runTicks labels a run axis, 1 to n, at whole runs, at most 10 labels.
func runTicks(n int) plot.Ticker {
	step := 1
	for _, s := range []int{1, 2, 5, 10, 20, 25, 50, 100, 200, 250, 500, 1000} {
		step = s
		if n/s <= 10 {
			break
		}
	}
	for n/step > 10 {
		step *= 2
	}
	ts := plot.ConstantTicks{{Value: 1, Label: "1"}}
	for k := step; k <= n; k += step {
		if k > 1 {
			ts = append(ts, plot.Tick{Value: float64(k), Label: strconv.Itoa(k)})
		}
	}
	return ts
}

// valueTicks labels a linear axis at 1, 2 or 5 times a power of ten,
// 2 to 6 labels, each written with the decimals its step needs (so no two
// read alike), with an unlabelled tick halfway between labels.
var valueTicks = plot.TickerFunc(linearTicks)

func linearTicks(lo, hi float64) []plot.Tick {
	if !(hi > lo) || !finite(lo) || !finite(hi) {
		return plot.DefaultTicks{}.Ticks(lo, hi)
	}
	span := hi - lo
	mag := math.Pow(10, math.Floor(math.Log10(span/4)))
	step := mag
	for _, m := range []float64{1, 2, 5, 10} {
		step = m * mag
		if span/step <= 5 {
			break
		}
	}
	dec := max(0, -int(math.Floor(math.Log10(step)+1e-9)))
	half := step / 2
	var ts []plot.Tick
	for k := math.Ceil(lo/half - 1e-9); k*half <= hi+half*1e-9; k++ {
		t := plot.Tick{Value: k*half + 0} // + 0: no "-0"
		if math.Mod(k, 2) == 0 {
			t.Label = strconv.FormatFloat(t.Value, 'f', dec, 64)
		}
		ts = append(ts, t)
	}
	return ts
}

// seriesXYs are a series' points at runs 1 to n.
func seriesXYs(s KeySeries) plotter.XYs {
	xys := make(plotter.XYs, len(s.Points))
	for i, pt := range s.Points {
		xys[i] = plotter.XY{X: float64(i + 1), Y: pt.Value}
	}
	return xys
}

// medianSteps are the segments between change points at their medians:
// [from, to] in runs, and the median.
type medianStep struct {
	from, to int
	median   float64
}

func medianSteps(s KeySeries) []medianStep {
	var out []medianStep
	start := 1
	for k, c := range s.Changes {
		out = append(out, medianStep{start, c.Index, c.Before})
		start = c.Index + 1
		if k == len(s.Changes)-1 {
			out = append(out, medianStep{start, len(s.Points), c.After})
		}
	}
	return out
}

// yRange is the range the series and its medians span, padded by 8%
// (a flat series by 5% of its value, or 1).
func yRange(s KeySeries) (lo, hi float64) {
	lo, hi = math.Inf(1), math.Inf(-1)
	for _, pt := range s.Points {
		lo, hi = min(lo, pt.Value), max(hi, pt.Value)
	}
	for _, c := range s.Changes {
		lo, hi = min(lo, c.Before, c.After), max(hi, c.Before, c.After)
	}
	pad := (hi - lo) * 0.08
	if pad == 0 {
		pad = math.Abs(hi) * 0.05
		if pad == 0 {
			pad = 1
		}
	}
	return lo - pad, hi + pad
}

// changeLine is a change point's vertical line, between the runs either
// side of it, red for a regression, green for an improvement.
func changeLine(s KeySeries, c ChangePoint, lo, hi float64, width vg.Length, dashed bool) (*plotter.Line, error) {
	x := float64(c.Index) + 0.5
	l, err := plotter.NewLine(plotter.XYs{{X: x, Y: lo}, {X: x, Y: hi}})
	if err != nil {
		return nil, err
	}
	l.Color = better
	if c.regression(s.LowerIsBetter) {
		l.Color = worse
	}
	l.Width = width
	if dashed {
		l.Dashes = []vg.Length{vg.Points(4), vg.Points(2)}
	}
	return l, nil
}

// maxGlyphs is the most runs a full chart marks with dots: past it the
// line alone reads as well, and each dot costs an SVG path.
const maxGlyphs = 60

// seriesSVG draws a key's series in full: its runs, the medians between
// its change points, each change point a dashed line labelled with its
// change.
func seriesSVG(s KeySeries) (template.HTML, error) {
	p := newPlot()
	p.X.Label.Text = "run (oldest first)"
	p.Y.Label.Text = s.Unit
	lo, hi := yRange(s)
	p.Y.Min, p.Y.Max = lo, hi
	p.X.Min, p.X.Max = 0.5, float64(len(s.Points))+0.5
	p.X.Tick.Marker = runTicks(len(s.Points))
	p.Y.Tick.Marker = valueTicks
	p.Add(grid())
	for _, c := range s.Changes {
		l, err := changeLine(s, c, lo, hi, vg.Points(1.2), true)
		if err != nil {
			return "", err
		}
		p.Add(l)
	}
	l, sc, err := plotter.NewLinePoints(seriesXYs(s))
	if err != nil {
		return "", err
	}
	l.Color, l.Width = palette[0], vg.Points(1)
	p.Add(l)
	if len(s.Points) <= maxGlyphs {
		sc.GlyphStyle = draw.GlyphStyle{Color: palette[0], Radius: vg.Points(1.5), Shape: draw.CircleGlyph{}}
		p.Add(sc)
	}
	for _, m := range medianSteps(s) {
		ml, err := plotter.NewLine(plotter.XYs{{X: float64(m.from) - 0.4, Y: m.median}, {X: float64(m.to) + 0.4, Y: m.median}})
		if err != nil {
			return "", err
		}
		ml.Color, ml.Width = medianCol, vg.Points(2)
		p.Add(ml)
	}
	if len(s.Changes) > 0 {
		lbl := plotter.XYLabels{}
		for _, c := range s.Changes {
			lbl.XYs = append(lbl.XYs, plotter.XY{X: float64(c.Index) + 0.5, Y: hi})
			lbl.Labels = append(lbl.Labels, pct(c.change()))
		}
		labels, err := plotter.NewLabels(lbl)
		if err != nil {
			return "", err
		}
		for i := range labels.TextStyle {
			labels.TextStyle[i].Font = font.From(sansBold, 8.5)
			labels.TextStyle[i].YAlign = draw.YTop
		}
		labels.Offset = vg.Point{X: vg.Points(3), Y: -vg.Points(2)}
		p.Add(labels)
	}
	return inlineSVG(p, seriesW, seriesH, "series")
}

// sparkSVG draws a key's series small, without axes: its runs, and its
// change points as red or green lines.
func sparkSVG(s KeySeries) (template.HTML, error) {
	p := plot.New()
	p.HideAxes()
	p.X.Padding, p.Y.Padding = 0, 0
	lo, hi := yRange(s)
	p.Y.Min, p.Y.Max = lo, hi
	p.X.Min, p.X.Max = 0.5, float64(len(s.Points))+0.5
	for _, c := range s.Changes {
		l, err := changeLine(s, c, lo, hi, vg.Points(1.5), false)
		if err != nil {
			return "", err
		}
		p.Add(l)
	}
	l, err := plotter.NewLine(seriesXYs(s))
	if err != nil {
		return "", err
	}
	l.Color, l.Width = palette[0], vg.Points(1)
	p.Add(l)
	if len(s.Points) == 1 {
		sc, err := plotter.NewScatter(seriesXYs(s))
		if err != nil {
			return "", err
		}
		sc.GlyphStyle = draw.GlyphStyle{Color: palette[0], Radius: vg.Points(1.5), Shape: draw.CircleGlyph{}}
		p.Add(sc)
	}
	return inlineSVG(p, sparkW, sparkH, "spark")
}

// inlineSVG renders p as an <svg> element to put inside HTML: gonum's
// SVG without its XML prolog and namespace attributes (an <svg> inside
// HTML needs neither, and the page names no URL), with a class for
// the page's CSS. gonum's canvas escapes every text it writes
// (html.EscapeString), so the element is safe to insert as it is.
func inlineSVG(p *plot.Plot, w, h vg.Length, class string) (template.HTML, error) {
	c := vgsvg.New(w, h)
	p.Draw(draw.New(c))
	var buf bytes.Buffer
	if _, err := c.WriteTo(&buf); err != nil {
		return "", err
	}
	b := buf.Bytes()
	i := bytes.Index(b, []byte("<svg"))
	j := -1
	if i >= 0 {
		j = bytes.IndexByte(b[i:], '>')
	}
	if j < 0 {
		return "", fmt.Errorf("gonum/plot wrote an SVG without an <svg> tag")
	}
	wp, hp := w.Points(), h.Points()
	head := fmt.Sprintf(`<svg class="%s" width="%.4g" height="%.4g" viewBox="0 0 %.4g %.4g" role="img">`, class, wp/0.75, hp/0.75, wp, hp)
	return template.HTML(head + string(bytes.TrimSpace(b[i+j+1:]))), nil // #nosec: gonum escapes the SVG's text
}
