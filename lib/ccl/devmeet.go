// devmeet.go: the meeting of the device API's collective calls
// (WindowRegister, WindowDeregister, DevCommCreate): the ranks of this
// process meet in memory, the last to arrive exchanges what the other
// processes need through the bootstrap (one AllGather per process), and
// every rank leaves with the same result.

package ccl

import (
	"encoding/json"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/gccl/gccl/lib/transport"
)

// devWorld is the device API's state of a world in this process.
type devWorld struct {
	mu     sync.Mutex             // guards everything below
	seq    map[int]int            // per local rank: the device collectives it called so far
	meets  map[int]*meeting       // by seq: the meetings some local rank has reached
	nWin   int                    // windows registered so far (the next one's index)
	nAlloc int                    // MemAlloc segments made so far (names them)
	nDev   int                    // device communicators created so far (names their segments)
	allocs map[*byte]*memAlloc    // MemAlloc's buffers by their first byte
	closer bool                   // a teardown closer for allocs is registered
	wins   map[int]*winSet        // the live windows by index (GIN's receiving proxies land puts in them)
	ginLn  *transport.NetListener // GIN's loopback listener within one host (made on first use)
}

// meeting is one device collective of the local ranks.
type meeting struct {
	kind     string
	first    int         // the first local rank to arrive
	args     map[int]any // each local rank's argument, by world rank
	mismatch error       // set when a rank called another collective
	done     chan struct{}
	out      any   // written by the last rank before done is closed
	err      error // likewise
}

// devOp is one device collective: prep turns the local ranks' arguments
// into this process's blob for the other processes (only across
// processes); build makes the result from the local arguments and every
// process's blob (nil in one process).
type devOp struct {
	kind  string
	prep  func(args map[int]any) ([]byte, error)
	build func(args map[int]any, blobs [][]byte) (any, error)
}

// envelope is a process's part of a device collective's exchange.
type envelope struct {
	Kind string
	Err  string // this process failed its part: every process fails
	Data json.RawMessage
}

// meet runs op with arg for rank c: every local rank calls it, in the
// same order of device collectives; the last one runs the exchange and
// the build, the others wait for it (within the timeout, or until the
// world aborts).
func (c *Comm) meet(op devOp, arg any) (any, error) {
	d := &c.w.dev
	d.mu.Lock()
	if d.meets == nil {
		d.seq, d.meets = map[int]int{}, map[int]*meeting{}
	}
	seq := d.seq[c.rank]
	d.seq[c.rank]++
	m := d.meets[seq]
	if m == nil {
		m = &meeting{kind: op.kind, first: c.rank, args: map[int]any{}, done: make(chan struct{})}
		d.meets[seq] = m
	}
	if m.kind != op.kind && m.mismatch == nil {
		m.mismatch = fmt.Errorf("rank %d called %s where rank %d called %s: every rank must call the device collectives in the same order",
			c.rank, op.kind, m.first, m.kind)
	}
	m.args[c.rank] = arg
	last := len(m.args) == len(c.w.local)
	if last {
		delete(d.meets, seq)
	}
	d.mu.Unlock()
	if last {
		m.out, m.err = c.w.runMeeting(op, m)
		close(m.done)
	} else if err := c.w.awaitMeeting(m, op.kind, c.rank); err != nil {
		return nil, err
	}
	if m.err != nil {
		return nil, fmt.Errorf("ccl: %s: %w", op.kind, m.err)
	}
	return m.out, nil
}

// awaitMeeting waits for the last local rank to finish meeting m.
func (w *world) awaitMeeting(m *meeting, kind string, rank int) error {
	var timeout <-chan time.Time
	if w.set.timeout > 0 {
		t := time.NewTimer(w.set.timeout)
		defer t.Stop()
		timeout = t.C
	}
	select {
	case <-m.done:
		return nil
	case <-w.abort.Done():
		return fmt.Errorf("ccl: %s: %w", kind, w.abort.Err())
	case <-timeout:
		w.dev.mu.Lock()
		var missing []int
		for _, c := range w.local {
			if _, ok := m.args[c.rank]; !ok {
				missing = append(missing, c.rank)
			}
		}
		w.dev.mu.Unlock()
		return fmt.Errorf("ccl: %s: %w after %v: rank %d waits for ranks %v of this process to call it too",
			kind, ErrTimeout, w.set.timeout, rank, missing)
	}
}

// runMeeting is the last local rank's part: the exchange between
// processes (every process takes part, failed or not, so that none is
// left waiting) and the build.
func (w *world) runMeeting(op devOp, m *meeting) (any, error) {
	j := w.job
	if j == nil {
		if m.mismatch != nil {
			return nil, m.mismatch
		}
		return op.build(m.args, nil)
	}
	env := envelope{Kind: op.kind}
	if m.mismatch != nil {
		env.Err = m.mismatch.Error()
	} else if data, err := op.prep(m.args); err != nil {
		env.Err = err.Error()
	} else {
		env.Data = data
	}
	blob, _ := json.Marshal(env)
	parts, err := j.link.AllGather(blob)
	if err != nil {
		return nil, fmt.Errorf("exchanging with the other processes: %w", err)
	}
	blobs := make([][]byte, len(parts))
	for pi, part := range parts {
		var e envelope
		if err := json.Unmarshal(part, &e); err != nil {
			return nil, fmt.Errorf("process %d (pid %d) sent what this version cannot read: %v", pi, j.procs[pi].Pid, err)
		}
		if e.Kind != op.kind {
			return nil, fmt.Errorf("process %d (pid %d, ranks %v) called %s where this one called %s: every rank must call the device collectives in the same order",
				pi, j.procs[pi].Pid, j.procs[pi].Ranks, e.Kind, op.kind)
		}
		if e.Err != "" {
			if pi == j.self {
				return nil, fmt.Errorf("%s", e.Err)
			}
			return nil, fmt.Errorf("process %d (pid %d, ranks %v) failed: %s", pi, j.procs[pi].Pid, j.procs[pi].Ranks, e.Err)
		}
		blobs[pi] = e.Data
	}
	return op.build(m.args, blobs)
}

// sortedRanks is the keys of args in order.
func sortedRanks(args map[int]any) []int {
	rs := make([]int, 0, len(args))
	for r := range args {
		rs = append(rs, r)
	}
	slices.Sort(rs)
	return rs
}
