package ccl

import (
	"fmt"
	"iter"
	"runtime"
	"sync/atomic"
	"time"

	"github.com/gccl/gccl/lib/proto"
	"github.com/gccl/gccl/lib/shm"
)

// Folding: a plan whose runners (ranks x channels with work) outnumber the
// processors runs each rank's channel parts on fewer goroutines, drivers,
// with each part a coroutine (iter.Pull). Driver d is channel d's runner
// and runs the parts of channels d, d+D, d+2D... A part that would wait
// hands the goroutine back to its driver (proto.Suspender), which resumes
// whichever part can go on, and spins, yields and parks for all of them at
// once when none can. The goroutines that wait then fit the processors:
// D per rank, not one per channel. Without it, 8 and 16 ranks x 4 channels
// on 16 cores took a flat time per allreduce from 2 KiB to 1 MiB, every
// ring step a wake-up through the scheduler (docs/PERFORMANCE.md, "Many
// ranks in one process"; docs/log/performance-2026-11.md 12q).
//
// Across processes a channel's waiter sleeps on a futex bell that posters
// of other processes ring; while its driver parks, the bell relays those
// rings to the driver's own bell in the same segment (proto.Bell), and
// kicks from other processes follow the fold through the rank's shared
// counters (job.remoteKick).

// runnerProcs is the processors of procs that one process's channel
// runners may fill before its plans fold: all but one in 32, left to
// whoever else must run (the callers in Synchronize, idle channel
// goroutines on their way to sleep, Go's runtime, the OS). The more
// runners spin, the likelier one of them is held up by something else and
// stalls its ring. Measured on a 64-core Xeon VM, 32 ranks of one process,
// allreduce: 2 channels a rank, 64 runners on 64 processors, ran 128 KiB-
// 2 MiB tens of times slower than folded onto one driver a rank, the
// spinning runners holding every processor while the others waited for
// one (a Go trace showed goroutines runnable without a processor for most
// of their time). On a 16-core Xeon, 8 ranks x 2 channels (16 runners)
// ran slower folded than unfolded: hosts under 32 processors keep every
// one (docs/PERFORMANCE.md, "Many ranks on 64 cores").
func runnerProcs(procs int) int {
	return procs - procs/32
}

// foldDrivers is how many drivers each of n ranks runs a plan's nCh
// channels with on procs processors: as many as fit (at least one), or 0
// when every channel has a processor and nothing folds.
func foldDrivers(n, nCh, procs int) int {
	if n <= 1 {
		return 0 // one rank runs no channel
	}
	return driversFor(n, nCh, procs)
}

// driversFor is foldDrivers for ranks of a larger world: those of one
// process of a world across processes.
func driversFor(ranks, nCh, procs int) int {
	if nCh <= 1 || ranks*nCh <= procs || foldOff.Load() {
		return 0
	}
	return max(procs/ranks, 1)
}

// processFoldProcs is the runners a process of a world across processes
// gives its ranks' channels before they fold (world.foldProcs): its
// usable processors less one for its callers, at least one; 0 (never
// fold) when the host's processes outnumber its processors. Each process
// then runs only part of the time, and the host's scheduler sets the
// pace: measured on the 2-core VM against a build with folding turned
// off, 3 and 4 processes of 3-4 channels each ran Ring/Simple allreduces
// of 2 KiB-1 MiB slower folded than not (docs/log/performance-2026-11.md
// 12t).
func processFoldProcs(gomaxprocs, cpus, hostProcesses, hostProcs int) int {
	if hostProcs > 0 && hostProcesses > hostProcs {
		return 0
	}
	return max(usableProcs(gomaxprocs, cpus)-1, 1)
}

// drivers is how many drivers each of w's ranks in this process runs a
// plan's nCh channels with, procs processors free (freeProcs).
//
// In one process that is foldDrivers over the world's ranks. Across
// processes each process folds its own ranks' channels onto its own
// processors (its Go runtime's share) less one: a process's goroutines
// get none of another's processors, and the caller that waits in
// Synchronize beside its channels' runners needs one. Measured on the
// 16-core Xeon, 8 processes of 2 processors each: 2 channels a rank,
// which fit the host exactly, ran Ring/Simple allreduces of 2 KiB-1 MiB
// far slower than one channel, unfolded or folded onto 2 drivers
// (docs/log/performance-2026-11.md 12t).
func (w *world) drivers(nCh, procs int) int {
	if w.job == nil {
		return foldDrivers(w.n, nCh, runnerProcs(procs))
	}
	if w.n <= 1 || w.foldProcs == 0 {
		return 0
	}
	return driversFor(len(w.local), nCh, w.foldProcs)
}

// foldOff is set only by tests of the unfolded channels on a host where
// they would fold (written by the test, read by every launch).
var foldOff atomic.Bool

// foldMark is a communicator's last folded plan: while it is unfinished,
// a kick of channel ch must reach the channel whose goroutine drives ch's
// part. Written by the enqueuing goroutine at a folded plan's launch
// (drivers first); read by kicks, in this process or (in shared memory)
// another.
type foldMark struct {
	plan    atomic.Uint64 // the plan's stream position
	drivers atomic.Int32  // its drivers per rank
}

func (m *foldMark) mark(plan uint64, drivers int) {
	m.drivers.Store(int32(drivers))
	m.plan.Store(plan)
}

// driverOf is the channel that drives channel ch's part while the marked
// plan is unfinished (finished plans: finished), if not ch itself.
func (m *foldMark) driverOf(ch int, finished uint64) (int, bool) {
	if m.plan.Load() <= finished {
		return 0, false
	}
	d := int(m.drivers.Load())
	if d <= 0 || ch < d {
		return 0, false
	}
	return ch % d, true
}

// foldPart is one channel's coroutine and the wait it is suspended in. All
// of it is owned by the goroutine that drives the part (the holder of its
// driver channel's running flag, for one plan at a time: plans start only
// after the previous one finished) and by the coroutine it resumes: the
// two never run at once.
type foldPart struct {
	ch    *channel
	next  func() (struct{}, bool) // resumes the coroutine
	stop  func()                  // ends it (Destroy)
	yield func(struct{}) bool     // suspends it, back to the driver

	work *chanWork // the part to run
	done bool      // the part has returned
	err  error     // what it returned

	cmd    proto.FoldCmd // what the suspended wait does when resumed
	began  bool          // the part began a new wait since it was resumed: it moved
	since  time.Time     // when its wait began (kicks and the timeout count from it)
	kicked bool          // its wait was told to kick
}

// Suspend implements proto.Suspender for the part's coroutine.
func (f *foldPart) Suspend(begin bool) proto.FoldCmd {
	if begin {
		f.began, f.since, f.kicked = true, time.Now(), false
	}
	if !f.yield(struct{}{}) {
		return proto.FoldStopped // stopped mid-wait: only a Destroy does that
	}
	return f.cmd
}

// body is the coroutine: it runs one part each time it is resumed after
// the last one finished.
func (f *foldPart) body(yield func(struct{}) bool) {
	f.yield = yield
	for {
		f.err = f.ch.runParts(f.work)
		f.done = true
		if !yield(struct{}{}) {
			return
		}
	}
}

// start begins the part of w on channel ch, running it up to its first
// wait that is not ready.
func (f *foldPart) start(ch *channel, w *chanWork) {
	if f.next == nil {
		f.ch = ch
		f.next, f.stop = iter.Pull(f.body)
	}
	// The part's waits look a few times, then come back here at once.
	ch.waiter.SpinFor, ch.waiter.NoBackOff, ch.waiter.Fold = 0, false, f
	ch.waiter.Trace = w.plan.trace.channel(ch.id)
	f.work, f.done, f.err = w, false, nil
	f.next()
}

// resume resumes the part's wait with cmd and reports whether the part
// moved: finished, or went on to another wait. A part that has finished
// is never resumed (its coroutine would run the part again).
func (f *foldPart) resume(cmd proto.FoldCmd) bool {
	if f.done {
		return true
	}
	f.cmd, f.began = cmd, false
	f.next()
	return f.done || f.began
}

// runFolded runs the parts of the folded plan pl that ch drives: those of
// the channels ch.id, ch.id+D, ... (the caller holds ch's running flag).
func (ch *channel) runFolded(pl *plan) {
	c := ch.comm
	live := ch.foldLive[:0]
	for i := ch.id; i < len(pl.work); i += pl.drivers {
		if w := &pl.work[i]; len(w.colls) > 0 || len(w.rounds) > 0 {
			f := &c.channels[i].fold
			f.start(c.channels[i], w)
			if !f.done {
				live = append(live, f)
			}
		}
	}
	if len(live) > 0 {
		ch.foldLive = ch.driveFolded(live, pl)
	}
	for i := ch.id; i < len(pl.work); i += pl.drivers {
		f := &c.channels[i].fold
		if f.work == &pl.work[i] {
			c.channels[i].waiter.Fold, f.work = nil, nil
			if f.err != nil {
				c.fail(i, f.err)
			}
		}
	}
}

// driveFolded resumes live's parts until all of them finished, and
// returns live emptied. A round resumes every part to look at its word
// once. When a round moves none, the driver waits like any wait: spins
// (pl's spin), yields, tells the parts to kick the peers they wait for,
// then parks on behalf of all of them. An abort or a part's timeout
// resumes the parts to return the error.
func (ch *channel) driveFolded(live []*foldPart, pl *plan) []*foldPart {
	c, d := ch.comm, ch.foldWaiter
	var idleSince time.Time
	for idle := 0; len(live) > 0; {
		cmd := proto.FoldLook
		if c.w.abort.Aborted() {
			cmd = proto.FoldAbort
		}
		if c.roundFolded(&live, cmd) {
			idle = 0
			continue
		}
		// Nothing moved: spin, then yield, then park. Every part's wait
		// looked at its word spinIters times before it came back, so a few
		// rounds are enough before the clock is read.
		idle++
		if idle <= foldLookRounds {
			continue
		}
		now := time.Now()
		if idle == foldLookRounds+1 {
			idleSince = now
		}
		waited := now.Sub(idleSince)
		if waited < pl.spin.For {
			continue
		}
		if waited < pl.spin.For+d.YieldFor {
			runtime.Gosched()
			if c.w.job != nil {
				// The peers may be other processes waiting for this
				// core: Gosched yields only to this process's goroutines.
				shm.Yield()
			}
			c.kickFolded(live, kickAfterFold)
			continue
		}
		c.kickFolded(live, 0)
		if err := ch.parkFolded(live); err != nil {
			c.timeOutFolded(live)
		}
		idle = 0
	}
	return live
}

// roundFolded resumes every part of *live with cmd once, drops those that
// finished, and reports whether any moved.
func (c *Comm) roundFolded(live *[]*foldPart, cmd proto.FoldCmd) bool {
	moved, k := false, 0
	for _, f := range *live {
		if f.resume(cmd) {
			moved = true
		}
		if !f.done {
			(*live)[k] = f
			k++
		}
	}
	*live = (*live)[:k]
	return moved
}

// foldLookRounds is how many rounds over the parts find nothing ready
// before the driver reads the clock: each round costs a coroutine switch
// per part (a fraction of a microsecond on the 2-core VM).
const foldLookRounds = 4

// kickAfterFold is how long a part waits before the driver has it kick
// the peer it waits for: the kick of WaitKick's yield phase.
const kickAfterFold = 10 * time.Microsecond

// kickFolded has the parts that have waited more than after kick their
// peers.
func (c *Comm) kickFolded(live []*foldPart, after time.Duration) {
	for _, f := range live {
		if !f.done && !f.kicked && (after == 0 || time.Since(f.since) > after) {
			f.kicked = true
			f.resume(proto.FoldKick)
		}
	}
}

// parkFolded parks the driver until one of live's parts moves, on behalf
// of all their channels' waiters. It returns an error when the oldest wait
// timed out or the world aborted.
func (ch *channel) parkFolded(live []*foldPart) error {
	waiters := ch.foldWaiters[:0]
	oldest := time.Now()
	for _, f := range live {
		if !f.done {
			waiters = append(waiters, f.ch.waiter)
			if f.since.Before(oldest) {
				oldest = f.since
			}
		}
	}
	ch.foldWaiters = waiters[:0]
	// Parts are resumed to look (a wait's word is its coroutine's to
	// read), after their waiters were marked sleeping.
	moved := func() bool {
		for _, f := range live {
			if f.resume(proto.FoldLook) {
				return true
			}
		}
		return false
	}
	what := func() string { // called when the driver parks (the hang dump's record)
		ids := make([]int, len(live))
		for i, f := range live {
			ids[i] = f.ch.id
		}
		return fmt.Sprintf("rank %d's folded channels %v to move", ch.rank, ids)
	}
	return ch.foldWaiter.ParkFor(waiters, moved, what, oldest)
}

// timeOutFolded ends the waits past the timeout; after an abort, every
// wait.
func (c *Comm) timeOutFolded(live []*foldPart) {
	abort := c.w.abort.Aborted()
	limit := c.w.set.timeout
	for _, f := range live {
		switch {
		case f.done:
		case abort:
			f.resume(proto.FoldAbort)
		case limit > 0 && time.Since(f.since) >= limit:
			f.resume(proto.FoldTimeout)
		}
	}
}

// stopFolded ends the channels' coroutines (Destroy, once no goroutine can
// run the channels' work).
func (c *Comm) stopFolded() {
	for _, ch := range c.channels {
		if ch.fold.stop != nil {
			ch.fold.stop()
		}
	}
}
