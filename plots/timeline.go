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

// A timeline of one operation: one row per track (a rank's channel),
// time along x. The caller (tune trace, through package tracestat) finds
// the rows, the bars and the critical path; this draws them.

// Layers of a timeline bar, drawn in this order.
const (
	LayerSpan = iota // an operation's part on the track (or a kernel, a proxy operation): a pale band
	LayerStep        // a step: a bar coloured by its kind
	LayerWait        // a wait: hatched over its step
)

// TimelineBar is a stretch of a row.
type TimelineBar struct {
	Start, End float64 // microseconds from the timeline's zero
	Layer      int
	// Kind colours a step ("send", "recv", ...); spans and waits have
	// their own colours.
	Kind string
}

// TimelineRow is one track.
type TimelineRow struct {
	Label string
	Bars  []TimelineBar
}

// TimelineMark is a stretch of the critical path, on a row.
type TimelineMark struct {
	Row        int
	Start, End float64
}

// Timeline is what a timeline figure draws.
type Timeline struct {
	Title, Subtitle string
	Rows            []TimelineRow // top to bottom
	// Path is the critical path in time order: a black line under each
	// stretch, joined where it moves from row to row.
	Path []TimelineMark
}

// Colours of a timeline's spans and waits.
var (
	spanFill  = color.RGBA{0xee, 0xee, 0xee, 0xff}
	spanEdge  = color.RGBA{0xb0, 0xb0, 0xb0, 0xff}
	waitFill  = color.RGBA{0xf4, 0xf4, 0xf4, 0xff}
	waitHatch = color.RGBA{0x60, 0x60, 0x60, 0xff}
	pathInk   = color.RGBA{0x00, 0x00, 0x00, 0xff}
)

// StepColor is the colour of step kind k among kinds (sorted, so that a
// kind has the same colour in every figure of the same kinds): the
// winner map's band colours, which hold neither black (the critical
// path) nor grey (spans and waits).
func StepColor(kinds []string, k string) color.Color {
	return bandPalette[sort.SearchStrings(kinds, k)%len(bandPalette)]
}

// stepKinds are the timeline's step kinds, sorted.
func stepKinds(tl Timeline) []string {
	seen := map[string]bool{}
	var out []string
	for _, r := range tl.Rows {
		for _, b := range r.Bars {
			if b.Layer == LayerStep && !seen[b.Kind] {
				seen[b.Kind] = true
				out = append(out, b.Kind)
			}
		}
	}
	sort.Strings(out)
	return out
}

// TimelineFigure draws a timeline: rows top to bottom, bars in layers,
// the critical path under them, a legend of the step kinds.
func TimelineFigure(tl Timeline) (*Figure, error) {
	if len(tl.Rows) == 0 {
		return nil, fmt.Errorf("%w: a timeline without rows", ErrNoPoints)
	}
	hi := 0.0
	for _, r := range tl.Rows {
		for _, b := range r.Bars {
			if !finite(b.Start) || !finite(b.End) || b.End < b.Start {
				return nil, fmt.Errorf("timeline row %q: bar %v to %v: want finite times, end >= start", r.Label, b.Start, b.End)
			}
			hi = math.Max(hi, b.End)
		}
	}
	for _, m := range tl.Path {
		if m.Row < 0 || m.Row >= len(tl.Rows) {
			return nil, fmt.Errorf("critical path mark on row %d: the timeline has rows 0 to %d", m.Row, len(tl.Rows)-1)
		}
	}
	if hi <= 0 {
		hi = 1
	}
	kinds := stepKinds(tl)
	fig := &Figure{Title: tl.Title, Subtitle: tl.Subtitle}
	p := newPlot()
	n := len(tl.Rows)
	p.Y.Min, p.Y.Max = -0.5, float64(n)-0.5
	p.Y.Tick.Length = 0
	p.Y.LineStyle.Width = 0
	p.Y.Padding, p.X.Padding = 0, 0
	setRows := func(every int) {
		var ticks plot.ConstantTicks
		for i, r := range tl.Rows {
			if i%every == 0 {
				ticks = append(ticks, plot.Tick{Value: rowY(i, n), Label: r.Label})
			}
		}
		p.Y.Tick.Marker = ticks
	}
	setRows(1)
	fx := setLinearXAxis(p, 0, hi*1.02)
	g := grid()
	g.Horizontal.Color = nil // rows need no lines through them
	p.Add(g)
	p.Add(&timelinePlotter{tl: tl, kinds: kinds})
	fig.addPanel(panel{p: p, weight: 1, xLabel: "time (us from the operation's first start)", fit: func(w, h vg.Length) {
		fx(w)
		// Row labels shrink with the rows; below 5 points, every k-th row
		// is labelled.
		row := h / vg.Length(n)
		size := min(tickSize, row/1.2)
		every := 1
		for size < 5 {
			every++
			size = min(tickSize, row*vg.Length(every)/1.2)
		}
		p.Y.Tick.Label.Font.Size = size
		setRows(every)
	}, title: p.Title.Text})
	for _, k := range kinds {
		fig.addLegend(k, swatch{StepColor(kinds, k)})
	}
	fig.addLegend("wait", hatchSwatch{})
	fig.addLegend("operation on the track", spanSwatch{})
	if len(tl.Path) > 0 {
		fig.addLegend("critical path", lineThumb{line: draw.LineStyle{Color: pathInk, Width: vg.Points(2)}})
	}
	return fig, nil
}

// rowY is row i's centre: the first row on top.
func rowY(i, n int) float64 { return float64(n - 1 - i) }

// Bar heights, in rows.
const (
	spanHalf = 0.42
	stepHalf = 0.32
)

// setLinearXAxis makes p's x axis linear over [lo, hi] and returns its
// fit: as many labelled ticks as the width holds.
func setLinearXAxis(p *plot.Plot, lo, hi float64) func(w vg.Length) {
	p.X.Min, p.X.Max = lo, hi
	p.X.Tick.Marker = ticker(LinearTicks(lo, hi, maxLinearLabels))
	return func(w vg.Length) {
		lw := textStyle(sans, tickSize, color.Black).Width(trimFloat(hi)+"0") + vg.Points(10)
		p.X.Tick.Marker = ticker(LinearTicks(lo, hi, min(12, max(2, int(w/lw)))))
	}
}

// timelinePlotter draws the rows' bars and the critical path.
type timelinePlotter struct {
	tl    Timeline
	kinds []string
}

func (tp *timelinePlotter) Plot(c draw.Canvas, p *plot.Plot) {
	tx, ty := p.Transforms(&c)
	n := len(tp.tl.Rows)
	rect := func(row int, b TimelineBar, half float64) vg.Rectangle {
		y := rowY(row, n)
		r := vg.Rectangle{Min: vg.Point{X: tx(b.Start), Y: ty(y - half)}, Max: vg.Point{X: tx(b.End), Y: ty(y + half)}}
		if r.Max.X-r.Min.X < 0.5 { // a bar too short to see: half a point wide
			r.Max.X = r.Min.X + 0.5
		}
		return r
	}
	for layer := LayerSpan; layer <= LayerWait; layer++ {
		for i, row := range tp.tl.Rows {
			for _, b := range row.Bars {
				if b.Layer != layer {
					continue
				}
				switch layer {
				case LayerSpan:
					r := rect(i, b, spanHalf)
					c.SetColor(spanFill)
					c.Fill(r.Path())
					c.SetLineStyle(draw.LineStyle{Color: spanEdge, Width: vg.Points(0.5)})
					c.Stroke(r.Path())
				case LayerStep:
					r := rect(i, b, stepHalf)
					c.SetColor(StepColor(tp.kinds, b.Kind))
					c.Fill(r.Path())
					c.SetLineStyle(draw.LineStyle{Color: color.White, Width: vg.Points(0.4)})
					c.Stroke(r.Path())
				case LayerWait:
					hatch(c, rect(i, b, stepHalf))
				}
			}
		}
	}
	tp.drawPath(c, tx, ty)
}

// drawPath draws the critical path: a line along the bottom of each
// stretch's row, and a thin line from one stretch to the next where the
// path changes rows.
func (tp *timelinePlotter) drawPath(c draw.Canvas, tx, ty func(float64) vg.Length) {
	n := len(tp.tl.Rows)
	thick := draw.LineStyle{Color: pathInk, Width: vg.Points(2)}
	thin := draw.LineStyle{Color: pathInk, Width: vg.Points(0.8)}
	bottom := func(row int) vg.Length { return ty(rowY(row, n) - spanHalf) }
	for k, m := range tp.tl.Path {
		y := bottom(m.Row)
		c.StrokeLine2(thick, tx(m.Start), y, max(tx(m.End), tx(m.Start)+1), y)
		if k > 0 {
			prev := tp.tl.Path[k-1]
			if prev.Row != m.Row {
				c.StrokeLine2(thin, tx(prev.End), bottom(prev.Row), tx(m.Start), y)
			}
		}
	}
}

// hatch fills r as a wait: a pale fill crossed by diagonal lines.
func hatch(c draw.Canvas, r vg.Rectangle) {
	c.SetColor(waitFill)
	c.Fill(r.Path())
	line := draw.LineStyle{Color: waitHatch, Width: vg.Points(0.6)}
	const gap = 3.5 // points between the lines, along x
	h := r.Max.Y - r.Min.Y
	// Lines x - y = const, from the bottom-left corner onwards, clipped
	// to r.
	for x0 := r.Min.X - h; x0 < r.Max.X; x0 += gap {
		ax, ay := x0, r.Min.Y
		bx, by := x0+h, r.Max.Y
		if ax < r.Min.X {
			ay += r.Min.X - ax
			ax = r.Min.X
		}
		if bx > r.Max.X {
			by -= bx - r.Max.X
			bx = r.Max.X
		}
		if bx > ax {
			c.StrokeLine2(line, ax, ay, bx, by)
		}
	}
	c.SetLineStyle(draw.LineStyle{Color: waitHatch, Width: vg.Points(0.4)})
	c.Stroke(r.Path())
}

// hatchSwatch is the legend's thumbnail of a wait.
type hatchSwatch struct{}

func (hatchSwatch) Thumbnail(c *draw.Canvas) {
	r := c.Rectangle
	r.Min.Y++
	r.Max.Y--
	hatch(*c, r)
}

// spanSwatch is the legend's thumbnail of an operation's band.
type spanSwatch struct{}

func (spanSwatch) Thumbnail(c *draw.Canvas) {
	r := c.Rectangle
	r.Min.Y++
	r.Max.Y--
	c.SetColor(spanFill)
	c.Fill(r.Path())
	c.SetLineStyle(draw.LineStyle{Color: spanEdge, Width: vg.Points(0.5)})
	c.Stroke(r.Path())
}
