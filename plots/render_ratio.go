package plots

import (
	"fmt"
	"image/color"
	"math"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

// The ratio panel of a comparison: the gate's ratios, intervals and
// verdicts over its threshold band.

// ratioRange is the ratio panel's range: the points and the threshold
// bands, with room, never below 0. The confidence intervals are left out
// (a wide one would flatten every point) and cut at the panel's edges.
func ratioRange(rs []GatePoint, th Threshold) (float64, float64) {
	widest := th.widest()
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
		case Regression:
			col, drew[0] = regressionRed, true
		case Noisy:
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
