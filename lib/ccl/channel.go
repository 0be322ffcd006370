package ccl

import (
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/gccl/gccl/lib/algo"
	"github.com/gccl/gccl/lib/prims"
	"github.com/gccl/gccl/lib/proto"
	"github.com/gccl/gccl/lib/reduce"
	"github.com/gccl/gccl/lib/topo"
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

	waiter *proto.Waiter // waits of running work: abort + timeout
	idle   *proto.Waiter // waits for work: stop signal, no timeout

	mu    sync.Mutex
	queue []*chanWork // guarded by mu
	// posted counts work items ever queued. Written (Add) by the enqueuing
	// goroutine after appending under mu; read by the channel goroutine.
	posted atomic.Uint64
	taken  uint64 // items taken; channel goroutine only

	scratch        []byte      // LL/LL128 staging; channel goroutine only
	allReduceSteps []algo.Step // RingAllReduce(n, ix), computed once
	exited         chan struct{}
}

func newChannel(c *Comm, id int) *channel {
	ring := c.w.rings[id]
	ch := &channel{
		comm: c, id: id, nRanks: c.w.n, rank: c.rank, ring: ring, ix: ring.Index(c.rank),
		waiter: proto.NewWaiter(c.w.abort, c.w.set.timeout),
		idle:   proto.NewWaiter(c.stop, 0),
		exited: make(chan struct{}),
	}
	if ch.nRanks > 1 {
		ch.allReduceSteps = algo.RingAllReduce(ch.nRanks, ch.ix)
	}
	return ch
}

// chanWork is one plan's work for one channel.
type chanWork struct {
	plan   *plan
	colls  []*collWork
	rounds []*p2pRound
}

func (ch *channel) post(w *chanWork) {
	ch.mu.Lock()
	ch.queue = append(ch.queue, w)
	ch.mu.Unlock()
	ch.posted.Add(1)
	ch.idle.Wake()
}

func (ch *channel) loop() {
	defer close(ch.exited)
	hasWork := func() bool { return ch.posted.Load() > ch.taken }
	for {
		if !hasWork() {
			// Returns early only when Destroy stops the channel.
			_ = ch.idle.Wait(func() bool { return hasWork() || ch.comm.stop.Aborted() }, func() string { return "work" })
		}
		if hasWork() {
			ch.mu.Lock()
			w := ch.queue[0]
			ch.queue[0] = nil
			ch.queue = ch.queue[1:]
			ch.mu.Unlock()
			ch.taken++
			ch.run(w)
			continue
		}
		if ch.comm.stop.Aborted() {
			return
		}
	}
}

func (ch *channel) run(w *chanWork) {
	var err error
	if err = ch.comm.w.abort.Err(); err == nil {
		for _, cw := range w.colls {
			if err = ch.runColl(cw); err != nil {
				break
			}
		}
	}
	if err == nil {
		for _, r := range w.rounds {
			if err = ch.runRound(r); err != nil {
				break
			}
		}
	}
	if err != nil {
		ch.comm.fail(ch.id, err)
	}
	w.plan.channelDone()
}

// collWork is one collective's part on one channel.
type collWork struct {
	coll    Coll
	proto   proto.Protocol
	kernel  *reduce.Kernel // nil unless the collective reduces
	elt     int
	in, out []byte
	count   int // elements: per rank for allgather/reducescatter, else total
	root    int

	partStart, partCount   int // this channel's contiguous part of count
	chunkElems, grain      int
	chunkSteps, sliceSteps int
	send                   *proto.SendEnd // to the ring's next rank
	recv                   *proto.RecvEnd // from the ring's previous rank
}

func (ch *channel) runColl(w *collWork) error {
	n := ch.nRanks
	if n == 1 {
		ch.runLocal(w)
		return nil
	}
	p := prims.Prims{
		Proto: w.proto, Recv: w.recv, Send: w.send, Kernel: w.kernel, Elt: w.elt,
		In: w.in, Out: w.out, ChunkSteps: w.chunkSteps, SliceSteps: w.sliceSteps, Scratch: &ch.scratch,
	}
	p.Begin()
	part := w.partCount
	switch w.coll {
	case CollAllReduce:
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
	case CollAllGather, CollReduceScatter:
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
	case CollBroadcast, CollReduce:
		step := algo.Step{Prim: algo.ChainBroadcast(ch.ring.Order, ch.ix, w.root)}
		if w.coll == CollReduce {
			step = algo.ChainReduce(ch.ring.Order, ch.ix, w.root)
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
	if w.kernel != nil {
		w.kernel.PrePost(out, in)
	} else {
		copyUnlessSame(out, in)
	}
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
		copyUnlessSame(c.dst, c.src)
	}
	if len(r.sends)+len(r.recvs) == 0 {
		return nil
	}
	return prims.RunP2P(ch.waiter, r.sends, r.recvs)
}

func copyUnlessSame(dst, src []byte) {
	if len(dst) > 0 && len(src) > 0 && &dst[0] == &src[0] {
		return
	}
	copy(dst, src)
}
