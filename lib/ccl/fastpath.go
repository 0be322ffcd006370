package ccl

import (
	"math"
	"runtime"

	"github.com/gccl/gccl/lib/board"
	"github.com/gccl/gccl/lib/proto"
	"github.com/gccl/gccl/lib/reduce"
	"github.com/gccl/gccl/lib/steptrace"
	"github.com/gccl/gccl/lib/tuning"
)

// The call path of a repeated small collective. Two shortcuts:
//
//   - The shape cache: a call with the same collective, count, type,
//     reduction and root as the last valid one, and buffers that hold
//     enough, skips validation but for where its buffers lie (in place or
//     not, overlapping or not) and reuses what it derived. Buffers are not
//     part of the shape: nccl-tests, as perf, moves them every iteration.
//   - The one-shot fast path: a collective outside a group, decided
//     OneShot, with nothing of the communicator in flight, is not planned
//     nor queued. The caller posts its first round at once and keeps the
//     work aside (c.fast); Synchronize runs the rest on the calling
//     goroutine. Any other call first queues the kept work on channel 0 as
//     an ordinary plan (materializeFast), so the stream order holds.

// shapeCache is the last valid collective's shape (what validation
// depends on, but for the buffers themselves) and what validation derived
// from it. Owned by the calling goroutine. gen changes whenever the cached
// shape does (or Force changes the decisions): what was derived for one
// generation (the fast path's work, but for its buffers) holds for it alone.
type shapeCache struct {
	valid              bool
	gen                uint64
	coll               Coll
	count              int
	dt                 DataType
	op                 RedOp
	root               int
	needSend, needRecv int // the bytes of the buffers the call uses
	elt                int
	kernel             *reduce.Kernel
	inPlace            bool
}

// matches reports whether t repeats the cached shape, field by field (a
// struct compare of the whole key cost ~85 instructions a call, callgrind),
// with buffers that hold the bytes it uses.
func (s *shapeCache) matches(t *task) bool {
	return s.valid && s.count == t.count && s.coll == t.coll && s.dt == t.dt && s.root == t.root &&
		s.op.Op == t.op.Op && math.Float64bits(s.op.Scalar) == math.Float64bits(t.op.Scalar) && // -0 is not +0
		len(t.send) >= s.needSend && len(t.recv) >= s.needRecv
}

// validateCached is validateColl, skipped but for the buffers' placement
// when t repeats the last valid shape in the same placement.
func (c *Comm) validateCached(t *task) error {
	if s := &c.shape; s.matches(t) {
		inPlace, overlap := c.placement(t, s.needSend, s.needRecv)
		if overlap {
			return c.overlapError(t)
		}
		if inPlace == s.inPlace {
			t.elt, t.kernel, t.inPlace = s.elt, s.kernel, inPlace
			return nil
		}
	}
	c.shape.gen++
	needSend, needRecv, err := c.validateColl(t)
	if err != nil {
		c.shape.valid = false
		return err
	}
	c.shape = shapeCache{valid: true, gen: c.shape.gen, coll: t.coll, count: t.count, dt: t.dt, op: t.op, root: t.root,
		needSend: needSend, needRecv: needRecv, elt: t.elt, kernel: t.kernel, inPlace: t.inPlace}
	return nil
}

// fastWork is the one-shot collective the fast path keeps aside: posted
// at enqueue, completed by Synchronize or queued by materializeFast.
// Owned by the calling goroutine. The work stays after it completed: a
// call of the same shape generation (gen) reuses it, changing only its
// rounds; notGen is the generation found unfit for the fast path.
type fastWork struct {
	pending     bool
	seq         uint64 // its position in the stream
	gen, notGen uint64
	work        collWork
	// trace is the timeline it records on, nil when it records on none
	// (Comm.opTrace); traceOp and traceCalled are its record on the calls
	// track.
	trace       *rankTrace
	traceOp     steptrace.OpInfo
	traceCalled int64
}

// tryFast takes the one-shot fast path for t if it can; it reports whether
// t was enqueued. t has passed validateCached: c.shape describes it.
func (c *Comm) tryFast(t *task) bool {
	var called int64 // for the timeline: when the operation was called
	tr := c.opTrace()
	if tr != nil {
		called = steptrace.Now()
	}
	f := &c.fast
	gen := c.shape.gen
	if f.pending || f.notGen == gen || c.groupDepth > 0 || c.finished.Load() != c.enqueued {
		return false
	}
	if f.gen != gen && !c.buildFast(t) {
		f.notGen = gen
		return false
	}
	w := &f.work
	w.in, w.out = t.send, t.recv // the shape's work, this call's buffers
	posts := w.posts(c.rank)
	s := c.os
	if posts && !c.slotFree(s.seq+1) {
		return false
	}
	s.seq++
	w.os.seq, w.os.prePosted = s.seq, false
	c.enqueued++
	if c.progress != nil {
		c.progress.enqueued.Store(c.enqueued)
	}
	if posts {
		c.postRound(w, w.oneShotRound(0))
		w.os.prePosted = true
	}
	f.pending, f.seq, f.trace = true, c.enqueued, tr
	if tr != nil {
		c.traceFast(f, called)
	}
	return true
}

// buildFast derives the fast path's work for t's shape, once per shape
// generation; it reports false when the shape cannot take the fast path
// (which depends on nothing else that can change within a generation).
func (c *Comm) buildFast(t *task) bool {
	if c.w.debug != nil || c.w.n == 1 {
		return false
	}
	if _, ok := tuneColl(t.coll); !ok {
		return false
	}
	nBytes := int64(t.count * t.elt)
	if t.coll == CollAllGather || t.coll == CollReduceScatter {
		nBytes *= int64(c.w.n)
	}
	d, err := c.decide(t.coll, nBytes)
	if err != nil || d.algo != tuning.OneShot {
		return false // the ordinary path decides again and reports errors
	}
	// One round only: the caller posts all of it now, so no peer ever
	// needs more of this rank's work than its Synchronize will do (a later
	// round posted there could be awaited by a peer this very goroutine
	// synchronizes first). For that reason the two-shot, whose second
	// round is posted after the first is read, is always planned.
	rounds, elems, err := c.oneShotRounds(t, d.algo) // as planOneShot: ranks on either path agree
	if err != nil || rounds != 1 {
		return false
	}
	c.oneShot()
	f := &c.fast
	f.work = collWork{coll: t.coll, algo: d.algo, proto: d.proto, kernel: t.kernel, elt: t.elt, in: t.send, out: t.recv,
		count: t.count, root: t.root, partCount: t.count, inPlace: t.inPlace, nChannels: 1,
		os: oneShotWork{rounds: 1, roundElems: elems, plain: plainPosts(t.coll, d.algo, t.count, elems, t.elt)}}
	f.gen = c.shape.gen
	c.last = Choice{Coll: t.coll, Algo: oneShotName, Proto: llName, NChannels: 1, Bytes: nBytes,
		NHosts: c.w.nHosts, BuffSize: d.buff, Source: d.source}
	c.lastDecision = d
	return true
}

// The fast path's names, looked up once.
var oneShotName, llName = tuning.OneShot.String(), proto.LL.String()

// slotFree reports whether round seq may be posted now, looking at the
// peers' acknowledgements again only when the cached ones fall short.
func (c *Comm) slotFree(seq uint64) bool {
	s := c.os
	if board.Free(seq, s.minAcked) {
		return true
	}
	s.minAcked = c.minAcked()
	return board.Free(seq, s.minAcked)
}

// runFast completes the kept one-shot work on the calling goroutine.
func (c *Comm) runFast() {
	ch := c.channels[0]
	for !ch.running.CompareAndSwap(0, 1) {
		// The channel goroutine is between looks at an empty queue.
		runtime.Gosched()
	}
	c.settleWakes(false) // the CAS was the barrier
	w := &c.fast.work
	if s := c.w.boardSpin(); ch.waiter.Spinning() != s {
		ch.waiter.SetSpin(s)
	}
	ch.waiter.Trace = c.fast.trace.channel(0)
	err := c.w.abort.Err()
	if err == nil {
		if tr := ch.waiter.Trace; tr != nil {
			err = ch.tracedColl(tr, w, c.fast.seq)
		} else {
			err = ch.runOneShot(w)
		}
	}
	ch.running.Store(0)
	if err != nil {
		c.fail(0, err)
	}
	c.fast.pending = false
	if tr := c.fast.trace; tr != nil { // it ended with its channel's
		tr.opDoneAt(&c.fast.traceOp, c.fast.traceCalled, ch.waiter.Trace.Mark())
	}
	c.finishedOp(c.fast.seq)
	done := c.finished.Add(1)
	if c.progress != nil {
		c.progress.finished.Store(done)
	}
}

// materializeFast queues the kept work on channel 0 as the plan it would
// have been, before anything else is enqueued behind it.
func (c *Comm) materializeFast() {
	if !c.fast.pending {
		return
	}
	c.settleWakes(true)
	pl := c.newPlan()
	pl.seq = c.fast.seq
	pl.spin = c.w.boardSpin()
	pl.trace, pl.traceOp, pl.traceCalled = c.fast.trace, c.fast.traceOp, c.fast.traceCalled
	cw := pl.channel(0)
	cw.colls = append(cw.colls, c.fast.work)
	c.fast.pending = false
	pl.pending.Store(1)
	c.channels[0].post(cw)
}
