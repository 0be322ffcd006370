package ccl

import (
	"errors"
	"fmt"
	"os"
	"sync"
	"sync/atomic"

	"github.com/gccl/gccl/lib/proto"
	"github.com/gccl/gccl/lib/reduce"
	"github.com/gccl/gccl/lib/topo"
	"github.com/gccl/gccl/lib/transport"
)

// ErrAborted is wrapped by every error after a communicator aborted.
var ErrAborted = proto.ErrAborted

// ErrTimeout is wrapped by the error of an operation that made no progress
// within the timeout.
var ErrTimeout = proto.ErrTimeout

// ErrDestroyed is returned by calls on a destroyed communicator.
var ErrDestroyed = errors.New("ccl: communicator destroyed")

// world is what the communicators of one InitAll share: the abort signal,
// the connections and the topology.
type world struct {
	n     int
	set   settings
	comms []*Comm
	rings []topo.Ring
	peers []transport.Peer
	abort *proto.Abort

	transports []transport.Transport

	mu    sync.Mutex // guards conns
	conns map[connKey]*ends
}

type connKey struct {
	from, to, ch int
	p2p          bool
	proto        proto.Protocol
}

// ends are both ends of one protocol of one connection. The send end is
// owned by channel ch of rank from, the receive end by channel ch of rank to.
type ends struct {
	send *proto.SendEnd
	recv *proto.RecvEnd
}

// connect returns the ends of a connection, creating it on first use. Both
// ranks' plan builders call it; the mutex makes the creation visible to both.
func (w *world) connect(from, to, ch int, p2p bool, p proto.Protocol) (*ends, error) {
	k := connKey{from, to, ch, p2p, p}
	w.mu.Lock()
	defer w.mu.Unlock()
	if e, ok := w.conns[k]; ok {
		return e, nil
	}
	c, err := transport.Connect(w.transports, transport.Request{
		From: w.peers[from], To: w.peers[to], Channel: ch, Proto: p,
		BuffSize: w.set.buff[p], Options: w.set.fifo,
	})
	if err != nil {
		return nil, err
	}
	sender, receiver := w.comms[from].channels[ch], w.comms[to].channels[ch]
	c.SendSide.SendWaiter, c.RecvSide.RecvWaiter = sender.waiter, receiver.waiter
	c.RecvSide.SendKick, c.SendSide.RecvKick = sender.kick, receiver.kick
	kind := "ring"
	if p2p {
		kind = "p2p"
	}
	desc := fmt.Sprintf("rank %d -> rank %d, channel %d (%s)", from, to, ch, kind)
	s, _ := proto.NewEnds(c.SendSide, desc)
	_, r := proto.NewEnds(c.RecvSide, desc)
	e := &ends{send: s, recv: r}
	w.conns[k] = e
	return e, nil
}

// connect returns a connection's ends from this rank's cache, asking the
// world (and its lock) only the first time.
func (c *Comm) connect(from, to, ch int, p2p bool, p proto.Protocol) (*ends, error) {
	k := connKey{from, to, ch, p2p, p}
	if e, ok := c.ends[k]; ok {
		return e, nil
	}
	e, err := c.w.connect(from, to, ch, p2p, p)
	if err != nil {
		return nil, err
	}
	if c.ends == nil {
		c.ends = map[connKey]*ends{}
	}
	c.ends[k] = e
	return e, nil
}

// Comm is one rank's communicator. Its methods are called by one goroutine
// at a time; the channel goroutines run the work.
type Comm struct {
	w        *world
	rank     int
	channels []*channel

	// Owned by the calling goroutine (NCCL comms are not thread-safe either).
	groupDepth int
	groupTasks []task
	groupErr   error
	enqueued   uint64 // plans enqueued so far
	destroyed  bool
	last       Choice
	kernels    map[kernelKey]*reduce.Kernel
	ends       map[connKey]*ends // this rank's view of world.conns, without the lock

	// finished counts plans whose every channel is done. Written (Add) by
	// the channel goroutine that finishes a plan last; read by Synchronize.
	finished   atomic.Uint64
	syncWaiter *proto.Waiter // wakes Synchronize; no timeout (work times out)
	stop       *proto.Abort  // triggered by Destroy: channel goroutines exit when idle
}

// InitAll creates n communicators in this process, one per rank (the
// analogue of ncclCommInitAll). cfg is overridden by GCCL_* variables.
func InitAll(n int, cfg Config) ([]*Comm, error) {
	if n < 1 {
		return nil, fmt.Errorf("ccl: InitAll: %d ranks: want at least 1", n)
	}
	cfg, err := cfg.FromEnv()
	if err != nil {
		return nil, err
	}
	set, err := cfg.validate()
	if err != nil {
		return nil, err
	}
	host, _ := os.Hostname()
	w := &world{
		n: n, set: set, abort: proto.NewAbort(),
		rings:      topo.Rings(n, set.maxCh),
		transports: []transport.Transport{transport.InProc{}},
		conns:      map[connKey]*ends{},
	}
	for r := 0; r < n; r++ {
		w.peers = append(w.peers, transport.Peer{Rank: r, Host: host, Pid: os.Getpid()})
	}
	for r := 0; r < n; r++ {
		c := &Comm{w: w, rank: r, stop: proto.NewAbort()}
		c.syncWaiter = proto.NewWaiter(w.abort, 0)
		for ch := 0; ch < set.maxCh; ch++ {
			c.channels = append(c.channels, newChannel(c, ch))
		}
		w.comms = append(w.comms, c)
	}
	for _, c := range w.comms {
		for _, ch := range c.channels {
			go ch.loop()
		}
	}
	return w.comms, nil
}

// Rank is this communicator's rank.
func (c *Comm) Rank() int { return c.rank }

// Size is the number of ranks.
func (c *Comm) Size() int { return c.w.n }

// NChannels is the number of channel goroutines of this rank.
func (c *Comm) NChannels() int { return len(c.channels) }

// LastChoice reports what the stack chose for the last operation enqueued.
func (c *Comm) LastChoice() Choice { return c.last }

// Synchronize waits until every operation enqueued so far has completed, and
// returns the error that aborted the communicators, if any.
func (c *Comm) Synchronize() error {
	if c.destroyed {
		return ErrDestroyed
	}
	target := c.enqueued
	ready := func() bool { return c.finished.Load() >= target }
	if !ready() {
		// Run channel 0's queued work here rather than hand it to its
		// goroutine: two goroutine switches fewer per operation.
		c.channels[0].tryDrain()
	}
	if !ready() {
		if err := c.syncWaiter.Wait(ready, func() string { return "operations to complete" }); err != nil {
			return err
		}
	}
	return c.w.abort.Err()
}

// usable returns the error that makes a call on c fail before it enqueues.
func (c *Comm) usable() error {
	if c.destroyed {
		return ErrDestroyed
	}
	return c.w.abort.Err()
}

// Abort aborts every communicator of this InitAll: every wait in every
// channel goroutine returns, pending and later operations fail with
// ErrAborted. Then it releases this communicator like Destroy.
func (c *Comm) Abort() error {
	c.w.abort.Trigger(fmt.Errorf("rank %d called Abort", c.rank))
	return c.Destroy()
}

// Destroy waits for this rank's queued work (which ends by itself: it
// completes, times out or is aborted), then stops its channel goroutines
// and waits until they have exited.
func (c *Comm) Destroy() error {
	if c.destroyed {
		return ErrDestroyed
	}
	err := c.Synchronize()
	c.destroyed = true
	c.stop.Trigger(ErrDestroyed)
	for _, ch := range c.channels {
		<-ch.exited
	}
	if errors.Is(err, ErrAborted) {
		return nil // the abort was reported by the operations that saw it
	}
	return err
}

// fail aborts the world because an operation on rank c cannot complete.
func (c *Comm) fail(ch int, err error) {
	if errors.Is(err, ErrAborted) {
		return
	}
	c.w.abort.Trigger(fmt.Errorf("rank %d channel %d: %w", c.rank, ch, err))
}

// plan is one "kernel launch": the per-channel work of one group.
type plan struct {
	comm *Comm
	// pending counts the channels still running the plan. Written (Add) by
	// each channel goroutine when it finishes its part.
	pending atomic.Int32
}

func (p *plan) channelDone() {
	if p.pending.Add(-1) == 0 {
		p.comm.finished.Add(1)
		p.comm.syncWaiter.Wake()
	}
}
