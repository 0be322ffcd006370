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

// The legend of a figure: where it goes (the grid's empty cell, beside
// the panels or under them), how its entries fall into columns, and its
// thumbnails.

// legendEntry is a legend line: thumbnails drawn over each other, then the
// name.
type legendEntry struct {
	name   string
	thumbs []plot.Thumbnailer
}

func (f *Figure) addLegend(name string, thumbs ...plot.Thumbnailer) {
	f.legend = append(f.legend, legendEntry{name, thumbs})
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
	l, ok := fitLegend(f.legend, maxW, c.Max.Y-c.Min.Y)
	if ok {
		return l
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

// fitLegend lays the entries out in a width and height at the largest
// text size that fits; ok is false when none does (l is at the
// smallest).
func fitLegend(entries []legendEntry, maxW, height vg.Length) (l legendLayout, ok bool) {
	for _, size := range legendSizes {
		l = layoutAt(entries, height, size)
		if l.width() <= maxW {
			return l, true
		}
	}
	return l, false
}

// legendSlot finds room for the whole legend in the empty cells that end
// a grid of small multiples: the canvas to draw it on and the grid's
// columns. It tries the columns the grid would have at full width, then
// those it would have beside a legend on the right.
func (f *Figure) legendSlot(c draw.Canvas) (legendLayout, draw.Canvas, int, bool) {
	n := len(f.cells)
	if n < 2 || len(f.legend) == 0 {
		return legendLayout{}, c, 0, false
	}
	W, H := c.Max.X-c.Min.X, c.Max.Y-c.Min.Y
	beside := W - f.layoutLegend(c).width() - legendGap
	for _, cols := range []int{gridColumns(f.cells, W, H), gridColumns(f.cells, beside, H)} {
		rows := (n + cols - 1) / cols
		empty := rows*cols - n
		if empty == 0 {
			continue
		}
		slot := c
		slot.Min.X = c.Min.X + W*vg.Length(cols-empty)/vg.Length(cols) + 2*legendGap
		slot.Max.Y = c.Min.Y + H/vg.Length(rows) - legendGap
		if l, ok := fitLegend(f.legend, slot.Max.X-slot.Min.X, slot.Max.Y-slot.Min.Y); ok {
			return l, slot, cols, true
		}
	}
	return legendLayout{}, c, 0, false
}

// Shares of a page a legend may take: beside the panels before it goes
// under them, and under them.
const (
	besideShare = 0.3
	belowShare  = 0.3
)

// legendBelow lays the legend out under the panels when, beside them, it
// would take more than besideShare of the width: in as few rows as fit
// the width, at the largest text size whose rows take at most belowShare
// of the height. It returns the canvas left above it for the panels.
func (f *Figure) legendBelow(c draw.Canvas) (draw.Canvas, legendLayout, bool) {
	W, H := c.Max.X-c.Min.X, c.Max.Y-c.Min.Y
	if len(f.legend) == 0 || f.layoutLegend(c).width() <= besideShare*W {
		return c, legendLayout{}, false
	}
	for _, size := range legendSizes {
		entryH := layoutAt(nil, 0, size).entryH
		for rows := 1; rows <= len(f.legend) && vg.Length(rows)*entryH <= belowShare*H; rows++ {
			l := layoutAt(f.legend, vg.Length(rows)*entryH+entryH/2, size)
			if l.width() <= W {
				above := c
				above.Min.Y += vg.Length(rows)*entryH + legendGap
				return above, l, true
			}
		}
	}
	return c, legendLayout{}, false
}

// smallestPanel is the data area of the smallest panel of a layout: what
// a legend's place is chosen to make largest.
func smallestPanel(g gridLayout) vg.Length {
	h := vg.Length(math.Inf(1))
	for _, x := range g.dataH {
		h = min(h, x)
	}
	return g.dataW * h
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

// lineThumb is a legend thumbnail: a line (horizontal, or vertical for
// an error bar; none when its width is 0), optionally with a glyph in its
// middle.
type lineThumb struct {
	line     draw.LineStyle
	glyph    *draw.GlyphStyle
	vertical bool
}

func (t lineThumb) Thumbnail(c *draw.Canvas) {
	m := c.Center()
	switch {
	case t.line.Width <= 0:
	case t.vertical:
		c.StrokeLine2(t.line, m.X, c.Min.Y, m.X, c.Max.Y)
	default:
		c.StrokeLine2(t.line, c.Min.X, m.Y, c.Max.X, m.Y)
	}
	if t.glyph != nil {
		c.DrawGlyphNoClip(*t.glyph, m)
	}
}
