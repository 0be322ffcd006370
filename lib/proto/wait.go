// wait.go: the Waiter and its wait policy: spin, yield, park, with the
// back-off of the long spin, and the wake of a poster. The abort signal is
// in abort.go, bells across processes in bell.go, folded waits in fold.go.

package proto

import (
	"fmt"
	"runtime"
	"sync/atomic"
	"time"

	"github.com/gccl/gccl/lib/shm"
	"github.com/gccl/gccl/lib/steptrace"
)

// Wait policy: spin on the word, then yield the processor, then park.
// Spinning is short: Go preempts a spinning goroutine only after 10 ms, so a
// long spin on an oversubscribed machine (2 cores, dozens of channel
// goroutines) starves the goroutine it waits for. Yielding is bounded by
// time: a peer usually answers within microseconds, while a park costs a
// wake-up through the scheduler, and a parked peer makes its partner wait
// long enough to park too. Yielding is cheap when other goroutines need the
// processor: they run.
const spinIters = 64

// DefaultSpinFor is the spin phase of a wait whose communicator has a
// processor for every runner (see Waiter.SpinFor).
const DefaultSpinFor = 20 * time.Microsecond

// DefaultYieldFor bounds the yield phase of a wait.
var DefaultYieldFor = 50 * time.Microsecond

// Waiter parks one goroutine at a time (the runner of a channel, or a
// Synchronize caller) until a poster wakes it. Every FIFO end names the
// waiter of the channel that consumes it, so a poster wakes exactly the
// goroutine that may be waiting on its word.
//
// The words posters read (sleeping, wake, bell) sit on cache lines of
// their own, apart from what the waiting goroutine writes as it runs
// (SpinFor, the back-off, the timer) and from neighbouring objects: a
// poster reads sleeping on every post, and a line the waiter keeps
// writing would cross between the two cores every time.
type Waiter struct {
	_ [cacheLine]byte
	// sleeping is written by the waiting goroutine (1 just before it parks,
	// 0 when it resumes) and read by posters after they publish. Seq-cst
	// atomics make the Dekker pair (store sleeping, load word) / (store
	// word, load sleeping) safe: one side always sees the other.
	sleeping atomic.Int32
	wake     chan struct{} // capacity 1: a wake is never lost, extras are harmless
	// bell, when set, is where this waiter sleeps instead of on wake: a
	// futex word that a poster in another process can reach.
	bell *Bell
	// relay, while set, is where a wake goes instead of wake: the driver
	// of a folded channel (see Suspender), which parks once for all its
	// channels. Written by that driver before it marks this waiter
	// sleeping and cleared after; read by posters that saw sleeping.
	relay atomic.Pointer[Waiter]
	_     [cacheLine]byte

	timer *time.Timer // owned by the waiting goroutine

	Abort    *Abort
	Timeout  time.Duration // no progress for this long aborts; <= 0 waits forever
	YieldFor time.Duration // length of the yield phase
	// SpinFor extends the spin phase beyond spinIters checks. Set it only
	// when every goroutine that may wait has a processor of its own: then
	// the peer is running and yielding would only hand the scheduler a
	// chance to put both partners on one processor (Gosched goes through the
	// global run queue). When goroutines outnumber processors, leave it 0:
	// the peer may need this very processor.
	SpinFor time.Duration
	// NoBackOff keeps the SpinFor phase on every wait, misses or not: set
	// when the runners fill at most half the processors, so a peer that
	// is late is late, not queued behind this goroutine. Measured on a
	// 16-core Xeon: 8 ranks' tree allreduce of 8 B was over ten times
	// slower with the back-off (a late rank among 8 is the rule;
	// docs/log/performance-2026-11.md 12b).
	NoBackOff bool
	// KeepProc makes the yield phase of a wait with SpinFor set yield
	// the OS thread and keep the processor (shm.Yield), not the goroutine
	// (runtime.Gosched). Set it on hosts of many processors whose
	// runners fit them: there Gosched's global run queue held yielded
	// goroutines for milliseconds while every processor spun (see the
	// yield in slowWait). Leave it unset on small hosts: a goroutine this
	// one woke waits in its processor's next slot, and a waiter that
	// keeps the processor keeps it out (2 ranks after a pause on the
	// 2-vCPU VM: each operation paid a wake-up, 0.2 us -> 24 us).
	KeepProc bool

	// spinSkip counts the waits that skip the SpinFor phase because a
	// recent one ran out without the word changing: the peer was not
	// running beside us (both goroutines on one processor while another
	// sleeps, a convoy that costs a wake-up per operation), and spinning
	// only delays it. spinPenalty is the next miss's skip: it doubles with
	// every miss in a row (a convoy) up to spinBackoff, and a spin that
	// succeeds resets it, so one late peer (after a barrier) costs a wait
	// or two of yielding, not hundreds. Both owned by the waiting goroutine.
	spinSkip, spinPenalty int32

	// OnPark, when set, is told what the waiter waits for each time it is
	// about to sleep, and OnResume when it woke with its wait over: a
	// record that other processes read when the job hangs. Set once
	// before the waiter is used.
	OnPark   func(what string)
	OnResume func()

	// Trace, when set, records the waits that outlast their first spin
	// (see For): the step timeline of the channel this waiter belongs to.
	// Owned by the waiting goroutine: set by whoever runs the channel's
	// work, as SpinFor.
	Trace *steptrace.Buf

	// Fold, when set, takes this waiter's waits past their first look:
	// the waiting goroutine is a coroutine of a driver that runs several
	// channels in turn, and hands the processor back to it instead of
	// yielding or parking. Owned by the waiting goroutine (set and
	// cleared by the driver while the coroutine is suspended).
	Fold Suspender
	_    [cacheLine]byte
}

// A SpinPlan is how a waiter's waits spin and yield: its SpinFor,
// NoBackOff and KeepProc, as one value that a plan computes once and its
// runners' waiters take (SetSpin).
type SpinPlan struct {
	For       time.Duration
	NoBackOff bool
	KeepProc  bool
}

// SetSpin sets w's spin phase and yield from s. Called by the goroutine
// that owns w, as the fields it sets.
func (w *Waiter) SetSpin(s SpinPlan) {
	w.SpinFor, w.NoBackOff, w.KeepProc = s.For, s.NoBackOff, s.KeepProc
}

// Spinning is w's spin phase and yield as a SpinPlan.
func (w *Waiter) Spinning() SpinPlan { return SpinPlan{w.SpinFor, w.NoBackOff, w.KeepProc} }

// cacheLine is the padding that keeps words apart: a cache line on the
// CPUs this runs on.
const cacheLine = 64

// spinBackoff is the most waits that skip the long spin after misses.
const spinBackoff = 256

// NewWaiter returns a waiter bound to an abort signal and a timeout.
func NewWaiter(abort *Abort, timeout time.Duration) *Waiter {
	return &Waiter{wake: make(chan struct{}, 1), Abort: abort, Timeout: timeout, YieldFor: DefaultYieldFor}
}

// For names what the next wait of a traced waiter waits for: on, and the
// peer rank (-1: none, or several). Untraced, it does nothing. Every
// traced wait's caller names it; a wait that ends within its first spin
// records nothing and leaves the name to the next.
func (w *Waiter) For(on steptrace.On, peer int) {
	if w.Trace != nil {
		w.Trace.NameWait(on, peer)
	}
}

// traceWait records a wait that began at start, named by For, with its
// description when it lasted steptrace.DescribeAfter.
func (w *Waiter) traceWait(start int64, what func() string) {
	end := steptrace.Now()
	desc := ""
	if end-start >= steptrace.DescribeAfter {
		desc = what()
	}
	w.Trace.Wait(desc, start, end)
}

// Wake is called by a poster after it published a word the waiter may be
// waiting for. Its usual case (an awake waiter of this process) is inlined:
// a poster looks at every reader's sleeping word on every post.
func (w *Waiter) Wake() {
	if w != nil && w.bell == nil && w.sleeping.Load() == 0 {
		return
	}
	w.wake1()
}

// wake1 is Wake; it reports whether it readied a parked goroutine of
// this process.
func (w *Waiter) wake1() bool {
	if w == nil {
		return false
	}
	if w.bell != nil {
		w.bell.ring()
		return false
	}
	if w.sleeping.Load() != 0 {
		if r := w.relay.Load(); r != nil {
			w = r // its driver: sleeping on this waiter's behalf
		}
		select {
		case w.wake <- struct{}{}:
			return true
		default:
		}
	}
	return false
}

// Wait returns nil once ready() is true, ErrAborted (wrapped) if the abort
// signal fires, or an ErrTimeout error after Timeout without ready().
// what describes the wait for the timeout message.
func (w *Waiter) Wait(ready func() bool, what func() string) error {
	return w.WaitKick(ready, nil, what)
}

// WaitKick is Wait that calls kick once if ready() is not true at once:
// kick asks whoever must act for ready() to become true to get going (a
// peer channel whose queued work nobody has started yet).
//
// The kick waits a little (kickAfter): the peer's own caller usually runs
// the work itself within a microsecond, and waking its idle goroutine early
// only makes the two race for it.
func (w *Waiter) WaitKick(ready func() bool, kick func(), what func() string) error {
	return w.waitKick(ready, kick, what, w.YieldFor)
}

// WaitKickYield is WaitKick with the yield phase bounded by yieldFor
// instead of w.YieldFor: for a wait on several FIFOs, the least of their
// Fifo.YieldFor.
func (w *Waiter) WaitKickYield(ready func() bool, kick func(), what func() string, yieldFor time.Duration) error {
	return w.waitKick(ready, kick, what, yieldFor)
}

// waitKick is WaitKick with the yield phase bounded by yieldFor.
func (w *Waiter) waitKick(ready func() bool, kick func(), what func() string, yieldFor time.Duration) error {
	return w.waitKickPark(ready, ready, nil, kick, what, yieldFor)
}

// WaitKickPark is WaitKickYield that parks on parkReady, after calling
// parking (when set): for a wait whose ready does work only a waiter that
// spins should do (a rank polling a socket, see Fifo.Hold).
func (w *Waiter) WaitKickPark(ready, parkReady func() bool, parking func(), kick func(), what func() string, yieldFor time.Duration) error {
	return w.waitKickPark(ready, parkReady, parking, kick, what, yieldFor)
}

func (w *Waiter) waitKickPark(ready, parkReady func() bool, parking func(), kick func(), what func() string, yieldFor time.Duration) error {
	var t0 int64
	if w.Trace != nil {
		t0 = steptrace.Now()
	}
	for i := 0; i < spinIters; i++ {
		if ready() {
			return nil
		}
	}
	err := w.slowWait(ready, parkReady, parking, kick, what, yieldFor)
	if w.Trace != nil {
		w.traceWait(t0, what)
	}
	return err
}

// slowWait is a wait past its first spin: the long spin, the yields, the
// park.
func (w *Waiter) slowWait(ready, parkReady func() bool, parking func(), kick func(), what func() string, yieldFor time.Duration) error {
	if w.Fold != nil {
		return w.foldWait(ready, kick, what)
	}
	start := time.Now()
	// A waiter on a bell does not back off: its peer is another process,
	// on a core of its own when SpinFor is set, so a missed spin says it
	// was late, not that it shares this processor (measured: the back-off
	// made every 8 B allreduce of 2 processes park; commit ce84639).
	if w.SpinFor > 0 && (w.spinSkip == 0 || !w.backsOff()) {
		if w.longSpin(ready, start) {
			return nil
		}
	} else if w.spinSkip > 0 {
		w.spinSkip--
	}
	kicked := kick == nil
	for i := 0; i < spinIters || i%16 != 0 || time.Since(start) < yieldFor; i++ {
		if w.Abort.Aborted() {
			return w.Abort.Err()
		}
		// Every turn, not every few: a network proxy of this process
		// needs the processor too (2 hosts' 8 B allreduce between
		// namespaces was slower when only every 4th turn yielded to Go;
		// commit 8d23691).
		// A wait whose runners fit a host of many processors (KeepProc)
		// yields its OS thread, keeping its processor, not the goroutine:
		// Gosched puts it on the runtime's global run queue, which a
		// processor serves only when its goroutine enters the scheduler,
		// and a Gosched wakes no idle processor. With every runner
		// spinning on its own processor, yielded goroutines queued there
		// for milliseconds: on the 64-core host, 96% of the scheduling
		// delay of stalled Device API runs followed a Gosched, and the
		// runs stayed stalled (docs/data/cpu64/steal.md). Elsewhere
		// Gosched is the point: where runners outnumber the processors
		// the peer may need this one, and on a small host the peer this
		// goroutine just woke waits on this processor (see KeepProc).
		if w.SpinFor > 0 && w.KeepProc {
			shm.Yield()
		} else {
			runtime.Gosched()
		}
		if w.bell != nil {
			// The peer may be another process waiting for this core:
			// Gosched yields only to this process's goroutines.
			shm.Yield()
		}
		if ready() {
			return nil
		}
		if !kicked && i%16 == 15 && time.Since(start) > kickAfter {
			kick()
			kicked = true
		}
	}
	if !kicked {
		kick()
	}
	if parking != nil {
		parking()
	}
	return w.park(parkReady, what, start)
}

// longSpin is a wait's SpinFor phase; it reports whether ready came. A
// spin that runs out makes the next waits skip theirs (the back-off); one
// that succeeds resets it.
func (w *Waiter) longSpin(ready func() bool, start time.Time) bool {
	for i := 1; ; i++ {
		if ready() {
			w.spinPenalty = 0
			return true
		}
		if i%spinIters == 0 && (time.Since(start) > w.SpinFor || w.Abort.Aborted()) {
			w.missedSpin()
			return false
		}
	}
}

// Spin waits for ready by spinning alone, for SpinFor (nothing when it is
// 0), and reports whether ready came: a wait for the slowest of many
// peers (the one-shot's), where a miss is the rule with many ranks, not a
// sign that the peer shares this processor, so unlike WaitKick it keeps
// no back-off (which made every wait of 16 ranks on 16 cores yield and
// park, an 8 B one-shot many times slower; commit 7e707df). The clock is
// read once per 256 looks, from the 256th on.
// The caller goes on to WaitKick when it returns false.
func (w *Waiter) Spin(ready func() bool) bool { return w.spin(ready) > 0 }

// SpinWaitKick waits for ready as Spin does, then as WaitKick if it did
// not come: one wait, recorded as one when traced (when it outlasts
// spinIters looks).
func (w *Waiter) SpinWaitKick(ready func() bool, kick func(), what func() string) error {
	if w.Trace == nil {
		if w.spin(ready) > 0 {
			return nil
		}
		return w.WaitKick(ready, kick, what)
	}
	t0 := steptrace.Now()
	if looks := w.spin(ready); looks > 0 {
		if looks > spinIters {
			w.traceWait(t0, what)
		}
		return nil
	}
	spun := w.SpinFor > 0 && w.Fold == nil
	for i := 0; i < spinIters; i++ {
		if ready() {
			if spun {
				w.traceWait(t0, what)
			}
			return nil
		}
	}
	err := w.slowWait(ready, ready, nil, kick, what, w.YieldFor)
	w.traceWait(t0, what)
	return err
}

// backsOff says whether a missed spin makes w's next waits skip theirs:
// not with NoBackOff, nor on a bell (a peer in another process runs on a
// core of its own when SpinFor is set, so a miss says it was late).
func (w *Waiter) backsOff() bool { return !w.NoBackOff && w.bell == nil }

// missedSpin is a spin that ran out: the next waits skip theirs, twice as
// many as after the last miss in a row, at most spinBackoff.
func (w *Waiter) missedSpin() {
	w.spinPenalty = min(max(2*w.spinPenalty, 1), spinBackoff)
	w.spinSkip = w.spinPenalty
}

// spin is Spin; it returns the looks ready took to come, 0 if it did not.
// A waiter that backs off (not NoBackOff, no bell: a small host whose
// runners fill more than half of it) skips it after a miss as slowWait
// skips its long spin, and a miss here counts toward that back-off: there
// a miss does say the peer waits for this processor, and spinning out
// every one-shot wait kept 2 ranks on 2 vCPUs in a convoy of one 20 us
// spin an operation (a record's median 22 us against 0.2) whenever
// per-iteration timing had let one of them park.
func (w *Waiter) spin(ready func() bool) int {
	if w.SpinFor <= 0 || w.Fold != nil {
		return 0
	}
	backsOff := w.backsOff()
	if backsOff && w.spinSkip > 0 {
		return 0 // slowWait counts the skip down
	}
	// The clock starts at the first 256 looks: a wait that ends sooner
	// (the usual one) reads no clock at all, and SpinFor is not exact to
	// a few hundred looks anyway.
	var start time.Time
	for i := 1; ; i++ {
		if ready() {
			if backsOff {
				w.spinPenalty = 0
			}
			return i
		}
		if i%256 == 0 {
			if i == 256 {
				start = time.Now()
			} else if time.Since(start) > w.SpinFor || w.Abort.Aborted() {
				if backsOff {
					w.missedSpin()
				}
				return 0
			}
		}
	}
}

// kickAfter is how long a wait lets a peer's queued work start by itself
// before it wakes the peer channel's goroutine.
const kickAfter = 10 * time.Microsecond

// Park waits like Wait but skips spinning and yielding: for a goroutine
// that knows the word will not change soon (an idle channel whose work
// another goroutine is running).
func (w *Waiter) Park(ready func() bool, what func() string) error {
	return w.park(ready, what, time.Now())
}

func (w *Waiter) park(ready func() bool, what func() string, start time.Time) error {
	if w.bell != nil {
		return w.parkBell(ready, what, start)
	}
	for {
		if w.Abort.Aborted() {
			return w.Abort.Err()
		}
		w.sleeping.Store(1)
		if ready() {
			w.sleeping.Store(0)
			return nil
		}
		var timeout <-chan time.Time
		if w.Timeout > 0 {
			left := w.Timeout - time.Since(start)
			if left <= 0 {
				w.sleeping.Store(0)
				return fmt.Errorf("%w after %v waiting for %s", ErrTimeout, w.Timeout, what())
			}
			if w.timer == nil {
				w.timer = time.NewTimer(left)
			} else {
				w.timer.Reset(left)
			}
			timeout = w.timer.C
		}
		select {
		case <-w.wake:
		case <-w.Abort.Done():
		case <-timeout:
		}
		if w.timer != nil {
			w.timer.Stop()
		}
		w.sleeping.Store(0)
		if ready() {
			return nil
		}
	}
}
