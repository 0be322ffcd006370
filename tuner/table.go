// table.go: building a tuning table from sweeps (BuildTable): its options,
// its decisions, and what a configuration's rule is. Deciding a shape is in
// table_decide.go, the boundaries between picks in table_boundary.go.

package tuner

import (
	"fmt"
	"math"
	"sort"

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
