package proto

import "sync/atomic"

// Spin slots bound the goroutines of this process that spin past their
// first looks at once (the SpinFor phase of a wait, and Spin). A spinning
// goroutine holds its processor until its word changes or its spin runs
// out; Go preempts it only after 10 ms. When spinners fill every
// processor, a goroutine that would change their words (a peer runner, a
// Synchronize caller's channel, a woken goroutine) waits for a processor
// until a spin ends. Measured on a 64-core Xeon: 64 ranks of one process,
// their 64 channel goroutines and 64 callers waiting in Synchronize, every
// allreduce configuration took 5 or 10-11 ms (the spins' 2 ms, then Go's
// 10 ms preemption) at every size from 8 B to 2 MiB; 32 ranks from 128 KiB
// (docs/PERFORMANCE.md 5c). Counting the runners of one plan, as the spin
// policy does, misses the callers, other communicators and idle channel
// goroutines: the slots count whoever actually spins.
//
// A wait that finds no slot free skips the spin: it yields, then parks.
var spinSlots struct {
	// held is the goroutines spinning now: added to by a spinner as it
	// starts (acquireSpin), taken from as it stops (releaseSpin); read by
	// every would-be spinner.
	held atomic.Int32
	_    [cacheLine - 4]byte
	// limit is the most that may spin at once: written by SetSpinLimit (a
	// communicator's set-up), read by would-be spinners. 0: no limit.
	limit atomic.Int32
}

// SetSpinLimit sets the most goroutines of this process that may spin at
// once; n <= 0 removes the limit. Communicators set it from the
// processors the process may use (see ccl's spin policy).
func SetSpinLimit(n int) {
	spinSlots.limit.Store(int32(max(n, 0)))
}

// SpinLimit is the limit SetSpinLimit set (0: none).
func SpinLimit() int { return int(spinSlots.limit.Load()) }

// Spinning is the goroutines spinning now (for tests and counters).
func Spinning() int { return int(spinSlots.held.Load()) }

// acquireSpin takes a spin slot if one is free: ok says the caller may
// spin, counted that it holds a slot to give back (releaseSpin). Without
// a limit nothing is counted: the slots' shared word stays off the waits
// of hosts whose spins are short.
func acquireSpin() (ok, counted bool) {
	for {
		l := spinSlots.limit.Load()
		if l == 0 {
			return true, false
		}
		h := spinSlots.held.Load()
		if h >= l {
			return false, false
		}
		if spinSlots.held.CompareAndSwap(h, h+1) {
			return true, true
		}
	}
}

// releaseSpin gives back a slot acquireSpin counted.
func releaseSpin(counted bool) {
	if counted {
		spinSlots.held.Add(-1)
	}
}
