package proto_test

import (
	"errors"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gccl/gccl/lib/proto"
)

func never() bool { return false }

func what() string { return "test word" }

func TestWaiterTimeout(t *testing.T) {
	before := runtime.NumGoroutine()
	w := proto.NewWaiter(proto.NewAbort(), 50*time.Millisecond)
	start := time.Now()
	err := w.Wait(never, func() string { return "the never word" })
	el := time.Since(start)
	if !errors.Is(err, proto.ErrTimeout) || errors.Is(err, proto.ErrAborted) {
		t.Fatalf("Wait = %v, want ErrTimeout", err)
	}
	if !strings.Contains(err.Error(), "the never word") {
		t.Fatalf("timeout message %q does not say what was awaited", err)
	}
	// Correctness bounds, not performance: never before the timeout, and
	// not wildly after it.
	if el < 50*time.Millisecond || el > 2*time.Second {
		t.Fatalf("timed out after %v, want ~50ms", el)
	}
	// The waiter is reusable after a timeout (its timer is re-armed).
	if err := w.Wait(never, func() string { return "again" }); !errors.Is(err, proto.ErrTimeout) {
		t.Fatalf("second Wait = %v", err)
	}
	waitGoroutines(t, before)
}

func TestWaiterReadyFastPath(t *testing.T) {
	w := proto.NewWaiter(proto.NewAbort(), 5*time.Second)
	if err := w.Wait(func() bool { return true }, what); err != nil {
		t.Fatalf("ready word: %v", err)
	}
	// Ready after a few polls (inside the spin/yield phases).
	n := 0
	if err := w.Wait(func() bool { n++; return n > 100 }, what); err != nil {
		t.Fatalf("ready after 100 polls: %v", err)
	}
	// Nil waiters ignore wakes.
	var nilW *proto.Waiter
	nilW.Wake()
}

func TestAbortWakesParkedWaiter(t *testing.T) {
	before := runtime.NumGoroutine()
	abort := proto.NewAbort()
	if abort.Aborted() || abort.Err() != nil {
		t.Fatalf("fresh abort is set")
	}
	w := proto.NewWaiter(abort, 0) // would wait forever
	done := make(chan error, 1)
	go func() { done <- w.Wait(never, func() string { return "x" }) }()
	time.Sleep(30 * time.Millisecond) // long enough to park; correct either way
	cause := errors.New("rank 3 died")
	abort.Trigger(cause)
	abort.Trigger(errors.New("second cause")) // the first cause wins
	select {
	case err := <-done:
		if !errors.Is(err, proto.ErrAborted) || !errors.Is(err, cause) {
			t.Fatalf("Wait = %v, want ErrAborted wrapping the cause", err)
		}
	case <-time.After(2 * time.Second):
		t.Fatalf("aborted waiter still parked")
	}
	if !abort.Aborted() || !errors.Is(abort.Err(), cause) || strings.Contains(abort.Err().Error(), "second") {
		t.Fatalf("abort state: %v %v", abort.Aborted(), abort.Err())
	}
	select {
	case <-abort.Done():
	default:
		t.Fatalf("Done not closed")
	}
	// Waits after the abort fail at once, even with the word not ready.
	if err := proto.NewWaiter(abort, time.Hour).Wait(never, what); !errors.Is(err, proto.ErrAborted) {
		t.Fatalf("Wait after abort = %v", err)
	}
	// A ready word still wins over the abort on the fast path.
	if err := proto.NewWaiter(abort, time.Hour).Wait(func() bool { return true }, what); err != nil {
		t.Fatalf("ready word after abort: %v", err)
	}
	waitGoroutines(t, before)
}

func TestAbortCauses(t *testing.T) {
	a := proto.NewAbort()
	a.Trigger(nil)
	if err := a.Err(); !errors.Is(err, proto.ErrAborted) {
		t.Fatalf("nil cause: %v", err)
	}
	b := proto.NewAbort()
	wrapped := errors.Join(proto.ErrAborted, errors.New("already wrapped"))
	b.Trigger(wrapped)
	if err := b.Err(); err != wrapped {
		t.Fatalf("a cause that is already ErrAborted is returned as is, got %v", err)
	}
	// Concurrent triggers: exactly one cause wins, no race.
	c := proto.NewAbort()
	start := make(chan struct{})
	var wg sync.WaitGroup
	for i := 0; i < 8; i++ {
		wg.Go(func() {
			<-start
			c.Trigger(errors.New("cause"))
			_ = c.Err()
		})
	}
	close(start)
	wg.Wait()
	if !errors.Is(c.Err(), proto.ErrAborted) {
		t.Fatalf("concurrent triggers: %v", c.Err())
	}
}

// TestWakeReleasesParkedWaiter: a poster that publishes and wakes releases
// a parked waiter; a lost wake would show up as a timeout error.
func TestWakeReleasesParkedWaiter(t *testing.T) {
	before := runtime.NumGoroutine()
	w := proto.NewWaiter(proto.NewAbort(), 5*time.Second)
	for i := 0; i < 200; i++ {
		var word atomic.Bool
		done := make(chan error, 1)
		go func() { done <- w.Wait(word.Load, func() string { return "word" }) }()
		if i%20 == 0 {
			time.Sleep(2 * time.Millisecond) // sometimes really parked
		}
		word.Store(true)
		w.Wake()
		if err := <-done; err != nil {
			t.Fatalf("round %d: %v", i, err)
		}
	}
	waitGoroutines(t, before)
}

// Spin: nothing without a SpinFor; true once ready comes within it; false
// once SpinFor passes without it, or once the abort fires. (NoBackOff: a
// miss would make the next Spin skip, TestSpinKeepsTheBackOff.)
func TestWaiterSpin(t *testing.T) {
	w := proto.NewWaiter(proto.NewAbort(), time.Second)
	w.NoBackOff = true
	if w.Spin(func() bool { return true }) {
		t.Fatal("Spin with SpinFor 0 spun")
	}
	w.SpinFor = 50 * time.Millisecond
	n := 0
	if !w.Spin(func() bool { n++; return n > 1000 }) {
		t.Fatal("Spin missed a ready that came")
	}
	start := time.Now()
	if w.Spin(func() bool { return false }) || time.Since(start) < w.SpinFor {
		t.Fatalf("Spin returned true or early (%v) with nothing ready", time.Since(start))
	}
	w.SpinFor = time.Hour
	w.Abort.Trigger(nil)
	if w.Spin(func() bool { return false }) {
		t.Fatal("Spin reported ready after an abort")
	}
}
