// comm.go: the communicator (Comm) and the world its ranks share: creation
// (InitAll, newWorld, start), the hosts, the accessors, Synchronize, Abort
// and Destroy. Connections are in conn.go, plans in plan.go.

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

	"github.com/gccl/gccl/lib/board"
	"github.com/gccl/gccl/lib/cpuset"
	"github.com/gccl/gccl/lib/hostload"
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

	// load tells how many of the processors other programs keep busy
	// (freeProcs): the process's sampler for a world of one process, the
	// world's own across processes (the job's processes on this host
	// counted as its own, set once the job has started). Set by InitAll
	// or the job's set-up; read by every plan.
	load atomic.Pointer[hostload.Sampler]

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
	// dev is the device API's state: windows, device communicators (devmeet.go).
	dev devWorld
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
	lastSpin     proto.SpinPlan                                     // the last plan's spin, for Synchronize
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
	fold       *foldMark
	ownFold    foldMark
	progress   *opCounters   // enqueued/finished in shared memory (a job across processes), else nil
	marks      completions   // completion marks (marks.go)
	syncWaiter *proto.Waiter // wakes Synchronize; no timeout (work times out)
	// trace is the step timeline being recorded (trace.go), nil when it is
	// not: set by the calling goroutine with nothing in flight, handed to
	// the runners in each plan. traceKept keeps the tracks while it is off;
	// groupLabel names the group a collective of sends and receives makes.
	// traceEvery samples it: the operations at stream positions that are
	// multiples of it are recorded (1: all); traceNext is the next such
	// position. All five the calling goroutine's.
	trace, traceKept      *rankTrace
	traceEvery, traceNext uint64
	groupLabel            string
	stop                  *proto.Abort // triggered by Destroy: channel goroutines exit when idle
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
	w.load.Store(processLoad())
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
		// loopback, 128 MiB allreduce faster than with 1 MiB; commit
		// 179cfca; docs/PERFORMANCE.md, "The Simple buffer size" and
		// "Across hosts"; docs/log/performance-2026-11.md 13d).
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
		c := &Comm{w: w, rank: r, stop: proto.NewAbort(), traceEvery: 1}
		c.force = forced{algo: set.algo, proto: set.proto, nChannels: set.nChannels, maxCh: set.maxCh}
		c.ringConns = make([][proto.NumProtocols]*ringConn, set.maxCh)
		c.chainConns = make([][proto.NumProtocols]*ringConn, set.maxCh)
		c.treeConns = make([][proto.NumProtocols]*prims.TreeEnds, set.maxCh)
		c.syncWaiter = proto.NewWaiter(w.abort, 0)
		c.fold = &c.ownFold
		for ch := 0; ch < set.maxCh; ch++ {
			c.channels = append(c.channels, newChannel(c, ch))
		}
		if set.traceSteps > 0 {
			c.startTrace(set.traceSteps)
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
	c.syncWaiter.SpinFor, c.syncWaiter.KeepProc = c.lastSpin.For, c.lastSpin.KeepProc
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

// live says the world's ranks are in use: not yet all released, not
// aborted. Its sampler (w.load) stops when it says no.
func (w *world) live() bool {
	if w.abort.Aborted() {
		return false
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.released < len(w.local)
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
