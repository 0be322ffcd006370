package plots

import (
	"image/color"
	"math"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/text"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

// Figure is one image: a title, panels, and a legend outside them (see
// legend.go). The panels lie in a grid of cells (small
// multiples), each cell a stack of panels on a shared size axis.
type Figure struct {
	Title    string
	Subtitle string
	// Warnings say what could not be drawn (a curve without a model, a
	// configuration in one set only); the figure is drawn without it.
	Warnings []string

	cells  [][]panel
	legend []legendEntry
	// ratioSteps are a comparison's threshold band, as its ratio panels
	// draw it.
	ratioSteps []ThresholdStep
}

// panel is one plot of a cell; weight is its share of the cell's height.
type panel struct {
	p      *plot.Plot
	weight float64
	// xLabel and yLabel are the axis titles, drawn on the outer panels of
	// the grid only.
	xLabel, yLabel string
	// fit sets the axes' ticks for a data area of w x h, so that their
	// labels never overlap; nil keeps them.
	fit func(w, h vg.Length)
	// title is the panel's title, cut short to its width when drawn.
	title string
	// xTitled says the layout writes xLabel under this panel.
	xTitled bool
}

// addPanel adds a panel to the last cell (the first, when there is none).
func (f *Figure) addPanel(pn panel) {
	if len(f.cells) == 0 {
		f.newCell()
	}
	f.cells[len(f.cells)-1] = append(f.cells[len(f.cells)-1], pn)
}

// newCell starts a cell of the grid.
func (f *Figure) newCell() { f.cells = append(f.cells, nil) }

// Layout, in points.
const (
	margin     = 10
	panelGap   = 6
	legendGap  = 12
	thumbWidth = 22
	columnGap  = 10
)

// Text sizes the title and subtitle may shrink to, largest first, and
// the lines they may wrap into.
var (
	titleSizes    = []vg.Length{titleSize, 12, 11, 10, 9}
	subtitleSizes = []vg.Length{subtitleSize, 9, 8.5, 8, 7.5, 7}
)

const (
	titleLines    = 2
	subtitleLines = 2
)

// Draw draws the figure on c.
func (f *Figure) Draw(c draw.Canvas) {
	c.SetColor(color.White)
	c.Fill(c.Rectangle.Path())
	c = draw.Crop(c, margin, -margin, margin, -margin)

	for _, t := range f.headings(c.Max.X - c.Min.X) {
		t.style.XAlign, t.style.YAlign = draw.XCenter, draw.YTop
		for _, l := range t.lines {
			c.FillText(t.style, vg.Point{X: c.Center().X, Y: c.Max.Y}, l)
			c.Max.Y -= t.style.Rectangle(l).Size().Y
		}
		c.Max.Y -= 3
	}
	c.Max.Y -= 4

	if len(f.cells) == 0 {
		return
	}
	cols := 0 // the layout's choice
	if l, slot, n, ok := f.legendSlot(c); ok {
		// The grid's last row has room: the legend goes there and the
		// panels take the whole width.
		f.drawLegend(slot, l)
		cols = n
	} else if l := f.layoutLegend(c); len(l.entries) > 0 {
		right := c
		right.Max.X -= l.width() + legendGap
		under, below, ok := f.legendBelow(c)
		if ok && smallestPanel(layoutCells(under, f.cells, 0)) > smallestPanel(layoutCells(right, f.cells, 0)) {
			// A narrow page: the legend goes under the panels, which
			// keep the width.
			leg := c
			leg.Min.X = c.Center().X - below.width()/2
			leg.Max.Y = under.Min.Y - legendGap
			f.drawLegend(leg, below)
			c = under
		} else {
			leg := c
			leg.Min.X = right.Max.X + legendGap
			f.drawLegend(leg, l)
			c = right
		}
	}
	g := layoutCells(c, f.cells, cols)
	for i, cell := range f.cells {
		for k, pn := range cell {
			pn.p.Draw(g.canvases[i][k])
		}
	}
	for _, t := range g.titles {
		drawAxisTitle(c, t)
	}
}

// axisTitleSizes are the sizes an axis title may shrink to.
var axisTitleSizes = []vg.Length{axisSize, 9, 8, 7}

// drawAxisTitle writes an axis title along its axis, centred on the
// data as far as its room allows.
func drawAxisTitle(c draw.Canvas, t axisTitle) {
	sty, lines := fitText(sans, axisTitleSizes, color.Black, t.text, t.hi-t.lo, 1)
	half := sty.Width(lines[0]) / 2
	sty.XAlign, sty.YAlign = draw.XCenter, draw.YTop
	if t.vertical {
		sty.Rotation = math.Pi / 2
		c.FillText(sty, vg.Point{X: t.at.X, Y: min(max(t.at.Y, t.lo+half), t.hi-half)}, lines[0])
		return
	}
	c.FillText(sty, vg.Point{X: min(max(t.at.X, t.lo+half), t.hi-half), Y: t.at.Y}, lines[0])
}

// heading is the title or the subtitle set in lines.
type heading struct {
	style text.Style
	lines []string
}

// headings fits the title and subtitle to the width: wrapped, shrunk,
// cut short as a last resort.
func (f *Figure) headings(width vg.Length) []heading {
	var out []heading
	if f.Title != "" {
		s, l := fitText(sansBold, titleSizes, color.Black, f.Title, width, titleLines)
		out = append(out, heading{s, l})
	}
	if f.Subtitle != "" {
		s, l := fitText(sans, subtitleSizes, textGrey, f.Subtitle, width, subtitleLines)
		out = append(out, heading{s, l})
	}
	return out
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
