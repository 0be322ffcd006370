package proto

import (
	"sync/atomic"
	"testing"
	"time"
)

// A long spin that runs out without the word changing makes the next waits
// skip it (the peer was not running beside us): one after a first miss,
// twice as many after each miss in a row, at most spinBackoff; a wait that
// is ready at once costs nothing; a spin that succeeds resets the penalty.
func TestSpinBacksOffAfterAMiss(t *testing.T) {
	w := NewWaiter(NewAbort(), time.Second)
	w.SpinFor = 200 * time.Microsecond
	var word atomic.Bool
	what := func() string { return "word" }
	// missAfter makes the next wait miss its spin: the word turns true
	// only after d.
	missAfter := func(d time.Duration) {
		word.Store(false)
		go func() {
			time.Sleep(d)
			word.Store(true)
			w.Wake()
		}()
		if err := w.Wait(word.Load, what); err != nil {
			t.Fatal(err)
		}
	}
	missAfter(5 * time.Millisecond)
	if w.spinSkip != 1 || w.spinPenalty != 1 {
		t.Fatalf("after one miss: skip %d penalty %d, want 1 and 1", w.spinSkip, w.spinPenalty)
	}
	// Ready at once: no change.
	if err := w.Wait(word.Load, what); err != nil || w.spinSkip != 1 {
		t.Fatalf("ready wait: err %v, skip %d", err, w.spinSkip)
	}
	// The next slow wait skips the spin (counts down), the one after spins
	// and misses again: the penalty doubles.
	missAfter(time.Millisecond)
	if w.spinSkip != 0 {
		t.Fatalf("skipping wait: skip %d, want 0", w.spinSkip)
	}
	missAfter(5 * time.Millisecond)
	if w.spinSkip != 2 || w.spinPenalty != 2 {
		t.Fatalf("second miss in a row: skip %d penalty %d, want 2 and 2", w.spinSkip, w.spinPenalty)
	}
	// Misses in a row cap at spinBackoff.
	for k := 0; k < 12; k++ {
		w.spinSkip = 0
		missAfter(5 * time.Millisecond)
	}
	if w.spinPenalty != spinBackoff {
		t.Fatalf("penalty %d after many misses, want the cap %d", w.spinPenalty, spinBackoff)
	}
	// A spin that succeeds resets it (a long spin: sleeps are coarse).
	w.spinSkip = 0
	w.SpinFor = time.Second
	missAfter(time.Millisecond)
	if w.spinPenalty != 0 {
		t.Fatalf("penalty %d after a successful spin, want 0", w.spinPenalty)
	}
}
