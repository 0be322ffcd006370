package tuner

import (
	"fmt"
	"math"
	"sort"

	"golang.org/x/perf/benchmath"

	"github.com/gccl/gccl/lib/proto"
	"github.com/gccl/gccl/lib/tuning"
	"github.com/gccl/gccl/results"
)

// Threshold selection (issue 5's `tune table`).
//
// For each shape the candidates are its series, one per measured
// configuration, the stack's own choice ("auto") included. Sizes are
// decided in three regimes:
//
//   - At a measured size, a candidate measured there competes with its
//     measured median; one measured at smaller and larger sizes but not this
//     one competes with its model's prediction (interpolation); one whose
//     measurements do not span the size does not compete (a sweep that
//     stopped measuring LL at 512K is not asked about 2M).
//   - Between two adjacent measured sizes whose picks differ, the boundary
//     is where the two picks' models cross: the least byte count at which
//     the later pick is predicted strictly faster, found by bisection on
//     integers. When the models do not cross there in that direction (they
//     disagree with the measurements, or a pick has no model), the same
//     search runs on the line through each pick's two endpoint times, and
//     failing that the boundary is the geometric midpoint. A third
//     candidate that would win only strictly between two measured sizes is
//     not looked for: the sweep's sizes are the table's resolution.
//   - Below the smallest measured size the first pick holds down to 0.
//     Beyond the largest, S, the candidates measured at S compete with their
//     models at 16 S (a size far enough out that bandwidth rules). If that
//     pick differs from the pick at S and the two models cross in (S, 16 S]
//     (the pick at S predicted no slower at S, strictly slower at 16 S), it
//     holds from the crossing on, unbounded; otherwise the pick at S does:
//     where the models disagree with the measurements at S, the
//     measurements win.
//
// Ties: two candidates are within noise of each other when the slower's
// time is at most TieMargin above the faster's, or either's median lies
// inside the other's 95% distribution-free confidence interval of the
// median (order statistics of its Sample.Times; no interval below 6
// samples, and none for a model's prediction). The tied set at a size is
// the fastest candidate and everything within noise of it. From the tied
// set the pick is, in order of preference: the "auto" series (the stack's
// own choice: no rule), the DefaultPicker's configuration (the built-in
// model's pick); failing both, the tied candidates on the fewest channels,
// and of those the previous size's pick (fewer switches), else the fastest.

// DefaultTieMargin is the relative difference below which two candidates
// are a tie whatever their samples say.
const DefaultTieMargin = 0.02

// DefaultConfidence is the level of the medians' confidence intervals.
const DefaultConfidence = 0.95

// extrapolateFactor is how far past the largest measured size the models
// are asked who wins there.
const extrapolateFactor = 16

// DefaultPicker returns the configuration the stack picks on its own for an
// operation of bytes on shape s, as the Key its forced run is measured
// under; ok is false when it has none for s.
type DefaultPicker func(s Shape, bytes int64) (k Key, ok bool)

// ModelDefault is the built-in cost model's pick with constants c, as the
// stack makes it on a communicator measured by one process of procs
// processors: constants adjusted by modelFor, and the communicator's
// channel count min(procs, 4) (ccl's automatic channel count), reduced per
// size by the model. Shapes of collectives lib/tuning does not know have no
// default.
func ModelDefault(c tuning.Constants, procs int) DefaultPicker {
	procs = max(procs, 1)
	return func(s Shape, bytes int64) (Key, bool) {
		coll, err := tuning.ParseColl(s.Coll)
		if err != nil {
			return Key{}, false
		}
		// A shape does not say whether its hosts were real: priced as hosts
		// simulated in one process (a sweep across real hosts has its
		// "auto" series as the default).
		m := tuning.Model{C: modelFor(c, procs, s.NHosts, false)}
		ch, us := m.Choose(coll, s.NRanks, s.NHosts, bytes, tuning.Limits{MaxChannels: min(procs, 4)})
		if us < 0 {
			return Key{}, false
		}
		return Key{Shape: s, Algo: ch.Algo.String(), Proto: ch.Proto.String(), NCh: ch.NChannels}, true
	}
}

// EmbeddedDefault is pick restricted to the shapes whose records all come
// from gccl's own stack (backend "embedded"): gccl's built-in model is the
// default of those runs, not of NCCL's (backends "nccl", "nccl-tests"),
// whose default is only known from an "auto" series.
func EmbeddedDefault(recs []results.Record, pick DefaultPicker) DefaultPicker {
	own := map[Shape]bool{}
	for _, r := range recs {
		sh := KeyOf(r).Shape
		if v, seen := own[sh]; !seen || v {
			own[sh] = r.Backend == "embedded"
		}
	}
	return func(s Shape, bytes int64) (Key, bool) {
		if !own[s] {
			return Key{}, false
		}
		return pick(s, bytes)
	}
}

// TableOptions tune BuildTable.
type TableOptions struct {
	// TieMargin is the relative difference within which two candidates
	// always tie: 0 means DefaultTieMargin, a negative value none (only the
	// confidence intervals decide).
	TieMargin float64
	// Confidence is the level of the medians' confidence intervals: 0 means
	// DefaultConfidence.
	Confidence float64
	// Default is preferred on ties after an "auto" series; nil for none.
	Default DefaultPicker
	// Comment becomes the table's comment.
	Comment string
	// Noise, when set, switches to evidence mode (issue 18): a forced
	// configuration displaces the default at a measured size only when its
	// measured time beats the default's there by more than the noise
	// (scaled by 1/sqrt of the fewer runs the two medians rest on); rules
	// hold between the measured sizes that showed the win, and hand back
	// to the default at the last such size. Nil keeps the fastest-wins
	// rules above.
	Noise *Noise
}

func (o TableOptions) margin() float64 {
	switch {
	case o.TieMargin == 0:
		return DefaultTieMargin
	case o.TieMargin < 0:
		return 0
	}
	return o.TieMargin
}

func (o TableOptions) confidence() float64 {
	if o.Confidence <= 0 || o.Confidence >= 1 {
		return DefaultConfidence
	}
	return o.Confidence
}

// Decision is one range of sizes of one shape with one pick: a row of the
// thresholds printout. A Decision with Skipped set says instead that a
// shape or a configuration was left out, and why.
type Decision struct {
	Shape    Shape
	From, To int64 // inclusive byte range; To -1 is unbounded
	Key      Key   // the pick; Key.Auto(): no rule, the stack decides
	Rule     bool  // a rule was written for the range (false for "auto")
	// Sizes is how many measured sizes lie in the range; 0 for a range
	// decided by extrapolation alone.
	Sizes int
	// TieSizes is how many of those sizes (or the extrapolation) were ties:
	// the pick was within noise of another candidate.
	TieSizes int
	// RunnerUp is the closest other candidate at the range's closest call
	// (the size of least margin), and MarginPct its time over the pick's, in
	// percent: negative when a tie went to a slower preferred pick. Zero Key
	// and NaN when no other candidate competed.
	RunnerUp  Key
	MarginPct float64
	// Skipped, when not empty, is why Shape (and Key, when set) was left out.
	Skipped string
	// NoisePct is, in evidence mode, the noise the rule's closest call had
	// to clear, in percent of the pick's time (RunnerUp is the default
	// there, MarginPct the default's time over the pick's); NaN otherwise.
	NoisePct float64
}

// Tie reports whether any size of the range was a tie.
func (d Decision) Tie() bool { return d.TieSizes > 0 }

// BuildTable picks, per shape, the fastest configuration per size (see the
// package comment above for the rules), merges sizes of one pick into
// ranges, and returns the tuning table (one rule per range not won by
// "auto") and the decisions, shape by shape and by increasing size, with the
// skipped shapes and configurations. fits are matched to series by Key; a
// series without a fit competes only where it was measured.
func BuildTable(series []Series, fits []Fit, opt TableOptions) (*tuning.Table, []Decision, error) {
	fitOf := map[Key]Fit{}
	for _, f := range fits {
		if len(f.Segments) > 0 {
			fitOf[f.Key] = f
		}
	}
	byShape := map[Shape][]Series{}
	var shapes []Shape
	for _, s := range series {
		if len(s.Samples) == 0 {
			continue
		}
		if _, ok := byShape[s.Key.Shape]; !ok {
			shapes = append(shapes, s.Key.Shape)
		}
		byShape[s.Key.Shape] = append(byShape[s.Key.Shape], s)
	}
	sort.Slice(shapes, func(i, j int) bool { return keyLess(Key{Shape: shapes[i]}, Key{Shape: shapes[j]}) })

	t := &tuning.Table{Version: tuning.TableVersion, Comment: opt.Comment, Rules: []tuning.Rule{}}
	var out []Decision
	for _, sh := range shapes {
		coll, err := tuning.ParseColl(sh.Coll)
		if err != nil {
			out = append(out, Decision{Shape: sh, Skipped: "lib/tuning has no rules for this collective"})
			continue
		}
		if sh.NRanks < 1 || sh.NHosts < 1 || sh.NHosts > sh.NRanks {
			out = append(out, Decision{Shape: sh, Skipped: fmt.Sprintf("%d hosts for %d ranks is not a communicator", sh.NHosts, sh.NRanks)})
			continue
		}
		var cands []Series
		for _, s := range byShape[sh] {
			if why := ruleless(coll, s.Key); why != "" {
				out = append(out, Decision{Shape: sh, Key: s.Key, Skipped: why})
				continue
			}
			cands = append(cands, s)
		}
		if len(cands) == 0 {
			continue
		}
		b := shapeBuilder{shape: sh, cands: cands, fits: fitOf, opt: opt}
		var ds []Decision
		if opt.Noise != nil && b.hasDefault() {
			ds = b.decideOnEvidence()
		} else {
			ds = b.decide()
			for i := range ds {
				ds[i].NoisePct = math.NaN()
			}
		}
		for i := range ds {
			if ds[i].Key.Auto() {
				continue
			}
			ds[i].Rule = true
			t.Rules = append(t.Rules, tuning.Rule{
				Coll:   coll,
				Ranks:  tuning.Range{Min: int64(sh.NRanks), Max: int64(sh.NRanks)},
				Hosts:  tuning.Range{Min: int64(sh.NHosts), Max: int64(sh.NHosts)},
				Bytes:  tuning.Range{Min: ds[i].From, Max: ds[i].To},
				Choice: choiceOf(ds[i].Key),
			})
		}
		out = append(out, ds...)
	}
	if err := t.Validate(); err != nil {
		return nil, out, fmt.Errorf("tune table: the table built is invalid (a bug): %w", err)
	}
	return t, out, nil
}

// ruleless says why configuration k cannot be written as a rule of coll,
// or "" when it can. "auto" can: it is the absence of a rule.
func ruleless(coll tuning.Coll, k Key) string {
	if k.Auto() {
		return ""
	}
	if k.Algo == "auto" || k.Proto == "auto" {
		return "only part of the configuration was forced (a rule needs both algorithm and protocol)"
	}
	a, err := tuning.ParseAlgo(k.Algo)
	if err != nil {
		return err.Error()
	}
	if !tuning.Supports(coll, a) {
		return fmt.Sprintf("%s has no %s implementation in the stack", coll, a)
	}
	if _, err := proto.Parse(k.Proto); err != nil {
		return err.Error()
	}
	if k.NCh < 0 || k.NCh > 64 {
		return fmt.Sprintf("%d channels is out of a rule's range 0..64", k.NCh)
	}
	if k.BuffSize < 0 || k.BuffSize > math.MaxInt32 {
		return fmt.Sprintf("buffer size %d is out of a rule's range", k.BuffSize)
	}
	return ""
}

// choiceOf is the rule choice of a key that passed ruleless.
func choiceOf(k Key) tuning.Choice {
	a, _ := tuning.ParseAlgo(k.Algo)
	p, _ := proto.Parse(k.Proto)
	return tuning.Choice{Algo: a, Proto: p, NChannels: k.NCh, BuffSize: int(k.BuffSize)}
}

// keyOfChoice is the key a forced run of choice c on shape s is recorded
// under.
func keyOfChoice(s Shape, c tuning.Choice) Key {
	return Key{Shape: s, Algo: c.Algo.String(), Proto: c.Proto.String(), NCh: c.NChannels, BuffSize: int64(c.BuffSize)}
}

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

// boundary is the first byte count of q's range, where p's range (ending at
// measured size p.bytes) gives way to q's (starting by measured size
// q.bytes): in (p.bytes, q.bytes].
func (b *shapeBuilder) boundary(p, q pick) int64 {
	lo, hi := p.bytes, q.bytes
	fp, okp := b.fits[p.key]
	fq, okq := b.fits[q.key]
	if okp && okq {
		if x, ok := crossing(fp.Predict, fq.Predict, lo, hi); ok {
			return x
		}
	}
	// The line through each pick's times at the two sizes.
	tp0, ok1 := p.times[p.key]
	tq0, ok2 := p.times[q.key]
	tp1, ok3 := q.times[p.key]
	tq1, ok4 := q.times[q.key]
	if ok1 && ok2 && ok3 && ok4 {
		if x, ok := crossing(line(lo, tp0, hi, tp1), line(lo, tq0, hi, tq1), lo, hi); ok {
			return x
		}
	}
	return geoMid(lo, hi)
}

// extrapolate picks among the candidates measured at the largest size, by
// their models at extrapolateFactor times it; ok is false when none has a
// model.
func (b *shapeBuilder) extrapolate(last pick, auto *Key) (pick, bool) {
	far := last.bytes * extrapolateFactor
	if last.bytes > math.MaxInt64/extrapolateFactor {
		far = math.MaxInt64
	}
	var cs []contender
	for _, s := range b.cands {
		f, ok := b.fits[s.Key]
		if !ok || s.Samples[len(s.Samples)-1].Bytes != last.bytes {
			continue
		}
		if us := f.Predict(far); us > 0 && !math.IsInf(us, 0) {
			cs = append(cs, contender{key: s.Key, us: us})
		}
	}
	if _, ok := b.fits[last.key]; !ok || len(cs) == 0 {
		return pick{}, false // the last pick has no model to be judged by
	}
	prev := last.key
	return b.choose(far, cs, auto, &prev), true
}

// crossing returns the least x in (lo, hi] at which tq(x) < tp(x), given
// that tp(lo) <= tq(lo) and tq(hi) < tp(hi); ok is false when the ends do
// not satisfy that. Between the ends it bisects on integers, which finds the
// exact crossing of two lines (or of any pair with one crossing).
func crossing(tp, tq func(int64) float64, lo, hi int64) (int64, bool) {
	qWins := func(x int64) bool { return tq(x) < tp(x) }
	if lo >= hi || qWins(lo) || !qWins(hi) {
		return 0, false
	}
	// Invariant: !qWins(lo) && qWins(hi).
	for hi-lo > 1 {
		mid := lo + (hi-lo)/2
		if qWins(mid) {
			hi = mid
		} else {
			lo = mid
		}
	}
	return hi, true
}

// line is the straight line through (x0, y0) and (x1, y1): the alpha-beta
// model through two measured points.
func line(x0 int64, y0 float64, x1 int64, y1 float64) func(int64) float64 {
	slope := (y1 - y0) / float64(x1-x0)
	return func(x int64) float64 { return y0 + slope*float64(x-x0) }
}

// geoMid is the geometric midpoint of lo < hi, as a byte count in (lo, hi].
func geoMid(lo, hi int64) int64 {
	x := int64(math.Round(math.Sqrt(float64(max(lo, 1)) * float64(hi))))
	return min(max(x, lo+1), hi)
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
