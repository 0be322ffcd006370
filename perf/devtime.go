package perf

import (
	"errors"
	"fmt"
	"runtime"
	"time"
)

// The timed loops of a device backend (nccl-tests' BenchTime on GPUs):
// graph replay for -G, and stream events for -I.

// timeGraph captures iters iterations of the thread's ranks into a graph
// per rank, then times -G launches of it: the time per operation is the
// wall time over iters x -m x -G.
func (r *runner) timeGraph(cs []Comm, p point, inPlace bool, iters int) threadResult {
	o := r.o
	fail := func(err error) threadResult { return threadResult{err: err} }
	gs := make([]graphComm, len(cs))
	for i, c := range cs {
		g, ok := c.(graphComm)
		if !ok {
			return fail(fmt.Errorf("-G/--cudagraph needs a backend with graphs; %s has none", r.o.Backend))
		}
		gs[i] = g
	}
	for _, g := range gs {
		if err := g.BeginCapture(); err != nil {
			return fail(err)
		}
	}
	var err error
	for it := 0; it < iters && err == nil; it++ {
		err = r.start(cs, p, inPlace, it)
	}
	for _, g := range gs { // end every capture, also after a failed call
		err = errors.Join(err, g.EndCapture())
	}
	defer func() {
		for _, g := range gs {
			_ = g.FreeGraph()
		}
	}()
	for _, g := range gs {
		if err != nil {
			break
		}
		err = g.Instantiate()
	}
	if err != nil {
		return fail(err)
	}
	if err := r.bar.wait(); err != nil {
		return fail(err)
	}
	start := time.Now()
	for l := 0; l < o.Graph; l++ {
		for _, g := range gs {
			if err := g.LaunchGraph(); err != nil {
				return fail(err)
			}
		}
	}
	launched := time.Since(start)
	if err := complete(cs); err != nil {
		return fail(err)
	}
	ops := float64(iters * o.AggIters * o.Graph)
	return threadResult{sec: time.Since(start).Seconds() / ops, cpuSec: launched.Seconds() / ops}
}

// perIterEvents says the per-iteration times come from stream events, as
// nccl-tests' -I does on GPUs: the host does not wait between iterations.
// --check-timed and -z wait anyway, and time on the host.
func perIterEvents(o *Options) bool {
	return o.PerIter != 0 && !o.CheckTimed && o.Blocking == 0
}

// eventTimed returns the thread's ranks as event timers, if all are.
func (r *runner) eventTimed(cs []Comm) ([]eventComm, bool) {
	ev := make([]eventComm, len(cs))
	for i, c := range cs {
		e, ok := c.(eventComm)
		if !ok {
			return nil, false
		}
		ev[i] = e
	}
	return ev, len(cs) > 0
}

// timeEvents times iters iterations with an event recorded on every
// rank's stream before each: an iteration's time is the slowest rank's
// stream time between its marks; the row's time is the wall time.
func (r *runner) timeEvents(cs []Comm, ev []eventComm, p point, inPlace bool, iters int) threadResult {
	o := r.o
	fail := func(err error) threadResult { return threadResult{err: err} }
	mark := func(i int) error {
		for _, e := range ev {
			if err := e.RecordEvent(i); err != nil {
				return err
			}
		}
		return nil
	}
	allocated := false
	for _, e := range ev {
		if p, ok := e.(eventPreparer); ok {
			a, err := p.PrepareEvents(4 * (iters + 1) * max(o.AggIters, 1))
			if err != nil {
				return fail(err)
			}
			allocated = allocated || a
			defer p.PrepareEvents(0)
		}
	}
	if allocated {
		runtime.GC() // now, untimed, rather than during the loop the memory is for
	}
	start := time.Now()
	for it := 0; it < iters; it++ {
		if err := mark(it); err != nil {
			return fail(err)
		}
		if err := r.start(cs, p, inPlace, it); err != nil {
			return fail(err)
		}
	}
	if err := mark(iters); err != nil {
		return fail(err)
	}
	enqueued := time.Since(start)
	if err := complete(cs); err != nil {
		return fail(err)
	}
	ops := float64(iters * o.AggIters)
	res := threadResult{sec: time.Since(start).Seconds() / ops, cpuSec: enqueued.Seconds() / ops}
	if at, ok, err := passedAll(ev, iters); err != nil {
		return fail(err)
	} else if ok {
		res.passed = at // batch turns every thread's into the iterations
		return res
	}
	res.iters = make([]float64, iters)
	for it := range res.iters {
		for _, e := range ev {
			ms, err := e.EventMs(it, it+1)
			if err != nil {
				return fail(err)
			}
			res.iters[it] = max(res.iters[it], ms/1e3/float64(o.AggIters))
		}
	}
	return res
}

// clockEventComm is an eventComm whose events read one clock across the
// process's ranks (the embedded stack's marks; CUDA events compare only on
// one device).
type clockEventComm interface {
	EventAt(i int) (time.Time, error)
}

// passedAll is, for events 0..iters of the thread's ranks, when the last of
// them passed each (false when a rank's events are not on the process's
// clock).
func passedAll(ev []eventComm, iters int) ([]time.Time, bool, error) {
	at := make([]time.Time, iters+1)
	for _, e := range ev {
		c, ok := e.(clockEventComm)
		if !ok {
			return nil, false, nil
		}
		for i := range at {
			t, err := c.EventAt(i)
			if err != nil {
				return nil, false, err
			}
			if t.After(at[i]) {
				at[i] = t
			}
		}
	}
	return at, true, nil
}

// itersFromPassed gives every thread of a batch the same per-iteration
// times when their events share the process's clock: iteration i lasts
// from when the last rank passed event i to when the last passed event
// i+1. Back to back, each rank's own intervals jitter with its goroutine,
// and the slowest rank's interval at each iteration would add the jitter
// up; these intervals add up to the loop's time from the first event to
// the last.
func itersFromPassed(results []threadResult, agg int) {
	var all []time.Time
	for _, res := range results {
		if res.passed == nil {
			return
		}
		if all == nil {
			all = make([]time.Time, len(res.passed))
		}
		for i, t := range res.passed {
			if t.After(all[i]) {
				all[i] = t
			}
		}
	}
	if len(all) < 2 {
		return
	}
	iters := make([]float64, len(all)-1)
	for i := range iters {
		iters[i] = all[i+1].Sub(all[i]).Seconds() / float64(max(agg, 1))
	}
	for i := range results {
		results[i].iters, results[i].passed = iters, nil
	}
}
