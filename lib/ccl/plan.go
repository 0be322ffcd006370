// plan.go: a plan, one enqueued operation's work on every channel: its
// channels' completion, the kicks, and the reuse of finished plans.

package ccl

import (
	"sync/atomic"

	"github.com/gccl/gccl/lib/proto"
	"github.com/gccl/gccl/lib/steptrace"
)

// plan is one "kernel launch": the per-channel work of one group.
type plan struct {
	comm *Comm
	seq  uint64 // 1-based position in the communicator's stream
	// spin is how the plan's waits spin and yield: long while every
	// runner the plan keeps busy (ranks x channels with work) has a
	// processor of its own, not at all when they outnumber the processors
	// (planSpin). Set at launch, read by the runners.
	spin proto.SpinPlan
	// drivers > 0 folds the plan: the channels' parts run on that many
	// goroutines a rank, each part a coroutine (fold.go), because the
	// runners would outnumber the processors: channel d's runner drives
	// channels d, d+drivers, ... Set at launch.
	drivers int
	work    []chanWork // per channel; those with a nil plan have no work
	// finalCopies run after every channel finished, by the last one
	// (in-place alltoall's staging buffer into the output).
	finalCopies []selfCopy
	// pending counts the channels still running the plan. Written (Add) by
	// each channel goroutine when it finishes its part.
	pending atomic.Int32

	// trace is the issuing rank's timeline while it records (nil when
	// not); traceOp and traceCalled are the plan's record on its calls
	// track and when it was called. Set at launch, read by the runners.
	trace       *rankTrace
	traceOp     steptrace.OpInfo
	traceCalled int64
}

// channel returns channel ch's work in this plan, marking it as used.
func (p *plan) channel(ch int) *chanWork {
	w := &p.work[ch]
	w.plan = p
	return w
}

// channelDone is called by each channel goroutine when it finished its
// part. The last one publishes the plan as finished; from then on the plan
// belongs to the issuing goroutine again (which recycles it), so nothing
// here touches it after the Add.
func (p *plan) channelDone() {
	c := p.comm
	if p.pending.Add(-1) == 0 {
		p.finish()
		if p.trace != nil {
			p.trace.opDone(&p.traceOp, p.traceCalled)
		}
		c.finishedOp(p.seq)
		done := c.finished.Add(1)
		if c.progress != nil {
			c.progress.finished.Store(done)
		}
		c.syncWaiter.Wake()
		for _, ch := range c.channels { // channels holding the next plan back
			ch.prevWaiter.Wake()
		}
	}
}

// finish runs the plan's final copies, unless the communicators aborted.
func (p *plan) finish() {
	if p.comm.w.abort.Aborted() {
		return
	}
	for _, c := range p.finalCopies {
		copy(c.dst, c.src)
	}
}

// kickAll wakes every channel goroutine of c that has queued work nobody
// runs: a channel waiting for the previous plan needs those to finish.
func (c *Comm) kickAll() {
	for _, ch := range c.channels {
		ch.kick()
	}
}

// newPlan returns an empty plan, reusing one that has finished: steady
// operation allocates nothing per call.
func (c *Comm) newPlan() *plan {
	if len(c.inflight) > 0 {
		// Plans finish in stream order: recycle those that have, so that a
		// caller that enqueues without synchronizing (nccl-tests' timing
		// loop: every iteration, then one wait) does not pile up plans.
		done, k := c.finished.Load(), 0
		for k < len(c.inflight) && c.inflight[k].seq != 0 && c.inflight[k].seq <= done {
			k++
		}
		c.recycleFirst(k)
	}
	var pl *plan
	if n := len(c.freePlans); n > 0 {
		pl = c.freePlans[n-1]
		c.freePlans = c.freePlans[:n-1]
	} else {
		pl = &plan{comm: c, work: make([]chanWork, len(c.channels))}
	}
	pl.seq = 0 // not in the stream yet: never recycled before its launch
	pl.drivers = 0
	c.inflight = append(c.inflight, pl)
	return pl
}

// recyclePlans returns every in-flight plan to the free list; called only
// when all of them have finished.
func (c *Comm) recyclePlans() { c.recycleFirst(len(c.inflight)) }

// recycleFirst returns the first k in-flight plans, all finished, to the
// free list. It drops the user buffers they reference.
func (c *Comm) recycleFirst(k int) {
	if k == 0 {
		return
	}
	for _, pl := range c.inflight[:k] {
		for i := range pl.work {
			w := &pl.work[i]
			clear(w.colls)
			clear(w.rounds)
			w.plan, w.colls, w.rounds = nil, w.colls[:0], w.rounds[:0]
		}
		clear(pl.finalCopies)
		pl.finalCopies = pl.finalCopies[:0]
		c.freePlans = append(c.freePlans, pl)
	}
	rest := copy(c.inflight, c.inflight[k:])
	clear(c.inflight[rest:])
	c.inflight = c.inflight[:rest]
}
