// devstream.go: a rank's stream of device-kernel launches. A launch runs
// its coops (the CPU's CTAs) on the rank's coop workers, in waves when
// the coops outnumber the workers, as a GPU runs a grid larger than its
// SMs; launches run one after another, as kernels on one CUDA stream.
//
// Waves are safe because the device API's waits pair coops of one index
// only (coop k waits at barrier k, for signal k): every rank runs coop k
// on worker k % W, after the coops below it on that worker, so the
// lowest unfinished index always runs on every rank that has not
// finished it.
//
// The hand-offs (a launch to the stream goroutine, a phase to the
// workers, the end back to Synchronize) are atomic counters with a
// proto.Waiter each: spin while every goroutine has a processor, then
// yield, then park, as the stack's channels wait.

package ccl

import (
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gccl/gccl/lib/proto"
)

// DevStreamOptions say how a rank's stream runs its launches.
type DevStreamOptions struct {
	// Coops is each launch's coops (-V): coop k uses barrier index k, so
	// the device communicator needs at least as many barriers.
	Coops int
	// Inline: the goroutine that launches drives this rank alone, so a
	// launch runs on it and has finished when Launch returns (no stream
	// goroutine, no hand-off). Leave it false when one goroutine drives
	// several ranks of a process (nccl-tests' -g): one rank's kernel
	// waits at barriers for the others', which must run meanwhile.
	Inline bool
	// Workers is how many goroutines run a launch's coops (0: the stream
	// picks, StreamWorkers); more than Coops is Coops. Ranks whose
	// kernels must run alike (perf's LSA kernels run as many coops as
	// workers, every rank the same) agree on one, the least of their
	// StreamWorkers, and pass it.
	Workers int
}

// DevStream is one rank's stream of kernel launches. Launch and
// Synchronize are called by the rank's driving goroutine.
type DevStream struct {
	d       *DevComm
	coops   int
	workers int // goroutines a launch's coops run on, the runner included
	inline  bool

	mu    sync.Mutex
	queue []devJob // launched: appended by Launch (under mu)
	head  int      // queue[head:] are not started: taken by the stream goroutine (under mu)
	err   error    // the first launch's failure, sticky (under mu)

	// launched is written (Add) by Launch after queueing, read by the
	// stream goroutine and Synchronize; finished is written by the runner
	// after each launch, read by Synchronize.
	launched, finished atomic.Uint64
	// wanted is the finished count the driving goroutine waits for in
	// Synchronize or a full Launch: written by it before it waits, read by
	// the runner after each launch, which wakes it only once finished
	// reaches it (a wake-up a launch would make a parked driver get up and
	// lie down again for every one of thousands queued).
	wanted atomic.Uint64
	marks  completions   // completion marks of the launches (marks.go)
	idle   *proto.Waiter // the stream goroutine waits here for launches
	done   *proto.Waiter // Synchronize waits here for finished
	join   *proto.Waiter // the runner waits here for the workers' phase ends
	// joined counts the workers that ended the current phase: reset by
	// the runner before it hands a phase out, added to by the workers.
	joined atomic.Int32
	ws     []*coopWorker // workers 1..W-1 (the runner is worker 0)
	quit   *proto.Abort  // Close: the idle waits end
	closed atomic.Bool   // written by Close, read by the idle waits
	// parkAtOnce: more goroutines wait than there are processors, so a
	// hand-off's waiter parks at once and the poster's wake-up hands it
	// the processor (as a sync.Cond would): yielding first there only
	// passes the processor round the other waiters (measured on the
	// 2-core VM: -g 2's -D 2 took 2.4 us with yields, 1.5 with parks).
	parkAtOnce bool
}

// devJob is one launch: its phases, each run on every coop, all coops of
// one phase done before any coop starts the next. A value, so that a
// launch allocates nothing here.
type devJob struct {
	phases [MaxPhases]func(coop int) error
	n      int
	coops  int // the coops it runs: 0 to coops-1
}

// MaxPhases is the most phases one launch has.
const MaxPhases = 4

// DevStreamDepth is the most launches a stream holds unfinished: Launch
// waits beyond it, as a CUDA launch blocks on a full queue, so that a
// loop launching far ahead of the kernels holds a bounded queue. Deep, so
// that the driving goroutine rarely waits: on few cores its wake-ups
// take processors from the coops (a depth of 1024 cost -g 2's -D 2 0.2-
// 0.6 us a launch on the 2-core VM; 4096 and 65536 read alike).
const DevStreamDepth = 4096

// coopWorker is a goroutine that runs its share of each phase's coops.
type coopWorker struct {
	// seq counts the phases handed to the worker: written (Add) by the
	// runner after it set phase, read by the worker, which then reads
	// phase (the atomic orders the two).
	seq   atomic.Uint64
	phase func(coop int) error
	coops int   // the phase's coops (set with phase)
	err   error // written by the worker before joined.Add, read by the runner after the join
	w     *proto.Waiter
}

// NewStream starts rank d's stream of launches of o.Coops coops each.
func (d *DevComm) NewStream(o DevStreamOptions) (*DevStream, error) {
	if err := d.usable(); err != nil {
		return nil, fmt.Errorf("ccl: NewStream: %w", err)
	}
	if o.Coops < 1 {
		return nil, fmt.Errorf("ccl: NewStream: %d coops: want at least 1", o.Coops)
	}
	if o.Workers < 0 {
		return nil, fmt.Errorf("ccl: NewStream: %d workers: want 0 (the stream picks) or more", o.Workers)
	}
	w := d.c.w
	procs := w.freeProcs()
	workers, waiting := coopWorkers(o.Coops, len(w.local), procs, o.Inline)
	if o.Workers > 0 {
		workers = min(o.Workers, o.Coops)
		waiting = waitingFor(workers, len(w.local), o.Inline)
	}
	return d.newStream(o, workers, waiting, procs), nil
}

// StreamWorkers is how many goroutines NewStream would run o's coops on
// now (o.Workers aside): a worker per coop while this process's free
// processors last. The free processors change with the host's load and
// differ between processes, so ranks that must run alike agree on one.
func (d *DevComm) StreamWorkers(o DevStreamOptions) int {
	w := d.c.w
	workers, _ := coopWorkers(max(o.Coops, 1), len(w.local), w.freeProcs(), o.Inline)
	return workers
}

// newStream is NewStream with the workers given, and the goroutines that
// wait at once on procs processors (how they spin).
func (d *DevComm) newStream(o DevStreamOptions, workers, waiting, procs int) *DevStream {
	s := &DevStream{d: d, coops: o.Coops, workers: workers, inline: o.Inline, quit: proto.NewAbort(), parkAtOnce: waiting > procs}
	waiter := func() *proto.Waiter {
		wt := proto.NewWaiter(s.quit, 0) // idle is not late: no timeout (the coops' own waits have it)
		spinning(wt, waiting, procs)
		return wt
	}
	s.idle, s.done, s.join = waiter(), waiter(), waiter()
	// The barrier waits of this rank's coops spin as the stack's runners
	// would, one a worker (the driving goroutine of a stream waits in
	// Synchronize meanwhile): set before any launch, read only by this
	// rank's coops.
	if d.lsa != nil && d.lsa.waiters != nil {
		coops := len(d.c.w.local) * workers
		for i, wt := range d.lsa.waiters[d.LsaRank] {
			if i < o.Coops {
				spinning(wt, coops, procs)
			}
		}
	}
	for range workers - 1 {
		cw := &coopWorker{w: waiter()}
		s.ws = append(s.ws, cw)
	}
	for i, cw := range s.ws {
		go s.work(i+1, cw)
	}
	if !o.Inline {
		go s.stream()
	}
	return s
}

// spinning sets a coop's or a stream's waiter to wait as the stack's
// runners do (planSpin) when goroutines of this process wait at once on
// procs processors: on a host of 8 or more, a long spin without back-off
// while they fit (a peer that misses a short spin parks, and its wake-up
// makes the next one late in turn: a convoy that made 32 ranks' 16 B
// allreduce -D 2 take milliseconds on 64 cores with 20 us spins;
// PERFORMANCE: "The Device API kernels").
func spinning(wt *proto.Waiter, goroutines, procs int) {
	wt.SetSpin(planSpin(goroutines, procs))
}

// coopWorkers is how many goroutines run a launch's coops on a rank of a
// process holding local ranks with procs processors, and how many
// goroutines of the process wait at once: a worker per coop while the
// processors last (one left for the goroutine that drives the ranks when
// launches go to stream goroutines), at least one.
func coopWorkers(coops, local, procs int, inline bool) (workers, waiting int) {
	free := procs
	if !inline {
		free-- // the driving goroutine's
	}
	local = max(local, 1)
	workers = min(coops, max(1, free/local))
	return workers, waitingFor(workers, local, inline)
}

// waitingFor is how many goroutines of a process holding local ranks wait
// at once when each rank runs workers: every rank's workers, and the
// driving goroutine when launches go to stream goroutines.
func waitingFor(workers, local int, inline bool) int {
	waiting := max(local, 1) * workers
	if !inline {
		waiting++
	}
	return waiting
}

// Workers is how many goroutines run each launch's coops.
func (s *DevStream) Workers() int { return s.workers }

// Launch runs phases on every coop after the launches before it: at once
// on the calling goroutine (Inline), else on the stream goroutine. The
// first failure is sticky: later launches fail with it.
func (s *DevStream) Launch(phases ...func(coop int) error) error {
	return s.LaunchCoops(s.coops, phases...)
}

// LaunchCoops is Launch on coops 0 to coops-1 only (at most the stream's
// Coops): the workers of the others are not woken. A launch too small to
// give every coop work worth a hand-off runs on fewer.
func (s *DevStream) LaunchCoops(coops int, phases ...func(coop int) error) error {
	if len(phases) == 0 || len(phases) > MaxPhases {
		return fmt.Errorf("ccl: DevStream.Launch: %d phases: want 1 to %d", len(phases), MaxPhases)
	}
	if coops < 1 || coops > s.coops {
		return fmt.Errorf("ccl: DevStream.Launch: %d coops: want 1 to %d (the stream's Coops)", coops, s.coops)
	}
	job := devJob{coops: coops}
	job.n = copy(job.phases[:], phases)
	s.mu.Lock()
	if s.err != nil {
		err := s.err
		s.mu.Unlock()
		return err
	}
	if s.inline {
		s.mu.Unlock()
		s.launched.Add(1)
		s.finish(s.run(&job))
		return s.Err()
	}
	s.mu.Unlock()
	n := s.launched.Load() // only this goroutine adds to it
	if s.finished.Load()+DevStreamDepth <= n {
		// Full: wait until half has drained, then fill it again (a wait
		// for one slot would wake the driver for every launch).
		err := s.waitFinished(n-DevStreamDepth/2, func() string {
			return fmt.Sprintf("rank %d's launch queue: %d of %d finished, %d the most held", s.d.Rank, s.finished.Load(), n, DevStreamDepth)
		})
		if err != nil {
			return fmt.Errorf("ccl: DevStream.Launch: %w", err)
		}
	}
	s.mu.Lock()
	if s.head > 0 && 2*s.head >= len(s.queue) { // compact: the started half goes
		m := copy(s.queue, s.queue[s.head:])
		clear(s.queue[m:])
		s.queue, s.head = s.queue[:m], 0
	}
	s.queue = append(s.queue, job)
	s.mu.Unlock()
	s.launched.Add(1)
	s.idle.Wake()
	return nil
}

// Synchronize waits until every launch so far finished and returns the
// first failure.
func (s *DevStream) Synchronize() error {
	target := s.launched.Load()
	err := s.waitFinished(target, func() string {
		return fmt.Sprintf("rank %d's launches: %d of %d finished", s.d.Rank, s.finished.Load(), target)
	})
	if err != nil {
		return fmt.Errorf("ccl: DevStream.Synchronize: %w", err)
	}
	return s.Err()
}

// waitFinished waits until target launches have finished (the driving
// goroutine's wait).
func (s *DevStream) waitFinished(target uint64, what func() string) error {
	if s.finished.Load() >= target {
		return nil
	}
	// wanted is stored before ready reads finished, and the runner adds
	// to finished before it reads wanted: one of the two sees the other.
	s.wanted.Store(target)
	return s.wait(s.done, func() bool { return s.finished.Load() >= target }, what)
}

// RecordCompletions turns the launches' completion marks on, keeping the
// times of the last capacity launches, or off with 0 (Comm's, for a
// stream of launches: a benchmark times each launch of a back-to-back
// loop without waiting between them). It waits for the launches in flight.
func (s *DevStream) RecordCompletions(capacity int) error {
	if err := s.Synchronize(); err != nil {
		return err
	}
	s.marks.turn(capacity)
	return nil
}

// Mark takes a mark after the launches so far (Comm.Mark's, for launches).
func (s *DevStream) Mark() (Mark, error) {
	return s.marks.mark(s.d.Rank, s.launched.Load(), s.finished.Load())
}

// MarkTime is when the stream passed m: when the last launch before it
// finished, or when m was taken if that was later (Comm.MarkTime's).
func (s *DevStream) MarkTime(m Mark) (time.Time, error) {
	return markTime(s.d.Rank, m, s.finished.Load())
}

// Running is the index (from 0, in launch order) of the launch whose
// phases run now, for a phase to find its launch's arguments: call it
// from a phase. With at most DevStreamDepth launches unfinished, a
// caller's ring of DevStreamDepth+1 argument slots, written at the
// launch's index before each Launch, is never overwritten while read.
func (s *DevStream) Running() uint64 { return s.finished.Load() } // launches finish in order

// Finished is how many launches have finished (the count only grows).
func (s *DevStream) Finished() uint64 { return s.finished.Load() }

// Err is the stream's first launch failure.
func (s *DevStream) Err() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.err
}

// Close stops the stream's goroutines (after Synchronize: launches not
// started are dropped).
func (s *DevStream) Close() {
	if s.closed.Swap(true) {
		return
	}
	s.quit.Trigger(errors.New("ccl: the device stream is closed"))
}

// wait waits on one of the stream's waiters for a hand-off.
func (s *DevStream) wait(wt *proto.Waiter, ready func() bool, what func() string) error {
	if s.parkAtOnce {
		return wt.Park(ready, what)
	}
	return wt.Wait(ready, what)
}

// finish records a launch's end.
func (s *DevStream) finish(err error) {
	if err != nil {
		s.mu.Lock()
		if s.err == nil {
			s.err = fmt.Errorf("rank %d: kernel: %w", s.d.Rank, err)
		}
		s.mu.Unlock()
	}
	s.marks.finished(s.finished.Load() + 1) // one finisher at a time: launch number finished+1
	if s.finished.Add(1) >= s.wanted.Load() {
		s.done.Wake()
	}
}

// stream runs the queued launches in order until Close.
func (s *DevStream) stream() {
	var taken uint64
	for {
		err := s.wait(s.idle, func() bool { return s.launched.Load() > taken || s.closed.Load() }, func() string { return "launches" })
		if err != nil || s.closed.Load() {
			return
		}
		s.mu.Lock()
		job := s.queue[s.head]
		s.queue[s.head] = devJob{}
		s.head++
		if s.head == len(s.queue) { // drained: the next launches reuse the array
			s.queue, s.head = s.queue[:0], 0
		}
		failed := s.err != nil
		s.mu.Unlock()
		taken++
		if failed { // after a failure the rest only drain (Synchronize reports the first)
			s.finish(nil)
			continue
		}
		s.finish(s.run(&job))
	}
}

// run runs a launch's phases on the calling goroutine (worker 0) and the
// workers.
func (s *DevStream) run(job *devJob) error {
	for _, f := range job.phases[:job.n] {
		if err := s.phase(f, job.coops); err != nil {
			return err
		}
	}
	return nil
}

// phase runs f on every coop and returns once all ended.
func (s *DevStream) phase(f func(coop int) error, coops int) error {
	ws := s.ws[:min(len(s.ws), coops-1)] // worker w runs coop w first: those past coops-1 have none
	if len(ws) == 0 {
		return s.share(0, f, coops)
	}
	s.joined.Store(0)
	for _, cw := range ws {
		cw.phase, cw.coops = f, coops
		cw.seq.Add(1)
		cw.w.Wake()
	}
	err := s.share(0, f, coops)
	n := int32(len(ws))
	if jerr := s.wait(s.join, func() bool { return s.joined.Load() == n }, func() string { return "the coop workers" }); jerr != nil {
		return errors.Join(err, jerr)
	}
	for _, cw := range ws {
		err = errors.Join(err, cw.err)
	}
	return err
}

// share runs f on worker w's coops below coops: w, w+W, w+2W, ...
func (s *DevStream) share(w int, f func(coop int) error, coops int) error {
	for k := w; k < coops; k += s.workers {
		if err := f(k); err != nil {
			return fmt.Errorf("coop %d: %w", k, err)
		}
	}
	return nil
}

// work is worker w's goroutine: its share of every phase until Close.
func (s *DevStream) work(w int, cw *coopWorker) {
	var seen uint64
	for {
		err := s.wait(cw.w, func() bool { return cw.seq.Load() > seen || s.closed.Load() }, func() string { return "a phase" })
		if err != nil || s.closed.Load() {
			return
		}
		seen++
		cw.err = s.share(w, cw.phase, cw.coops)
		s.joined.Add(1)
		s.join.Wake()
	}
}
