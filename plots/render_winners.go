package plots

import (
	"fmt"
	"image/color"
	"math"
	"sort"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

// WinnerOptions title a winner map.
type WinnerOptions struct {
	Title    string // "" : a default
	Subtitle string // what was measured (Title of the records)
	Table    string // the table's name, for the subtitle; "" without one
}

// Rows of a winner map panel, in y units: the table's decisions below, the
// measured winners above, threshold labels under the table row.
const (
	tableLo, tableHi       = 0.62, 1.27
	measuredLo, measuredHi = 1.37, 2.02
	rowsMax                = 2.07
)

// WinnersFigure draws one band chart per shape: which configuration was
// fastest at each measured size and, under it, what the table decided,
// with the table's thresholds dashed.
func WinnersFigure(maps []ShapeMap, o WinnerOptions) (*Figure, error) {
	if len(maps) == 0 {
		return nil, fmt.Errorf("%w: no shape has a measured size", ErrNoPoints)
	}
	fig := &Figure{Title: o.Title, Subtitle: o.Subtitle}
	if fig.Title == "" {
		fig.Title = "Winner map: the fastest configuration at each size"
		if o.Table != "" {
			fig.Title += ", and the table's choice"
		}
	}
	colors := bandColors(maps)

	// One size axis for every panel: the measured sizes and the
	// thresholds, whole octaves.
	lo, hi := int64(math.MaxInt64), int64(0)
	for _, m := range maps {
		lo, hi = min(lo, m.Wins[0].Bytes), max(hi, m.Wins[len(m.Wins)-1].Bytes)
		for _, t := range m.Thresholds() {
			lo, hi = min(lo, max(t, 1)), max(hi, t)
		}
	}
	xlo, xhi := SizeRange(lo, hi)

	for i, m := range maps {
		p := newPlot()
		p.Title.Text = fmt.Sprintf("%s, %s, %s", m.Shape.Coll, plural(fmt.Sprint(m.Shape.NRanks), "rank"), plural(fmt.Sprint(m.Shape.NHosts), "host"))
		fx := setSizeAxis(p, xlo, xhi, i == len(maps)-1)
		p.Y.Min, p.Y.Max = 0, rowsMax
		ticks := plot.ConstantTicks{{Value: (measuredLo + measuredHi) / 2, Label: "measured"}}
		if m.Table != nil {
			ticks = append(ticks, plot.Tick{Value: (tableLo + tableHi) / 2, Label: "table"})
		}
		p.Y.Tick.Marker = ticks
		p.Y.Tick.Length = 0
		p.Y.LineStyle.Width = 0
		p.Y.Padding = 0
		p.X.Padding = 0
		b := &bands{colors: colors}
		for _, c := range WinCells(m.Wins) {
			b.cells = append(b.cells, bandCell{Cell: c, y0: measuredLo, y1: measuredHi})
		}
		if m.Table != nil {
			for _, c := range BandCells(m.Table, xlo, xhi) {
				b.cells = append(b.cells, bandCell{Cell: c, y0: tableLo, y1: tableHi})
			}
			for _, t := range m.Thresholds() {
				b.thresholds = append(b.thresholds, X(t))
				b.labels = append(b.labels, SizeLabel(t))
			}
		}
		p.Add(b)
		fig.addPanel(panel{p: p, weight: 1, xLabel: sizeAxisLabel, fit: func(w, h vg.Length) {
			fx(w)
			// The row names shrink with a short panel so they do not run
			// into each other.
			row := h * vg.Length((measuredHi-measuredLo)/rowsMax)
			p.Y.Tick.Label.Font.Size = min(tickSize, max(5, row/1.25))
		}, title: p.Title.Text})
	}

	keys := make([]string, 0, len(colors))
	for k := range colors {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool { return configLess(keys[i], keys[j]) })
	for _, k := range keys {
		name := k
		if k == "auto" {
			name = "auto (no rule: the stack decides)"
		}
		fig.addLegend(name, swatch{colors[k]})
	}
	if o.Table != "" {
		fig.addLegend("table threshold", lineThumb{line: thresholdStyle})
		if fig.Subtitle != "" {
			fig.Subtitle += "; "
		}
		fig.Subtitle += "table: " + o.Table
	}
	return fig, nil
}

// configLess orders configuration names with "auto" first.
func configLess(a, b string) bool {
	if a == "auto" || b == "auto" {
		return a == "auto" && b != "auto"
	}
	return a < b
}

// bandColors gives every configuration of the maps a colour, by name so
// that it is the same in every panel; "auto" is grey.
func bandColors(maps []ShapeMap) map[string]color.Color {
	seen := map[string]bool{}
	var names []string
	add := func(n string) {
		if !seen[n] {
			seen[n] = true
			names = append(names, n)
		}
	}
	for _, m := range maps {
		for _, w := range m.Wins {
			add(w.Config)
		}
		for _, b := range m.Table {
			add(b.Config)
		}
	}
	sort.Slice(names, func(i, j int) bool { return configLess(names[i], names[j]) })
	out := map[string]color.Color{}
	i := 0
	for _, n := range names {
		if n == "auto" {
			out[n] = autoGrey
			continue
		}
		out[n] = bandPalette[i%len(bandPalette)]
		i++
	}
	return out
}

var thresholdStyle = draw.LineStyle{Color: color.Black, Width: vg.Points(0.9), Dashes: []vg.Length{vg.Points(3), vg.Points(2)}}

// bandCell is a cell in a row of a winner map.
type bandCell struct {
	Cell
	y0, y1 float64
}

// bands is the plotter of a winner map panel: filled cells with their
// configuration written in when it fits, and dashed threshold lines with
// their sizes under the table row.
type bands struct {
	cells      []bandCell
	colors     map[string]color.Color
	thresholds []float64 // log2 bytes
	labels     []string
}

func (b *bands) Plot(c draw.Canvas, p *plot.Plot) {
	tx, ty := p.Transforms(&c)
	name := textStyle(sans, noteSize+0.5, color.Black)
	name.XAlign, name.YAlign = draw.XCenter, draw.YCenter
	for _, cell := range b.cells {
		x0, x1 := math.Max(cell.X0, p.X.Min), math.Min(cell.X1, p.X.Max)
		if x1 <= x0 {
			continue
		}
		r := vg.Rectangle{Min: vg.Point{X: tx(x0), Y: ty(cell.y0)}, Max: vg.Point{X: tx(x1), Y: ty(cell.y1)}}
		col := b.colors[cell.Config]
		c.SetColor(col)
		c.Fill(r.Path())
		c.SetLineStyle(draw.LineStyle{Color: color.White, Width: vg.Points(0.8)})
		c.Stroke(r.Path())
		text := cell.Config
		if name.Rectangle(text).Size().X+4 < r.Size().X && name.Rectangle(text).Size().Y+2 < r.Size().Y {
			st := name
			st.Color = color.Black
			if luminance(col) < 0.45 {
				st.Color = color.White
			}
			c.FillText(st, vg.Point{X: (r.Min.X + r.Max.X) / 2, Y: (r.Min.Y + r.Max.Y) / 2}, text)
		}
	}
	lab := textStyle(sans, noteSize, textGrey)
	lab.XAlign, lab.YAlign = draw.XCenter, draw.YTop
	lastRight := vg.Length(math.Inf(-1))
	for i, x := range b.thresholds {
		if x < p.X.Min || x > p.X.Max {
			continue
		}
		px := tx(x)
		c.StrokeLine2(thresholdStyle, px, ty(tableLo), px, ty(measuredLo))
		w := lab.Rectangle(b.labels[i]).Size().X
		if px-w/2 > lastRight+2 {
			c.FillText(lab, vg.Point{X: px, Y: ty(tableLo) - 1.5}, b.labels[i])
			lastRight = px + w/2
		}
	}
}
