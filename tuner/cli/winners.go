package cli

import (
	"errors"
	"fmt"
	"math"
	"sort"

	"github.com/gccl/gccl/lib/tuning"
	"github.com/gccl/gccl/plots"
	"github.com/gccl/gccl/results"
	"github.com/gccl/gccl/tuner"
)

// What `tune plot` decides with the tuner and hands package plots as plain
// data: the winner maps (winnerMaps, tableBands, decisionBands) and the
// fitted model of each curve (fitModels). plots only draws them.

// winnerMaps finds the fastest series at every measured size of every
// shape (the series' medians, as tune table compares measured sizes; size
// 0 is left out), shapes in the order the series come (tuner.Collect sorts
// them). shapes[i] is maps[i]'s shape, for its table bands.
func winnerMaps(series []tuner.Series) (maps []plots.ShapeMap, shapes []tuner.Shape) {
	type cand struct {
		k  tuner.Key
		us float64
	}
	bySize := map[tuner.Shape]map[int64][]cand{}
	var order []tuner.Shape
	for _, s := range series {
		m := bySize[s.Key.Shape]
		if m == nil {
			m = map[int64][]cand{}
			bySize[s.Key.Shape] = m
			order = append(order, s.Key.Shape)
		}
		for _, smp := range s.Samples {
			if smp.Us > 0 && smp.Bytes > 0 {
				m[smp.Bytes] = append(m[smp.Bytes], cand{s.Key, smp.Us})
			}
		}
	}
	for _, sh := range order {
		sm := plots.ShapeMap{Shape: plots.Shape{Coll: sh.Coll, NRanks: sh.NRanks, NHosts: sh.NHosts}}
		for b, cs := range bySize[sh] {
			sort.SliceStable(cs, func(i, j int) bool { return cs[i].us < cs[j].us })
			w := plots.Win{Bytes: b, Config: cs[0].k.Config(), Us: cs[0].us, MarginPct: math.NaN()}
			if len(cs) > 1 {
				w.RunnerUp, w.MarginPct = cs[1].k.Config(), 100*(cs[1].us/cs[0].us-1)
			}
			sm.Wins = append(sm.Wins, w)
		}
		if len(sm.Wins) == 0 {
			continue
		}
		sort.Slice(sm.Wins, func(i, j int) bool { return sm.Wins[i].Bytes < sm.Wins[j].Bytes })
		maps = append(maps, sm)
		shapes = append(shapes, sh)
	}
	return maps, shapes
}

// tableBands reads what table t decides for shape sh over every size: the
// byte ranges of the rules that match the shape's collective, ranks and
// hosts, with the gaps between them "auto" (no rule: the stack's model
// decides). Adjacent ranges with the same choice merge.
func tableBands(t *tuning.Table, sh tuner.Shape) []plots.Band {
	const auto = "auto"
	coll, err := tuning.ParseColl(sh.Coll)
	if t == nil || err != nil {
		return []plots.Band{{From: 0, To: -1, Config: auto}}
	}
	var rules []plots.Band
	for _, r := range t.Rules {
		if r.Coll != coll || !r.Ranks.Contains(int64(sh.NRanks)) || !r.Hosts.Contains(int64(sh.NHosts)) {
			continue
		}
		rules = append(rules, plots.Band{From: r.Bytes.Min, To: r.Bytes.Max, Config: keyOfChoice(sh, r.Choice).Config()})
	}
	sort.Slice(rules, func(i, j int) bool { return rules[i].From < rules[j].From })
	var out []plots.Band
	next := int64(0) // the first size not yet covered
	for _, r := range rules {
		if r.From > next {
			out = appendBand(out, plots.Band{From: next, To: r.From - 1, Config: auto})
		}
		out = appendBand(out, r)
		if r.To == -1 {
			return out
		}
		next = r.To + 1
	}
	return appendBand(out, plots.Band{From: next, To: -1, Config: auto})
}

// decisionBands are tune table's decisions for shape sh (tuner.BuildTable)
// as bands; skipped entries are left out.
func decisionBands(ds []tuner.Decision, sh tuner.Shape) []plots.Band {
	var out []plots.Band
	for _, d := range ds {
		if d.Skipped != "" || d.Shape != sh {
			continue
		}
		out = appendBand(out, plots.Band{From: d.From, To: d.To, Config: d.Key.Config()})
	}
	return out
}

// appendBand appends b, merging it into the last band when it continues
// it with the same configuration (bands are of one shape).
func appendBand(bs []plots.Band, b plots.Band) []plots.Band {
	if n := len(bs); n > 0 && bs[n-1].Config == b.Config && bs[n-1].To != -1 && bs[n-1].To+1 == b.From {
		bs[n-1].To = b.To
		return bs
	}
	return append(bs, b)
}

// keyOfChoice is the tuner key a table choice names.
func keyOfChoice(sh tuner.Shape, c tuning.Choice) tuner.Key {
	return tuner.Key{Shape: sh, Algo: c.Algo.String(), Proto: c.Proto.String(), NCh: c.NChannels, BuffSize: int64(c.BuffSize)}
}

// fitModels finds the fit of a curve among fits by the key of its
// records, when all of them share one; otherwise it says why the curve
// has no model drawn.
func fitModels(fits []tuner.Fit) plots.ModelOf {
	byKey := make(map[tuner.Key]tuner.Fit, len(fits))
	for _, f := range fits {
		byKey[f.Key] = f
	}
	return func(recs []results.Record) (plots.Model, error) {
		keys := map[tuner.Key]bool{}
		var k tuner.Key
		for _, r := range recs {
			k = tuner.KeyOf(r)
			keys[k] = true
		}
		if len(keys) != 1 {
			return nil, errors.New("no model drawn (its records are of several configurations; group by coll,ranks,hosts,algo,proto,nch,buff)")
		}
		f, ok := byKey[k]
		if !ok {
			return nil, fmt.Errorf("no model in the models file for %s %s", k.Shape, k.Config())
		}
		if len(f.Segments) == 0 {
			return nil, errors.New("the model has no segments")
		}
		return f.Predict, nil
	}
}
