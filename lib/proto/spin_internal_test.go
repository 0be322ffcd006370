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

// The spin slots bound the goroutines spinning at once: with the one slot
// held by a spinning waiter, a second waiter skips its spin and parks
// while the first still spins, Spin gives up at once, and both waits end
// when their words change, every slot given back. Without a limit both
// spin.
func TestSpinSlotsBoundTheSpinners(t *testing.T) {
	defer SetSpinLimit(SpinLimit())
	SetSpinLimit(1)
	what := func() string { return "word" }
	var a, b atomic.Bool
	wa, wb := NewWaiter(NewAbort(), 10*time.Second), NewWaiter(NewAbort(), 10*time.Second)
	wa.SpinFor, wa.NoBackOff = 5*time.Second, true
	wb.SpinFor, wb.NoBackOff = 5*time.Second, true
	doneA, doneB := make(chan error, 1), make(chan error, 1)
	go func() { doneA <- wa.Wait(a.Load, what) }()
	for deadline := time.Now().Add(5 * time.Second); Spinning() != 1; {
		if time.Now().After(deadline) {
			t.Fatalf("the first waiter never took the slot: %d spinning", Spinning())
		}
		time.Sleep(100 * time.Microsecond)
	}
	go func() { doneB <- wb.Wait(b.Load, what) }()
	// Without a slot the second waiter parks (sleeping) after its yield
	// phase, long before the first one's 5 s spin could end.
	for deadline := time.Now().Add(4 * time.Second); wb.sleeping.Load() == 0; {
		if time.Now().After(deadline) {
			t.Fatal("the second waiter did not park while the only slot was held: it spun")
		}
		time.Sleep(100 * time.Microsecond)
	}
	if n := Spinning(); n != 1 {
		t.Fatalf("%d spinning, want 1 (the limit)", n)
	}
	if wb.Spin(b.Load) {
		t.Fatal("Spin reported the word ready")
	}
	if n := Spinning(); n != 1 {
		t.Fatalf("after a Spin without a slot: %d spinning, want 1", n)
	}
	b.Store(true)
	wb.Wake()
	if err := <-doneB; err != nil {
		t.Fatal(err)
	}
	a.Store(true)
	if err := <-doneA; err != nil {
		t.Fatal(err)
	}
	if n := Spinning(); n != 0 {
		t.Fatalf("%d spinning after both waits ended, want 0", n)
	}
	// No limit: both spin (neither parks), and nothing is counted.
	SetSpinLimit(0)
	a.Store(false)
	b.Store(false)
	go func() { doneA <- wa.Wait(a.Load, what) }()
	go func() { doneB <- wb.Wait(b.Load, what) }()
	time.Sleep(20 * time.Millisecond) // 400 times the yield phase
	if wa.sleeping.Load() != 0 || wb.sleeping.Load() != 0 || Spinning() != 0 {
		t.Fatalf("without a limit: sleeping %d and %d, %d counted; want both spinning, none counted",
			wa.sleeping.Load(), wb.sleeping.Load(), Spinning())
	}
	a.Store(true)
	b.Store(true)
	if err := <-doneA; err != nil {
		t.Fatal(err)
	}
	if err := <-doneB; err != nil {
		t.Fatal(err)
	}
	if n := Spinning(); n != 0 {
		t.Fatalf("%d spinning at the end, want 0", n)
	}
}
