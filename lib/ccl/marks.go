package ccl

import (
	"fmt"
	"sync/atomic"
	"time"
)

// Completion marks: the time each operation of a rank's stream finished,
// so that a benchmark can time every operation of a back-to-back loop
// without stopping the stream between them (nccl-tests' -I 1 records CUDA
// events on the GPU stream the same way). Off unless RecordCompletions
// turns them on; on, an operation's finisher reads the clock once.

// doneLog holds the completion times of the last len(slots) operations.
type doneLog struct {
	base  time.Time // the times are time.Since(base): monotonic
	mask  uint64
	slots []doneSlot
}

// doneSlot is one operation's completion time. ns is written first, then
// seq (release), by the goroutine that finishes the operation (channelDone
// or runFast); the issuing goroutine reads seq (acquire), then ns.
type doneSlot struct {
	seq atomic.Uint64
	ns  atomic.Int64
}

// record notes that operation seq finished now.
func (l *doneLog) record(seq uint64) {
	s := &l.slots[seq&l.mask]
	s.ns.Store(int64(time.Since(l.base)))
	s.seq.Store(seq)
}

// completions is a stream's completion marks (a Comm's operations, a
// DevStream's launches): the log while they are on.
type completions struct {
	// log, when set, logs when each operation finished. Written (Store) by
	// the stream's calling goroutine in turn, with nothing in flight; read
	// by the goroutine that finishes an operation.
	log   atomic.Pointer[doneLog]
	spare *doneLog // the last log made, kept for reuse; the calling goroutine's
}

// finished is called by the goroutine that finished operation seq, after
// the op's work and before it is published as finished.
func (m *completions) finished(seq uint64) {
	if l := m.log.Load(); l != nil {
		l.record(seq)
	}
}

// turn turns the log on for the last capacity operations (rounded up to
// a power of two), or off with 0; nothing may be in flight.
func (m *completions) turn(capacity int) {
	if capacity <= 0 {
		m.log.Store(nil)
		return
	}
	n := 1
	for n < capacity {
		n <<= 1
	}
	// The last log is reused when it is large enough: a benchmark turns
	// marks on for every batch, and garbage made between batches would be
	// collected during one (stopping ranks that spin).
	l := m.spare
	if l == nil || len(l.slots) < n {
		l = &doneLog{slots: make([]doneSlot, n)}
		m.spare = l
	}
	l.base, l.mask = time.Now(), uint64(len(l.slots)-1)
	m.log.Store(l)
}

// mark takes a mark after operation enqueued (finished of them done), on
// the stream of rank.
func (m *completions) mark(rank int, enqueued, finished uint64) (Mark, error) {
	l := m.log.Load()
	if l == nil {
		return Mark{}, fmt.Errorf("rank %d: a mark needs completion marks on (RecordCompletions)", rank)
	}
	mk := Mark{seq: enqueued, log: l}
	// The clock is read only when the stream is idle: otherwise the last
	// operation finishes after the mark, and its time is the mark's.
	if mk.done = finished >= mk.seq; mk.done {
		mk.at = time.Since(l.base)
	}
	return mk, nil
}

// markTime is MarkTime of a stream of rank that has finished operations.
func markTime(rank int, m Mark, finished uint64) (time.Time, error) {
	if m.log == nil {
		return time.Time{}, fmt.Errorf("rank %d: not a mark", rank)
	}
	if m.done {
		return m.log.base.Add(m.at), nil
	}
	if finished < m.seq {
		return time.Time{}, fmt.Errorf("rank %d: operation %d has not finished (Synchronize before reading its mark)", rank, m.seq)
	}
	s := &m.log.slots[m.seq&m.log.mask]
	if s.seq.Load() != m.seq {
		return time.Time{}, fmt.Errorf("rank %d: operation %d's completion time was overwritten: more than %d operations since (RecordCompletions with a larger capacity)", rank, m.seq, len(m.log.slots))
	}
	return m.log.base.Add(time.Duration(s.ns.Load())), nil
}

// finishedOp is called by the goroutine that finished operation seq, after
// the op's work and before it is published as finished.
func (c *Comm) finishedOp(seq uint64) { c.marks.finished(seq) }

// Mark is a point in a rank's stream: after every operation enqueued when
// it was taken. Its time (MarkTime) is when the last of them finished, or
// when the mark was taken if they had all finished by then, as a CUDA
// event recorded on a stream completes.
type Mark struct {
	seq  uint64
	at   time.Duration // when taken, since the log's base, if done
	done bool          // every operation before it had finished when taken
	log  *doneLog
}

// RecordCompletions turns completion marks on, keeping the times of the
// last capacity operations (rounded up to a power of two), or off with 0.
// Turning them on or off waits for the operations in flight (Synchronize).
func (c *Comm) RecordCompletions(capacity int) error {
	if err := c.Synchronize(); err != nil {
		return err
	}
	c.marks.turn(capacity)
	return nil
}

// Mark takes a mark at the current end of the stream; completion marks
// must be on.
func (c *Comm) Mark() (Mark, error) { return c.marks.mark(c.rank, c.enqueued, c.finished.Load()) }

// MarkTime is when the stream passed m: when the last operation before m
// finished, or when m was taken if that was later. The operations before m
// must have finished (Synchronize). Times of one process's marks compare
// across its ranks (monotonic clock).
func (c *Comm) MarkTime(m Mark) (time.Time, error) { return markTime(c.rank, m, c.finished.Load()) }
