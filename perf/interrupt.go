package perf

import (
	"errors"
	"fmt"
	"os"
	"os/signal"
	"strings"
	"sync/atomic"
	"syscall"
)

// ExitInterrupted is the exit code of a run stopped by SIGINT or SIGTERM
// (128 + SIGINT, as shells report it).
const ExitInterrupted = 130

// errInterrupted stops the point loop after a signal.
var errInterrupted = errors.New("interrupted")

// interrupts turns SIGINT/SIGTERM into an orderly stop: the first signal
// lets the point being measured finish, then the run writes what it has
// (every result file valid) and says what it kept; a second one stops at
// once, removing the -J documents that were not yet written (JSONL and
// CSV hold every finished record: they are flushed one record at a time).
type interrupts struct {
	sigs chan os.Signal
	// got is the first signal. Written by the watcher goroutine; read by
	// the engine between points.
	got atomic.Value
	// points counts the points finished. Written by the engine; read
	// by the watcher for its message.
	points atomic.Int64
}

// watchInterrupts starts the watcher; stop ends it.
func (e *engine) watchInterrupts() (stop func()) {
	in := &interrupts{sigs: make(chan os.Signal, 2)}
	e.intr = in
	signal.Notify(in.sigs, os.Interrupt, syscall.SIGTERM)
	done := make(chan struct{})
	go func() {
		select {
		case s := <-in.sigs:
			in.got.Store(s)
			fmt.Fprintf(e.errw, "%s: %v: stopping after the current size (send it again to stop at once)\n", e.t.Prog, s)
		case <-done:
			return
		}
		select {
		case s := <-in.sigs:
			e.sink.abandon()
			fmt.Fprintf(e.errw, "%s: %v again: stopped at once; %s\n", e.t.Prog, s, e.sink.kept(in.points.Load(), true))
			os.Exit(ExitInterrupted)
		case <-done:
		}
	}()
	return func() {
		signal.Stop(in.sigs)
		close(done)
	}
}

// interrupted reports the signal that asked the run to stop, if any.
func (e *engine) interrupted() (os.Signal, bool) {
	if e.intr == nil {
		return nil, false
	}
	s, ok := e.intr.got.Load().(os.Signal)
	return s, ok
}

// kept says what the result files hold after an interrupted run, and
// whether each is complete, partial (valid, resumable) or removed.
func (s *sink) kept(points int64, abandoned bool) string {
	var files []string
	for _, f := range []struct {
		path string
		on   bool
	}{{s.paths.jsonl, s.jsonl != nil}, {s.paths.csv, s.csv != nil}} {
		if f.on {
			files = append(files, f.path)
		}
	}
	var parts []string
	if len(files) > 0 {
		parts = append(parts, fmt.Sprintf("%s: valid and partial, every finished record kept (tune sweep resumes from JSONL)", strings.Join(files, ", ")))
	}
	if len(s.paths.json) > 0 {
		if abandoned {
			parts = append(parts, fmt.Sprintf("-J %s: removed (not yet written)", strings.Join(s.paths.json, ", ")))
		} else {
			parts = append(parts, fmt.Sprintf("-J %s: valid and partial, the sizes measured", strings.Join(s.paths.json, ", ")))
		}
	}
	if len(parts) == 0 {
		parts = append(parts, "no result files were asked for")
	}
	return fmt.Sprintf("%d points measured; %s", points, strings.Join(parts, "; "))
}
