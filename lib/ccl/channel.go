package ccl

import (
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"

	"github.com/gccl/gccl/lib/algo"
	"github.com/gccl/gccl/lib/prims"
	"github.com/gccl/gccl/lib/proto"
	"github.com/gccl/gccl/lib/reduce"
	"github.com/gccl/gccl/lib/topo"
	"github.com/gccl/gccl/lib/tuning"
)

// channel is one (rank, channel) goroutine and its read-mostly state (the
// ncclShmem analogue): its ring position, its waiter and its scratch.
type channel struct {
	comm   *Comm
	id     int
	nRanks int
	rank   int
	ring   topo.Ring
	ix     int // this rank's position in the ring
	// chainIx is this rank's position in the chain broadcast and reduce
	// follow on every channel (world.chain; see Comm.ringConn).
	chainIx int

	waiter *proto.Waiter // waits of running work: abort + timeout
	// prevWaiter waits for the plan before the one this channel's runner
	// took (waitPrevious): apart from waiter, which a folded plan's driver
	// may still be using for this channel's part of that plan.
	prevWaiter *proto.Waiter
	// fold is this channel's coroutine for folded plans (fold.go).
	fold foldPart
	// The driver of folded plans' parts, when this channel's runner is
	// one (fold.go): its waiter, and scratch lists. Owned by the runner.
	foldWaiter  *proto.Waiter
	foldLive    []*foldPart
	foldWaiters []*proto.Waiter
	idle        *proto.Waiter // waits for work: stop signal, no timeout
	// idleSpin is how the idle goroutine spins for new work before it
	// yields: as the last plan it ran itself when that plan never backs
	// off (its runners fit the processors with room: see planSpin), else
	// not at all; never on channel 0, whose work the caller's Synchronize
	// runs (spinning beside it would make one runner two). Owned by the
	// channel's goroutine (set in tryDrain(true), read in loop).
	idleSpin proto.SpinPlan

	mu    sync.Mutex
	queue []*chanWork // guarded by mu; queue[head:] is still to run
	head  int         // guarded by mu
	// posted counts work items ever queued. Written (Add) by the enqueuing
	// goroutine after appending under mu; read by runners and waiters.
	posted atomic.Uint64
	// taken counts work items popped. Written by the runner (the holder of
	// running); read by waiters. Invariant: taken <= posted.
	taken atomic.Uint64
	// running is 1 while a goroutine runs this channel's work: the channel's
	// own goroutine, or a Synchronize caller helping out (which saves two
	// goroutine hand-offs per operation). CAS 0 -> 1 to become the runner;
	// the runner owns scratch and the channel's FIFO ends until it stores 0.
	running atomic.Int32
	// selfRun is true when the channel's own goroutine ran the last work
	// (nobody synchronized it in time: one goroutine drives several ranks,
	// or the caller went elsewhere). Written by the runner; read by post,
	// which then wakes the goroutine at once instead of waiting for a kick.
	selfRun atomic.Bool
	// wanted is set by a peer's kick: someone waits for this channel's
	// work. Written by kick (any goroutine) before it looks for queued work,
	// consumed by post after it queued work (the Dekker pair that keeps a
	// kick arriving just before the work from being lost), cleared by a
	// runner that starts.
	wanted atomic.Bool
	// remoteKick is wanted's word for peers in other processes, in shared
	// memory (nil in a world of one process): set by their kick, consumed
	// by post.
	remoteKick *atomic.Uint32
	// remoteUnrun mirrors posted - taken in shared memory for kickers in
	// other processes (nil in a world of one process): added to by post
	// before it takes the kick, taken from by the runner.
	remoteUnrun *atomic.Int64

	scratch        []byte      // LL/LL128 staging; owned by the runner
	scratch2       []byte      // the tree's second staging buffer; owned by the runner
	allReduceSteps []algo.Step // RingAllReduce(n, ix), computed once
	exited         chan struct{}
}

func newChannel(c *Comm, id int) *channel {
	ring := c.w.rings[id]
	ch := &channel{
		comm: c, id: id, nRanks: c.w.n, rank: c.rank, ring: ring, ix: ring.Index(c.rank),
		chainIx: c.w.chain.Index(c.rank), exited: make(chan struct{}),
	}
	if j := c.w.job; j != nil {
		// Posters in other processes wake these goroutines through bells,
		// and read what they wait for when the job hangs.
		ch.waiter = proto.NewBellWaiter(c.w.abort, c.w.set.timeout, j.bell(c.rank, id, runBellOff))
		ch.idle = proto.NewBellWaiter(c.stop, 0, j.bell(c.rank, id, idleBellOff))
		rec := j.progressOf(c.rank, id)
		ch.waiter.OnPark, ch.waiter.OnResume = rec.set, rec.clear
		ch.remoteKick = j.kickWord(c.rank, id)
		ch.remoteUnrun = j.unrunWord(c.rank, id)
		// The wait for the previous plan and the driver of folded
		// channels have waiters of their own (see prevWaiter). They sleep
		// on bells: the driver's for its parts' bells to relay to, and
		// both so that the hang dump reads what they wait for. The
		// channel's goroutine and a driver running its part never park at
		// once on this channel's record: a part parks through its driver.
		ch.prevWaiter = proto.NewBellWaiter(c.w.abort, c.w.set.timeout, j.bell(c.rank, id, prevBellOff))
		ch.foldWaiter = proto.NewBellWaiter(c.w.abort, c.w.set.timeout, j.bell(c.rank, id, foldBellOff))
		ch.prevWaiter.OnPark, ch.prevWaiter.OnResume = rec.set, rec.clear
		ch.foldWaiter.OnPark, ch.foldWaiter.OnResume = rec.set, rec.clear
	} else {
		ch.waiter = proto.NewWaiter(c.w.abort, c.w.set.timeout)
		ch.idle = proto.NewWaiter(c.stop, 0)
		ch.prevWaiter = proto.NewWaiter(c.w.abort, c.w.set.timeout)
		ch.foldWaiter = proto.NewWaiter(c.w.abort, c.w.set.timeout)
	}

	if ch.nRanks > 1 {
		ch.allReduceSteps = algo.RingAllReduce(ch.nRanks, ch.ix)
	}
	return ch
}

// chanWork is one plan's work for one channel.
type chanWork struct {
	plan   *plan
	colls  []collWork
	rounds []*p2pRound
}

func (ch *channel) post(w *chanWork) {
	ch.mu.Lock()
	ch.queue = append(ch.queue, w)
	ch.mu.Unlock()
	ch.posted.Add(1)
	if ch.remoteUnrun != nil {
		ch.remoteUnrun.Add(1)
	}
	// Channel 0's work is run by the caller's Synchronize, or by the
	// channel goroutine once a peer waiting for it kicks it; waking that
	// goroutine now would only make it lose the race to Synchronize. The
	// other channels start now, in parallel, and so does channel 0 when its
	// last work was not run by Synchronize.
	if ch.id != 0 || ch.selfRun.Load() || ch.wanted.Swap(false) || (ch.remoteKick != nil && ch.remoteKick.Swap(0) != 0) {
		ch.idle.Wake()
	}
}

// kick wakes the channel goroutine if work is queued and nobody runs it:
// called by a peer about to wait for this channel.
func (ch *channel) kick() {
	ch.wanted.Store(true)
	if ch.pending() && ch.running.Load() == 0 {
		ch.idle.Wake()
	}
	// A folded plan runs this channel's part on its driver's channel.
	if c := ch.comm; c.fold != nil { // set before any kick; nil only mid-construction
		if d, ok := c.fold.driverOf(ch.id, c.finished.Load()); ok {
			c.channels[d].kick()
		}
	}
}

func (ch *channel) pending() bool { return ch.posted.Load() > ch.taken.Load() }

// tryDrain runs every queued work item if no other goroutine is running
// this channel, and reports whether it ran any.
func (ch *channel) tryDrain(byOwner bool) bool {
	if !ch.pending() || !ch.running.CompareAndSwap(0, 1) {
		return false
	}
	ch.selfRun.Store(byOwner)
	ch.wanted.Store(false)
	if ch.remoteKick != nil {
		ch.remoteKick.Store(0)
	}
	for ch.pending() {
		ch.mu.Lock()
		w := ch.queue[ch.head]
		ch.queue[ch.head] = nil
		if ch.head++; ch.head == len(ch.queue) {
			ch.queue, ch.head = ch.queue[:0], 0 // reuse the array
		}
		ch.mu.Unlock()
		ch.taken.Add(1)
		if ch.remoteUnrun != nil {
			ch.remoteUnrun.Add(-1)
		}
		if byOwner && ch.id != 0 {
			ch.idleSpin = proto.SpinPlan{}
			if w.plan.spin.NoBackOff {
				ch.idleSpin = w.plan.spin
			}
		}
		ch.run(w)
	}
	ch.running.Store(0)
	// Work posted (or kicked) while we held running found the channel
	// goroutine unable to take it; wake it to look again.
	if ch.pending() {
		ch.idle.Wake()
	}
	return true
}

func (ch *channel) loop() {
	defer close(ch.exited)
	stopped := ch.comm.stop.Aborted
	ready := func() bool { return (ch.pending() && ch.running.Load() == 0) || stopped() }
	for {
		if !ready() {
			// Returns early only when Destroy stops the channel. While a
			// Synchronize caller runs this channel's work, sleep at once:
			// spinning would only steal its processor.
			what := func() string { return "work" }
			if ch.running.Load() != 0 {
				_ = ch.idle.Park(ready, what)
			} else {
				// Spin first where the plans do: a yield on a host of
				// many processors goes through the scheduler's global
				// queue and comes back microseconds later (a trace on the
				// 16-core Xeon), which every operation handed to this
				// goroutine then paid (2 ranks x 4 channels, 32 KiB one
				// at a time, ran several times slower than on one channel;
				// docs/log/performance-2026-11.md 12l).
				ch.idle.SetSpin(ch.idleSpin)
				_ = ch.idle.Wait(ready, what)
			}
		}
		if ch.tryDrain(true) {
			continue
		}
		if stopped() {
			if !ch.pending() {
				return
			}
			runtime.Gosched() // a helper is still draining
		}
	}
}

func (ch *channel) run(w *chanWork) {
	ch.prevWaiter.SetSpin(w.plan.spin) // the runner owns its waiters
	err := ch.waitPrevious(w.plan.seq)
	if err == nil {
		err = ch.comm.w.abort.Err()
	}
	switch {
	case err != nil:
	case w.plan.drivers > 0:
		ch.runFolded(w.plan) // reports its parts' errors itself
	default:
		ch.waiter.SetSpin(w.plan.spin)
		ch.waiter.Trace = w.plan.trace.channel(ch.id)
		err = ch.runParts(w)
	}
	if err != nil {
		ch.comm.fail(ch.id, err)
	}
	w.plan.channelDone()
}

// runParts runs w's collectives, then its point-to-point rounds,
// recorded on the channel's track when its waiter has one.
func (ch *channel) runParts(w *chanWork) error {
	if tr := ch.waiter.Trace; tr != nil {
		return ch.tracedParts(tr, w)
	}
	for i := range w.colls {
		if err := ch.runColl(&w.colls[i]); err != nil {
			return err
		}
	}
	for _, r := range w.rounds {
		if err := ch.runRound(r); err != nil {
			return err
		}
	}
	return nil
}

// waitPrevious holds back a plan until the plan before it on this
// communicator has finished on every channel: operations on a stream are
// ordered as whole operations (NCCL's kernel boundary), not just channel by
// channel, because consecutive operations may split their data over the
// channels differently (another count, protocol grain or channel count).
func (ch *channel) waitPrevious(seq uint64) error {
	c := ch.comm
	ready := func() bool { return c.finished.Load() >= seq-1 }
	if ready() {
		return nil
	}
	return ch.prevWaiter.WaitKick(ready, c.kickAll, func() string {
		return fmt.Sprintf("operation %d of rank %d to finish before operation %d starts", seq-1, c.rank, seq)
	})
}

// collWork is one collective's part on one channel.
type collWork struct {
	coll    Coll
	algo    tuning.Algo
	proto   proto.Protocol
	kernel  *reduce.Kernel // nil unless the collective reduces
	elt     int
	in, out []byte
	count   int // elements: per rank for allgather/reducescatter, else total
	root    int
	inPlace bool // out is in (allreduce, reduce) or holds it (the gathers' and scatter's block)

	partStart, partCount   int // this channel's contiguous part of count
	chunkElems, grain      int
	chunkSteps, sliceSteps int
	send                   *proto.SendEnd  // to the ring's next rank
	recv                   *proto.RecvEnd  // from the ring's previous rank
	tree                   *prims.TreeEnds // the channel's tree links (Tree only)
	os                     oneShotWork     // OneShot and TwoShot only
	nChannels              int             // channels the collective runs on (for the timeline)
}

func (ch *channel) runColl(w *collWork) error {
	n := ch.nRanks
	if n == 1 {
		ch.runLocal(w)
		return nil
	}
	if w.algo.OnBoard() {
		return ch.runOneShot(w)
	}
	p := prims.Prims{
		Proto: w.proto, Recv: w.recv, Send: w.send, Kernel: w.kernel, Elt: w.elt,
		In: w.in, Out: w.out, ChunkSteps: w.chunkSteps, SliceSteps: w.sliceSteps,
		Scratch: &ch.scratch, Scratch2: &ch.scratch2, Trace: ch.waiter.Trace,
	}
	p.Begin()
	if err := ch.ringOrTree(&p, w); err != nil {
		return err
	}
	return p.End(w.tree)
}

// ringOrTree walks w's schedule over p.
func (ch *channel) ringOrTree(p *prims.Prims, w *collWork) error {
	n := ch.nRanks
	part := w.partCount
	switch {
	case w.algo == tuning.Tree:
		return p.Tree(w.tree, w.partStart, part, w.chunkElems)
	case w.coll == CollAllReduce:
		for loop := 0; loop < part; {
			chunk := algo.RingChunk(part, loop, n, w.chunkElems, w.grain)
			for _, s := range ch.allReduceSteps {
				off, cnt := algo.ChunkSpan(part, loop, chunk, s.Chunk)
				o := w.partStart + off
				if err := p.Do(s.Prim, o, o, cnt, s.Post); err != nil {
					return err
				}
			}
			loop += n * chunk
		}
	case w.coll == CollAllGather || w.coll == CollReduceScatter:
		var steps []algo.Step
		if w.coll == CollAllGather {
			steps = algo.RingAllGather(ch.ring.Order, ch.ix)
		} else {
			steps = algo.RingReduceScatter(ch.ring.Order, ch.ix)
		}
		for off := 0; off < part; off += w.chunkElems {
			cnt := min(w.chunkElems, part-off)
			mine := w.partStart + off
			for _, s := range steps {
				block := s.Chunk*w.count + mine
				in, out := mine, block // allgather: my input, block's place in the output
				if w.coll == CollReduceScatter {
					in, out = block, mine
				}
				if err := p.Do(s.Prim, in, out, cnt, s.Post); err != nil {
					return err
				}
			}
		}
	case w.coll == CollBroadcast || w.coll == CollReduce:
		chain := ch.comm.w.chain.Order
		step := algo.Step{Prim: algo.ChainBroadcast(chain, ch.chainIx, w.root)}
		if w.coll == CollReduce {
			step = algo.ChainReduce(chain, ch.chainIx, w.root)
		}
		for off := 0; off < part; off += w.chunkElems {
			o := w.partStart + off
			if err := p.Do(step.Prim, o, o, min(w.chunkElems, part-off), step.Post); err != nil {
				return err
			}
		}
	default:
		return fmt.Errorf("ccl: %s has no ring schedule", w.coll)
	}
	return nil
}

// runLocal is every collective on one rank: the output is the input, with
// the reduction's pre- and post-ops applied.
func (ch *channel) runLocal(w *collWork) {
	elt := w.elt
	in := w.in[w.partStart*elt : (w.partStart+w.partCount)*elt]
	out := w.out[w.partStart*elt : (w.partStart+w.partCount)*elt]
	name := "copy"
	if w.kernel != nil {
		w.kernel.PrePost(out, in)
		name = "reduce"
	} else {
		prims.CopyUnlessSame(out, in)
	}
	traceCopy(ch.waiter.Trace, name, ch.rank, len(out))
}

// p2pRound is one round of a channel's point-to-point schedule: in round d
// rank r sends to r+d and receives from r-d, so the partners of every pair
// are in the same round. Round 0 is the rank's copies to itself.
type p2pRound struct {
	self         []selfCopy
	sends, recvs []*prims.Xfer
}

type selfCopy struct{ dst, src []byte }

func (ch *channel) runRound(r *p2pRound) error {
	for _, c := range r.self {
		prims.CopyUnlessSame(c.dst, c.src)
		traceCopy(ch.waiter.Trace, "copy", ch.rank, len(c.dst))
	}
	if len(r.sends)+len(r.recvs) == 0 {
		return nil
	}
	return prims.RunP2P(ch.waiter, r.sends, r.recvs)
}
