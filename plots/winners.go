package plots

import "math"

// Win is the fastest configuration measured at one size.
type Win struct {
	Bytes int64
	// Config names the configuration ("Ring/LL/1ch", "auto"); the map
	// colours configurations by name.
	Config string
	Us     float64
	// RunnerUp is the second fastest and MarginPct its time over the
	// winner's, in percent; NaN alone.
	RunnerUp  string
	MarginPct float64
}

// Band is a range of sizes with one configuration: a table's decision.
type Band struct {
	From, To int64 // inclusive bytes; To -1 is unbounded
	Config   string
}

// Shape is what a winner map is of: a collective on NRanks ranks over
// NHosts hosts.
type Shape struct {
	Coll           string
	NRanks, NHosts int
}

// ShapeMap is the winner map of one shape: what was fastest at each
// measured size, and what a tuning table decided over the size axis. The
// caller finds both (tune plot: from the tuner's series and tables).
type ShapeMap struct {
	Shape Shape
	Wins  []Win  // by size
	Table []Band // by size, covering [0, inf); nil without a table
}

// Thresholds are the sizes where the table's choice changes: the From of
// every band after the first.
func (m ShapeMap) Thresholds() []int64 {
	var out []int64
	for i := 1; i < len(m.Table); i++ {
		out = append(out, m.Table[i].From)
	}
	return out
}

// Cell is a stretch of the size axis (log2 bytes) with one configuration.
type Cell struct {
	X0, X1 float64
	Config string
}

// WinCells lays measured wins along the size axis: each size owns the
// stretch halfway (in log2) to its neighbours, the end sizes as far out as
// the other side (half an octave when alone), and neighbouring sizes won by
// the same configuration merge.
func WinCells(wins []Win) []Cell {
	var out []Cell
	for i, w := range wins {
		x := X(w.Bytes)
		var left, right float64
		switch {
		case len(wins) == 1:
			left, right = 0.5, 0.5
		case i == 0:
			right = (X(wins[1].Bytes) - x) / 2
			left = right
		case i == len(wins)-1:
			left = (x - X(wins[i-1].Bytes)) / 2
			right = left
		default:
			left, right = (x-X(wins[i-1].Bytes))/2, (X(wins[i+1].Bytes)-x)/2
		}
		c := Cell{X0: x - left, X1: x + right, Config: w.Config}
		if n := len(out); n > 0 && out[n-1].Config == c.Config {
			out[n-1].X1 = c.X1
			continue
		}
		out = append(out, c)
	}
	return out
}

// BandCells lays table bands along the size axis from lo to hi (log2
// bytes): a band covers [log2 From, log2 (To+1)], clipped to the axis;
// From 0 and unbounded To reach the axis ends. Bands outside are dropped.
func BandCells(bands []Band, lo, hi float64) []Cell {
	var out []Cell
	for _, b := range bands {
		x0, x1 := lo, hi
		if b.From > 0 {
			x0 = math.Max(lo, X(b.From))
		}
		if b.To >= 0 {
			x1 = math.Min(hi, X(b.To+1))
		}
		if x1 <= x0 {
			continue
		}
		out = append(out, Cell{X0: x0, X1: x1, Config: b.Config})
	}
	return out
}
