package plots

import (
	"math"
	"sort"

	"github.com/gccl/gccl/lib/tuning"
	"github.com/gccl/gccl/tuner"
)

// Win is the fastest configuration measured at one size.
type Win struct {
	Bytes int64
	Key   tuner.Key
	Us    float64
	// RunnerUp is the second fastest and MarginPct its time over the
	// winner's, in percent; NaN alone.
	RunnerUp  tuner.Key
	MarginPct float64
}

// Band is a range of sizes with one configuration: a table's decision.
type Band struct {
	From, To int64 // inclusive bytes; To -1 is unbounded
	Key      tuner.Key
}

// ShapeMap is the winner map of one shape: what was fastest at each
// measured size, and what a tuning table decided over the size axis.
type ShapeMap struct {
	Shape tuner.Shape
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

// Winners finds the fastest series at every measured size of every shape
// (the series' medians, as tune table compares measured sizes; size 0 is
// left out), shapes in the order the series come (tuner.Collect sorts
// them).
func Winners(series []tuner.Series) []ShapeMap {
	type cand struct {
		k  tuner.Key
		us float64
	}
	bySize := map[tuner.Shape]map[int64][]cand{}
	var shapes []tuner.Shape
	for _, s := range series {
		m := bySize[s.Key.Shape]
		if m == nil {
			m = map[int64][]cand{}
			bySize[s.Key.Shape] = m
			shapes = append(shapes, s.Key.Shape)
		}
		for _, smp := range s.Samples {
			if smp.Us > 0 && smp.Bytes > 0 {
				m[smp.Bytes] = append(m[smp.Bytes], cand{s.Key, smp.Us})
			}
		}
	}
	var out []ShapeMap
	for _, sh := range shapes {
		sm := ShapeMap{Shape: sh}
		for b, cs := range bySize[sh] {
			sort.SliceStable(cs, func(i, j int) bool { return cs[i].us < cs[j].us })
			w := Win{Bytes: b, Key: cs[0].k, Us: cs[0].us, MarginPct: math.NaN()}
			if len(cs) > 1 {
				w.RunnerUp, w.MarginPct = cs[1].k, 100*(cs[1].us/cs[0].us-1)
			}
			sm.Wins = append(sm.Wins, w)
		}
		if len(sm.Wins) == 0 {
			continue
		}
		sort.Slice(sm.Wins, func(i, j int) bool { return sm.Wins[i].Bytes < sm.Wins[j].Bytes })
		out = append(out, sm)
	}
	return out
}

// TableBands reads what table t decides for shape sh over every size: the
// byte ranges of the rules that match the shape's collective, ranks and
// hosts, with the gaps between them "auto" (no rule: the stack's model
// decides). Adjacent ranges with the same choice merge.
func TableBands(t *tuning.Table, sh tuner.Shape) []Band {
	auto := tuner.Key{Shape: sh, Algo: "auto", Proto: "auto"}
	coll, err := tuning.ParseColl(sh.Coll)
	if t == nil || err != nil {
		return []Band{{From: 0, To: -1, Key: auto}}
	}
	var rules []Band
	for _, r := range t.Rules {
		if r.Coll != coll || !r.Ranks.Contains(int64(sh.NRanks)) || !r.Hosts.Contains(int64(sh.NHosts)) {
			continue
		}
		rules = append(rules, Band{From: r.Bytes.Min, To: r.Bytes.Max, Key: keyOfChoice(sh, r.Choice)})
	}
	sort.Slice(rules, func(i, j int) bool { return rules[i].From < rules[j].From })
	var out []Band
	next := int64(0) // the first size not yet covered
	for _, r := range rules {
		if r.From > next {
			out = appendBand(out, Band{From: next, To: r.From - 1, Key: auto})
		}
		out = appendBand(out, r)
		if r.To == -1 {
			return out
		}
		next = r.To + 1
	}
	return appendBand(out, Band{From: next, To: -1, Key: auto})
}

// DecisionBands are tune table's decisions for shape sh (tuner.BuildTable)
// as bands; skipped entries are left out.
func DecisionBands(ds []tuner.Decision, sh tuner.Shape) []Band {
	var out []Band
	for _, d := range ds {
		if d.Skipped != "" || d.Shape != sh {
			continue
		}
		k := d.Key
		if k.Auto() {
			k = tuner.Key{Shape: sh, Algo: "auto", Proto: "auto"}
		}
		out = appendBand(out, Band{From: d.From, To: d.To, Key: k})
	}
	return out
}

// appendBand appends b, merging it into the last band when it continues
// it with the same key.
func appendBand(bs []Band, b Band) []Band {
	if n := len(bs); n > 0 && bs[n-1].Key == b.Key && bs[n-1].To != -1 && bs[n-1].To+1 == b.From {
		bs[n-1].To = b.To
		return bs
	}
	return append(bs, b)
}

// keyOfChoice is the tuner key a table choice names.
func keyOfChoice(sh tuner.Shape, c tuning.Choice) tuner.Key {
	return tuner.Key{Shape: sh, Algo: c.Algo.String(), Proto: c.Proto.String(), NCh: c.NChannels, BuffSize: int64(c.BuffSize)}
}

// Cell is a stretch of the size axis (log2 bytes) with one configuration.
type Cell struct {
	X0, X1 float64
	Key    tuner.Key
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
		c := Cell{X0: x - left, X1: x + right, Key: w.Key}
		if n := len(out); n > 0 && out[n-1].Key == c.Key {
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
		out = append(out, Cell{X0: x0, X1: x1, Key: b.Key})
	}
	return out
}
