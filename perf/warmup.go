package perf

import (
	"errors"
	"runtime"
	"sync"

	"github.com/gccl/gccl/lib/ccl"
	"github.com/gccl/gccl/lib/reduce"
)

// warmUp runs a configuration's path once over before anything is timed,
// as nccl-tests does before its first size: without it the first row pays
// for what every later row finds ready (goroutines parked since Init, FIFO
// pages never touched, the buffers just allocated still in the garbage
// collector's sights) and reads slower than the same size measured later.
//
// For every type it runs, untimed and unchecked, each size of the sweep
// from the smallest, doubling, up to the largest (nccl-tests' "warm-up for
// all sizes"), both placements, with the -w warmup iterations and the one
// untimed operation a timed point starts with (one Synchronize per rank
// per size and placement). Under --interleave
// (forces non-nil) every configuration is warmed in turn.
func (e *engine) warmUp(r *runner, sizes []int64, ops []reduce.Op, roots []int, forces []ccl.Forced) error {
	if e.o.noWarmUp || len(sizes) == 0 {
		return nil
	}
	runtime.GC() // collect the buffers' allocation now, not in the first timed batch
	configs := forces
	if configs == nil {
		configs = []ccl.Forced{{}}
	}
	lo, hi := sizes[0], sizes[len(sizes)-1]
	for _, dt := range e.o.Types {
		for _, f := range configs {
			if forces != nil {
				if err := r.force(f); err != nil {
					return err
				}
			}
			for size := lo; ; size = min(2*size, hi) {
				p := point{size: size, dt: dt, op: ops[0], root: roots[0]}
				p.param, p.bytes = e.t.Counts(size, dt.Size(), e.n)
				for _, inPlace := range e.placements() {
					if err := r.warmPoint(p, inPlace); err != nil {
						return err
					}
				}
				if size >= hi || size <= 0 {
					break
				}
			}
		}
	}
	return nil
}

// warmPoint runs -w operations plus one on every rank of every thread, and
// waits for them.
func (r *runner) warmPoint(p point, inPlace bool) error {
	errs := make([]error, r.o.Threads)
	var wg sync.WaitGroup
	for th := range r.o.Threads {
		wg.Add(1)
		go func() {
			defer wg.Done()
			cs := r.threadComms(th)
			for i := 0; i <= r.o.Warmup && errs[th] == nil; i++ {
				errs[th] = r.start(cs, p, inPlace, i)
			}
			if errs[th] == nil {
				errs[th] = complete(cs)
			}
		}()
	}
	wg.Wait()
	return errors.Join(errs...)
}
