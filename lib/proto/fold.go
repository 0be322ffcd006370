// fold.go: folded waits: a driver that runs several channels as coroutines
// (Suspender), the wait of a folded channel, and the driver's park on
// behalf of them all (ParkFor).

package proto

import (
	"fmt"
	"time"
)

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
