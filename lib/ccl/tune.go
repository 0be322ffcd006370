package ccl

import (
	"fmt"
	"io"
	"math"

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
	s := &c.w.set
	if s.algo == tuning.Tree && !tuning.Supports(tc, tuning.Tree) {
		return decision{}, fmt.Errorf("ccl: %s has no Tree algorithm (forced by GCCL_ALGO or Config.Algo): valid for it is Ring", coll)
	}
	maxCh := len(c.channels)
	lim := tuning.Limits{MaxChannels: maxCh, Channels: s.nChannels}
	if s.algo >= 0 {
		lim.Algos = []tuning.Algo{s.algo}
	}
	if s.proto >= 0 {
		lim.Protos = []proto.Protocol{s.proto}
	}
	forced := s.proto >= 0 && s.nChannels > 0 && (s.algo >= 0 || !tuning.Supports(tc, tuning.Tree))

	var d decision
	if rule, hit := c.w.table.Lookup(tc, nBytes); hit && !forced {
		d = decision{algo: rule.Algo, proto: rule.Proto, nChannels: rule.NChannels, buff: rule.BuffSize, source: "table"}
		if s.algo >= 0 || s.proto >= 0 || s.nChannels > 0 {
			d.source = "forced+table"
		}
		if s.algo >= 0 {
			d.algo = s.algo
		}
		if s.proto >= 0 {
			d.proto = s.proto
			d.buff = 0 // the rule's buffer size was for its own protocol
		}
		if s.nChannels > 0 {
			d.nChannels = s.nChannels
		}
		if d.nChannels == 0 { // the rule leaves the channel count to the model
			lim.Algos, lim.Protos = []tuning.Algo{d.algo}, []proto.Protocol{d.proto}
			ch, _ := c.w.model.Choose(tc, c.w.n, c.w.nHosts, nBytes, lim)
			d.nChannels = ch.NChannels
		}
	} else {
		ch, _ := c.w.model.Choose(tc, c.w.n, c.w.nHosts, nBytes, lim)
		d = decision{algo: ch.Algo, proto: ch.Proto, nChannels: ch.NChannels, source: "model"}
		switch {
		case forced:
			d.source = "forced"
		case s.algo >= 0 || s.proto >= 0 || s.nChannels > 0:
			d.source = "forced+model"
		}
	}
	d.nChannels = min(max(d.nChannels, 1), maxCh)
	if d.buff == 0 {
		d.buff = s.buff[d.proto]
	}
	c.decided[tc] = decidedEntry{valid: true, bytes: nBytes, d: d}
	return d, nil
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
