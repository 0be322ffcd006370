// --trace-steps: the embedded stack's step timeline of the timed
// iterations (lib/steptrace), written as a Trace Event Format file; in a
// job of several processes one file per process, its clock aligned to
// process 0's through the bootstrap root, merged by process 0.

package perf

import (
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"slices"
	"strconv"
	"sync"

	"github.com/gccl/gccl/lib/bootstrap"
	"github.com/gccl/gccl/lib/steptrace"
	"github.com/gccl/gccl/lib/tef"
)

// stepsPerTrack is the records each track keeps per measured batch (each
// size and placement): the first ones; the file's otherData counts those
// dropped.
const stepsPerTrack = 4096

// clockRounds is how many round trips to the bootstrap root a process
// times to align its clock; the fastest counts.
const clockRounds = 20

// stepTracer is a rank that records a step timeline: the embedded
// stack's (ccl.Comm).
type stepTracer interface {
	StartTrace(capacity int) error
	SampleTrace(every int) error
	StopTrace() error
	TakeTrace() (steptrace.Snapshot, error)
}

// stepTrace is --trace-steps for this process: its ranks' records, and
// the files they go to.
type stepTrace struct {
	path   string // this process's file: FILE, or FILE.<process> in a job
	merged string // FILE, which process 0 of a job merges into; "" otherwise
	prog   string
	every  int // --trace-every: one operation in every recorded; 0 by size (autoTraceEvery)

	mu      sync.Mutex
	snaps   map[int]*steptrace.Snapshot // by rank; guarded by mu (threads record their own ranks)
	sampled map[int64]int               // the N of each size's rows (bytes); guarded by mu

	written bool // write succeeded; the engine's goroutine's
}

// openStepTrace creates the files of --trace-steps path (checking that
// they can be written, before the run), or returns nil without the flag.
func openStepTrace(path, prog string, every int, j *job) (*stepTrace, error) {
	if path == "" {
		return nil, nil
	}
	s := &stepTrace{path: path, prog: prog, every: every, snaps: map[int]*steptrace.Snapshot{}, sampled: map[int64]int{}}
	if j != nil && j.procs > 1 {
		s.path = path + "." + strconv.Itoa(j.proc)
		if j.proc == 0 {
			s.merged = path
		}
	}
	for _, p := range []string{s.path, s.merged} {
		if p == "" {
			continue
		}
		f, err := os.Create(p)
		if err != nil {
			s.discard()
			return nil, usagef("--trace-steps: %v (want a file this process can write)", err)
		}
		f.Close()
	}
	return s, nil
}

// discardUnwritten removes the files of a run that wrote no timeline
// (it failed, or a signal stopped it).
func (s *stepTrace) discardUnwritten() {
	if s != nil && !s.written {
		s.discard()
	}
}

// discard removes the files.
func (s *stepTrace) discard() {
	for _, p := range []string{s.path, s.merged} {
		if p != "" {
			os.Remove(p)
		}
	}
}

// tracers are cs as ranks that record a timeline.
func tracers(cs []Comm) ([]stepTracer, error) {
	ts := make([]stepTracer, len(cs))
	for i, c := range cs {
		t, ok := c.(stepTracer)
		if !ok {
			return nil, usagef("--trace-steps: rank %d's backend records no step timeline (the embedded stack's collectives do)", c.Rank())
		}
		ts[i] = t
	}
	return ts, nil
}

// start turns the ranks' timelines on for a row of bytes: no operation
// of cs is in flight.
func (s *stepTrace) start(cs []Comm, bytes int64) error {
	ts, err := tracers(cs)
	if err != nil {
		return err
	}
	every := s.every
	if every == 0 {
		every = autoTraceEvery(bytes)
	}
	s.mu.Lock()
	s.sampled[bytes] = every
	s.mu.Unlock()
	for _, t := range ts {
		if err := t.SampleTrace(every); err != nil {
			return err
		}
		if err := t.StartTrace(stepsPerTrack); err != nil {
			return err
		}
	}
	return nil
}

// take turns the ranks' timelines off and keeps what they recorded.
func (s *stepTrace) take(cs []Comm) error {
	ts, err := tracers(cs)
	if err != nil {
		return err
	}
	for i, t := range ts {
		if err := t.StopTrace(); err != nil {
			return err
		}
		snap, err := t.TakeTrace()
		if err != nil {
			return err
		}
		s.add(cs[i].Rank(), snap)
	}
	return nil
}

func (s *stepTrace) add(rank int, snap steptrace.Snapshot) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if have := s.snaps[rank]; have != nil {
		have.Append(snap)
		return
	}
	s.snaps[rank] = &snap
}

// write writes this process's file, its clock aligned to process 0's in
// a job, and there merges every process's file into one (process 0,
// once every process wrote its own).
func (s *stepTrace) write(j *job) error {
	clock, err := alignClock(j)
	if err != nil {
		return fmt.Errorf("--trace-steps: aligning the clocks: %w", err)
	}
	ranks := make([]int, 0, len(s.snaps))
	for r := range s.snaps {
		ranks = append(ranks, r)
	}
	slices.Sort(ranks)
	snaps := make([]steptrace.Snapshot, len(ranks))
	for i, r := range ranks {
		snaps[i] = *s.snaps[r]
	}
	extra := map[string]any{"program": s.prog,
		"recorded": "the timed iterations of every size and placement, not the warmup"}
	if every := s.sampledBySize(); every != nil {
		extra["sampled"] = "one operation in N, N by the row's bytes in trace_every: those at stream positions that are multiples of N, the same on every rank"
		extra["trace_every"] = every
	}
	if j != nil {
		extra["process"], extra["processes"] = j.proc, j.procs
	}
	err = tef.WriteFile(s.path, steptrace.File(snaps, clock, extra))
	if j == nil || j.procs <= 1 {
		s.written = err == nil
		return err
	}
	// Every process, its file written or not, meets the others: process 0
	// merges what there is.
	if berr := j.link.Barrier(); err == nil {
		err = berr
	}
	if err == nil && j.proc == 0 {
		err = mergeStepFiles(s.merged, j.procs)
	}
	s.written = err == nil
	return err
}

// sampledBySize is each row size's N ("8": 64), or nil when every size
// recorded every operation.
func (s *stepTrace) sampledBySize() map[string]int {
	var out map[string]int
	for _, n := range s.sampled {
		if n > 1 {
			out = map[string]int{}
			break
		}
	}
	if out == nil {
		return nil
	}
	for b, n := range s.sampled {
		out[strconv.FormatInt(b, 10)] = n
	}
	return out
}

// mergeStepFiles joins path.0 ... path.<procs-1> into path.
func mergeStepFiles(path string, procs int) error {
	files := make([]*tef.File, procs)
	for k := range files {
		f, err := tef.ReadFile(path + "." + strconv.Itoa(k))
		if errors.Is(err, os.ErrNotExist) {
			return fmt.Errorf("--trace-steps: merging: %w (the processes' files are merged where process 0 can read them: a file system they share)", err)
		}
		if err != nil {
			return fmt.Errorf("--trace-steps: merging: %w", err)
		}
		files[k] = f
	}
	m, err := tef.Merge(files)
	if err != nil {
		return fmt.Errorf("--trace-steps: %w", err)
	}
	return tef.WriteFile(path, m)
}

// alignClock is how this process's trace clock relates to process 0's:
// the offset to add and its error bound. Each process times clockRounds
// round trips to the job's bootstrap root and keeps the fastest (its
// offset to the root's clock, good to half that round trip); a process
// that serves the root reads both clocks side by side. Process 0's offset
// to the root, broadcast, turns each into an offset to process 0: the
// bound is the two bounds' sum.
func alignClock(j *job) (steptrace.Clock, error) {
	if j == nil || j.procs <= 1 {
		return steptrace.Clock{Method: "one process: no alignment"}, nil
	}
	var off, bound int64
	if j.served != nil {
		a := bootstrap.RootClock()
		t := steptrace.Now()
		b := bootstrap.RootClock()
		off, bound = (a+b)/2-t, (b-a+1)/2
	} else {
		var err error
		if off, bound, err = j.link.ClockOffset(steptrace.Now, clockRounds); err != nil {
			return steptrace.Clock{}, err
		}
	}
	b := binary.LittleEndian.AppendUint64(nil, uint64(off))
	b = binary.LittleEndian.AppendUint64(b, uint64(bound))
	got, err := j.link.Broadcast(0, b)
	if err != nil {
		return steptrace.Clock{}, err
	}
	if len(got) != 16 {
		return steptrace.Clock{}, fmt.Errorf("process 0's clock offset: %d bytes, want 16", len(got))
	}
	off0, bound0 := int64(binary.LittleEndian.Uint64(got)), int64(binary.LittleEndian.Uint64(got[8:]))
	c := steptrace.Clock{Process: j.proc, Method: fmt.Sprintf("offsets to the bootstrap root's clock, the fastest of %d round trips (or read beside it), less process 0's", clockRounds)}
	if j.proc != 0 {
		c.OffsetNs, c.BoundNs = off-off0, bound+bound0
	}
	return c, nil
}

// parseTraceEvery reads --trace-every: "auto" (0: autoTraceEvery by size)
// or N >= 1.
func parseTraceEvery(s string) (int, error) {
	if s == "auto" {
		return 0, nil
	}
	n, err := strconv.Atoi(s)
	if err != nil || n < 1 {
		return 0, usagef("--trace-every %q: want auto (sampled by size), 1 to record every operation, or N to record one in N", s)
	}
	return n, nil
}

// Sampling by size (--trace-every auto): a recorded operation costs
// 0.2-0.8 us (docs/PERFORMANCE.md, step timelines), under 2% of one that
// takes 40 us or more, as the embedded stack's operations of
// fullTraceBytes do on a 2-core VM and a 16-core Xeon; smaller ones are
// recorded one in as many as their size fits in it, up to maxAutoEvery,
// in powers of two so that every size's recorded positions are a subset
// of a smaller one's.
const (
	fullTraceBytes = 256 << 10
	maxAutoEvery   = 64
)

// autoTraceEvery is --trace-every auto's N for a row of bytes: the least
// power of two of at least fullTraceBytes/bytes, from 1 to maxAutoEvery.
// It depends on the size alone, so every rank of every process picks the
// same.
func autoTraceEvery(bytes int64) int {
	every := 1
	for every < maxAutoEvery && int64(every)*bytes < fullTraceBytes {
		every *= 2
	}
	return every
}
