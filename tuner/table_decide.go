// table_decide.go: deciding one shape: the candidates at each size, the
// pick among them, ties within noise, and the medians' confidence
// intervals.

package tuner

import (
	"math"
	"sort"

	"golang.org/x/perf/benchmath"
)

// contender is one candidate's time at one size.
type contender struct {
	key      Key
	us       float64
	lo, hi   float64 // confidence interval of the median; valid when ci
	ci       bool
	measured bool // us is a measured median, not a prediction
}

// pick is the decision at one size.
type pick struct {
	bytes    int64
	key      Key
	tie      bool
	runnerUp Key
	margin   float64 // runner-up's time / pick's - 1; NaN with no runner-up
	times    map[Key]float64
}

type shapeBuilder struct {
	shape Shape
	cands []Series
	fits  map[Key]Fit
	opt   TableOptions
}

// decide returns the shape's ranges, by increasing size.
func (b *shapeBuilder) decide() []Decision {
	sizes := b.sizes()
	var auto *Key
	for _, s := range b.cands {
		if s.Key.Auto() {
			k := s.Key
			auto = &k
		}
	}
	picks := make([]pick, 0, len(sizes)+1)
	var prev *Key
	for _, sz := range sizes {
		p := b.choose(sz, b.contenders(sz), auto, prev)
		picks = append(picks, p)
		prev = &p.key
	}

	// Ranges from the measured picks, boundaries at the crossings.
	var ds []Decision
	open := func(p pick, from int64) {
		ds = append(ds, Decision{Shape: b.shape, From: from, To: -1, Key: p.key, MarginPct: math.NaN()})
	}
	note := func(p pick, measured bool) {
		d := &ds[len(ds)-1]
		if measured {
			d.Sizes++
		}
		if p.tie {
			d.TieSizes++
		}
		if !math.IsNaN(p.margin) && (math.IsNaN(d.MarginPct) || 100*p.margin < d.MarginPct) {
			d.RunnerUp, d.MarginPct = p.runnerUp, 100*p.margin
		}
	}
	open(picks[0], 0)
	note(picks[0], true)
	for i := 1; i < len(picks); i++ {
		if picks[i].key != picks[i-1].key {
			x := b.boundary(picks[i-1], picks[i])
			ds[len(ds)-1].To = x - 1
			open(picks[i], x)
		}
		note(picks[i], true)
	}

	// Beyond the largest measured size: the models at extrapolateFactor x.
	last := picks[len(picks)-1]
	if p, ok := b.extrapolate(last, auto); ok && p.key != last.key {
		if x, ok := crossing(b.fits[last.key].Predict, b.fits[p.key].Predict, last.bytes, p.bytes); ok {
			ds[len(ds)-1].To = x - 1
			open(p, x)
			note(p, false)
		}
	}
	return ds
}

// sizes is every measured size of the shape, increasing.
func (b *shapeBuilder) sizes() []int64 {
	seen := map[int64]bool{}
	var out []int64
	for _, s := range b.cands {
		for _, m := range s.Samples {
			if !seen[m.Bytes] {
				seen[m.Bytes] = true
				out = append(out, m.Bytes)
			}
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i] < out[j] })
	return out
}

// contenders prices every candidate that competes at measured size sz.
func (b *shapeBuilder) contenders(sz int64) []contender {
	var cs []contender
	for _, s := range b.cands {
		first, last := s.Samples[0].Bytes, s.Samples[len(s.Samples)-1].Bytes
		if sz < first || sz > last {
			continue
		}
		if i := sort.Search(len(s.Samples), func(i int) bool { return s.Samples[i].Bytes >= sz }); s.Samples[i].Bytes == sz {
			m := s.Samples[i]
			c := contender{key: s.Key, us: m.Us, measured: true}
			c.lo, c.hi, c.ci = medianCI(m.Times, b.opt.confidence())
			cs = append(cs, c)
			continue
		}
		if f, ok := b.fits[s.Key]; ok {
			if us := f.Predict(sz); us > 0 && !math.IsInf(us, 0) {
				cs = append(cs, contender{key: s.Key, us: us})
			}
		}
	}
	return cs
}

// choose picks among cs at size sz (see the package comment): the fastest,
// or from those within noise of it, auto, then the default, then the
// fewest channels (prev among them).
func (b *shapeBuilder) choose(sz int64, cs []contender, auto, prev *Key) pick {
	sort.SliceStable(cs, func(i, j int) bool {
		if cs[i].us != cs[j].us {
			return cs[i].us < cs[j].us
		}
		return keyLess(cs[i].key, cs[j].key)
	})
	w := cs[0]
	tied := map[Key]bool{w.key: true}
	for _, c := range cs[1:] {
		if b.sameWithinNoise(w, c) {
			tied[c.key] = true
		}
	}
	prefs := []*Key{auto}
	if b.opt.Default != nil {
		if k, ok := b.opt.Default(b.shape, sz); ok {
			prefs = append(prefs, &k)
		}
	}
	chosen, preferred := w, false
	for _, k := range prefs {
		if k != nil && tied[*k] {
			for _, c := range cs {
				if c.key == *k {
					chosen, preferred = c, true
				}
			}
			break
		}
	}
	if !preferred {
		chosen = fewestChannels(cs, tied, prev)
	}
	p := pick{bytes: sz, key: chosen.key, tie: len(tied) > 1, margin: math.NaN(), times: map[Key]float64{}}
	for _, c := range cs {
		p.times[c.key] = c.us
		if c.key != chosen.key && math.IsNaN(p.margin) {
			p.runnerUp, p.margin = c.key, c.us/chosen.us-1
		}
	}
	return p
}

// fewestChannels picks from the tied candidates (cs by increasing time)
// the one on the fewest channels, and among those prev if it is one, else
// the fastest. A channel is a goroutine per rank: where more of them buy
// nothing measurable they cost wake-ups, and a config that ties only
// through a wide interval (a bimodal run) is more often one of many
// channels. "auto" channel counts (0) count as more than any.
func fewestChannels(cs []contender, tied map[Key]bool, prev *Key) contender {
	chans := func(k Key) int {
		if k.NCh <= 0 {
			return math.MaxInt
		}
		return k.NCh
	}
	least := math.MaxInt
	for _, c := range cs {
		if tied[c.key] {
			least = min(least, chans(c.key))
		}
	}
	var best *contender
	for i := range cs {
		c := &cs[i]
		if !tied[c.key] || chans(c.key) != least {
			continue
		}
		if prev != nil && c.key == *prev {
			return *c
		}
		if best == nil {
			best = c
		}
	}
	return *best
}

// sameWithinNoise reports whether c (no faster than w) is within noise of
// w: at most TieMargin slower, or either median inside the other's
// confidence interval.
func (b *shapeBuilder) sameWithinNoise(w, c contender) bool {
	if c.us <= w.us*(1+b.opt.margin()) {
		return true
	}
	return (w.ci && c.us <= w.hi) || (c.ci && w.us >= c.lo)
}

// medianCI returns the distribution-free confidence interval at level conf
// of the median of xs: order statistics, no assumption on the distribution
// (benchmath's AssumeNothing, as benchstat and perf --precision use). ok is
// false when the samples are too few to bound it (fewer than 6 at 95%).
func medianCI(xs []float64, conf float64) (lo, hi float64, ok bool) {
	if len(xs) == 0 {
		return 0, 0, false
	}
	s := benchmath.AssumeNothing.Summary(benchmath.NewSample(xs, &benchmath.DefaultThresholds), conf)
	if math.IsInf(s.Lo, 0) || math.IsInf(s.Hi, 0) || math.IsNaN(s.Lo) || math.IsNaN(s.Hi) {
		return 0, 0, false
	}
	return s.Lo, s.Hi, true
}
