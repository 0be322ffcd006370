// bell.go: the bell, a waiter's doorbell in memory shared between
// processes, and a waiter's park on its futex.

package proto

import (
	"fmt"
	"sync/atomic"
	"time"
	"unsafe"

	"github.com/gccl/gccl/lib/shm"
)

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
