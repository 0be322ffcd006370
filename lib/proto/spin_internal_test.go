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

// Spin (the one-shot's wait for all peers) keeps the same back-off where
// the waiter backs off: a miss makes the next Spin skip (it looks at the
// word not at all) and leaves the skip for slowWait to count down, and a
// Spin that succeeds resets the penalty. With NoBackOff (a host whose
// runners fit with room) every Spin spins, misses or not.
func TestSpinKeepsTheBackOff(t *testing.T) {
	never := func(looks *int) func() bool { return func() bool { *looks++; return false } }
	w := NewWaiter(NewAbort(), time.Second)
	w.SpinFor = 100 * time.Microsecond
	var looks int
	if w.Spin(never(&looks)) || looks == 0 {
		t.Fatalf("first Spin: ready with nothing ready, or no look (%d)", looks)
	}
	if w.spinSkip != 1 || w.spinPenalty != 1 {
		t.Fatalf("after a missed Spin: skip %d penalty %d, want 1 and 1", w.spinSkip, w.spinPenalty)
	}
	looks = 0
	if w.Spin(never(&looks)) || looks != 0 {
		t.Fatalf("Spin after a miss looked %d times, want 0 (skipped)", looks)
	}
	if w.spinSkip != 1 {
		t.Fatalf("a skipped Spin changed the skip to %d: slowWait counts it down", w.spinSkip)
	}
	w.spinSkip = 0
	if !w.Spin(func() bool { return true }) || w.spinPenalty != 0 {
		t.Fatalf("a Spin that succeeds: penalty %d, want 0", w.spinPenalty)
	}

	nb := NewWaiter(NewAbort(), time.Second)
	nb.SpinFor, nb.NoBackOff = 100*time.Microsecond, true
	for range 3 {
		looks = 0
		if nb.Spin(never(&looks)) || looks == 0 {
			t.Fatalf("NoBackOff: Spin ready with nothing ready, or skipped (%d looks)", looks)
		}
	}
	if nb.spinSkip != 0 || nb.spinPenalty != 0 {
		t.Fatalf("NoBackOff: skip %d penalty %d after misses, want 0 and 0", nb.spinSkip, nb.spinPenalty)
	}
}
