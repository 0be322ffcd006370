package plots

import (
	"fmt"
	"image/color"
	"math"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/text"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

// Figure is one image: a title, panels stacked on a shared size axis, and
// a legend to the right of them, outside the data.
type Figure struct {
	Title    string
	Subtitle string
	// Warnings say what could not be drawn (a curve without a model, a
	// configuration in one set only); the figure is drawn without it.
	Warnings []string

	panels []panel
	legend []legendEntry
}

// panel is one plot of the stack; weight is its share of the height.
type panel struct {
	p      *plot.Plot
	weight float64
}

// legendEntry is a legend line: thumbnails drawn over each other, then the
// name.
type legendEntry struct {
	name   string
	thumbs []plot.Thumbnailer
}

func (f *Figure) addPanel(p *plot.Plot, weight float64) {
	f.panels = append(f.panels, panel{p, weight})
}

func (f *Figure) addLegend(name string, thumbs ...plot.Thumbnailer) {
	f.legend = append(f.legend, legendEntry{name, thumbs})
}

// Layout, in points.
const (
	margin     = 10
	panelGap   = 6
	legendGap  = 12
	thumbWidth = 22
	columnGap  = 10
)

// Draw draws the figure on c.
func (f *Figure) Draw(c draw.Canvas) {
	c.SetColor(color.White)
	c.Fill(c.Rectangle.Path())
	c = draw.Crop(c, margin, -margin, margin, -margin)

	for _, t := range []struct {
		s     string
		style text.Style
	}{{f.Title, textStyle(sansBold, titleSize, color.Black)}, {f.Subtitle, textStyle(sans, subtitleSize, textGrey)}} {
		if t.s == "" {
			continue
		}
		t.style.XAlign, t.style.YAlign = draw.XCenter, draw.YTop
		c.FillText(t.style, vg.Point{X: c.Center().X, Y: c.Max.Y}, t.s)
		c.Max.Y -= t.style.Rectangle(t.s).Size().Y + 3
	}
	c.Max.Y -= 4

	if l := f.layoutLegend(c); len(l.entries) > 0 {
		leg := c
		leg.Min.X = c.Max.X - l.width()
		f.drawLegend(leg, l)
		c.Max.X -= l.width() + legendGap
	}
	f.drawPanels(c)
}

// drawPanels stacks the panels by weight and aligns their data areas, so
// that one size lies at one x in every panel.
func (f *Figure) drawPanels(c draw.Canvas) {
	total := 0.0
	for _, p := range f.panels {
		total += p.weight
	}
	avail := c.Max.Y - c.Min.Y - vg.Length(len(f.panels)-1)*panelGap
	cs := make([]draw.Canvas, len(f.panels))
	top := c.Max.Y
	for i, p := range f.panels {
		h := avail * vg.Length(p.weight/total)
		cs[i] = c
		cs[i].Max.Y, cs[i].Min.Y = top, top-h
		top -= h + panelGap
	}
	// Align: every panel's data area starts at the largest left inset and
	// ends at the largest right inset.
	var left, right vg.Length
	for i, p := range f.panels {
		d := p.p.DataCanvas(cs[i])
		left = max(left, d.Min.X-cs[i].Min.X)
		right = max(right, cs[i].Max.X-d.Max.X)
	}
	for i, p := range f.panels {
		d := p.p.DataCanvas(cs[i])
		cs[i].Min.X += left - (d.Min.X - cs[i].Min.X)
		cs[i].Max.X -= right - (cs[i].Max.X - d.Max.X)
		p.p.Draw(cs[i])
	}
}

// maxLegendShare is the most of the figure's width the legend may take;
// legendSizes are the text sizes it tries, largest first, to fit in it.
const maxLegendShare = 0.42

var legendSizes = []vg.Length{legendSize, 8, 7, 6}

// legendLayout is how the legend's entries fall into columns.
type legendLayout struct {
	style   text.Style
	entries []legendEntry // the entries shown: all, or as many as fit and a last "and N more"
	rows    int           // entries per column
	widths  []vg.Length   // column widths
	entryH  vg.Length
}

// width is the legend's total width.
func (l legendLayout) width() vg.Length {
	var w vg.Length
	for i, cw := range l.widths {
		if i > 0 {
			w += columnGap
		}
		w += cw
	}
	return w
}

// layoutLegend fits the legend in c's height, in columns, and in
// maxLegendShare of its width: at the largest text size that fits, and at
// the smallest with the entries that do not fit summed up in a last one.
func (f *Figure) layoutLegend(c draw.Canvas) legendLayout {
	maxW := vg.Length(maxLegendShare) * (c.Max.X - c.Min.X)
	var l legendLayout
	for _, size := range legendSizes {
		l = layoutAt(f.legend, c.Max.Y-c.Min.Y, size)
		if l.width() <= maxW {
			return l
		}
	}
	// Still too wide: keep the columns that fit, the last line saying
	// how many entries are left out.
	for len(l.widths) > 1 && l.width() > maxW {
		l.widths = l.widths[:len(l.widths)-1]
	}
	keep := len(l.widths)*l.rows - 1
	if keep < len(l.entries) {
		more := legendEntry{name: fmt.Sprintf("... and %d more (narrow with --where or --by)", len(l.entries)-keep)}
		l = layoutAt(append(append([]legendEntry(nil), l.entries[:keep]...), more), c.Max.Y-c.Min.Y, l.style.Font.Size)
	}
	return l
}

// layoutAt lays entries out in columns of the height at one text size.
func layoutAt(entries []legendEntry, height, size vg.Length) legendLayout {
	sty := textStyle(sans, size, color.Black)
	l := legendLayout{style: sty, entries: entries, entryH: sty.Rectangle("Mg").Size().Y * 1.45}
	if len(entries) == 0 {
		return l
	}
	l.rows = max(1, int(height/l.entryH))
	for i, e := range entries {
		col := i / l.rows
		if col == len(l.widths) {
			l.widths = append(l.widths, 0)
		}
		w := thumbWidth + 5 + sty.Rectangle(e.name).Size().X
		l.widths[col] = max(l.widths[col], w)
	}
	return l
}

// drawLegend draws the laid-out entries top-down in columns from the left
// of c.
func (f *Figure) drawLegend(c draw.Canvas, l legendLayout) {
	sty := l.style
	sty.YAlign = draw.YCenter
	x := c.Min.X
	for col, cw := range l.widths {
		for row := 0; row < l.rows; row++ {
			i := col*l.rows + row
			if i >= len(l.entries) {
				break
			}
			e := l.entries[i]
			top := c.Max.Y - vg.Length(row)*l.entryH
			icon := draw.Canvas{Canvas: c.Canvas, Rectangle: vg.Rectangle{
				Min: vg.Point{X: x, Y: top - l.entryH + 2},
				Max: vg.Point{X: x + thumbWidth, Y: top - 2},
			}}
			for _, t := range e.thumbs {
				t.Thumbnail(&icon)
			}
			c.FillText(sty, vg.Point{X: x + thumbWidth + 5, Y: top - l.entryH/2}, e.name)
		}
		x += cw + columnGap
	}
}

// swatch is a legend thumbnail: a filled rectangle.
type swatch struct{ color color.Color }

func (s swatch) Thumbnail(c *draw.Canvas) {
	r := c.Rectangle
	r.Min.Y += 1
	r.Max.Y -= 1
	c.SetColor(s.color)
	c.Fill(r.Path())
}

// lineThumb is a legend thumbnail: a horizontal line, optionally with a
// glyph in its middle.
type lineThumb struct {
	line  draw.LineStyle
	glyph *draw.GlyphStyle
}

func (t lineThumb) Thumbnail(c *draw.Canvas) {
	y := c.Center().Y
	c.StrokeLine2(t.line, c.Min.X, y, c.Max.X, y)
	if t.glyph != nil {
		c.DrawGlyphNoClip(*t.glyph, c.Center())
	}
}

// clampRange widens [lo, hi] to at least span, around its middle.
func clampRange(lo, hi, span float64) (float64, float64) {
	if hi-lo >= span {
		return lo, hi
	}
	m := (lo + hi) / 2
	return m - span/2, m + span/2
}

// finite reports whether v is a usable number.
func finite(v float64) bool { return !math.IsNaN(v) && !math.IsInf(v, 0) }
