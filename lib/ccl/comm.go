package ccl

import (
	"errors"
	"fmt"
	"io"
	"math/bits"
	"os"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gccl/gccl/lib/board"
	"github.com/gccl/gccl/lib/cpuset"
	"github.com/gccl/gccl/lib/prims"
	"github.com/gccl/gccl/lib/proto"
	"github.com/gccl/gccl/lib/reduce"
	"github.com/gccl/gccl/lib/topo"
	"github.com/gccl/gccl/lib/transport"
	"github.com/gccl/gccl/lib/tuning"
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
	// chain is the ring every channel's broadcast and reduce follow
	// (rings[0]'s order; see ringConn).
	chain topo.Ring
	// hostOf[r] is rank r's host; trees are the double binary tree over
	// the hosts with a chain inside each ([tree][rank]), treeDepth the
	// deeper tree's depth in hops.
	hostOf    []int
	nHosts    int
	trees     [2][]topo.TreeNode
	treeDepth int
	// realHosts: the ranks live on several machines (not hosts simulated
	// in one process by RanksPerHost): no shared board, so no one-shot.
	realHosts bool

	model tuning.Model     // the cost model
	table *tuning.Selector // the tuning table's rules for this shape; nil: none
	debug io.Writer        // GCCL_DEBUG=INFO: one line per operation
	peers []transport.Peer
	abort *proto.Abort

	transports []transport.Transport
	procs      int                                // processors the model assumes: GOMAXPROCS at InitAll, or the host's across processes
	spinProcs  int                                // processors the waits assume (planSpin): procs, or fewer (see spinProcs)
	foldProcs  int                                // across processes: the runners this process's ranks fold past (world.drivers)
	geom       [proto.NumProtocols][4][2]geometry // [proto][log2 elt][chunkSteps/4]

	mu       sync.Mutex // guards conns and closers
	conns    map[connKey]*ends
	closers  []func() // release connections' shared memory at teardown
	released int      // local communicators destroyed

	// board is the one-shot algorithm's memory: made on first use in one
	// process (guarded by mu), in the job's segments across processes.
	board *board.Board

	// local are the communicators of the ranks this process holds (every
	// rank for InitAll; comms[r] is nil for a rank of another process).
	local []*Comm
	// job links the processes of a world across processes; nil in one.
	job *job
}

// geometry is a protocol's chunking for one element size, computed once.
type geometry struct{ grain, chunkElems int }

// geometry returns the grain and chunk size of protocol p for elements of
// elt bytes and chunkSteps steps per chunk (1 or 4).
func (w *world) geometry(p proto.Protocol, elt, chunkSteps int) geometry {
	return w.geom[p][bits.TrailingZeros(uint(elt))][chunkSteps/4]
}

func (w *world) initGeometry() {
	for _, p := range proto.All() {
		for e := range w.geom[p] {
			for k, steps := range []int{1, 4} {
				elt := 1 << e
				w.geom[p][e][k] = geometry{
					grain:      prims.GrainElems(p, elt),
					chunkElems: prims.ChunkElems(p, w.set.buff[p], steps, elt),
				}
			}
		}
	}
}

// connKind separates the connections two ranks may have on one channel:
// each pattern gets its own FIFOs, as NCCL gives rings, trees and p2p their
// own connectors.
type connKind uint8

const (
	connRing     connKind = iota
	connTreeUp            // child -> parent: the reduce phase
	connTreeDown          // parent -> child: the broadcast phase
	connP2P
)

var connKindNames = [...]string{"ring", "tree up", "tree down", "p2p"}

// connKindTags name the kinds in shared-memory segment names.
var connKindTags = [...]string{"ring", "tup", "tdn", "p2p"}

type connKey struct {
	from, to, ch int
	kind         connKind
	proto        proto.Protocol
	buff         int // FIFO bytes: a tuning rule may ask for another size
}

// ends are both ends of one protocol of one connection. The send end is
// owned by channel ch of rank from, the receive end by channel ch of rank to.
type ends struct {
	send *proto.SendEnd
	recv *proto.RecvEnd
}

// connect returns the ends of a connection, creating it on first use. Both
// ranks' plan builders call it; the mutex makes the creation visible to both.
func (w *world) connect(from, to, ch int, kind connKind, p proto.Protocol, buff int) (*ends, error) {
	k := connKey{from, to, ch, kind, p, buff}
	w.mu.Lock()
	defer w.mu.Unlock()
	if e, ok := w.conns[k]; ok {
		return e, nil
	}
	sender, receiver := w.comms[from], w.comms[to]
	sides := transport.BothSides
	switch {
	case receiver == nil:
		sides = transport.SendOnly
	case sender == nil:
		sides = transport.RecvOnly
	}
	if err := w.abort.Err(); err != nil {
		return nil, err // no new segments once the job failed
	}
	c, err := transport.Connect(w.transports, transport.Request{
		From: w.peers[from], To: w.peers[to], Channel: ch, Proto: p,
		BuffSize: buff, Options: w.set.fifo, Kind: connKindTags[kind], Sides: sides,
	})
	if err != nil {
		if aerr := w.abort.Err(); aerr != nil {
			return nil, aerr // the cause, not what it did to this connection
		}
		return nil, err
	}
	if c.Close != nil {
		w.closers = append(w.closers, c.Close)
	}
	desc := fmt.Sprintf("%s -> %s, channel %d (%s)", w.job.rankName(from), w.job.rankName(to), ch, connKindNames[kind])
	e := &ends{}
	// A FIFO end's far waiter is the peer rank's channel: in this process,
	// or behind a bell in another process on this host; a network
	// transport has set its proxy there itself.
	proxySend := c.SendSide != nil && c.SendSide.RecvWaiter != nil
	proxyRecv := c.RecvSide != nil && c.RecvSide.SendWaiter != nil
	if sender != nil {
		sc := sender.channels[ch]
		c.SendSide.SendWaiter = sc.waiter
		switch {
		case proxySend: // the transport's proxy
		case receiver != nil:
			c.SendSide.RecvWaiter, c.SendSide.RecvKick = receiver.channels[ch].waiter, receiver.channels[ch].kick
		default:
			// The receiver's goroutine is in another process: ring its bell.
			c.SendSide.RecvWaiter, c.SendSide.RecvKick = w.job.remoteWaiter(to, ch), w.job.remoteKick(to, ch)
		}
		e.send, _ = proto.NewEnds(c.SendSide, desc)
	}
	if receiver != nil {
		rc := receiver.channels[ch]
		c.RecvSide.RecvWaiter = rc.waiter
		switch {
		case proxyRecv: // the transport's proxy
		case sender != nil:
			c.RecvSide.SendWaiter, c.RecvSide.SendKick = sender.channels[ch].waiter, sender.channels[ch].kick
		default:
			c.RecvSide.SendWaiter, c.RecvSide.SendKick = w.job.remoteWaiter(from, ch), w.job.remoteKick(from, ch)
		}
		_, e.recv = proto.NewEnds(c.RecvSide, desc)
	}
	if c.Start != nil {
		c.Start()
	}
	w.conns[k] = e
	return e, nil
}

// connect returns a connection's ends from this rank's cache, asking the
// world (and its lock) only the first time.
func (c *Comm) connect(from, to, ch int, kind connKind, p proto.Protocol, buff int) (*ends, error) {
	k := connKey{from, to, ch, kind, p, buff}
	if e, ok := c.ends[k]; ok {
		return e, nil
	}
	e, err := c.w.connect(from, to, ch, kind, p, buff)
	if err != nil {
		return nil, err
	}
	if c.ends == nil {
		c.ends = map[connKey]*ends{}
	}
	c.ends[k] = e
	return e, nil
}

// ringConn holds a channel's ring ends: to the next rank and from the previous one.
type ringConn struct {
	send *proto.SendEnd
	recv *proto.RecvEnd
}

// ringConn returns channel ch's ring ends for protocol p with FIFOs of
// buff bytes, connecting them on first use. Those of the communicator's
// own buffer size are kept at hand; other sizes (asked by a tuning rule)
// go through the connection map.
//
// chain asks for the ends of the chain that broadcast and reduce follow:
// the same direction (w.chain) on every channel, where the rings of odd
// channels run the reverse. A rank starts an operation once it finished
// the previous one on every channel (waitPrevious); on reversed chains the
// root's neighbour is the last rank of the odd channels' chain, so no rank
// started the next broadcast before the previous one had crossed the whole
// chain, and back-to-back broadcasts lost their pipelining along the chain
// (8 ranks on the 16-core Xeon, 64-256 KiB: 2 channels 2.1-2.8x the time
// of one; docs/PERFORMANCE.md 12w).
func (c *Comm) ringConn(ch int, p proto.Protocol, buff int, chain bool) (*ringConn, error) {
	std := buff == c.w.set.buff[p]
	ring, kept := c.w.rings[ch], &c.ringConns[ch][p]
	if chain {
		ring, kept = c.w.chain, &c.chainConns[ch][p]
	}
	if rc := *kept; rc != nil && std {
		return rc, nil
	}
	out, err := c.connect(c.rank, ring.Next(c.rank), ch, connRing, p, buff)
	if err != nil {
		return nil, err
	}
	in, err := c.connect(ring.Prev(c.rank), c.rank, ch, connRing, p, buff)
	if err != nil {
		return nil, err
	}
	rc := &ringConn{send: out.send, recv: in.recv}
	if std {
		*kept = rc
	}
	return rc, nil
}

// treeConn returns channel ch's ends in its tree for protocol p,
// connecting them on first use. Even channels use tree 0, odd channels
// tree 1, so half the channels use each tree of the double binary tree.
func (c *Comm) treeConn(ch int, p proto.Protocol, buff int) (*prims.TreeEnds, error) {
	std := buff == c.w.set.buff[p]
	if t := c.treeConns[ch][p]; t != nil && std {
		return t, nil
	}
	node := c.w.trees[ch%2][c.rank]
	t := &prims.TreeEnds{}
	if node.Parent >= 0 {
		up, err := c.connect(c.rank, node.Parent, ch, connTreeUp, p, buff)
		if err != nil {
			return nil, err
		}
		down, err := c.connect(node.Parent, c.rank, ch, connTreeDown, p, buff)
		if err != nil {
			return nil, err
		}
		t.ToParent, t.FromParent = up.send, down.recv
	}
	for _, child := range node.Children {
		if child < 0 {
			continue
		}
		up, err := c.connect(child, c.rank, ch, connTreeUp, p, buff)
		if err != nil {
			return nil, err
		}
		down, err := c.connect(c.rank, child, ch, connTreeDown, p, buff)
		if err != nil {
			return nil, err
		}
		t.FromChildren = append(t.FromChildren, up.recv)
		t.ToChildren = append(t.ToChildren, down.send)
	}
	if std {
		c.treeConns[ch][p] = t
	}
	return t, nil
}

// Comm is one rank's communicator. Its methods are called by one goroutine
// at a time; the channel goroutines run the work.
type Comm struct {
	w        *world
	rank     int
	channels []*channel

	// Owned by the calling goroutine (NCCL comms are not thread-safe either).
	groupDepth   int
	groupTasks   []task
	groupErr     error
	enqueued     uint64 // plans enqueued so far
	destroyed    bool
	last         Choice
	lastDecision decision                                           // what produced last, for its predicted time
	kernels      map[kernelKey]*reduce.Kernel                       // PreMulSum kernels by scalar
	opKernels    [reduce.NumDataTypes][reduce.NumOps]*reduce.Kernel // the other ops
	ringConns    [][proto.NumProtocols]*ringConn                    // per channel: to the next rank, from the previous
	chainConns   [][proto.NumProtocols]*ringConn                    // per channel: the same along w.chain
	treeConns    [][proto.NumProtocols]*prims.TreeEnds              // per channel: its tree's links
	single       [1]task                                            // the implicit group of a call outside a group
	lastSpin     time.Duration                                      // the last plan's spin, for Synchronize
	inflight     []*plan                                            // enqueued plans, not yet recycled
	freePlans    []*plan                                            // finished plans to reuse
	ends         map[connKey]*ends                                  // this rank's view of world.conns, without the lock
	decided      [tuning.NumColls]decidedEntry                      // the last decision per collective
	force        forced                                             // what decide obeys: Config's, or Force's
	os           *oneShotState                                      // the one-shot board's state; nil until first used
	shape        shapeCache                                         // the last valid collective's inputs, to skip validating a repeat
	fast         fastWork                                           // a one-shot collective enqueued by the fast path, not yet run

	// finished counts plans whose every channel is done. Written (Add) by
	// the channel goroutine that finishes a plan last; read by Synchronize.
	finished atomic.Uint64
	// fold marks the last folded plan, for kicks (foldMark): ownFold, or
	// the rank's shared counters across processes, where other processes'
	// kicks read it too.
	fold     *foldMark
	ownFold  foldMark
	progress *opCounters // enqueued/finished in shared memory (a job across processes), else nil
	// doneTimes, when set, logs when each operation finished (marks.go).
	// Written (Store) by the calling goroutine in RecordCompletions, with
	// nothing in flight; read by the goroutine that finishes an operation.
	doneTimes  atomic.Pointer[doneLog]
	spareLog   *doneLog      // the last log made, kept for reuse; the calling goroutine's
	syncWaiter *proto.Waiter // wakes Synchronize; no timeout (work times out)
	stop       *proto.Abort  // triggered by Destroy: channel goroutines exit when idle
}

// InitAll creates n communicators in this process, one per rank (the
// analogue of ncclCommInitAll), configured by cfg alone: GCCL_* variables
// apply only when the caller asked for them (ConfigFromEnv, Config.FromEnv).
func InitAll(n int, cfg Config) ([]*Comm, error) {
	if n < 1 {
		return nil, fmt.Errorf("ccl: InitAll: %d ranks: want at least 1", n)
	}
	set, err := cfg.validate()
	if err != nil {
		return nil, err
	}
	host, _ := os.Hostname()
	peers := make([]transport.Peer, n)
	ranks := make([]int, n)
	for r := range peers {
		peers[r] = transport.Peer{Rank: r, Host: host, Pid: os.Getpid()}
		ranks[r] = r
	}
	w := newWorld(n, set, peers, usableProcs(runtime.GOMAXPROCS(0), cpuCount()), cpuset.CountCores(cpuset.CoreIDs(cpuset.Affinity())))
	w.start(ranks, nil)
	return w.comms, nil
}

// NetSimpleBuffSize is the Simple FIFO size of a job across hosts unless
// Config.BuffSize (GCCL_BUFFSIZE) sets one.
const NetSimpleBuffSize = 4 << 20

// newWorld sets up what the communicators of n ranks share; procs is the
// processor count the model and the spin policy assume, cores the physical
// cores under them (0: unknown; see modelCores).
func newWorld(n int, set settings, peers []transport.Peer, procs, cores int) *world {
	w := &world{
		n: n, set: set, abort: proto.NewAbort(),
		transports: []transport.Transport{transport.InProc{}},
		conns:      map[connKey]*ends{},
		peers:      peers,
		procs:      procs,
		spinProcs:  procs,
		comms:      make([]*Comm, n),
	}
	w.initHosts()
	if w.realHosts && !w.set.simpleBuffSet {
		// Across hosts the Simple FIFO is NCCL's default, 4 MiB: steps of
		// 512 KiB keep a socket busy between credits (16-core Xeon,
		// loopback, 128 MiB allreduce: 1.35-1.58 GB/s with 1 MiB, 1.71-
		// 2.28 with 4 MiB; the 2-core VM between namespaces: see
		// docs/PERFORMANCE.md 13d).
		w.set.buff[proto.Simple] = NetSimpleBuffSize
	}
	w.initGeometry() // after the buffer sizes are settled
	w.rings = topo.HostRings(w.hostOf, set.maxCh)
	w.chain = w.rings[0]
	// Hosts simulated in this process share its processors; real ones
	// each have their own.
	share := w.nHosts
	if w.realHosts {
		share = 1
	}
	k := set.model.ForOneProcess(modelCores(w.procs, cores), share)
	if !w.realHosts {
		k = k.InProcessHosts()
	}
	w.model = tuning.Model{C: k}
	w.table = set.table.For(n, w.nHosts)
	w.debug = set.debug
	return w
}

// start creates the communicators of the ranks this process holds and
// starts their channel goroutines. j is nil for a world in one process.
func (w *world) start(ranks []int, j *job) {
	w.job = j
	set := w.set
	for _, r := range ranks {
		c := &Comm{w: w, rank: r, stop: proto.NewAbort()}
		c.force = forced{algo: set.algo, proto: set.proto, nChannels: set.nChannels, maxCh: set.maxCh}
		c.ringConns = make([][proto.NumProtocols]*ringConn, set.maxCh)
		c.chainConns = make([][proto.NumProtocols]*ringConn, set.maxCh)
		c.treeConns = make([][proto.NumProtocols]*prims.TreeEnds, set.maxCh)
		c.syncWaiter = proto.NewWaiter(w.abort, 0)
		c.fold = &c.ownFold
		for ch := 0; ch < set.maxCh; ch++ {
			c.channels = append(c.channels, newChannel(c, ch))
		}
		if j != nil {
			c.progress = j.rankProgress(r)
			c.fold = &c.progress.fold
			rank := r
			c.stop.OnTrigger(func() { j.ringIdle(rank) })
		}
		w.comms[r] = c
		w.local = append(w.local, c)
	}
	liveRanks.Add(int64(len(w.local))) // until the last Destroy (release)
	for _, c := range w.local {
		for _, ch := range c.channels {
			go ch.loop()
		}
	}
}

// initHosts groups the ranks into hosts: by the machine each rank runs on
// when they are several, else into hosts of set.ranksPerHost consecutive
// ranks (the last may hold fewer); and builds the trees over them.
func (w *world) initHosts() {
	w.hostOf = make([]int, w.n)
	index := map[string]int{}
	for r, p := range w.peers {
		if _, ok := index[p.Host]; !ok {
			index[p.Host] = len(index)
		}
		w.hostOf[r] = index[p.Host]
	}
	w.realHosts = len(index) > 1
	if !w.realHosts {
		per := w.set.ranksPerHost
		if per <= 0 || per > w.n {
			per = w.n
		}
		for r := range w.hostOf {
			w.hostOf[r] = r / per
		}
	}
	w.nHosts = slices.Max(w.hostOf) + 1
	w.trees = topo.RankTrees(w.hostOf)
	w.treeDepth = max(topo.Depth(w.trees[0]), topo.Depth(w.trees[1]))
}

// Rank is this communicator's rank.
func (c *Comm) Rank() int { return c.rank }

// Size is the number of ranks.
func (c *Comm) Size() int { return c.w.n }

// NHosts is the number of hosts the ranks are grouped into.
func (c *Comm) NHosts() int { return c.w.nHosts }

// NChannels is the number of channel goroutines of this rank.
func (c *Comm) NChannels() int { return len(c.channels) }

// LastChoice reports what the stack chose for the last operation enqueued.
func (c *Comm) LastChoice() Choice {
	ch := c.last
	if _, tuned := tuneColl(ch.Coll); tuned && ch.Algo != "" {
		ch.PredictedUs = c.predict(ch.Coll, c.lastDecision, ch.NChannels, ch.Bytes)
	}
	return ch
}

// Synchronize waits until every operation enqueued so far has completed, and
// returns the error that aborted the communicators, if any.
func (c *Comm) Synchronize() error {
	if c.destroyed {
		return ErrDestroyed
	}
	if c.fast.pending {
		c.runFast()
	}
	target := c.enqueued
	// Spin only for the last operation: with more still queued, the
	// channels' goroutines have work for a while, and a caller spinning
	// beside them takes a processor one of them may need (a Go trace of 32
	// ranks x 2 channels back to back on 64 cores: of the 9.2 s goroutines
	// spent runnable without a processor, 2.2 s were callers' in
	// Synchronize, beside 64 spinning runners).
	c.syncWaiter.SpinFor = c.lastSpin
	if target-c.finished.Load() > 1 {
		c.syncWaiter.SpinFor = 0
	}
	ready := func() bool { return c.finished.Load() >= target }
	if !ready() {
		// Run channel 0's queued work here rather than hand it to its
		// goroutine: two goroutine switches fewer per operation.
		c.channels[0].tryDrain(false)
	}
	if !ready() {
		if err := c.syncWaiter.Wait(ready, func() string { return "operations to complete" }); err != nil {
			return err
		}
	}
	if err := c.w.abort.Err(); err != nil {
		return err
	}
	c.recyclePlans()
	return nil
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
	c.stopFolded()
	c.w.release()
	if errors.Is(err, ErrAborted) {
		return nil // the abort was reported by the operations that saw it
	}
	return err
}

// release is called by each local communicator's Destroy once its
// goroutines have exited; the last one tears down what the world holds
// across processes.
func (w *world) release() {
	w.mu.Lock()
	w.released++
	last := w.released == len(w.local)
	w.mu.Unlock()
	if last {
		liveRanks.Add(-int64(len(w.local)))
	}
	if last && w.job != nil {
		w.job.teardown(w)
	}
}

// fail aborts the world because an operation on rank c cannot complete.
func (c *Comm) fail(ch int, err error) {
	if errors.Is(err, ErrAborted) {
		return
	}
	if j := c.w.job; j != nil && errors.Is(err, ErrTimeout) {
		// Where every rank of every process stands: the hang dump.
		err = fmt.Errorf("%w\n%s", err, j.dump())
	}
	c.w.abort.Trigger(fmt.Errorf("rank %d channel %d: %w", c.rank, ch, err))
}

// plan is one "kernel launch": the per-channel work of one group.
type plan struct {
	comm *Comm
	seq  uint64 // 1-based position in the communicator's stream
	// spin is the spin phase of the plan's waits: long while every runner
	// the plan keeps busy (ranks x channels with work) has a processor of
	// its own, zero when they outnumber the processors (see
	// proto.Waiter.SpinFor). Set at launch, read by the runners.
	spin time.Duration
	// noBackOff: the runners fit the processors (planSpin); see
	// proto.Waiter.NoBackOff. Set at launch with spin.
	noBackOff bool
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
