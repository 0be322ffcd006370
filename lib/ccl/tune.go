package ccl

import (
	"fmt"
	"io"
	"math"
	"strings"

	"github.com/gccl/gccl/lib/proto"
	"github.com/gccl/gccl/lib/tuning"
)

// decision is how one collective runs: what planColl obeys.
type decision struct {
	algo      tuning.Algo
	proto     proto.Protocol
	nChannels int    // channels to split the data over (<= the communicator's)
	buff      int    // the protocol's FIFO size in bytes
	source    string // who decided: forced, table, model, or a mix
}

// predict is the model's time for a collective of nBytes on the nCh
// channels that carry data (a message of a grain or two leaves the others
// idle, whatever was decided); 0 when the model has no figure.
func (c *Comm) predict(coll Coll, d decision, nCh int, nBytes int64) float64 {
	tc, _ := tuneColl(coll)
	us, ok := c.w.model.Time(tc, d.algo, d.proto, max(nCh, 1), c.w.n, c.w.nHosts, nBytes)
	if !ok || math.IsInf(us, 0) {
		return 0
	}
	return us
}

// tuneColl maps the collectives the tuner knows; ok is false for the
// grouped point-to-point ones.
func tuneColl(c Coll) (tuning.Coll, bool) {
	if c < 0 || c > CollReduce {
		return 0, false
	}
	return tuning.Coll(c), true // the first five share their order
}

// decide picks the algorithm, protocol and channel count of a collective
// of nBytes (NCCL's nBytes: the total for allgather and reducescatter).
// Precedence: explicit overrides (Config or GCCL_* variables) win field by
// field, then a tuning-table rule, then the cost model; a size no rule
// covers goes to the model. The last decision per collective is cached:
// benchmarks and training loops repeat the same size.
func (c *Comm) decide(coll Coll, nBytes int64) (decision, error) {
	tc, ok := tuneColl(coll)
	if !ok {
		return decision{}, fmt.Errorf("ccl: %s is not a tuned collective", coll)
	}
	if k := &c.decided[tc]; k.valid && k.bytes == nBytes {
		return k.d, nil
	}
	s := &c.force
	fa, algoForced := s.algo.Get()
	fp, protoForced := s.proto.Get()
	if algoForced && !tuning.Supports(tc, fa) {
		return decision{}, fmt.Errorf("ccl: %s has no %s algorithm (forced by GCCL_ALGO, Config.Algo or Comm.Force): valid for it are %s", coll, fa, strings.Join(tuning.AlgoNamesFor(tc), ", "))
	}
	if algoForced && fa.OnBoard() && c.w.realHosts {
		return decision{}, fmt.Errorf("ccl: the %s algorithm needs every rank on one host (its board is memory they share); these ranks run on %d hosts: valid are Ring and Tree", fa, c.w.nHosts)
	}
	maxCh := min(len(c.channels), s.maxCh)
	lim := tuning.Limits{MaxChannels: maxCh, Channels: s.nChannels}
	if algoForced {
		lim.Algos = []tuning.Algo{fa}
	}
	if protoForced {
		lim.Protos = []proto.Protocol{fp}
	}
	forced := protoForced && s.nChannels > 0 && (algoForced || !tuning.Supports(tc, tuning.Tree))

	var d decision
	if rule, hit := c.w.table.Lookup(tc, nBytes); hit && !forced {
		d = c.fromRule(tc, nBytes, rule, lim)
	} else {
		if c.w.realHosts && !algoForced {
			// The one-shot's board is memory every rank reads: not
			// across machines. Left out of the one ask, it gives what
			// asking with it and again without it when it won gave.
			lim.Algos = []tuning.Algo{tuning.Ring, tuning.Tree}
		}
		ch, _ := c.w.model.Choose(tc, c.w.n, c.w.nHosts, nBytes, lim)
		d = decision{algo: ch.Algo, proto: ch.Proto, nChannels: ch.NChannels, source: "model"}
		switch {
		case forced:
			d.source = "forced"
		case algoForced || protoForced || s.nChannels > 0:
			d.source = "forced+model"
		}
	}
	d.nChannels = min(max(d.nChannels, 1), maxCh)
	if d.buff == 0 {
		d.buff = c.w.set.buff[d.proto]
	}
	c.decided[tc] = decidedEntry{valid: true, bytes: nBytes, d: d}
	return d, nil
}

// fromRule is the decision of a tuning-table rule under what the rank
// forces (field by field, the forced wins), lim being the model's limits
// for what is forced. It asks the model at most once: for the channel
// count when the rule leaves it auto, or for a ring or a tree when the
// rule's algorithm cannot run here.
func (c *Comm) fromRule(tc tuning.Coll, nBytes int64, rule tuning.Choice, lim tuning.Limits) decision {
	s := &c.force
	d := decision{algo: rule.Algo, proto: rule.Proto, nChannels: rule.NChannels, buff: rule.BuffSize, source: "table"}
	if !s.algo.IsAuto() || !s.proto.IsAuto() || s.nChannels > 0 {
		d.source = "forced+table"
	}
	if a, ok := s.algo.Get(); ok {
		d.algo = a
	}
	if p, ok := s.proto.Get(); ok {
		d.proto = p
		d.buff = 0 // the rule's buffer size was for its own protocol
	}
	if s.nChannels > 0 {
		d.nChannels = s.nChannels
	}
	switch {
	case d.algo.OnBoard() && c.w.realHosts:
		// The one-shot's board is memory every rank reads: not across
		// machines. The rule asked for it; the model picks a ring or a
		// tree, under the forced protocol, or the rule's when the rule
		// leaves the channels to the model (the limits the ask for its
		// channels had, which this ask replaces).
		lim.Algos, lim.Protos = []tuning.Algo{tuning.Ring, tuning.Tree}, nil
		if !s.proto.IsAuto() || d.nChannels == 0 {
			lim.Protos = []proto.Protocol{d.proto}
		}
		ch, _ := c.w.model.Choose(tc, c.w.n, c.w.nHosts, nBytes, lim)
		d.algo, d.proto, d.nChannels, d.buff = ch.Algo, ch.Proto, ch.NChannels, 0
	case !tuning.SupportsProto(d.algo, d.proto):
		// A board algorithm (the board's are LL only) under another
		// protocol, one forced or the rule's: the protocol wins, the
		// model picks a ring or a tree for it.
		lim.Algos, lim.Protos = []tuning.Algo{tuning.Ring, tuning.Tree}, []proto.Protocol{d.proto}
		ch, _ := c.w.model.Choose(tc, c.w.n, c.w.nHosts, nBytes, lim)
		d.algo, d.nChannels, d.buff = ch.Algo, ch.NChannels, 0
	case d.nChannels == 0: // the rule leaves the channel count to the model
		lim.Algos, lim.Protos = []tuning.Algo{d.algo}, []proto.Protocol{d.proto}
		ch, _ := c.w.model.Choose(tc, c.w.n, c.w.nHosts, nBytes, lim)
		d.nChannels = ch.NChannels
	}
	return d
}

// forced is what a rank's collectives obey: the communicator's Config, or
// what Force set since. Owned by the calling goroutine.
type forced struct {
	algo      tuning.AlgoReq
	proto     tuning.ProtoReq
	nChannels int // 0: auto
	maxCh     int // the most channels an operation may use
}

// Forced is what Comm.Force sets: Config's Algo, Proto and NChannels (the
// zero values, auto and 0, leave the choice to the stack) and
// MaxNChannels, a cap on the channels an operation may use (0: every
// channel the communicator started).
type Forced struct {
	Algo         tuning.AlgoReq
	Proto        tuning.ProtoReq
	NChannels    int
	MaxNChannels int
}

// Force replaces, for this rank's collectives from now on, what the
// communicator's Config (and GCCL_* variables) forced: the algorithm, the
// protocol and the channel count, and caps the channels the stack may
// choose. A tuning table and the cost model decide what is left auto, as
// at InitAll. Point-to-point operations (Send/Recv, AlltoAll, Gather,
// Scatter) obey the forced protocol and channel count too.
//
// Every rank must force the same before its next collective, as every rank
// passes the same arguments to a collective: ranks that disagree run
// different schedules, and time out. It is called between operations,
// outside a group.
//
// It exists so that benchmarks compare configurations side by side on one
// communicator (perf --interleave): on separate communicators the
// configurations also differ by the state each communicator happens to
// start in (where its buffers and goroutines land): a 2-rank 64 B
// allreduce took 1.4-1.9 us from one set to the next on the project's VM.
func (c *Comm) Force(f Forced) error {
	if err := c.usable(); err != nil {
		return err
	}
	if c.groupDepth > 0 {
		return fmt.Errorf("ccl: Force inside a group: call it between operations, outside GroupStart/GroupEnd")
	}
	for _, err := range []error{validProto(f.Proto), validAlgo(f.Algo), tuning.Request{Algo: f.Algo, Proto: f.Proto}.CheckAlgoProto()} {
		if err != nil {
			return fmt.Errorf("ccl: Force: %w", err)
		}
	}
	started := len(c.channels)
	if f.NChannels < 0 || f.NChannels > started {
		return fmt.Errorf("ccl: Force: NChannels %d is out of range: want 1..%d (the channels this communicator started; raise Config.MaxNChannels), or 0 for auto", f.NChannels, started)
	}
	if f.MaxNChannels < 0 || f.MaxNChannels > started {
		return fmt.Errorf("ccl: Force: MaxNChannels %d is out of range: want 1..%d (the channels this communicator started), or 0 for all of them", f.MaxNChannels, started)
	}
	if f.MaxNChannels > 0 && f.MaxNChannels < f.NChannels {
		return fmt.Errorf("ccl: Force: MaxNChannels %d is below NChannels %d", f.MaxNChannels, f.NChannels)
	}
	maxCh := f.MaxNChannels
	if maxCh == 0 {
		maxCh = started
	}
	c.force = forced{algo: f.Algo, proto: f.Proto, nChannels: f.NChannels, maxCh: maxCh}
	c.decided = [tuning.NumColls]decidedEntry{}
	c.shape.valid = false // and with it what the fast path derived from the decisions
	c.shape.gen++
	return nil
}

// decidedEntry caches a collective's last decision.
type decidedEntry struct {
	valid bool
	bytes int64
	d     decision
}

// logChoice writes the GCCL_DEBUG=INFO line of one operation.
func (c *Comm) logChoice(w io.Writer, ch Choice) {
	fmt.Fprintf(w, "gccl INFO rank %d/%d hosts %d: %s %d B -> %s/%s/%dch by %s, predicted %.2f us\n",
		c.rank, c.w.n, c.w.nHosts, ch.Coll, ch.Bytes, ch.Algo, ch.Proto, ch.NChannels, ch.Source, ch.PredictedUs)
}
