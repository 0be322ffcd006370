// The runner: a run's ranks, the threads that drive them, their buffers,
// and one operation's call on each rank (start, complete).

package perf

import (
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"

	"github.com/gccl/gccl/lib/ccl"
	"github.com/gccl/gccl/lib/exact"
	"github.com/gccl/gccl/lib/reduce"
)

// point is one row of a sweep: a size of one (type, op, root).
type point struct {
	size  int64
	dt    reduce.DataType
	op    reduce.Op
	root  int
	param int   // elements per call
	bytes int64 // the row's size column
	// sendLen and recvLen are the bytes of a call's send and recv buffers,
	// worked out once per point (newPoint): the timing loop's every call
	// slices them.
	sendLen, recvLen int
}

// newPoint is the point of one size, type, reduction and root.
func newPoint(t *Test, size int64, dt reduce.DataType, op reduce.Op, root, n int) point {
	p := point{size: size, dt: dt, op: op, root: root}
	p.param, p.bytes = t.Counts(size, dt.Size(), n)
	p.sendLen, p.recvLen = t.bufLens(p.param, dt.Size(), n)
	return p
}

// measurement is one placement of one point, combined over threads.
type measurement struct {
	timeUs  float64
	wrong   int64 // -1: not checked
	bitdiff int64
	iter    *iterStats
	iters   []float64 // per-iteration times in us (max over threads), when recorded
	stop    string    // with --precision: "precision" or "time-cap"
	chosen  ccl.Choice

	checkedWrong int64 // wrong elements --check-timed saw while timing
}

type iterStats struct{ minUs, maxUs, p99Us, cvPct, medUs float64 }

// rankBufs are one rank's buffers for a whole configuration: allocated for
// the largest size, with room for nccl-tests' buffer rotation.
type rankBufs struct {
	send, recv []byte
	// expect holds want's result when the run checks, ref the -K
	// reference output: allocated once, so checks make no garbage.
	expect, ref []byte
}

// runner drives the ranks of one configuration.
type runner struct {
	t     *Test
	o     *Options
	comms []Comm     // this process's ranks, consecutive from base
	bufs  []rankBufs // per rank of comms
	bar   *barrier   // the threads' barrier, across processes in a job
	job   *job       // nil: every rank in this process
	base  int        // the first rank of comms
	total int        // ranks in the whole run
	// intr is set by the first signal (nil: no watcher). The warm-up
	// looks at it, agreed over the job, between chunks of operations
	// (warmPoint); the timing loop between iterations when alone.
	intr *atomic.Bool
	// steps records the timed iterations' step timelines (--trace-steps);
	// nil without the flag.
	steps *stepTrace
	// alone: one thread drives every rank of the run (no job, -t 1), so
	// it may stop a point between two iterations without leaving a rank
	// waiting in a collective.
	alone bool
	// pinned: each thread runs on an OS thread of its own (a GPU backend's
	// groups and device are per thread). Not for the embedded stack: there
	// a pinned goroutine that yields or parks costs a hand-over between OS
	// threads, which at 16 ranks on 16 cores multiplied small-size times.
	pinned bool
	// workers are a pinned runner's threads: one goroutine per perf thread,
	// locked to its OS thread for the runner's life, as nccl-tests' threads
	// run a whole test. A fresh goroutine per batch landed on whichever OS
	// thread (and core, and NUMA node) was free, its caches cold. Made and
	// closed by the goroutine that drives the runner, the only one that
	// touches the slice.
	workers []chan func()
	// syms are the ranks' symmetric windows (-R 2 on the embedded
	// backend), devs their device streams (-D): nil otherwise. comms then
	// holds devs, whose calls launch the kernel.
	syms []*symRank
	devs []*devRank
}

// ThreadBound is implemented by backends whose calls must stay on one OS
// thread per perf thread.
type ThreadBound interface{ ThreadBound() bool }

// onThreads runs f(th) for every thread th at once and waits for all: on
// the thread's worker for a pinned runner, else on a fresh goroutine.
func (r *runner) onThreads(f func(th int)) {
	var wg sync.WaitGroup
	wg.Add(r.o.Threads)
	for th := 0; th < r.o.Threads; th++ {
		run := func() { defer wg.Done(); f(th) }
		if r.pinned {
			r.worker(th) <- run
		} else {
			go run()
		}
	}
	wg.Wait()
}

// worker returns thread th's worker, starting it the first time.
func (r *runner) worker(th int) chan<- func() {
	if r.workers == nil {
		r.workers = make([]chan func(), r.o.Threads)
	}
	if r.workers[th] == nil {
		ch := make(chan func())
		r.workers[th] = ch
		go func() {
			runtime.LockOSThread()
			defer runtime.UnlockOSThread()
			for f := range ch {
				f()
			}
		}()
	}
	return r.workers[th]
}

// close stops the workers and the device streams, and releases the
// windows: collectively when healthy (the run went well), else only what
// this process holds.
func (r *runner) close(healthy bool) error {
	for _, ch := range r.workers {
		if ch != nil {
			close(ch)
		}
	}
	r.workers = nil
	closeDevRanks(r.devs)
	r.devs = nil
	err := releaseSymmetric(r.syms, healthy)
	r.syms = nil
	return err
}

// newRunner drives comms, this process's ranks of a run of total.
func (e *engine) newRunner(comms []Comm) (*runner, error) {
	r := &runner{t: e.t, o: e.o, comms: comms, job: e.job, total: e.n, steps: e.steps}
	if e.intr != nil {
		r.intr, r.alone = &e.intr.asked, e.intr.alone.Load()
	}
	if tb, ok := e.be.(ThreadBound); ok {
		r.pinned = tb.ThreadBound()
	}
	if len(comms) > 0 {
		r.base = comms[0].Rank()
	}
	r.bar = newBarrier(e.o.Threads)
	if e.job != nil {
		r.bar.across = e.job.link.Barrier
	}
	mirrored := len(comms) > 0
	if mirrored {
		_, mirrored = comms[0].(mirrorComm)
	}
	if e.be.Name() == BackendEmbedded && e.o.Register == 2 {
		var err error
		if r.syms, err = symmetricBuffers(comms, bufBytes(e.o.MaxBytes, e.o.Unalign)); err != nil {
			r.close(false)
			return nil, fmt.Errorf("-R 2: %w", err)
		}
	}
	r.bufs = allocBuffers(len(comms), e.o.MaxBytes, e.o.Unalign, !mirrored, e.o.Check > 0 || e.o.CheckTimed, e.o.Bitwise > 0, r.syms)
	if e.dev != nil {
		devs, err := newDevRanks(comms, r.syms, e.dev, e.o.DeviceCTAs, e.o.RanksPerThread == 1)
		if err != nil {
			r.close(false)
			return nil, fmt.Errorf("-D %d: %w", e.o.DeviceImpl, err)
		}
		if len(devs) > 0 {
			e.devCoops = devs[0].v
		}
		r.devs, r.comms = devs, make([]Comm, len(devs))
		for i, d := range devs {
			r.comms[i] = d
		}
	}
	for th := 0; th < e.o.Threads && len(comms) > 0; th++ {
		if cs := r.threadComms(th); threadGroups(cs) {
			if s, ok := cs[0].(threadGroupSharer); ok {
				s.ShareThreadGroup(cs)
			}
		}
	}
	for i, c := range comms {
		if m, ok := c.(mirrorComm); ok {
			if err := m.Mirror(r.bufs[i].send, r.bufs[i].recv); err != nil {
				return nil, fmt.Errorf("rank %d: device buffers: %w", c.Rank(), err)
			}
		}
	}
	return r, nil
}

func (r *runner) n() int { return r.total }

// views returns rank's send and recv slices for a call of param elements at
// rotation slot shift (bytes), out of place or in place.
func (r *runner) views(rank int, p *point, inPlace bool, shift int) (send, recv []byte) {
	sendOff, recvOff := r.viewOffsets(rank, p, inPlace, shift)
	rb := r.bufs[rank-r.base]
	if inPlace {
		return rb.recv[sendOff:][:p.sendLen], rb.recv[recvOff:][:p.recvLen]
	}
	return rb.send[sendOff:][:p.sendLen], rb.recv[recvOff:][:p.recvLen]
}

// viewOffsets are where views' slices start: in the send and the recv
// buffer out of place, both in the recv buffer in place.
func (r *runner) viewOffsets(rank int, p *point, inPlace bool, shift int) (sendOff, recvOff int) {
	if !inPlace {
		return shift, shift
	}
	b := p.param * p.dt.Size()
	return shift + rank*r.t.sendInPlace*b, shift + rank*r.t.recvInPlace*b
}

// slotBytes is the span one call occupies, for rotation.
func (r *runner) slotBytes(p *point) int { return max(p.sendLen, p.recvLen, 1) }

// fit is how many rotation slots fit in the buffers.
func (r *runner) fit(p *point) int {
	return max(1, (len(r.bufs[0].recv)-r.unalignBytes(p))/r.slotBytes(p))
}

// slots is how many rotation slots the calls cycle through. --check-timed
// gives each of an iteration's -m operations a slot of its own (in place, a
// second operation on the same slot would reduce the first one's output).
func (r *runner) slots(p *point) int {
	if r.o.CheckTimed {
		return r.o.AggIters
	}
	return r.fit(p)
}

// slotShift is the byte offset of rotation slot s.
func (r *runner) slotShift(p *point, s int) int { return r.unalignBytes(p) + r.slotBytes(p)*s }

func (r *runner) unalignBytes(p *point) int { return r.o.Unalign * p.dt.Size() }

// call runs one operation on rank at rotation iteration iter.
func (r *runner) call(c Comm, p *point, inPlace bool, iter int) error {
	shift := r.slotShift(p, iter%r.slots(p))
	if d, ok := c.(*devRank); ok {
		sendOff, recvOff := r.viewOffsets(c.Rank(), p, inPlace, shift)
		return d.launch(devLaunch{sendOff: sendOff, recvOff: recvOff, inPlace: inPlace, count: p.param, dt: p.dt})
	}
	send, recv := r.views(c.Rank(), p, inPlace, shift)
	op := ccl.RedOp{Op: p.op}
	if p.op == reduce.PreMulSum {
		op.Scalar = exact.Scalar(p.dt)
	}
	return r.t.run(c, callArgs{send: send, recv: recv, count: p.param, dt: p.dt, op: op, root: p.root})
}

// threadComms are the ranks thread th drives (-g of them).
func (r *runner) threadComms(th int) []Comm {
	g := r.o.RanksPerThread
	return r.comms[th*g : (th+1)*g]
}

// start enqueues one operation (or -m of them in one group) on every rank
// of the thread.
func (r *runner) start(cs []Comm, p point, inPlace bool, iter int) (err error) {
	agg := r.o.AggIters
	if threadGroups(cs) {
		// One group around every rank of the thread (nccl-tests'
		// startColl), or the first rank's call would wait for the others.
		if err := cs[0].GroupStart(); err != nil {
			return err
		}
		defer func() {
			if endErr := cs[0].GroupEnd(); err == nil {
				err = endErr
			}
		}()
	}
	for _, c := range cs {
		if agg > 1 {
			if err := c.GroupStart(); err != nil {
				return err
			}
		}
		for a := 0; a < agg; a++ {
			if err := r.call(c, &p, inPlace, iter*agg+a); err != nil {
				return err
			}
		}
		if agg > 1 {
			if err := c.GroupEnd(); err != nil {
				return err
			}
		}
	}
	return nil
}

func complete(cs []Comm) error {
	for _, c := range cs {
		if err := c.Synchronize(); err != nil {
			return err
		}
	}
	return nil
}
