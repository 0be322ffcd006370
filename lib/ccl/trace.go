// trace.go: the step timeline (lib/steptrace): turning it on and off,
// taking what it recorded, and the records of operations. The steps are
// recorded by lib/prims, the waits by lib/proto's waiters.

package ccl

import (
	"fmt"

	"github.com/gccl/gccl/lib/steptrace"
)

// rankTrace is a rank's tracks while its timeline is recorded. Each
// channel's track is written by whoever runs that channel's work, through
// the channel's waiter (Waiter.Trace, set for each run); the calls track
// by the goroutine that finishes an operation (channelDone, runFast), one
// at a time in stream order: an operation starts on a channel only after
// the one before it finished (waitPrevious).
type rankTrace struct {
	*steptrace.Rank
	// lastEnd is when the last operation on the calls track ended: the
	// next starts no earlier, as operations of a stream run one after
	// another. Owned like the calls track.
	lastEnd int64
}

// channel is channel id's track, or nil when t is (not recording).
func (t *rankTrace) channel(id int) *steptrace.Buf {
	if t == nil {
		return nil
	}
	return t.Channels[id]
}

// opDone records an operation called at called that has just finished,
// on the calls track: from when the stream reached it (its call, or the
// end of the operation before it) to now.
func (t *rankTrace) opDone(o *steptrace.OpInfo, called int64) {
	t.opDoneAt(o, called, steptrace.Now())
}

// opDoneAt is opDone for an operation that finished at end.
func (t *rankTrace) opDoneAt(o *steptrace.OpInfo, called, end int64) {
	start := max(called, t.lastEnd)
	t.Calls.OpAt(o, start, end, start-called)
	t.lastEnd = end
}

// opTrace is the timeline the next operation records on: the rank's
// while it records and the operation's stream position is sampled
// (SampleTrace), else nil. Every rank enqueues the same operations in the
// same order, so every rank records the same ones.
func (c *Comm) opTrace() *rankTrace {
	if c.trace == nil {
		return nil
	}
	pos := c.enqueued + 1
	if pos > c.traceNext { // past the last sampled position: the next one
		c.traceNext = (pos + c.traceEvery - 1) / c.traceEvery * c.traceEvery
	}
	if pos != c.traceNext { // a comparison, not a division, on most calls
		return nil
	}
	return c.trace
}

// SampleTrace makes the step timeline record one operation in every:
// those whose position in the stream (counted from the communicator's
// first operation, the same on every rank) is a multiple of every. The
// recorder costs about 0.2-0.8 us an operation (docs/PERFORMANCE.md, step
// timelines): a run of operations of a few microseconds costs under 5%
// when recording one in 16 to 64 of them. 1, the default, records all.
func (c *Comm) SampleTrace(every int) error {
	if every < 1 {
		return fmt.Errorf("ccl: SampleTrace: every %d: want 1 to record every operation, or N to record one in N", every)
	}
	c.traceEvery, c.traceNext = uint64(every), 0
	return nil
}

// StartTrace starts recording this rank's step timeline: on each channel
// its operations, their steps (the primitive, its peers, bytes and
// protocol) and the waits that outlast their first spin (on what, on
// whom), and on the rank's calls track each operation from its call to
// its completion. Each track keeps capacity records
// (steptrace.DefaultCapacity when 0) and counts those it drops when full.
// Records not taken (TakeTrace) are dropped. It waits for the operations
// in flight first (Synchronize).
func (c *Comm) StartTrace(capacity int) error {
	if capacity < 0 {
		return fmt.Errorf("ccl: StartTrace: capacity %d: want records per track, or 0 for %d", capacity, steptrace.DefaultCapacity)
	}
	if err := c.Synchronize(); err != nil {
		return err
	}
	c.startTrace(capacity)
	return nil
}

// startTrace turns the recording on, every channel idle.
func (c *Comm) startTrace(capacity int) {
	if capacity <= 0 {
		capacity = steptrace.DefaultCapacity
	}
	if k := c.traceKept; k != nil && k.Calls.Capacity() == capacity {
		k.Reset()
		k.lastEnd = 0
	} else {
		c.traceKept = &rankTrace{Rank: steptrace.NewRank(c.rank, len(c.channels), capacity)}
	}
	c.trace, c.groupLabel = c.traceKept, ""
}

// StopTrace stops recording, keeping the records for TakeTrace. It waits
// for the operations in flight first (Synchronize).
func (c *Comm) StopTrace() error {
	if err := c.Synchronize(); err != nil {
		return err
	}
	c.trace = nil
	return nil
}

// TakeTrace returns the records of this rank's timeline so far and
// empties its tracks (a recording goes on). It waits for the operations
// in flight first (Synchronize); after Destroy it takes them as they are.
// steptrace.File makes a trace of them.
func (c *Comm) TakeTrace() (steptrace.Snapshot, error) {
	if !c.destroyed {
		if err := c.Synchronize(); err != nil {
			return steptrace.Snapshot{}, err
		}
	}
	k := c.traceKept
	if k == nil {
		return steptrace.Snapshot{}, fmt.Errorf("ccl: rank %d: TakeTrace: the step timeline was never recorded (StartTrace, or Config.TraceSteps)", c.rank)
	}
	s := k.Snapshot()
	k.Reset()
	return s, nil
}

// traceLaunch fills in a plan's record for the calls track: what the
// group of tasks is and when it was called.
func (c *Comm) traceLaunch(pl *plan, tasks []task, called int64) {
	o := steptrace.OpInfo{Seq: pl.seq, Name: c.groupName(tasks)}
	if len(tasks) == 1 && c.last.Coll == tasks[0].coll {
		o.Algo, o.Proto, o.Channels, o.Bytes = c.last.Algo, c.last.Proto, c.last.NChannels, c.last.Bytes
	} else {
		for _, t := range tasks {
			if t.coll != CollRecv { // a receive's bytes are a peer's send's
				o.Bytes += int64(t.count * t.elt)
			}
		}
		for i := range pl.work {
			if pl.work[i].plan != nil {
				o.Channels++
			}
		}
	}
	pl.traceOp, pl.traceCalled = o, called
	c.groupLabel = ""
}

// groupName names the operation a group of tasks makes: the collective
// that made it (an alltoall, gather or scatter is a group of sends and
// receives), the only task's, "sendrecv" for sends and receives, else
// "group".
func (c *Comm) groupName(tasks []task) string {
	if c.groupLabel != "" {
		return c.groupLabel
	}
	same, p2p := true, true
	for _, t := range tasks {
		same = same && t.coll == tasks[0].coll
		p2p = p2p && (t.coll == CollSend || t.coll == CollRecv)
	}
	switch {
	case same:
		return tasks[0].coll.String()
	case p2p:
		return "sendrecv"
	}
	return "group"
}

// labelGroup names the group a collective made of sends and receives
// makes, when it is a group of its own; cleared at launch.
func (c *Comm) labelGroup(coll Coll) {
	if c.groupDepth == 0 && c.opTrace() != nil {
		c.groupLabel = coll.String()
	}
}

// tracedColl runs one collective's part on this channel, recorded as an
// operation on tr.
func (ch *channel) tracedColl(tr *steptrace.Buf, w *collWork, seq uint64) error {
	t0 := tr.BeginOp(seq)
	err := ch.runColl(w)
	a, p := w.algo.String(), w.proto.String()
	if ch.nRanks == 1 {
		a = "Local"
	}
	if w.algo.OnBoard() {
		p = llName
	}
	nch := w.nChannels
	tr.Op(&steptrace.OpInfo{Name: w.coll.String(), Algo: a, Proto: p, Seq: seq, Bytes: int64(w.partCount * w.elt), Channels: nch}, t0)
	return err
}

// tracedRounds runs a channel's point-to-point rounds, recorded as one
// operation named by the plan (sendrecv, alltoall, ...).
func (ch *channel) tracedRounds(tr *steptrace.Buf, w *chanWork) error {
	seq := w.plan.seq
	t0 := tr.BeginOp(seq)
	var bytes int64
	var err error
	for _, r := range w.rounds {
		for _, x := range r.sends {
			bytes += int64(len(x.Buf))
		}
		if err = ch.runRound(r); err != nil {
			break
		}
	}
	tr.Op(&steptrace.OpInfo{Name: w.plan.traceOp.Name, Algo: "P2P", Seq: seq, Bytes: bytes, Channels: w.plan.traceOp.Channels}, t0)
	return err
}

// traceCopy records a copy a rank makes alone (one rank's collective,
// a send to itself) as a step.
func traceCopy(tr *steptrace.Buf, name string, me, bytes int) {
	if tr != nil {
		tr.Step(name, "", -1, me, int64(bytes))
	}
}

// oneShotReadName is the step in which a rank of the board reads a
// round: it reduces the posts, or copies them.
func oneShotReadName(w *collWork, rd oneShotRound) string {
	if rd.gather || w.coll == CollAllGather || w.coll == CollBroadcast {
		return "copy"
	}
	return "reduce"
}

// tracedParts is runParts recording on tr: each collective's part an
// operation, and the point-to-point rounds one.
func (ch *channel) tracedParts(tr *steptrace.Buf, w *chanWork) error {
	for i := range w.colls {
		if err := ch.tracedColl(tr, &w.colls[i], w.plan.seq); err != nil {
			return err
		}
	}
	if len(w.rounds) > 0 {
		return ch.tracedRounds(tr, w)
	}
	return nil
}

// traceFast fills in the fast path's record for the calls track.
func (c *Comm) traceFast(f *fastWork, called int64) {
	w := &f.work
	f.traceCalled = called
	f.traceOp = steptrace.OpInfo{Name: w.coll.String(), Algo: oneShotName, Proto: llName, Seq: f.seq,
		Bytes: opBytes(w.coll, w.count, w.elt, c.w.n), Channels: 1}
}

// opBytes is a collective's bytes as NCCL counts them: the whole result
// of an allgather or reducescatter, the buffer of the others.
func opBytes(coll Coll, count, elt, n int) int64 {
	b := int64(count * elt)
	if coll == CollAllGather || coll == CollReduceScatter {
		b *= int64(n)
	}
	return b
}

// readsFrom is the rank whose posts on the board rank me of n reads in
// w, or -1 for several.
func (w *collWork) readsFrom(me, n int) int {
	switch {
	case w.coll == CollBroadcast:
		return w.root
	case n == 2:
		return 1 - me
	}
	return -1
}
