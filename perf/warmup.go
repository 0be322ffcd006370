package perf

import (
	"cmp"
	"errors"
	"runtime/debug"

	"github.com/gccl/gccl/lib/ccl"
	"github.com/gccl/gccl/lib/reduce"
)

// warmUp runs a configuration's path once over before anything is timed,
// as nccl-tests does before its first size: without it the first row pays
// for what every later row finds ready (goroutines parked since Init, FIFO
// pages never touched, waits whose spin state has not settled, garbage
// from setup) and reads slower than the same size measured later.
//
// For every type it runs, untimed and unchecked, each size of the sweep
// from the smallest, doubling, up to the largest (nccl-tests' "warm-up for
// all sizes"), both placements: -w operations plus one, back to back, and
// one Synchronize per rank. The first size gets -n more, as many as its
// first timed batch: with -w alone the first 8 B row still read 1.5x the
// later ones (BenchmarkFirstRow). Under --interleave (forces non-nil)
// every configuration is warmed in turn.
func (e *engine) warmUp(r *runner, sizes []int64, ops []reduce.Op, roots []int, forces []ccl.Forced) error {
	if e.o.noWarmUp || len(sizes) == 0 {
		return nil
	}
	debug.FreeOSMemory() // collect and return garbage now (copyBandwidth's buffers are returned already; the runner's setup leaves some), not during the first timed batch
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
				p := newPoint(e.t, size, dt, ops[0], roots[0], e.n)
				if err := r.checkTimedFits(p); err != nil {
					return err // as measure would: before a call runs off the buffers
				}
				ops := e.o.Warmup + 1
				if size == lo {
					ops += e.o.Iters // as many as the first timed batch: see below
				}
				for _, inPlace := range e.placements() {
					if err := r.warmPoint(p, inPlace, ops); err != nil {
						if errors.Is(err, errInterrupted) {
							e.cut = "stopped in the warm-up (untimed) before the sizes"
						}
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

// Warm-up operations run in chunks, between which the processes look at
// the interrupt together (a process of a job may not stop alone). A chunk
// starts at warmChunkMin operations and doubles up to warmChunkMax, or to
// warmChunkBytes of data, whichever is less: a 64 MiB warm-up on 4
// processes of a 2-core machine still looks every warmChunkMin
// operations, while the first size's -n extra operations at 8 B do not
// hand the thread's ranks between goroutines and synchronise every 8
// operations (with a large -n that cost more than the timed loop:
// docs/PERFORMANCE.md, "One GPU"). The schedule depends only on the
// size, so every process cuts its chunks at the same operations.
const (
	warmChunkMin   = 8
	warmChunkMax   = 1024
	warmChunkBytes = 256 << 20
)

// warmChunks returns the ends of the chunks of ops warm-up operations of
// bytes each: a pure schedule.
func warmChunks(ops int, bytes int64) []int {
	limit := warmChunkMax
	if bytes > 0 {
		limit = int(min(int64(warmChunkMax), max(warmChunkBytes/bytes, warmChunkMin)))
	}
	var ends []int
	for done, chunk := 0, warmChunkMin; done < ops; chunk = min(2*chunk, limit) {
		done = min(done+chunk, ops)
		ends = append(ends, done)
	}
	return ends
}

// warmPoint runs ops operations on every rank of every thread, back to
// back, and waits for them, in chunks (warmChunks) between which a signal
// stops it (errInterrupted), agreed over the job.
func (r *runner) warmPoint(p point, inPlace bool, ops int) error {
	done := 0
	for _, end := range warmChunks(ops, p.bytes) {
		if stop, err := r.job.any(r.signalled()); err != nil || stop {
			return cmp.Or(err, errInterrupted)
		}
		if err := r.warmOps(p, inPlace, done, end); err != nil {
			return err
		}
		done = end
	}
	return nil
}

// warmOps runs operations from to to on every thread and waits for them.
func (r *runner) warmOps(p point, inPlace bool, from, to int) error {
	errs := make([]error, r.o.Threads)
	r.onThreads(func(th int) {
		cs := r.threadComms(th)
		for i := from; i < to && errs[th] == nil; i++ {
			if r.stopped() {
				errs[th] = r.cut(cs).err
				return
			}
			errs[th] = r.start(cs, p, inPlace, i)
		}
		if errs[th] == nil {
			errs[th] = complete(cs)
		}
	})
	return errors.Join(errs...)
}
