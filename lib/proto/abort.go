// abort.go: the abort signal of a set of communicators, and the errors a
// wait returns.

package proto

import (
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
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
