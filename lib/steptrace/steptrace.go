// Package steptrace records the embedded stack's step timeline: per track
// (a channel of a rank, or the rank's calls), its operations, their steps
// and the waits inside them, as fixed-size records in buffers that one
// goroutine at a time writes without locks, turned into Trace Event Format
// events (lib/tef, whose conventions they follow) after the run.
//
// A track's buffer is written by whoever runs the track's work: the
// channel's runner (its goroutine, a Synchronize caller, or the driver of
// a folded plan), one at a time, handed over through the stack's own
// atomics; and read by the rank's caller once its operations are done
// (Comm.Synchronize). Records are written when what they record ends, so
// a buffer holds a wait before its step and a step before its operation;
// Events sorts them.
package steptrace

import (
	"time"
)

// epoch is the trace clock's zero: this process's start, near enough.
var epoch = time.Now()

// Now is the trace clock: nanoseconds since the process's trace epoch, on
// the monotonic clock. time.Since reads the monotonic clock alone:
// measured on the project's VM, 31 ns a read, against 54 ns for
// time.Now (which reads the wall clock too) and 28 ns for
// runtime.nanotime reached through linkname.
func Now() int64 { return int64(time.Since(epoch)) }

// Epoch is the wall time the trace clock counts from.
func Epoch() time.Time { return epoch }

// Kind is what a record records.
type Kind uint8

const (
	KindOp   Kind = iota // an operation: a channel's part, or on the calls track the whole of it
	KindStep             // a step of an operation
	KindWait             // a wait inside a step or an operation
)

// On is what a wait waits for (tef.ArgOn).
type On uint8

const (
	OnOther   On = iota
	OnHead       // a receiver's credits (the FIFO's head)
	OnTail       // a sender's Simple data (the FIFO's tail)
	OnFlag       // flagged data: LL and LL128 lines, the one-shot's posts
	OnBarrier    // every rank: the one-shot's acknowledgements
)

var onNames = [...]string{OnOther: "other", OnHead: "head", OnTail: "tail", OnFlag: "flag", OnBarrier: "barrier"}

func (o On) String() string {
	if int(o) < len(onNames) {
		return onNames[o]
	}
	return "other"
}

// Record is one event of a track. Strings are the stack's constants
// (names of collectives, primitives, protocols, algorithms), but a
// wait's What, which its waiter describes when the wait ends.
type Record struct {
	Start, End int64 // trace clock (Now)
	// Queued is, on the calls track, how long the operation waited after
	// its call for the ones before it (its Start is when they were done).
	Queued int64
	Bytes  int64
	Seq    uint64 // the operation's sequence number in its communicator (ops and steps)
	Name   string // op: the collective; step: the primitive
	Proto  string
	Algo   string // ops only
	What   string // waits only
	// To is the rank a step sends to, or a wait waits on; From the rank a
	// step receives from. -1: none, or several.
	To, From int32
	Index    int32 // step: its index in its operation on its track; op: its channels
	Kind     Kind
	On       On // waits only
}

// DefaultCapacity is the records a track keeps unless told otherwise. A
// full track keeps what it has and counts what it drops (Buf.Dropped): the
// records kept are the first ones, whole operations from the start of the
// recording but the last few, which may lack their operation's record. A
// record is about 120 bytes; a track's records are allocated as it fills
// them, chunkLen at a time, and kept for the next recording (Reset).
const DefaultCapacity = 1 << 14

// chunkLen is the records allocated at once.
const chunkLen = 1 << 10

// Buf is one track's records. Its writer is one goroutine at a time (see
// the package comment); so is its reader, after the writes.
type Buf struct {
	chunks  [][]Record // chunkLen records each, allocated as needed, kept by Reset
	n       int        // records written
	limit   int
	dropped int64
	step    int32  // the next step's index in the current operation
	seq     uint64 // the current operation's sequence number
	// mark is when the last step of the current operation ended, or the
	// operation began: where the next step starts.
	mark int64
	// on and peer name the next wait (NameWait).
	on   On
	peer int32
}

// NewBuf returns a track that keeps capacity records (DefaultCapacity for
// capacity <= 0).
func NewBuf(capacity int) *Buf {
	if capacity <= 0 {
		capacity = DefaultCapacity
	}
	return &Buf{limit: capacity, peer: -1}
}

// next returns the next free record, or nil (counting a drop) when the
// track is full.
func (b *Buf) next() *Record {
	if b.n >= b.limit {
		b.dropped++
		return nil
	}
	c := b.n / chunkLen
	if c == len(b.chunks) {
		b.chunks = append(b.chunks, make([]Record, chunkLen))
	}
	r := &b.chunks[c][b.n%chunkLen]
	b.n++
	return r
}

// OpInfo describes an operation.
type OpInfo struct {
	Name, Algo, Proto string
	Seq               uint64
	Bytes             int64
	Channels          int
}

// BeginOp starts an operation on this track and returns the time: its
// steps count from 0, carry its sequence number, and run one after
// another from this time on.
func (b *Buf) BeginOp(seq uint64) int64 {
	t := Now()
	b.step, b.seq, b.mark = 0, seq, t
	return t
}

// Op records an operation from start to now, and returns now.
func (b *Buf) Op(o *OpInfo, start int64) int64 {
	end := Now()
	b.OpAt(o, start, end, 0)
	b.mark = end
	return end
}

// Mark is when the track's last step ended, or its last operation began
// or ended.
func (b *Buf) Mark() int64 { return b.mark }

// OpAt records an operation from start to end that was called queued
// nanoseconds before it started.
func (b *Buf) OpAt(o *OpInfo, start, end, queued int64) {
	if r := b.next(); r != nil {
		*r = Record{Start: start, End: end, Queued: queued, Bytes: o.Bytes, Seq: o.Seq, Name: o.Name, Proto: o.Proto, Algo: o.Algo,
			To: -1, From: -1, Index: int32(o.Channels), Kind: KindOp}
	}
}

// Step records a step of the current operation that has just ended: the
// primitive, its protocol, the rank it sends to and the one it receives
// from (-1: none, or several) and its bytes. A step starts where the one
// before it ended, or where its operation began: the time between two
// primitive calls, a loop's few instructions or a wait between them,
// belongs to the later one. One clock read a step.
func (b *Buf) Step(name, proto string, to, from int, bytes int64) {
	end := Now()
	if r := b.next(); r != nil {
		*r = Record{Start: b.mark, End: end, Bytes: bytes, Seq: b.seq, Name: name, Proto: proto,
			To: int32(to), From: int32(from), Index: b.step, Kind: KindStep}
	}
	b.step++
	b.mark = end
}

// DescribeAfter is the shortest wait whose record carries the waiter's
// own description (Record.What): a description costs a formatted string,
// about half a microsecond on the project's VM, as much as a short wait
// itself (an 8 B ring allreduce of 2 ranks waited a median 2 us, and
// describing every wait made its recording cost twice as much). Every
// wait says on what and on whom.
const DescribeAfter = 5000 // ns

// NameWait names the track's next wait: for what (on), on whom (peer, -1
// for none or several).
func (b *Buf) NameWait(on On, peer int) { b.on, b.peer = on, int32(peer) }

// Wait records a wait from start to end, named by NameWait (which it
// consumes), with the waiter's own description ("" for waits shorter than
// DescribeAfter).
func (b *Buf) Wait(what string, start, end int64) {
	if r := b.next(); r != nil {
		*r = Record{Start: start, End: end, Seq: b.seq, What: what, To: b.peer, From: -1, Kind: KindWait, On: b.on}
	}
	b.on, b.peer = OnOther, -1
}

// Len is the records kept.
func (b *Buf) Len() int { return b.n }

// Dropped is the records a full track did not keep.
func (b *Buf) Dropped() int64 { return b.dropped }

// Capacity is the most records the track keeps.
func (b *Buf) Capacity() int { return b.limit }

// Records appends the records kept to dst.
func (b *Buf) Records(dst []Record) []Record {
	for i := 0; i < b.n; i += chunkLen {
		dst = append(dst, b.chunks[i/chunkLen][:min(chunkLen, b.n-i)]...)
	}
	return dst
}

// Reset empties the track, keeping its memory.
func (b *Buf) Reset() {
	for i := 0; i < b.n; i += chunkLen {
		clear(b.chunks[i/chunkLen][:min(chunkLen, b.n-i)]) // drop the What strings
	}
	b.n, b.dropped, b.step, b.seq, b.mark, b.on, b.peer = 0, 0, 0, 0, 0, OnOther, -1
}

// Rank is one rank's tracks: its calls (an operation from the call to its
// completion, on tef.RankTrack) and its channels.
type Rank struct {
	Rank     int
	Calls    *Buf
	Channels []*Buf
}

// NewRank returns the tracks of rank with channels channels, each keeping
// capacity records (DefaultCapacity for capacity <= 0).
func NewRank(rank, channels, capacity int) *Rank {
	r := &Rank{Rank: rank, Calls: NewBuf(capacity)}
	for range channels {
		r.Channels = append(r.Channels, NewBuf(capacity))
	}
	return r
}

// Reset empties every track.
func (r *Rank) Reset() {
	r.Calls.Reset()
	for _, b := range r.Channels {
		b.Reset()
	}
}

// Snapshot copies the records kept out of the tracks.
func (r *Rank) Snapshot() Snapshot {
	s := Snapshot{Rank: r.Rank, Calls: r.Calls.Records(nil), Dropped: r.Calls.Dropped(), Capacity: r.Calls.Capacity()}
	for _, b := range r.Channels {
		s.Channels = append(s.Channels, b.Records(nil))
		s.Dropped += b.Dropped()
	}
	return s
}

// Snapshot is one rank's records, apart from the tracks that hold them:
// what a recording leaves.
type Snapshot struct {
	Rank     int
	Calls    []Record
	Channels [][]Record
	Dropped  int64 // records the full tracks did not keep
	Capacity int   // records a track keeps
}

// Append adds t's records (a later recording of the same rank) to s.
func (s *Snapshot) Append(t Snapshot) {
	s.Calls = append(s.Calls, t.Calls...)
	for len(s.Channels) < len(t.Channels) {
		s.Channels = append(s.Channels, nil)
	}
	for i, recs := range t.Channels {
		s.Channels[i] = append(s.Channels[i], recs...)
	}
	s.Dropped += t.Dropped
	s.Capacity = max(s.Capacity, t.Capacity)
}

// Records counts the records kept.
func (s *Snapshot) Records() int {
	n := len(s.Calls)
	for _, c := range s.Channels {
		n += len(c)
	}
	return n
}
