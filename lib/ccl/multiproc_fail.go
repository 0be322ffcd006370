// Failure handling of a job across processes: naming a rank by its
// process in errors, each channel's record of its wait and the hang dump
// of every rank, waking every waiter on an abort, and the removal of the
// job's segments when a set fails or the process exits without Destroy.

package ccl

import (
	"fmt"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"unsafe"

	"github.com/gccl/gccl/lib/shm"
)

// rankName names rank r in messages: with its process's host and pid when
// that process is another one of the job.
func (j *job) rankName(r int) string {
	if j == nil || r < 0 || r >= len(j.procOf) || j.procOf[r] == j.self {
		return fmt.Sprintf("rank %d", r)
	}
	p := j.procs[j.procOf[r]]
	return fmt.Sprintf("rank %d (host %s, pid %d)", r, p.Host, p.Pid)
}

// progress is a channel's record of its current wait: written by the
// channel's runner when a wait parks (and cleared when it resumes), read
// by dumps in any process. seq is odd while the text is being written.
type progress struct {
	seq     atomic.Uint32
	waiting atomic.Uint32
	n       atomic.Uint32
	_       uint32
	text    [progressText]byte
}

func (j *job) progressOf(r, ch int) *progress {
	return (*progress)(unsafe.Pointer(&j.chanMem(r, ch)[progressOff]))
}

func (p *progress) set(what string) {
	p.seq.Add(1)
	n := copy(p.text[:], what)
	p.n.Store(uint32(n))
	p.waiting.Store(1)
	p.seq.Add(1)
}

func (p *progress) clear() { p.waiting.Store(0) }

// read returns the recorded wait, or "" when the channel is not waiting.
func (p *progress) read() string {
	for try := 0; try < 100; try++ {
		s := p.seq.Load()
		if s%2 == 1 {
			runtime.Gosched()
			continue
		}
		if p.waiting.Load() == 0 {
			return ""
		}
		text := string(p.text[:min(int(p.n.Load()), progressText)])
		if p.seq.Load() == s {
			return text
		}
	}
	return "(being updated)"
}

// ringAll wakes every local waiter asleep on a bell (an abort).
func (j *job) ringAll() {
	j.mu.RLock()
	defer j.mu.RUnlock()
	if j.closed {
		return
	}
	for _, r := range j.procs[j.self].Ranks {
		for ch := 0; ch < j.maxCh; ch++ {
			j.bell(r, ch, runBellOff).Interrupt()
			j.bell(r, ch, idleBellOff).Interrupt()
			j.bell(r, ch, foldBellOff).Interrupt()
			j.bell(r, ch, prevBellOff).Interrupt()
		}
	}
}

// jobRegistry is this process's sets across processes whose segments may
// still have names: added when a set's prefix is known, removed when its
// bells are unmapped. Guarded by mu (InitRanks and Destroy on any
// goroutine, RemoveSegments on a signal's).
type jobRegistry struct {
	mu sync.Mutex
	m  map[*job]struct{}
}

var liveJobs jobRegistry

func (l *jobRegistry) add(j *job) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.m == nil {
		l.m = map[*job]struct{}{}
	}
	l.m[j] = struct{}{}
}

func (l *jobRegistry) remove(j *job) {
	l.mu.Lock()
	defer l.mu.Unlock()
	delete(l.m, j)
}

// RemoveSegments removes the names of every shared-memory segment of this
// process's sets across processes (the mappings stay valid), for a
// process about to exit without Destroy (a second Ctrl-C): a segment it
// made that a peer had not mapped yet would otherwise keep its name.
func RemoveSegments() {
	liveJobs.mu.Lock()
	defer liveJobs.mu.Unlock()
	for j := range liveJobs.m {
		shm.RemovePrefix(j.dir, j.prefix)
	}
}

// abandon releases what a set that failed before its world started holds,
// and removes every segment of the set: the set is lost for every process
// (this one aborts the link), and a segment whose maker died before this
// one mapped it would otherwise stay behind (seen with the tests under
// load: a killed rank 0's bells, left by survivors that failed mapping
// them).
func (j *job) abandon() {
	j.unmap()
	shm.RemovePrefix(j.dir, j.prefix)
}

// unmap releases the bell segments (after every local goroutine exited).
func (j *job) unmap() {
	liveJobs.remove(j)
	j.mu.Lock()
	defer j.mu.Unlock()
	j.closed = true
	for _, s := range j.bells {
		if s != nil {
			s.Unlink()
			s.Close()
		}
	}
}

// dump is every rank's progress as the shared segments show it: the
// operations each rank enqueued and finished, and what each waiting
// channel waits for (the hang dump).
func (j *job) dump() string {
	j.mu.RLock()
	defer j.mu.RUnlock()
	if j.closed {
		return ""
	}
	var b strings.Builder
	b.WriteString("progress of every rank:")
	for pi, p := range j.procs {
		if !j.local(pi) {
			fmt.Fprintf(&b, "\n  ranks %v (host %s, pid %d): on another host, not visible here", p.Ranks, p.Host, p.Pid)
			continue
		}
		for _, r := range p.Ranks {
			oc := j.rankProgress(r)
			fmt.Fprintf(&b, "\n  rank %d (host %s, pid %d): %d of %d operations finished", r, p.Host, p.Pid, oc.finished.Load(), oc.enqueued.Load())
			if pi == j.self {
				b.WriteString(" [this process]")
			}
			for ch := 0; ch < j.maxCh; ch++ {
				if w := j.progressOf(r, ch).read(); w != "" {
					fmt.Fprintf(&b, "\n    channel %d waits for %s", ch, w)
				}
			}
		}
	}
	return b.String()
}
