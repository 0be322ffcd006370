package plots

import (
	"image/color"
	"math"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
)

// Bounds on labelled ticks: a size axis, a linear axis.
const (
	maxSizeLabels   = 12
	maxLinearLabels = 7
)

// sizeAxisLabel is the title of every size axis.
const sizeAxisLabel = "message size (bytes, log2)"

// setSizeAxis makes p's x axis a log2 size axis over [lo, hi], its tick
// labels left out unless labelled (a panel stacked over another). It
// returns the axis' fit: as many labelled ticks as the data area's width
// holds without their labels touching.
func setSizeAxis(p *plot.Plot, lo, hi float64, labelled bool) func(w vg.Length) {
	p.X.Min, p.X.Max = lo, hi
	set := func(n int) {
		ts := SizeTicks(lo, hi, n)
		if !labelled {
			// No labels take no room: the panel below labels the axis.
			for i := range ts {
				ts[i].Label = ""
			}
		}
		p.X.Tick.Marker = ticker(ts)
	}
	set(maxSizeLabels)
	return func(w vg.Length) {
		// The widest labels are four characters: "256K", "512B".
		lw := textStyle(sans, tickSize, color.Black).Width("512K") + vg.Points(8)
		set(min(maxSizeLabels, max(2, 1+int(w/lw))))
	}
}

// metricRange is the range of the points (and their spreads) in the
// metric's axis coordinates: from 0 for bandwidths, the times' decades
// (log10) with some room.
func metricRange(m Metric, sets [][]Point) (float64, float64) {
	lo, hi := math.Inf(1), math.Inf(-1)
	see := func(v float64) {
		if m == Time && v <= 0 {
			return
		}
		lo, hi = math.Min(lo, v), math.Max(hi, v)
	}
	for _, s := range sets {
		for _, pt := range s {
			see(pt.Y)
			if pt.Spread != nil {
				see(pt.Spread.Lo)
				see(pt.Spread.Hi)
			}
		}
	}
	if m == Time {
		if !finite(lo) || !finite(hi) {
			lo, hi = 1, 10
		}
		return TimeRange(lo, hi)
	}
	if !finite(hi) || hi <= 0 {
		hi = 1
	}
	return 0, hi * 1.05
}

// setMetricAxis sets p's y axis to [lo, hi] of metric m (metricRange) and
// returns its fit: as many labelled ticks as the height holds.
func setMetricAxis(p *plot.Plot, m Metric, lo, hi float64) func(h vg.Length) {
	p.Y.Min, p.Y.Max = lo, hi
	if m == Time {
		p.Y.Tick.Marker = ticker(TimeTicks(lo, hi))
		return func(vg.Length) {}
	}
	return setLinearAxis(p, lo, hi, maxLinearLabels)
}

// setLinearAxis sets p's y axis to [lo, hi] with at most most labelled
// ticks, fewer where the height holds fewer.
func setLinearAxis(p *plot.Plot, lo, hi float64, most int) func(h vg.Length) {
	p.Y.Min, p.Y.Max = lo, hi
	p.Y.Tick.Marker = ticker(LinearTicks(lo, hi, most))
	return func(h vg.Length) {
		lh := textStyle(sans, tickSize, color.Black).Height("0") * 1.5
		n := min(most, max(2, 1+int(h/lh)))
		p.Y.Tick.Marker = ticker(LinearTicks(lo, hi, n))
	}
}

// fitBoth joins an x and a y fit into a panel's fit.
func fitBoth(fx func(vg.Length), fy func(vg.Length)) func(w, h vg.Length) {
	return func(w, h vg.Length) {
		fx(w)
		fy(h)
	}
}

// yOf is a metric value in its axis' coordinates.
func yOf(m Metric, v float64) float64 {
	if m == Time {
		return math.Log10(v)
	}
	return v
}

// grid is light grid lines at the labelled ticks.
func grid() *plotter.Grid {
	g := plotter.NewGrid()
	g.Vertical.Color, g.Horizontal.Color = gridGrey, gridGrey
	g.Vertical.Width, g.Horizontal.Width = vg.Points(0.5), vg.Points(0.5)
	return g
}
