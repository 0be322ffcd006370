package proto

import (
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// scriptedDriver is a Suspender that answers a wait's suspensions from a
// script, as a fold driver would, and records what it saw.
type scriptedDriver struct {
	cmds   []FoldCmd
	begins []bool
	onCmd  func(i int) // runs before the i-th command is returned
}

func (d *scriptedDriver) Suspend(begin bool) FoldCmd {
	i := len(d.begins)
	d.begins = append(d.begins, begin)
	if d.onCmd != nil {
		d.onCmd(i)
	}
	if i >= len(d.cmds) {
		panic("wait suspended past its script")
	}
	return d.cmds[i]
}

// TestFoldWait: a folded wait hands every look past the first spin to its
// driver, kicks once however often told, returns once ready, and ends
// with the abort's error or a timeout naming what it waited for.
func TestFoldWait(t *testing.T) {
	t.Run("look and kick", func(t *testing.T) {
		var word atomic.Bool
		kicks := 0
		d := &scriptedDriver{cmds: []FoldCmd{FoldLook, FoldKick, FoldKick, FoldLook}}
		d.onCmd = func(i int) { word.Store(i == 3) }
		w := NewWaiter(NewAbort(), time.Hour)
		w.Fold = d
		err := w.WaitKick(word.Load, func() { kicks++ }, func() string { return "the word" })
		if err != nil {
			t.Fatal(err)
		}
		if kicks != 1 {
			t.Errorf("kicked %d times, want once", kicks)
		}
		if want := []bool{true, false, false, false}; !equalBools(d.begins, want) {
			t.Errorf("suspensions' begin = %v, want %v (one wait)", d.begins, want)
		}
	})
	t.Run("ready at once never suspends", func(t *testing.T) {
		d := &scriptedDriver{}
		w := NewWaiter(NewAbort(), time.Hour)
		w.Fold = d
		if err := w.Wait(func() bool { return true }, func() string { return "" }); err != nil || len(d.begins) != 0 {
			t.Fatalf("err %v, %d suspensions; want nil and none", err, len(d.begins))
		}
	})
	t.Run("abort", func(t *testing.T) {
		a := NewAbort()
		d := &scriptedDriver{cmds: []FoldCmd{FoldLook, FoldAbort}}
		d.onCmd = func(i int) {
			if i == 1 {
				a.Trigger(errors.New("peer died"))
			}
		}
		w := NewWaiter(a, time.Hour)
		w.Fold = d
		err := w.Wait(func() bool { return false }, func() string { return "the word" })
		if !errors.Is(err, ErrAborted) || !strings.Contains(err.Error(), "peer died") {
			t.Fatalf("got %v, want the abort's error", err)
		}
	})
	t.Run("timeout", func(t *testing.T) {
		d := &scriptedDriver{cmds: []FoldCmd{FoldTimeout}}
		w := NewWaiter(NewAbort(), 300*time.Millisecond)
		w.Fold = d
		err := w.Wait(func() bool { return false }, func() string { return "rank 3's data" })
		if !errors.Is(err, ErrTimeout) || !strings.Contains(err.Error(), "rank 3's data") {
			t.Fatalf("got %v, want a timeout naming the wait", err)
		}
	})
	t.Run("stopped driver", func(t *testing.T) {
		w := NewWaiter(NewAbort(), time.Hour)
		w.Fold = &scriptedDriver{cmds: []FoldCmd{FoldStopped}}
		err := w.Wait(func() bool { return false }, func() string { return "the word" })
		if !errors.Is(err, ErrAborted) || !strings.Contains(err.Error(), "the word") {
			t.Fatalf("got %v, want an abort naming the wait", err)
		}
	})
	t.Run("Spin leaves a folded wait to its driver", func(t *testing.T) {
		w := NewWaiter(NewAbort(), time.Hour)
		w.SpinFor, w.Fold = time.Second, &scriptedDriver{}
		start := time.Now()
		if w.Spin(func() bool { return false }) || time.Since(start) > 100*time.Millisecond {
			t.Fatal("Spin spun a folded wait")
		}
	})
}

func equalBools(a, b []bool) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// TestParkForRelaysWakes: a driver parked on behalf of several waiters is
// woken by a post that wakes any one of them, and afterwards the waiters
// are awake and relay nothing.
func TestParkForRelaysWakes(t *testing.T) {
	for target := 0; target < 3; target++ {
		drv := NewWaiter(NewAbort(), 10*time.Second)
		from := []*Waiter{NewWaiter(drv.Abort, 0), NewWaiter(drv.Abort, 0), NewWaiter(drv.Abort, 0)}
		var word atomic.Bool
		go func() {
			for from[target].sleeping.Load() == 0 {
				time.Sleep(time.Millisecond) // until the driver parked for it
			}
			time.Sleep(5 * time.Millisecond)
			word.Store(true)
			from[target].Wake() // the poster wakes the part's waiter, not the driver
		}()
		start := time.Now()
		if err := drv.ParkFor(from, word.Load, func() string { return "parts" }, start); err != nil {
			t.Fatal(err)
		}
		if took := time.Since(start); took > 5*time.Second {
			t.Fatalf("waiter %d: the driver woke after %v", target, took)
		}
		for i, f := range from {
			if f.sleeping.Load() != 0 || f.relay.Load() != nil {
				t.Errorf("waiter %d left sleeping or relaying after the park", i)
			}
		}
	}
}

// TestParkForTimesOut: a driver whose parts' oldest wait began Timeout ago
// gets a timeout error.
func TestParkForTimesOut(t *testing.T) {
	drv := NewWaiter(NewAbort(), 50*time.Millisecond)
	err := drv.ParkFor([]*Waiter{NewWaiter(drv.Abort, 0)}, func() bool { return false }, func() string { return "parts" }, time.Now())
	if !errors.Is(err, ErrTimeout) {
		t.Fatalf("got %v, want ErrTimeout", err)
	}
}

// TestParkForRelaysBells: across processes the waiters sleep on bells in
// shared memory, and a ring of any of them reaches the driver's bell in
// the same mapping. The naps are made longer than the timeout, so a ring
// that is not relayed leaves the driver asleep until the timeout's end.
func TestParkForRelaysBells(t *testing.T) {
	old := bellNap
	bellNap = time.Hour
	defer func() { bellNap = old }()
	mem := make([]byte, 4*BellBytes) // the "segment": driver's bell first
	for target := 0; target < 3; target++ {
		clear(mem)
		abort := NewAbort()
		drv := NewBellWaiter(abort, 20*time.Second, BellAt(mem))
		var from []*Waiter
		for i := range 3 {
			from = append(from, NewBellWaiter(abort, 0, BellAt(mem[(i+1)*BellBytes:])))
		}
		poster := RemoteWaiter(BellAt(mem[(target+1)*BellBytes:])) // as another process holds it
		var word atomic.Bool
		go func() {
			for from[target].bell.sleeping.Load() == 0 {
				time.Sleep(time.Millisecond) // until the driver parked for it
			}
			time.Sleep(5 * time.Millisecond)
			word.Store(true)
			poster.Wake()
		}()
		start := time.Now()
		if err := drv.ParkFor(from, word.Load, func() string { return "parts" }, start); err != nil {
			t.Fatalf("waiter %d: %v", target, err)
		}
		if took := time.Since(start); took > drv.Timeout/2 {
			t.Fatalf("waiter %d: the driver slept %v: the ring did not reach it", target, took)
		}
		for i, f := range from {
			if f.bell.sleeping.Load() != 0 || f.bell.relay.Load() != 0 {
				t.Errorf("waiter %d left sleeping or relaying after the park", i)
			}
		}
	}
	// A driver that does not sleep on a bell cannot park for bells.
	abort := NewAbort()
	err := NewWaiter(abort, time.Second).ParkFor([]*Waiter{NewBellWaiter(abort, 0, BellAt(mem))}, func() bool { return false }, func() string { return "parts" }, time.Now())
	if err == nil || !strings.Contains(err.Error(), "bell") {
		t.Errorf("a driver without a bell: got %v, want an error naming the bell", err)
	}
}
