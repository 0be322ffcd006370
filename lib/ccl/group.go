package ccl

import (
	"fmt"

	"github.com/gccl/gccl/lib/algo"
	"github.com/gccl/gccl/lib/prims"
	"github.com/gccl/gccl/lib/proto"
	"github.com/gccl/gccl/lib/steptrace"
	"github.com/gccl/gccl/lib/tuning"
)

// p2pLLBytesPerChannel: point-to-point transfers use LL up to
// nChannels*16384 bytes, Simple above (NCCL's p2p LL threshold).
const p2pLLBytesPerChannel = 16384

// GroupStart opens a group: calls up to the matching GroupEnd are recorded
// and run as one plan. Groups nest; only the outermost GroupEnd launches.
func (c *Comm) GroupStart() error {
	if err := c.usable(); err != nil {
		return err
	}
	c.groupDepth++
	return nil
}

// GroupEnd closes a group. At the outermost level it turns the recorded
// calls into one plan and enqueues it; if any call of the group was
// invalid, nothing is enqueued and the first error is returned.
func (c *Comm) GroupEnd() error {
	if c.groupDepth == 0 {
		return fmt.Errorf("ccl: GroupEnd without a matching GroupStart")
	}
	c.groupDepth--
	if c.groupDepth > 0 {
		return nil
	}
	tasks, gerr := c.groupTasks, c.groupErr
	c.groupTasks, c.groupErr = nil, nil
	if gerr != nil {
		return fmt.Errorf("ccl: group not launched: %w", gerr)
	}
	if err := c.usable(); err != nil {
		return err
	}
	return c.launch(tasks)
}

// groupFail records an invalid call: inside a group it poisons the group.
func (c *Comm) groupFail(err error) error {
	if c.groupDepth > 0 && c.groupErr == nil {
		c.groupErr = err
	}
	return err
}

// addTask records t in the open group, or runs it as a group of its own.
func (c *Comm) addTask(t task) error {
	if c.groupDepth > 0 {
		c.groupTasks = append(c.groupTasks, t)
		return nil
	}
	c.single[0] = t
	err := c.launch(c.single[:])
	c.single[0] = task{} // drop the buffers
	return err
}

// MaxInFlight bounds the operations a communicator holds enqueued and not
// finished: a caller that enqueues faster than they run (nccl-tests'
// timing loop enqueues every iteration, then waits once) waits for the
// oldest, as a CUDA stream's full launch queue makes a launch wait, instead
// of piling up plans (measured before the bound: 100,000 queued 8 B
// allreduces of 2 ranks took ~1 KiB of plans each and kept the garbage
// collector busy). A goroutine that drives several ranks must therefore
// not enqueue MaxInFlight operations on one before it enqueues the first
// on another that they wait for: as on a full CUDA stream, the wait would
// last until the timeout.
const MaxInFlight = 1024

// throttle waits, once MaxInFlight operations are in flight, until at
// most half as many are (a wait per operation would cost a wake-up each).
func (c *Comm) throttle() error {
	if c.enqueued-c.finished.Load() < MaxInFlight {
		return nil
	}
	target := c.enqueued - MaxInFlight/2
	ready := func() bool { return c.finished.Load() >= target }
	c.channels[0].tryDrain(false) // as Synchronize: channel 0's work waits for a runner
	if ready() {
		return nil
	}
	return c.syncWaiter.Wait(ready, func() string {
		return fmt.Sprintf("operation %d to finish before more are enqueued (at most %d in flight)", target, MaxInFlight)
	})
}

// launch builds the plan of a group's tasks and posts each channel's part.
func (c *Comm) launch(tasks []task) error {
	var called int64 // for the timeline: when the operation was called
	tr := c.opTrace()
	if tr != nil {
		called = steptrace.Now()
	}
	if err := c.throttle(); err != nil {
		return err
	}
	c.materializeFast() // the stream keeps its order
	pl := c.newPlan()
	var p2p []task
	for _, t := range tasks {
		if t.coll == CollSend || t.coll == CollRecv {
			p2p = append(p2p, t)
			continue
		}
		if t.coll == collStagedCopy {
			pl.finalCopies = append(pl.finalCopies, selfCopy{dst: t.recv, src: t.send})
			continue
		}
		if err := c.planColl(t, pl); err != nil {
			return err
		}
	}
	if len(p2p) > 0 {
		if err := c.planP2P(p2p, pl); err != nil {
			return err
		}
	}
	n := int32(0)
	for i := range pl.work {
		if pl.work[i].plan != nil {
			n++
		}
	}
	if n == 0 {
		// Nothing to run (every count was 0): the plan never enters the
		// stream, so stream positions stay dense and ordered.
		pl.finish()
		clear(pl.finalCopies)
		pl.finalCopies = pl.finalCopies[:0]
		c.inflight = c.inflight[:len(c.inflight)-1]
		c.freePlans = append(c.freePlans, pl)
		return nil
	}
	c.enqueued++
	if c.progress != nil {
		c.progress.enqueued.Store(c.enqueued)
	}
	pl.seq = c.enqueued
	pl.trace = tr
	if tr != nil {
		c.traceLaunch(pl, tasks, called)
	}
	procs, runners, posts := c.w.freeProcs(), int(n), len(pl.work)
	if d := c.w.drivers(int(n), procs); d > 0 {
		// d runners per rank: those of channels 0 to d-1, whatever
		// channels have work.
		pl.drivers, runners, posts = d, d, d
		for i := range d {
			pl.work[i].plan = pl
		}
		c.fold.mark(pl.seq, d)
	}
	pl.spin = planSpin(runners*c.Size(), procs)
	c.lastSpin = pl.spin
	if cw := &pl.work[0]; cw.plan != nil && len(cw.colls) > 0 && cw.colls[0].algo.OnBoard() {
		c.tryPrePost(&cw.colls[0]) // one channel: never folded
	}
	pl.pending.Store(int32(runners))
	for i := range pl.work[:posts] {
		if pl.work[i].plan != nil {
			c.channels[i].post(&pl.work[i])
		}
	}
	return nil
}

// nChannels is the channel count point-to-point operations spread over:
// the forced count, else every channel allowed.
func (c *Comm) nChannels() int {
	if c.force.nChannels > 0 {
		return c.force.nChannels
	}
	return min(len(c.channels), c.force.maxCh)
}

func (c *Comm) planColl(t task, pl *plan) error {
	n := c.Size()
	nBytes := int64(t.count * t.elt)
	if t.coll == CollAllGather || t.coll == CollReduceScatter {
		nBytes *= int64(n) // NCCL's nBytes: the whole result
	}
	d, err := c.decide(t.coll, nBytes)
	if err != nil {
		return err
	}
	a, p := d.algo, d.proto
	chunkSteps, sliceSteps := 1, 1
	if a == tuning.Ring && p == proto.Simple && (t.coll == CollAllReduce || t.coll == CollAllGather || t.coll == CollReduceScatter) {
		chunkSteps, sliceSteps = 4, 2 // CHUNKSTEPS / SLICESTEPS
	}
	var grain, chunkElems int
	if d.buff == c.w.set.buff[p] {
		g := c.w.geometry(p, t.elt, chunkSteps)
		grain, chunkElems = g.grain, g.chunkElems
	} else {
		grain, chunkElems = prims.GrainElems(p, t.elt), prims.ChunkElems(p, d.buff, chunkSteps, t.elt)
	}
	if a.OnBoard() {
		return c.planOneShotColl(t, d, nBytes, pl)
	}
	nCh := d.nChannels
	active := algo.ActiveChannels(t.count, nCh, grain)
	if a == tuning.Tree {
		cb := algo.TreeChunkBytes(p, d.buff, nBytes, active, n, c.w.nHosts, c.w.treeDepth)
		chunkElems = max(cb/t.elt/grain*grain, grain)
	}
	c.last = Choice{Coll: t.coll, Algo: a.String(), Proto: p.String(), NChannels: active, Bytes: nBytes,
		NHosts: c.w.nHosts, BuffSize: d.buff, Source: d.source}
	c.lastDecision = d // LastChoice prices it only when asked
	if c.w.debug != nil {
		ch := c.last
		ch.PredictedUs = c.predict(t.coll, d, active, nBytes)
		c.logChoice(c.w.debug, ch)
	}
	for ch := 0; ch < active; ch++ {
		start, cnt := algo.ChannelPart(t.count, nCh, grain, ch)
		w := collWork{
			coll: t.coll, algo: a, proto: p, kernel: t.kernel, elt: t.elt, in: t.send, out: t.recv,
			count: t.count, root: t.root, inPlace: t.inPlace, partStart: start, partCount: cnt,
			chunkElems: chunkElems, grain: grain, chunkSteps: chunkSteps, sliceSteps: sliceSteps, nChannels: active,
		}
		if n > 1 {
			if a == tuning.Tree {
				tc, err := c.treeConn(ch, p, d.buff)
				if err != nil {
					return err
				}
				w.tree = tc
			} else {
				rc, err := c.ringConn(ch, p, d.buff, t.coll == CollBroadcast || t.coll == CollReduce)
				if err != nil {
					return err
				}
				w.send, w.recv = rc.send, rc.recv
			}
		}
		cw := pl.channel(ch)
		cw.colls = append(cw.colls, w)
	}
	return nil
}

// planOneShotColl puts a collective of the board (one-shot, two-shot) on
// channel 0, alone.
func (c *Comm) planOneShotColl(t task, d decision, nBytes int64, pl *plan) error {
	os, err := c.planOneShot(t, d.algo)
	if err != nil {
		return err
	}
	c.last = Choice{Coll: t.coll, Algo: d.algo.String(), Proto: d.proto.String(), NChannels: 1, Bytes: nBytes,
		NHosts: c.w.nHosts, BuffSize: d.buff, Source: d.source}
	c.lastDecision = d
	if c.w.debug != nil {
		ch := c.last
		ch.PredictedUs = c.predict(t.coll, d, 1, nBytes)
		c.logChoice(c.w.debug, ch)
	}
	cw := pl.channel(0)
	cw.colls = append(cw.colls, collWork{
		coll: t.coll, algo: d.algo, proto: d.proto, kernel: t.kernel, elt: t.elt, in: t.send, out: t.recv,
		count: t.count, root: t.root, inPlace: t.inPlace, partCount: t.count, os: os, nChannels: 1,
	})
	return nil
}

// planP2P spreads a group's sends and receives over channels and rounds.
// In round d rank r sends to r+d and receives from r-d; a transfer's parts
// go to channels rotated by d, so both partners put each part on the same
// channel and round.
func (c *Comm) planP2P(tasks []task, pl *plan) error {
	n, me := c.Size(), c.rank
	nCh := c.nChannels()
	sendsTo := make([][]task, n)
	recvsFrom := make([][]task, n)
	for _, t := range tasks {
		if t.coll == CollSend {
			sendsTo[t.root] = append(sendsTo[t.root], t)
		} else {
			recvsFrom[t.root] = append(recvsFrom[t.root], t)
		}
	}
	// Round 0: copies to self, paired in call order.
	if s, r := sendsTo[me], recvsFrom[me]; len(s)+len(r) > 0 {
		if len(s) != len(r) {
			return fmt.Errorf("ccl: rank %d sends %d and receives %d messages to/from itself in one group; they must pair up", me, len(s), len(r))
		}
		round := &p2pRound{}
		for i := range s {
			sb, rb := s[i].count*s[i].elt, r[i].count*r[i].elt
			if sb != rb {
				return fmt.Errorf("ccl: rank %d sends %d bytes to itself but receives %d", me, sb, rb)
			}
			round.self = append(round.self, selfCopy{dst: r[i].recv[:rb], src: s[i].send[:sb]})
		}
		cw := pl.channel(0)
		cw.rounds = append(cw.rounds, round)
	}
	rounds := make([]*p2pRound, nCh) // this delta's round per channel
	for d := 1; d < n; d++ {
		clear(rounds)
		to, from := (me+d)%n, (me-d+n)%n
		for _, t := range sendsTo[to] {
			if err := c.splitP2P(t, to, d, nCh, rounds, true); err != nil {
				return err
			}
		}
		for _, t := range recvsFrom[from] {
			if err := c.splitP2P(t, from, d, nCh, rounds, false); err != nil {
				return err
			}
		}
		for ch, r := range rounds {
			if r != nil {
				cw := pl.channel(ch)
				cw.rounds = append(cw.rounds, r)
			}
		}
	}
	last := tasks[len(tasks)-1]
	pp := c.p2pProto(last.count * last.elt)
	c.last = Choice{Coll: last.coll, Algo: "P2P", Proto: pp.String(), NChannels: nCh, Bytes: int64(last.count * last.elt),
		NHosts: c.w.nHosts, BuffSize: c.w.set.buff[pp]}
	c.fast.gen = 0 // the fast path sets c.last when it builds: build again
	return nil
}

func (c *Comm) p2pProto(bytes int) proto.Protocol {
	if p, ok := c.force.proto.Get(); ok {
		return p
	}
	if bytes <= c.nChannels()*p2pLLBytesPerChannel {
		return proto.LL
	}
	return proto.Simple
}

// splitP2P cuts one send or receive into per-channel parts of round d.
func (c *Comm) splitP2P(t task, peer, d, nCh int, rounds []*p2pRound, isSend bool) error {
	nb := t.count * t.elt
	p := c.p2pProto(nb)
	chunk := prims.ChunkBytes(p, c.w.set.buff[p], 1)
	parts := max(algo.ActiveChannels(nb, nCh, p.Grain()), 1) // an empty message still moves one empty step
	for k := 0; k < parts; k++ {
		start, cnt := algo.ChannelPart(nb, nCh, p.Grain(), k)
		ch := (k + d) % nCh
		x := &prims.Xfer{Chunk: chunk}
		if isSend {
			e, err := c.connect(c.rank, peer, ch, connP2P, p, c.w.set.buff[p])
			if err != nil {
				return err
			}
			x.Send, x.Buf = e.send, t.send[start:start+cnt]
		} else {
			e, err := c.connect(peer, c.rank, ch, connP2P, p, c.w.set.buff[p])
			if err != nil {
				return err
			}
			x.Recv, x.Buf = e.recv, t.recv[start:start+cnt]
		}
		if rounds[ch] == nil {
			rounds[ch] = &p2pRound{}
		}
		if isSend {
			rounds[ch].sends = append(rounds[ch].sends, x)
		} else {
			rounds[ch].recvs = append(rounds[ch].recvs, x)
		}
	}
	return nil
}
