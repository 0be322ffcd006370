package proto

import (
	"sync/atomic"
	"testing"
	"time"
)

// A long spin that runs out without the word changing makes the next
// spinBackoff waits skip it (the peer was not running beside us); a wait
// that is ready at once costs nothing and counts down the backoff.
func TestSpinBacksOffAfterAMiss(t *testing.T) {
	w := NewWaiter(NewAbort(), time.Second)
	w.SpinFor = 200 * time.Microsecond
	var word atomic.Bool
	go func() {
		time.Sleep(5 * time.Millisecond)
		word.Store(true)
		w.Wake()
	}()
	if err := w.Wait(word.Load, func() string { return "word" }); err != nil {
		t.Fatal(err)
	}
	if w.spinSkip != spinBackoff {
		t.Fatalf("after a spin that ran out: spinSkip %d, want %d", w.spinSkip, spinBackoff)
	}
	// Ready at once: returns in the first checks, no change.
	if err := w.Wait(word.Load, func() string { return "word" }); err != nil || w.spinSkip != spinBackoff {
		t.Fatalf("ready wait: err %v, spinSkip %d", err, w.spinSkip)
	}
	// A wait past the first checks skips the long spin and counts down.
	word.Store(false)
	go func() {
		time.Sleep(time.Millisecond)
		word.Store(true)
		w.Wake()
	}()
	if err := w.Wait(word.Load, func() string { return "word" }); err != nil || w.spinSkip != spinBackoff-1 {
		t.Fatalf("next wait: err %v, spinSkip %d, want %d", err, w.spinSkip, spinBackoff-1)
	}
}
