// The timed part of a point: a thread's batch of iterations (timeThread),
// adaptive batches (--precision), side-by-side configurations
// (--interleave), and how threads' and processes' times combine.

package perf

import (
	"math"
	"sort"
	"sync"
	"time"

	"golang.org/x/perf/benchmath"

	"github.com/gccl/gccl/lib/ccl"
)

// threadResult is what one thread measured.
type threadResult struct {
	sec float64 // per operation
	// cpuSec is per operation too, up to the last enqueue (the final wait
	// not counted): nccl-tests' cputime, the time -C 1 reports.
	cpuSec float64
	iters  []float64 // per-iteration seconds (per operation), when recorded
	// passed is, from event-timed loops on one clock, when the thread's
	// last rank passed each iteration's event: batch turns every thread's
	// into iters (itersFromPassed).
	passed []time.Time
	wrong  int64 // wrong elements seen by --check-timed
	err    error
}

// timeThread is nccl-tests' BenchTime for one thread: warmup, a barrier
// and one untimed operation, then -n timed iterations of -m operations.
// An adaptive measurement (--precision) runs it in batches of iters
// iterations; later batches skip the warmup.
func (r *runner) timeThread(th int, p point, inPlace bool, seed uint64, warm bool, iters int) threadResult {
	cs := r.threadComms(th)
	o := r.o
	fail := func(err error) threadResult { return threadResult{err: err} }
	for i := 0; warm && i < o.Warmup; i++ {
		if r.stopped() {
			return r.cut(cs)
		}
		if err := r.start(cs, p, inPlace, i); err != nil {
			return fail(err)
		}
	}
	// The barrier, then one untimed operation waited for, then the clock.
	// The barrier says every rank is ready, but its waiters leave it tens
	// of microseconds apart (woken one by one; across processes by the
	// root's messages over TCP), and the first timed operation would wait
	// out that spread on every rank that left early, at every size
	// (docs/log/performance-2026-11.md 7d, four GPUs). The operation
	// after it is a barrier through the stack itself: every rank leaves it
	// when its last peer's data lands.
	if err := r.bar.wait(); err != nil {
		return fail(err)
	}
	if err := r.start(cs, p, inPlace, 0); err != nil {
		return fail(err)
	}
	if err := complete(cs); err != nil {
		return fail(err)
	}
	if o.CheckTimed {
		if err := r.prepareSlots(cs, p, inPlace, seed); err != nil {
			return fail(err)
		}
	}
	if r.steps == nil {
		return r.timed(cs, p, inPlace, seed, iters)
	}
	// --trace-steps records the timed iterations alone.
	if err := r.steps.start(cs, p.bytes); err != nil {
		return fail(err)
	}
	res := r.timed(cs, p, inPlace, seed, iters)
	if err := r.steps.take(cs); err != nil && res.err == nil {
		res.err = err
	}
	return res
}

// timed is timeThread's timed iterations, timed as the options ask: a
// CUDA graph's launches (-G), events (-I on a backend that has them), or
// the clock around the loop.
func (r *runner) timed(cs []Comm, p point, inPlace bool, seed uint64, iters int) threadResult {
	o := r.o
	fail := func(err error) threadResult { return threadResult{err: err} }
	if o.Graph > 0 {
		return r.timeGraph(cs, p, inPlace, iters)
	}
	if ev, ok := r.eventTimed(cs); ok && perIterEvents(o) {
		return r.timeEvents(cs, ev, p, inPlace, iters)
	}

	perIter := o.PerIter != 0 || o.CheckTimed
	var res threadResult
	var total time.Duration
	start := time.Now()
	var t0 time.Time
	for it := 0; it < iters; it++ {
		if r.stopped() {
			return r.cut(cs)
		}
		if perIter { // the clock costs a read: only when each iteration is timed
			t0 = time.Now()
		}
		if err := r.start(cs, p, inPlace, it); err != nil {
			return fail(err)
		}
		if perIter || o.Blocking != 0 {
			if err := complete(cs); err != nil {
				return fail(err)
			}
			if o.Blocking == 1 || o.Blocking == 3 {
				if err := r.bar.wait(); err != nil {
					return fail(err)
				}
			}
		}
		if perIter {
			d := time.Since(t0)
			total += d
			res.iters = append(res.iters, d.Seconds()/float64(o.AggIters))
			if o.CheckTimed { // untimed: check, then refresh data for the next iteration
				for a := 0; a < o.AggIters; a++ {
					w, err := r.verify(cs, p, inPlace, seed, a)
					if err != nil {
						return fail(err)
					}
					res.wrong += w
				}
				if err := r.prepareSlots(cs, p, inPlace, seed); err != nil {
					return fail(err)
				}
			}
		}
	}
	enqueued := total
	if !perIter {
		enqueued = time.Since(start)
	}
	if err := complete(cs); err != nil {
		return fail(err)
	}
	if !perIter {
		total = time.Since(start)
	}
	res.sec = total.Seconds() / float64(iters*o.AggIters)
	res.cpuSec = enqueued.Seconds() / float64(iters*o.AggIters)
	return res
}

// stopped reports whether a signal stops the point in progress between
// two iterations.
func (r *runner) stopped() bool { return r.alone && r.signalled() }

// signalled reports whether a signal reached this process.
func (r *runner) signalled() bool { return r.intr != nil && r.intr.Load() }

// cut ends a thread's part of a point a signal stopped: its operations
// in flight complete (its ranks are every rank: none waits for it), and
// the point is dropped.
func (r *runner) cut(cs []Comm) threadResult {
	if err := complete(cs); err != nil {
		return threadResult{err: err}
	}
	return threadResult{err: errInterrupted}
}

// batch times one batch of iters iterations of a point on every thread
// (timeThread; warm runs the warmup first) and returns each thread's result.
func (r *runner) batch(p point, inPlace bool, seed uint64, warm bool, iters int) ([]threadResult, error) {
	results := make([]threadResult, r.o.Threads)
	r.onThreads(func(th int) { results[th] = r.timeThread(th, p, inPlace, seed, warm, iters) })
	for _, res := range results {
		if res.err != nil {
			return nil, res.err
		}
	}
	itersFromPassed(results, r.o.AggIters)
	return results, nil
}

// add folds one batch into m: its per-thread times (combined with -a when
// not adaptive), its iterations and the errors --check-timed saw.
func (r *runner) add(m *measurement, results []threadResult) error {
	secs := make([]float64, 0, len(results))
	for _, res := range results {
		if r.o.CPUTime != 0 {
			secs = append(secs, res.cpuSec)
		} else {
			secs = append(secs, res.sec)
		}
		m.checkedWrong += res.wrong
	}
	if r.o.PerIter != 0 || r.o.CheckTimed {
		// Every process holds the slowest thread's times of the job.
		it := maxOverThreads(results)
		if err := r.job.maxFloats(it); err != nil {
			return err
		}
		m.iters = append(m.iters, it...)
	}
	if r.o.Precision <= 0 {
		t, err := r.job.combine(secs, r.o.Average)
		if err != nil {
			return err
		}
		m.timeUs = t * 1e6
	} else {
		// Adaptive: the time is the mean of every iteration's slowest
		// thread, over all batches.
		m.timeUs = mean(m.iters)
	}
	return nil
}

// measure times one placement of a point on every thread and combines the
// times with -a, then runs the -c checks and the -K repeats.
func (r *runner) measure(p point, inPlace bool) (measurement, error) {
	o := r.o
	if err := r.checkTimedFits(p); err != nil {
		return measurement{}, err
	}
	seed := pointSeed(p, inPlace)
	var m measurement
	began := time.Now()
	// Adaptive batches double: every batch starts behind a barrier, whose
	// wake-ups disturb its first operations, so few long batches measure
	// the steady state better than many short ones.
	iters := o.Iters
	for batch := 0; ; batch, iters = batch+1, min(2*iters, 1<<16) {
		results, err := r.batch(p, inPlace, seed, batch == 0, iters)
		if err != nil {
			return m, err
		}
		if err := r.add(&m, results); err != nil {
			return m, err
		}
		if o.Precision <= 0 {
			break
		}
		if medianWithin(m.iters, o.Precision) {
			m.stop = "precision"
			break
		}
		// Processes stop together: when any has spent the time.
		if capped, err := r.job.any(time.Since(began) >= o.MaxTime); err != nil || capped {
			m.stop = "time-cap"
			if err != nil {
				return m, err
			}
			break
		}
	}
	m.chosen = r.comms[0].LastChoice()
	return m, r.finish(&m, p, inPlace, seed)
}

// checkTimedFits checks that --check-timed's slots fit the buffers.
func (r *runner) checkTimedFits(p point) error {
	if o := r.o; o.CheckTimed && r.fit(&p) < o.AggIters {
		return usagef("--check-timed with -m %d needs %d slots of %d bytes per buffer, but only %d fit in -e %d: lower -m or raise -e",
			o.AggIters, o.AggIters, r.slotBytes(&p), r.fit(&p), o.MaxBytes)
	}
	return nil
}

// finish computes m's per-iteration statistics and runs the -c checks and
// the -K repeats of a measured point.
func (r *runner) finish(m *measurement, p point, inPlace bool, seed uint64) error {
	o := r.o
	if o.PerIter != 0 {
		m.iter = stats(m.iters)
	}
	m.wrong = -1
	if (o.Check > 0 || o.CheckTimed) && !(inPlace && r.t.naInPlace) {
		m.wrong = m.checkedWrong
		for c := 0; c < o.Check; c++ {
			w, err := r.checkOnce(p, inPlace, seed+uint64(c)*0x9e3779b97f4a7c15)
			if err != nil {
				return err
			}
			m.wrong += w
		}
		if err := r.job.sumInt64(&m.wrong); err != nil { // every process's ranks
			return err
		}
	}
	if o.Bitwise > 0 {
		d, err := r.bitwise(p, inPlace, seed)
		if err != nil {
			return err
		}
		if err := r.job.sumInt64(&d); err != nil {
			return err
		}
		m.bitdiff = d
	}
	return nil
}

// measureInterleaved times one placement of a point under every forced
// configuration on the same communicators, side by side: round after round
// each configuration runs a batch, in an order rotated every round, so a
// slow spell of the machine or of the communicators hits them all alike.
// A configuration's batch doubles until it lasts interleaveBatch. Without
// --precision every configuration runs one batch of -n iterations; with
// it, rounds go on (at least minRounds) until every configuration's median
// is within the precision or MaxTime per configuration has been spent.
func (r *runner) measureInterleaved(p point, inPlace bool, forces []ccl.Forced) ([]measurement, error) {
	o := r.o
	if err := r.checkTimedFits(p); err != nil {
		return nil, err
	}
	seed := pointSeed(p, inPlace)
	k := len(forces)
	ms := make([]measurement, k)
	iters := make([]int, k)
	for i := range iters {
		iters[i] = o.Iters
	}
	began := time.Now()
	budget := o.MaxTime * time.Duration(k)
	for round := 0; ; round++ {
		for j := 0; j < k; j++ {
			i := (j + round) % k
			if err := r.force(forces[i]); err != nil {
				return nil, err
			}
			// The first round warms every configuration up (connections,
			// buffers); later batches start with one untimed operation,
			// which brings back what the switch left behind.
			t0 := time.Now()
			results, err := r.batch(p, inPlace, seed, round == 0, iters[i])
			if err != nil {
				return nil, err
			}
			// Every process grows the batch alike: while none took long.
			long, err := r.job.any(time.Since(t0) >= interleaveBatch)
			if err != nil {
				return nil, err
			}
			if !long {
				iters[i] = min(2*iters[i], 1<<16)
			}
			if err := r.add(&ms[i], results); err != nil {
				return nil, err
			}
			ms[i].chosen = r.comms[0].LastChoice()
		}
		if o.Precision <= 0 {
			break
		}
		if round+1 < minRounds {
			continue
		}
		all := true
		for i := range ms {
			all = all && medianWithin(ms[i].iters, o.Precision)
		}
		spent, err := r.job.any(time.Since(began) >= budget)
		if err != nil {
			return nil, err
		}
		if all || spent {
			for i := range ms {
				ms[i].stop = "time-cap"
				if medianWithin(ms[i].iters, o.Precision) {
					ms[i].stop = "precision"
				}
			}
			break
		}
	}
	for i := range ms {
		if err := r.force(forces[i]); err != nil {
			return nil, err
		}
		if err := r.finish(&ms[i], p, inPlace, seed); err != nil {
			return nil, err
		}
	}
	return ms, nil
}

// interleaveBatch is how long an interleaved batch grows to: long enough
// that its warmup and barrier cost little, short enough for many rounds.
const interleaveBatch = time.Millisecond

// minRounds is the fewest rounds an adaptive interleaved measurement runs,
// so that every configuration's samples span the same stretch of time.
const minRounds = 3

// force makes every rank run the forced configuration f from now on.
func (r *runner) force(f ccl.Forced) error {
	for _, c := range r.comms {
		fc, ok := c.(Forcer)
		if !ok {
			return usagef("--interleave needs a backend that switches configurations per operation (embedded)")
		}
		if err := fc.Force(f); err != nil {
			return err
		}
	}
	return nil
}

// combine is nccl-tests' -a: 0 the first thread's time, 1 the mean, 2 the min, 3 the max.
func combine(v []float64, how int) float64 {
	switch how {
	case 0:
		return v[0]
	case 2:
		m := v[0]
		for _, x := range v {
			m = math.Min(m, x)
		}
		return m
	case 3:
		m := v[0]
		for _, x := range v {
			m = math.Max(m, x)
		}
		return m
	}
	return mean(v)
}

// maxOverThreads is each iteration's slowest thread, in us.
func maxOverThreads(res []threadResult) []float64 {
	out := make([]float64, len(res[0].iters))
	for i := range out {
		for _, r := range res {
			out[i] = math.Max(out[i], r.iters[i]*1e6)
		}
	}
	return out
}

// stats are nccl-tests' per-iteration statistics.
func stats(us []float64) *iterStats {
	s := append([]float64(nil), us...)
	sort.Float64s(s)
	n := len(s)
	mean := 0.0
	for _, x := range s {
		mean += x
	}
	mean /= float64(n)
	v := 0.0
	for _, x := range s {
		v += (x - mean) * (x - mean)
	}
	cv := 0.0
	if mean > 0 {
		cv = math.Sqrt(v/float64(n)) / mean * 100
	}
	p99 := s[min(n-1, (n*99+99)/100-1)]
	return &iterStats{minUs: s[0], maxUs: s[n-1], p99Us: p99, cvPct: cv, medUs: s[n/2]}
}

// barrier is a reusable barrier for the -t threads, and through across
// for every thread of every process of a job.
type barrier struct {
	mu     sync.Mutex
	cond   *sync.Cond
	n      int
	count  int
	gen    int
	err    error        // the last crossing's error, guarded by mu
	across func() error // the processes' barrier, run by the last thread in; nil in one process
}

func newBarrier(n int) *barrier {
	b := &barrier{n: n}
	b.cond = sync.NewCond(&b.mu)
	return b
}

func (b *barrier) wait() error {
	b.mu.Lock()
	defer b.mu.Unlock()
	gen := b.gen
	if b.count++; b.count == b.n {
		b.err = nil
		if b.across != nil {
			// The other threads are parked on cond; the lock is not
			// needed while the processes meet.
			b.mu.Unlock()
			err := b.across()
			b.mu.Lock()
			b.err = err
		}
		b.count, b.gen = 0, b.gen+1
		b.cond.Broadcast()
		return b.err
	}
	for gen == b.gen {
		b.cond.Wait()
	}
	return b.err
}

func mean(v []float64) float64 {
	s := 0.0
	for _, x := range v {
		s += x
	}
	return s / float64(max(len(v), 1))
}

// medianWithin reports whether the 95% confidence interval of the median
// of us (order statistics, no assumption on the distribution: benchstat's
// method) lies within precision of the median on both sides.
func medianWithin(us []float64, precision float64) bool {
	if len(us) < 6 { // fewer samples cannot bound a 95% interval
		return false
	}
	s := benchmath.AssumeNothing.Summary(benchmath.NewSample(us, &benchmath.DefaultThresholds), 0.95)
	if s.Center <= 0 || math.IsInf(s.Lo, 0) || math.IsInf(s.Hi, 0) {
		return false
	}
	return s.Center-s.Lo <= precision*s.Center && s.Hi-s.Center <= precision*s.Center
}
