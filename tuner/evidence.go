package tuner

import (
	"math"
	"slices"
	"sort"
)

// Evidence mode of BuildTable (TableOptions.Noise; issue 18).
//
// At each measured size the default is the "auto" series' time there
// (what the stack did), else the DefaultPicker's configuration's measured
// time. A forced configuration measured at that size wins it when
//
//	t(default) - t(forced) > Noise.At(t(default)) x max(1/sqrt(min(runs)), 1/2)
//
// runs being how many separate runs (records, placements apart) each of
// the two medians rests on: repeats narrow the noise of a median, one run
// of each has to clear all of it. Model predictions never win a size. Of
// the winners, the fastest is picked, preferring among those within the
// noise of it the fewest channels, then the previous size's pick. A win
// counts only where the configuration also beat the default at an
// adjacent measured size, or where every separate run of it (two at
// least) beat every run of the default by the noise (keepCorroborated):
// a lone size needs its own repeats to stand.
//
// Ranges: a forced pick holds from the first to the last measured size of
// a run of sizes it won, and past them toward the neighbouring measured
// sizes the default kept as far as the pick's margin over the default,
// interpolated linearly in log size between the two, stays positive:
// where the pick lost at the neighbour, to the estimated crossover; where
// it was not slower there, up to just short of the neighbour. Between two
// different winners, the earlier holds up to the later's size if it also
// beat the default there, else the later from just past the earlier's if
// it beat the default at the earlier's size, else the default between
// them. Below the first and above the last measured size the default
// holds: no rule reaches past what was measured.

// hasDefault reports whether the shape has a default to weigh evidence
// against: an "auto" series or a DefaultPicker.
func (b *shapeBuilder) hasDefault() bool {
	if b.opt.Default != nil {
		return true
	}
	for _, s := range b.cands {
		if s.Key.Auto() {
			return true
		}
	}
	return false
}

// runsAt is how many runs key's median at size sz rests on (0: not
// measured there).
func (b *shapeBuilder) runsAt(k Key, sz int64) int {
	for _, s := range b.cands {
		if s.Key != k {
			continue
		}
		i := sort.Search(len(s.Samples), func(i int) bool { return s.Samples[i].Bytes >= sz })
		if i < len(s.Samples) && s.Samples[i].Bytes == sz {
			return max(len(s.Samples[i].Runs), 1)
		}
	}
	return 0
}

// evidencePick is the decision at one measured size in evidence mode.
type evidencePick struct {
	bytes int64
	key   Key // the winner, or the auto key: the default keeps the size
	// wins are the forced configurations that beat the default here.
	wins map[Key]bool
	// us is every measured configuration's median here, the default's too.
	us       map[Key]float64
	def      Key // the default's configuration here (auto, or the picker's)
	defUs    float64
	pickUs   float64
	noiseUs  float64 // the noise the pick had to clear (0 for the default)
	tie      bool    // another winner was within noise of the pick
	measured bool    // the default was measured here
	// repeated: every separate run of the pick beat every run of the
	// default by the noise, over two runs of each at least.
	repeated bool
}

// chooseOnEvidence decides one measured size.
func (b *shapeBuilder) chooseOnEvidence(sz int64, prev *Key) evidencePick {
	auto := Key{Shape: b.shape, Algo: "auto", Proto: "auto"}
	p := evidencePick{bytes: sz, key: auto, wins: map[Key]bool{}, us: map[Key]float64{}}
	var cs []contender
	for _, c := range b.contenders(sz) {
		if c.measured {
			cs = append(cs, c)
			p.us[c.key] = c.us
		}
	}
	var def *contender
	for i := range cs {
		if cs[i].key.Auto() {
			def = &cs[i]
		}
	}
	if def == nil && b.opt.Default != nil {
		if k, ok := b.opt.Default(b.shape, sz); ok {
			for i := range cs {
				if cs[i].key == k {
					def = &cs[i]
				}
			}
		}
	}
	if def == nil {
		return p // no default measured here: nothing to beat, the default holds
	}
	p.def, p.defUs, p.measured = def.key, def.us, true
	noise := *b.opt.Noise
	var winners []contender
	for _, c := range cs {
		if c.key == def.key || c.key.Auto() {
			continue
		}
		runs := min(b.runsAt(c.key, sz), b.runsAt(def.key, sz))
		clear := noise.At(def.us) * repeatFactor(runs)
		if def.us-c.us > clear {
			p.wins[c.key] = true
			winners = append(winners, c)
		}
	}
	if len(winners) == 0 {
		return p
	}
	sort.SliceStable(winners, func(i, j int) bool {
		if winners[i].us != winners[j].us {
			return winners[i].us < winners[j].us
		}
		return keyLess(winners[i].key, winners[j].key)
	})
	fast := winners[0]
	tied := map[Key]bool{}
	for _, c := range winners {
		if c.us-fast.us <= noise.At(fast.us) {
			tied[c.key] = true
		}
	}
	w := fewestChannels(winners, tied, prev)
	runs := min(b.runsAt(w.key, sz), b.runsAt(def.key, sz))
	p.key, p.pickUs, p.tie = w.key, w.us, len(tied) > 1
	p.noiseUs = noise.At(def.us) * repeatFactor(runs)
	p.repeated = b.winsEveryRun(w.key, def.key, sz)
	return p
}

// winsEveryRun reports whether key k, measured in two separate runs at
// least at size sz, beat the default def there in each of them against
// each of the default's (two at least) by the noise of one run.
func (b *shapeBuilder) winsEveryRun(k, def Key, sz int64) bool {
	kr, kn := b.runTimes(k, sz)
	dr, dn := b.runTimes(def, sz)
	if kn < 2 || dn < 2 {
		return false
	}
	slowest, fastestDef := slices.Max(kr), slices.Min(dr)
	return fastestDef-slowest > b.opt.Noise.At(fastestDef)
}

// runTimes is key k's run times at size sz and how many separate runs
// (run ids) they came from.
func (b *shapeBuilder) runTimes(k Key, sz int64) ([]float64, int) {
	for _, s := range b.cands {
		if s.Key != k {
			continue
		}
		i := sort.Search(len(s.Samples), func(i int) bool { return s.Samples[i].Bytes >= sz })
		if i == len(s.Samples) || s.Samples[i].Bytes != sz || len(s.Samples[i].Runs) == 0 {
			return nil, 0
		}
		m := s.Samples[i]
		ids := map[string]bool{}
		for _, id := range m.RunIDs {
			ids[id] = true
		}
		return m.Runs, len(ids)
	}
	return nil, 0
}

// repeatFactor scales the noise a median of runs runs must clear: 1/sqrt
// of them, as the spread of a median narrows, but never below half the
// noise of one run, for the many comparisons a sweep makes (a 5% chance
// per size and configuration would make some rule of nothing).
func repeatFactor(runs int) float64 {
	return max(1/math.Sqrt(float64(max(runs, 1))), 0.5)
}

// keepCorroborated turns back to the default every win not shown at an
// adjacent measured size too, unless every separate run showed it: one
// size measured once is one comparison among hundreds in a sweep, and a
// rule of it is as likely noise as a finding.
func keepCorroborated(picks []evidencePick) {
	won := make([]bool, len(picks))
	for i, p := range picks {
		if p.key.Auto() {
			continue
		}
		won[i] = p.repeated || (i > 0 && picks[i-1].wins[p.key]) || (i+1 < len(picks) && picks[i+1].wins[p.key])
	}
	for i := range picks {
		if !picks[i].key.Auto() && !won[i] {
			picks[i].key = Key{Shape: picks[i].key.Shape, Algo: "auto", Proto: "auto"}
			picks[i].tie = false
		}
	}
}

// decideOnEvidence returns the shape's ranges in evidence mode.
func (b *shapeBuilder) decideOnEvidence() []Decision {
	sizes := b.sizes()
	auto := Key{Shape: b.shape, Algo: "auto", Proto: "auto"}
	picks := make([]evidencePick, 0, len(sizes))
	var prev *Key
	for _, sz := range sizes {
		p := b.chooseOnEvidence(sz, prev)
		picks = append(picks, p)
		k := p.key
		prev = &k
	}
	keepCorroborated(picks)
	var ds []Decision
	open := func(k Key, from int64) {
		if n := len(ds); n > 0 && ds[n-1].Key == k {
			return // extends the range before
		}
		if n := len(ds); n > 0 && ds[n-1].From >= from {
			ds[n-1].Key = k // the range before is empty: k replaces it
			return
		}
		if n := len(ds); n > 0 {
			ds[n-1].To = from - 1
		}
		ds = append(ds, Decision{Shape: b.shape, From: from, To: -1, Key: k, MarginPct: math.NaN(), NoisePct: math.NaN()})
	}
	note := func(p evidencePick) {
		d := &ds[len(ds)-1]
		d.Sizes++
		if p.tie {
			d.TieSizes++
		}
		if p.key.Auto() || !p.measured {
			return
		}
		m := 100 * (p.defUs/p.pickUs - 1)
		if math.IsNaN(d.MarginPct) || m < d.MarginPct {
			d.RunnerUp, d.MarginPct, d.NoisePct = p.def, m, 100*p.noiseUs/p.pickUs
		}
	}
	first := picks[0]
	open(auto, 0) // the default below the first measured size
	if !first.key.Auto() {
		open(first.key, first.bytes)
	}
	note(first)
	for i := 1; i < len(picks); i++ {
		p, q := picks[i-1], picks[i]
		if q.key != p.key {
			switch {
			case p.key.Auto(): // the default until q's margin runs out below q
				open(q.key, crossover(q.key, q, p))
			case q.key.Auto(): // p holds past its last won size while its margin lasts
				open(auto, crossover(p.key, p, q)+1)
			case q.wins[p.key]: // p also beat the default at q's size
				open(q.key, q.bytes)
			case p.wins[q.key]: // q also beat the default at p's size
				open(q.key, p.bytes+1)
			default:
				if q.bytes > p.bytes+1 {
					open(auto, p.bytes+1)
				}
				open(q.key, q.bytes)
			}
		}
		note(q)
	}
	if last := picks[len(picks)-1]; !last.key.Auto() {
		open(auto, last.bytes+1) // nothing was measured past the last size
	}
	return ds
}

// crossover is the last size, going from won's size toward next's (below
// or above it), at which key k's margin over the default, interpolated
// linearly in log size between the two measured sizes, is still positive:
// where k was measured slower than the default at next, the estimated
// crossing; where it was not slower, the size just short of next. Where
// k or the default was not measured at next, won's own size: no evidence
// reaches past it.
func crossover(k Key, won, next evidencePick) int64 {
	step := int64(1)
	if next.bytes < won.bytes {
		step = -1
	}
	ku, kok := next.us[k]
	du, dok := next.us[next.def]
	if !next.measured || !kok || !dok || won.bytes <= 0 {
		return won.bytes
	}
	short := next.bytes - step
	if ku <= du {
		return short
	}
	mw := won.defUs/won.pickUs - 1 // > 0: k won there
	mn := du/ku - 1                // < 0: k lost at next
	t := mw / (mw - mn)
	lw, ln := math.Log(float64(won.bytes)), math.Log(float64(next.bytes))
	x := int64(math.Round(math.Exp(lw + t*(ln-lw))))
	if step > 0 {
		return min(max(x, won.bytes), short)
	}
	return max(min(x, won.bytes), short)
}
