package plots

import (
	"image/color"

	xfont "golang.org/x/image/font"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/font"
	"gonum.org/v1/plot/text"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

// Fonts: Liberation Sans, which gonum/plot embeds (no installed fonts
// needed).
var (
	sans     = font.Font{Typeface: "Liberation", Variant: "Sans"}
	sansBold = font.Font{Typeface: "Liberation", Variant: "Sans", Weight: xfont.WeightBold}
)

// Text sizes, in points.
const (
	titleSize    = 13
	subtitleSize = 9.5
	axisSize     = 10
	tickSize     = 9
	legendSize   = 9
	noteSize     = 7
)

func textStyle(f font.Font, size vg.Length, c color.Color) text.Style {
	return text.Style{Font: font.From(f, size), Color: c, Handler: plot.DefaultTextHandler}
}

// palette is Okabe and Ito's colour-blind-safe set (yellow darkened to
// stay visible on white): 8 hues that the common colour-vision
// deficiencies still tell apart, and that print in grey as distinct
// lightnesses. Curves also differ by marker, so no pair relies on hue
// alone.
var palette = []color.RGBA{
	{0x00, 0x72, 0xb2, 0xff}, // blue
	{0xd5, 0x5e, 0x00, 0xff}, // vermillion
	{0x00, 0x9e, 0x73, 0xff}, // bluish green
	{0xcc, 0x79, 0xa7, 0xff}, // reddish purple
	{0xe6, 0x9f, 0x00, 0xff}, // orange
	{0x56, 0xb4, 0xe9, 0xff}, // sky blue
	{0x00, 0x00, 0x00, 0xff}, // black
	{0xb8, 0xa9, 0x00, 0xff}, // yellow, darkened
}

// bandPalette is tab20 for the winner map's bands (more configurations
// than tab10 has colours win somewhere): the strong hues first, then their
// light partners; grey is kept for "auto".
var bandPalette = []color.RGBA{
	{0x1f, 0x77, 0xb4, 0xff}, {0xff, 0x7f, 0x0e, 0xff}, {0x2c, 0xa0, 0x2c, 0xff}, {0xd6, 0x27, 0x28, 0xff},
	{0x94, 0x67, 0xbd, 0xff}, {0x8c, 0x56, 0x4b, 0xff}, {0xe3, 0x77, 0xc2, 0xff}, {0xbc, 0xbd, 0x22, 0xff},
	{0x17, 0xbe, 0xcf, 0xff}, {0xae, 0xc7, 0xe8, 0xff}, {0xff, 0xbb, 0x78, 0xff}, {0x98, 0xdf, 0x8a, 0xff},
	{0xff, 0x98, 0x96, 0xff}, {0xc5, 0xb0, 0xd5, 0xff}, {0xc4, 0x9c, 0x94, 0xff}, {0xf7, 0xb6, 0xd2, 0xff},
	{0xdb, 0xdb, 0x8d, 0xff}, {0x9e, 0xda, 0xe5, 0xff},
}

var (
	autoGrey  = color.RGBA{0xc7, 0xc7, 0xc7, 0xff}
	gridGrey  = color.RGBA{0xe4, 0xe4, 0xe4, 0xff}
	bandShade = color.NRGBA{0x2c, 0xa0, 0x2c, 0x48} // the ratio panel's threshold band
	textGrey  = color.RGBA{0x55, 0x55, 0x55, 0xff}
)

// glyphs pair with palette: curve i has colour i%8 and glyph
// (i+i/8)%8, so the first 8 curves differ in both, and no colour and
// glyph pair repeats before 64 curves.
var glyphs = []draw.GlyphDrawer{
	draw.CircleGlyph{}, draw.SquareGlyph{}, draw.TriangleGlyph{}, draw.CrossGlyph{},
	draw.RingGlyph{}, draw.BoxGlyph{}, draw.PyramidGlyph{}, draw.PlusGlyph{},
}

func curveColor(i int) color.Color      { return palette[i%len(palette)] }
func curveGlyph(i int) draw.GlyphDrawer { return glyphs[(i+i/len(palette))%len(glyphs)] }

// dashes of a fitted model's line and of a comparison's baseline.
var (
	fitDashes  = []vg.Length{vg.Points(4), vg.Points(2.5)}
	baseDashes = []vg.Length{vg.Points(1.5), vg.Points(2)}
)

// newPlot is a plot with the figure's fonts, light grid and no title.
func newPlot() *plot.Plot {
	p := plot.New()
	for _, a := range []*plot.Axis{&p.X, &p.Y} {
		a.Label.TextStyle.Font = font.From(sans, axisSize)
		a.Tick.Label.Font = font.From(sans, tickSize)
		a.Tick.Length = vg.Points(5)
		a.Padding = vg.Points(2)
	}
	p.Title.TextStyle.Font = font.From(sansBold, axisSize)
	p.Title.Padding = vg.Points(3)
	return p
}

// ticker turns ticks into a gonum marker.
func ticker(ts []Tick) plot.Ticker {
	out := make(plot.ConstantTicks, len(ts))
	for i, t := range ts {
		out[i] = plot.Tick{Value: t.Value, Label: t.Label}
	}
	return out
}

// luminance is the relative brightness of c, 0 to 1, to pick readable
// text on a band.
func luminance(c color.Color) float64 {
	r, g, b, _ := c.RGBA()
	return (0.2126*float64(r) + 0.7152*float64(g) + 0.0722*float64(b)) / 0xffff
}
