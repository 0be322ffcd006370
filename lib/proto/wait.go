package proto

import (
	"errors"
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"

	"github.com/gccl/gccl/lib/shm"
)

// ErrAborted is returned by every wait once the communicator is aborted.
var ErrAborted = errors.New("communicator aborted")

// ErrTimeout is wrapped by a wait that saw no progress within the timeout.
var ErrTimeout = errors.New("timed out")

// Abort is the abort signal shared by every goroutine of a set of
// communicators. Set once; never reset.
type Abort struct {
	// set is written once by Trigger (any goroutine) and loaded by every wait.
	set  atomic.Bool
	once sync.Once
	done chan struct{} // closed by Trigger: wakes parked waiters
	err  error         // written once inside once.Do, before done is closed

	mu    sync.Mutex
	hooks []func() // guarded by mu: run by Trigger (waiters asleep on a futex)
}

// OnTrigger runs fn when the abort triggers (at once if it has): how a
// waiter asleep on a futex, which no Go channel can wake, hears of it.
func (a *Abort) OnTrigger(fn func()) {
	a.mu.Lock()
	if !a.set.Load() {
		a.hooks = append(a.hooks, fn)
		a.mu.Unlock()
		return
	}
	a.mu.Unlock()
	fn()
}

// NewAbort returns an untriggered abort signal.
func NewAbort() *Abort { return &Abort{done: make(chan struct{})} }

// Trigger aborts with cause (the first cause wins). Safe from any goroutine.
func (a *Abort) Trigger(cause error) {
	a.once.Do(func() {
		if cause == nil {
			cause = ErrAborted
		}
		a.err = cause
		a.mu.Lock()
		a.set.Store(true)
		hooks := a.hooks
		a.hooks = nil
		a.mu.Unlock()
		close(a.done)
		for _, fn := range hooks {
			fn()
		}
	})
}

// Aborted reports whether Trigger was called.
func (a *Abort) Aborted() bool { return a.set.Load() }

// Err returns the first cause, wrapped so that errors.Is(err, ErrAborted)
// holds, or nil before Trigger.
func (a *Abort) Err() error {
	if !a.set.Load() {
		return nil // small enough to inline: every call checks it
	}
	return a.cause()
}

func (a *Abort) cause() error {
	<-a.done // err is published before done is closed
	if errors.Is(a.err, ErrAborted) {
		return a.err
	}
	return fmt.Errorf("%w: %w", ErrAborted, a.err)
}

// Done is closed when the abort is triggered.
func (a *Abort) Done() <-chan struct{} { return a.done }

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
	// 16-core Xeon: 8 ranks' tree allreduce of 8 B took 150-180 us with
	// the back-off (a late rank among 8 is the rule) and 9-10 us without.
	NoBackOff bool

	// spinSkip counts the waits that skip the SpinFor phase because a
	// recent one ran out without the word changing: the peer was not
	// running beside us (both goroutines on one processor while another
	// sleeps, a convoy that costs a wake-up per operation), and spinning
	// only delays it. spinPenalty is the next miss's skip: it doubles with
	// every miss in a row (a convoy) up to spinBackoff, and a spin that
	// succeeds resets it, so one late peer (after a barrier) costs a wait
	// or two of yielding, not hundreds. Both owned by the waiting goroutine.
	spinSkip, spinPenalty int

	// OnPark, when set, is told what the waiter waits for each time it is
	// about to sleep, and OnResume when it woke with its wait over: a
	// record that other processes read when the job hangs. Set once
	// before the waiter is used.
	OnPark   func(what string)
	OnResume func()

	// Fold, when set, takes this waiter's waits past their first look:
	// the waiting goroutine is a coroutine of a driver that runs several
	// channels in turn, and hands the processor back to it instead of
	// yielding or parking. Owned by the waiting goroutine (set and
	// cleared by the driver while the coroutine is suspended).
	Fold Suspender
	_    [cacheLine]byte
}

// Suspender is the driver of folded channels: several channels' work run
// as coroutines of one goroutine, so that a rank's channels past the
// processors take one processor, not one each.
type Suspender interface {
	// Suspend hands the processor back to the driver until it resumes
	// the wait, and returns what the wait does then. begin is true on the
	// first suspension of a wait. It takes none of the wait's closures, so
	// they stay on the waiting goroutine's stack (a wait allocates nothing).
	Suspend(begin bool) FoldCmd
}

// FoldCmd is what a driver resumes a folded wait with.
type FoldCmd uint8

const (
	FoldLook    FoldCmd = iota // look at the word again
	FoldKick                   // kick the peer (once a wait), then look
	FoldAbort                  // the communicators aborted: return the error
	FoldTimeout                // the wait has lasted Timeout: return ErrTimeout
	FoldStopped                // the driver is gone (its communicator destroyed): return ErrAborted
)

// foldWait is a wait of a folded channel: its goroutine is a coroutine of
// the driver, which resumes it to look at the word, to kick the peer, or
// to end it.
func (w *Waiter) foldWait(ready func() bool, kick func(), what func() string) error {
	kicked := kick == nil
	for begin := true; ; begin = false {
		switch w.Fold.Suspend(begin) {
		case FoldKick:
			if !kicked {
				kicked = true
				kick()
			}
		case FoldAbort:
			if err := w.Abort.Err(); err != nil {
				return err
			}
		case FoldTimeout:
			return fmt.Errorf("%w after %v waiting for %s", ErrTimeout, w.Timeout, what())
		case FoldStopped:
			return fmt.Errorf("%w: the channel's driver stopped while waiting for %s", ErrAborted, what())
		}
		if ready() {
			return nil
		}
	}
}

// cacheLine is the padding that keeps words apart: a cache line on the
// CPUs this runs on.
const cacheLine = 64

// Bell is a waiter's doorbell in memory shared between processes: a
// poster that may run in another process wakes the waiter through it. It
// holds no Go pointers; place it with BellAt.
type Bell struct {
	// sleeping is 1 while the waiter may be asleep: written by the waiter
	// only, read by posters after they publish (the Dekker pair of Waiter).
	sleeping atomic.Uint32
	// seq is the futex word: posters that see sleeping bump it and wake;
	// the waiter sleeps only while it holds the value it read before
	// setting sleeping, so no wake is lost.
	seq atomic.Uint32
	// relay, while not 0, is the distance in bytes from this bell to the
	// bell a ring goes to instead: that of the driver of a folded channel
	// (Waiter.ParkFor), which sleeps once for all its channels. A distance,
	// not a pointer: every process maps the segment at its own address,
	// and both bells lie in it. Written by the driver (before it sets
	// sleeping, and cleared after it clears it); read by posters that saw
	// sleeping.
	relay atomic.Int64
}

// BellBytes is the room a bell takes (its own cache line).
const BellBytes = 64

// BellAt is the bell at the start of mem (BellBytes bytes, 8-byte aligned,
// usually in a shared segment).
func BellAt(mem []byte) *Bell {
	if len(mem) < BellBytes {
		panic("proto: BellAt: short memory")
	}
	return (*Bell)(unsafe.Pointer(&mem[0]))
}

// ring wakes the bell's waiter if it may be asleep, or the driver it
// relays to.
func (b *Bell) ring() {
	if b.sleeping.Load() != 0 {
		if d := b.relay.Load(); d != 0 {
			b = (*Bell)(unsafe.Add(unsafe.Pointer(b), d))
		}
		b.seq.Add(1)
		shm.FutexWake(&b.seq, 1)
	}
}

// relayTo marks the bell's waiter asleep with its rings relayed to the
// bell to, in the same mapping (ParkFor).
func (b *Bell) relayTo(to *Bell) {
	b.relay.Store(int64(uintptr(unsafe.Pointer(to)) - uintptr(unsafe.Pointer(b))))
	b.sleeping.Store(1)
}

// unrelay undoes relayTo.
func (b *Bell) unrelay() {
	b.sleeping.Store(0)
	b.relay.Store(0)
}

// Interrupt wakes the bell's waiter even if it does not look asleep: its
// abort signal fired, which no futex sees. The owner of the bell's memory
// registers it with the abort (Abort.OnTrigger) while the memory is mapped.
func (b *Bell) Interrupt() {
	b.seq.Add(1)
	shm.FutexWake(&b.seq, 1)
}

// NewBellWaiter is NewWaiter for a goroutine that posters in other
// processes must be able to wake: it sleeps on bell. Local posters wake it
// through the same bell. The caller arranges for bell.Interrupt to run when
// abort triggers.
func NewBellWaiter(abort *Abort, timeout time.Duration, bell *Bell) *Waiter {
	w := NewWaiter(abort, timeout)
	w.bell = bell
	return w
}

// RemoteWaiter stands in this process for a waiter of another process:
// Wake rings its bell. It is only ever woken, never waited on.
func RemoteWaiter(bell *Bell) *Waiter { return &Waiter{bell: bell} }

// spinBackoff is the most waits that skip the long spin after misses.
const spinBackoff = 256

// NewWaiter returns a waiter bound to an abort signal and a timeout.
func NewWaiter(abort *Abort, timeout time.Duration) *Waiter {
	return &Waiter{wake: make(chan struct{}, 1), Abort: abort, Timeout: timeout, YieldFor: DefaultYieldFor}
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

// ParkFor parks w, the driver of folded channels, until ready, on behalf
// of every waiter in from: a post that would wake one of them wakes w.
// start is when the longest of their waits began (the timeout counts from
// it). Waiters on bells (a world across processes) relay through their
// bells to w's, which must then lie in the same shared mapping.
func (w *Waiter) ParkFor(from []*Waiter, ready func() bool, what func() string, start time.Time) error {
	// Relays first, then sleeping (the word posters look at), then park's
	// look at ready: a poster that published before a look sees sleeping
	// set and finds the relay. w's own sleeping is set by park before its
	// look, which a relayed wake does not need: wake is buffered, so a
	// wake that comes before w sleeps is kept; a relayed ring bumps the
	// futex word, so a ring that comes before w sleeps ends its sleep.
	for _, f := range from {
		if f.bell != nil && w.bell == nil {
			return fmt.Errorf("proto: ParkFor: a waiter on a bell needs a driver on a bell (%s)", what())
		}
	}
	for _, f := range from {
		if f.bell != nil {
			f.bell.relayTo(w.bell)
			continue
		}
		f.relay.Store(w)
		f.sleeping.Store(1)
	}
	err := w.park(ready, what, start)
	for _, f := range from {
		if f.bell != nil {
			f.bell.unrelay()
			continue
		}
		f.sleeping.Store(0)
		f.relay.Store(nil)
	}
	return err
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
	for i := 0; i < spinIters; i++ {
		if ready() {
			return nil
		}
	}
	if w.Fold != nil {
		return w.foldWait(ready, kick, what)
	}
	start := time.Now()
	// A waiter on a bell does not back off: its peer is another process,
	// on a core of its own when SpinFor is set, so a missed spin says it
	// was late, not that it shares this processor (measured: the back-off
	// made every 8 B allreduce of 2 processes park, 126 us instead of 1).
	if w.SpinFor > 0 && (w.spinSkip == 0 || w.bell != nil || w.NoBackOff) {
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
		// namespaces: 388-422 us when only every 4th turn yielded to
		// Go, 299-304 every turn).
		runtime.Gosched()
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
			w.spinPenalty = min(max(2*w.spinPenalty, 1), spinBackoff)
			w.spinSkip = w.spinPenalty
			return false
		}
	}
}

// Spin waits for ready by spinning alone, for SpinFor (nothing when it is
// 0), and reports whether ready came: a wait for the slowest of many
// peers (the one-shot's), where a miss is the rule with many ranks, not a
// sign that the peer shares this processor, so unlike WaitKick it keeps
// no back-off (which made every wait of 16 ranks on 16 cores yield and
// park: 65 us for an 8 B one-shot). The clock is read once per 256 looks,
// from the 256th on.
// The caller goes on to WaitKick when it returns false.
func (w *Waiter) Spin(ready func() bool) bool {
	if w.SpinFor <= 0 || w.Fold != nil {
		return false
	}
	// The clock starts at the first 256 looks: a wait that ends sooner
	// (the usual one) reads no clock at all, and SpinFor is not exact to
	// a few hundred looks anyway.
	var start time.Time
	for i := 1; ; i++ {
		if ready() {
			return true
		}
		if i%256 == 0 {
			if i == 256 {
				start = time.Now()
			} else if time.Since(start) > w.SpinFor || w.Abort.Aborted() {
				return false
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

// parkBell is park on the bell's futex. The sleep is capped (bellNap) so
// that a lost wake-up, which the protocol rules out, could cost no more
// than a nap.
func (w *Waiter) parkBell(ready func() bool, what func() string, start time.Time) error {
	b := w.bell
	if w.OnPark != nil {
		w.OnPark(what())
		defer w.OnResume()
	}
	for {
		if w.Abort.Aborted() {
			return w.Abort.Err()
		}
		seq := b.seq.Load()
		b.sleeping.Store(1)
		if ready() {
			b.sleeping.Store(0)
			return nil
		}
		nap := bellNap
		if w.Timeout > 0 {
			left := w.Timeout - time.Since(start)
			if left <= 0 {
				b.sleeping.Store(0)
				return fmt.Errorf("%w after %v waiting for %s", ErrTimeout, w.Timeout, what())
			}
			nap = min(nap, left)
		}
		if !w.Abort.Aborted() {
			shm.FutexWait(&b.seq, seq, nap)
		}
		b.sleeping.Store(0)
		if ready() {
			return nil
		}
	}
}

// bellNap is a var only for tests, which lengthen it so that a lost wake
// shows as a timeout rather than a late nap's end.
var bellNap = time.Second
