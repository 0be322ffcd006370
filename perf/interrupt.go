package perf

import (
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"sync/atomic"
	"syscall"

	"github.com/gccl/gccl/lib/ccl"
	"github.com/gccl/gccl/results"
)

// ExitInterrupted is the exit code of a run stopped by SIGINT or SIGTERM
// (128 + SIGINT, as shells report it).
const ExitInterrupted = 130

// errInterrupted stops the point loop after a signal.
var errInterrupted = errors.New("interrupted")

// interrupts turns SIGINT/SIGTERM into an orderly stop, from the start of
// the run until it returns (its files written):
//   - the first signal stops the run before the next point. A process
//     that drives all its ranks from one thread, alone (no --np, -t 1),
//     also stops the point in progress between two iterations and drops
//     it; processes of a job finish the point in progress and agree,
//     between points, to stop together (engine.stopAsked): their ranks
//     are in collectives together, and one that stopped alone would leave
//     the others waiting. The run then writes every result file that has
//     a record, valid, and says what it kept (exit 130);
//   - a second one stops at once: the JSONL and CSV files that hold
//     whole records are put in place, valid and partial, every other
//     result file not yet written is removed, and the process exits 130;
//   - once the run's files are complete, a signal changes nothing: the
//     process exits with the run's own code.
type interrupts struct {
	prog string
	errw io.Writer
	// quiet: a process of a job other than the first, which writes no
	// files and leaves the messages to the first. alone: one thread
	// drives every rank (runner.alone): the size in progress is dropped.
	// Written by run once it joined its job; read by the watcher (and
	// alone by newRunner).
	quiet, alone atomic.Bool
	sigs         chan os.Signal
	done         chan struct{}

	// got is the first signal; asked says it came (read by the timing
	// loop at every iteration). Written by the watcher goroutine; read
	// by the engine.
	got   atomic.Value
	asked atomic.Bool
	// points counts the points finished. Written by the engine; read by
	// the watcher for its message.
	points atomic.Int64
	// sink is the run's result files, once open. Written by the engine;
	// read by the watcher to abandon them.
	sink atomic.Pointer[sink]
	// finished: the run's files are complete. Written by the engine;
	// read by the watcher, which then ignores signals.
	finished atomic.Bool
}

// watchInterrupts starts handling SIGINT and SIGTERM for one run; stop
// ends it, as the run returns.
func watchInterrupts(prog string, errw io.Writer) *interrupts {
	in := &interrupts{prog: prog, errw: errw, sigs: make(chan os.Signal, 2), done: make(chan struct{})}
	signal.Notify(in.sigs, os.Interrupt, syscall.SIGTERM)
	go in.watch()
	return in
}

func (in *interrupts) stop() {
	signal.Stop(in.sigs)
	close(in.done)
}

func (in *interrupts) watch() {
	for {
		select {
		case s := <-in.sigs:
			switch {
			case in.finished.Load():
				// The files are complete: let the run end with its code.
			case !in.asked.Load():
				in.got.Store(s)
				in.asked.Store(true)
				what := "stopping after the current size"
				if in.alone.Load() {
					what = "stopping now, dropping the size in progress"
				}
				in.say("%s: %v: %s (send it again to stop at once)\n", in.prog, s, what)
			default:
				in.abandon(s)
			}
		case <-in.done:
			return
		}
	}
}

// abandon is the second signal: the result files are settled at once and
// the process exits.
func (in *interrupts) abandon(s os.Signal) {
	kept := "no result files were open yet"
	if sk := in.sink.Load(); sk != nil {
		sk.mu.Lock() // never released: nothing may write after this
		sk.abandonLocked()
		kept = sk.keptLocked()
	}
	results.AbortPending() // any other file being written (--plot)
	ccl.RemoveSegments()   // no Destroy runs: names a peer had not mapped yet would stay
	in.say("%s: %v again: stopped at once; %d points measured; %s\n", in.prog, s, in.points.Load(), kept)
	os.Exit(ExitInterrupted)
}

func (in *interrupts) say(format string, args ...any) {
	if !in.quiet.Load() {
		fmt.Fprintf(in.errw, format, args...)
	}
}

// interrupted reports the signal that asked the run to stop, if any.
func (e *engine) interrupted() (os.Signal, bool) {
	if e.intr == nil || !e.intr.asked.Load() {
		return nil, false
	}
	s, ok := e.intr.got.Load().(os.Signal)
	return s, ok
}

// stopAsked reports whether the run stops before its next point: a
// signal reached this process or, in a job, any of its processes. Every
// process of a job calls it at the same places, between points, so they
// all stop at the same one.
func (e *engine) stopAsked() (bool, error) {
	_, stop := e.interrupted()
	if e.job == nil {
		return stop, nil
	}
	return e.job.any(stop)
}

// kept says what the result files hold after an interrupted run: each
// written (valid; partial unless the run ended), or not.
func (s *sink) kept() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.keptLocked()
}

func (s *sink) keptLocked() string {
	var parts []string
	group := func(doc bool, f fate, what string) {
		var paths []string
		for _, o := range s.outs {
			if o.doc == doc && o.fate == f {
				paths = append(paths, o.f.Name())
			}
		}
		if len(paths) == 0 {
			return
		}
		prefix := ""
		if doc {
			prefix = "-J "
		}
		parts = append(parts, prefix+strings.Join(paths, ", ")+": "+what)
	}
	if s.complete {
		group(false, written, "complete")
		group(true, written, "complete")
	} else {
		group(false, written, "valid and partial, every finished record kept (tune sweep resumes from JSONL)")
		group(true, written, "valid and partial, the sizes measured")
	}
	group(false, empty, "not written (no record finished)")
	group(true, empty, "not written (no size finished)")
	group(false, dropped, "removed (could not be written)")
	group(true, dropped, "removed (not yet written)")
	if len(parts) == 0 {
		return "no result files were asked for"
	}
	return strings.Join(parts, "; ")
}
