package proto

import (
	"fmt"
	"runtime"
	"sync/atomic"
	"time"
	"unsafe"

	"github.com/gccl/gccl/lib/steptrace"
)

// LLFlagSpace sets how LL flags are derived from steps. Production uses the
// full 32 bits; tests shrink the space (as NCCL's TEST_LL_CLEANUP does) so
// that wraparound and cleaning happen within a few hundred steps.
type LLFlagSpace struct {
	// Mask keeps the low bits of step+1: flag = uint32((step+1) & Mask).
	Mask uint64
	// Clean: when step&Clean == Clean, the sender rewrites every line of the
	// step's slot with the current flag, so that no line keeps a flag old
	// enough to alias a future one after the flag wraps (NCCL_LL_CLEAN_MASK).
	// Clean must be a multiple of Steps and below Mask.
	Clean uint64
}

// DefaultLLFlags is NCCL's production flag space.
var DefaultLLFlags = LLFlagSpace{Mask: 0xffffffff, Clean: 0x7ffffff8}

// TestLLFlags is NCCL's TEST_LL_CLEANUP flag space: flags wrap every 256 steps.
var TestLLFlags = LLFlagSpace{Mask: 0xff, Clean: 0x78}

func (s LLFlagSpace) flag(step uint64) uint32 { return uint32((step + 1) & s.Mask) }

// Fifo is the memory of one protocol of one directed connection, shared by
// the sending goroutine and the receiving goroutine: Steps slots of StepBytes
// each, the head and tail counters and each slot's byte count (connFifo).
//
// Invariant: head <= tail-visible-step <= head + Steps: the sender never
// writes a slot the receiver has not released.
type Fifo struct {
	Proto     Protocol
	StepBytes int // buffer bytes per slot

	buf   []byte   // Simple: Steps*StepBytes bytes of payload
	lines []uint64 // LL: 2 words per 16-byte line; LL128: 16 words per 128-byte line
	ll    LLFlagSpace
	ctl   *fifoCtl // the counters: in Go memory, or in a segment shared across processes

	// RecvWaiter belongs to the goroutine that receives (woken on publish);
	// SendWaiter to the one that sends (woken on credit). Set once at
	// connection time, before either end runs.
	RecvWaiter, SendWaiter *Waiter
	// SendKick starts the sending channel's queued work (called by a
	// receiver about to wait for data); RecvKick the receiving channel's
	// (called by a sender about to wait for credits). Optional; set once at
	// connection time.
	SendKick, RecvKick func()

	// Flush, on a Proxied FIFO's sending side, lets the poster send what
	// it posted itself, in place of the proxy (a network transport's inline
	// send): called after each post, it reports whether nothing is left
	// for the proxy, which is then not woken. Optional; set once at
	// connection time.
	Flush func() bool

	// Poll, on a Proxied FIFO's receiving side, lets a rank waiting for
	// data read the network itself and publish what it finds into this
	// FIFO (a network transport's polling receive); it reports whether it
	// published anything. It never blocks. Optional; set once at
	// connection time.
	Poll func() bool
	// Hold, with Poll, tells the transport that a rank polls this FIFO
	// while it waits for it (true, as the wait starts) and that it stopped
	// (false, as it is about to park): between the two the proxy may leave
	// the socket to the rank instead of being woken for every frame the
	// rank reads first. Optional; set once at connection time.
	Hold func(on bool)

	// Overrun is a test hook: when non-nil it is called if the sender is
	// ever about to write a slot the receiver has not released.
	Overrun func(step, head uint64)
	// startStep is where both ends' step counters start (tests start near wrap).
	startStep uint64

	// direct allows Simple posts by reference (SimplePostRef): both ends
	// live in one process, so the receiver can read the sender's memory.
	direct bool
	// refs[slot] is the sender's memory a slice posted by reference lives
	// in (nil: its bytes are in the slot). Written by the sender before it
	// publishes the slice (the tail store, release); read by the receiver
	// after it loaded that tail (acquire), exactly like the slot's bytes, so
	// the counters order it and it needs no atomic of its own. Go pointers:
	// in-process FIFOs only.
	refs [Steps][]byte

	// log is the post log of a Proxied FIFO (nil otherwise).
	log *postLog

	// Landing (Simple, Proxied, the receiving host's FIFO): the rank shows
	// its proxy where the slices it will wait for go in its own memory, up
	// to a FIFO's depth ahead, and the proxy reads the network straight
	// into them (one copy fewer per byte). Indexed by the slice's first
	// step % Steps. landRef[i] is that memory: written by the rank before
	// it stores landStep[i], read by the proxy only after it loaded
	// landStep[i] equal to its frame's step + 1 (acquire); the rank writes
	// it again only for a later step, after it consumed this one, so never
	// while the proxy reads it. landed[i] says the slice went there:
	// written by the proxy before it publishes the slice (tail), read by
	// the rank after it loaded that tail.
	landRef  [Steps][]byte
	landStep [Steps]atomic.Uint64 // the first step landRef[i] is for, + 1; 0 for none
	landed   [Steps]bool

	// From and To are the ranks of the sender and the receiver, named in
	// traces (-1: unknown). Set once at connection time.
	From, To int
}

// Post is one published slice as its proxy sees it: the first step, the
// steps it spans (Simple slices span several) and its payload bytes.
type Post struct {
	Step   uint64
	Steps  int
	NBytes int
}

// postLog is the record of a Proxied FIFO's posts, in order. At most Steps
// posts are ever unread: each takes a step's credit, which the proxy gives
// back only after it read the post.
type postLog struct {
	// posted counts the posts. Written (Store, release) by the sender after
	// the entry and the slice's data; loaded (acquire) by the proxy.
	posted atomic.Uint64
	// entries[i%Steps] is post i: written by the sender before posted
	// counts it, read by the proxy after.
	entries [Steps]Post
}

// waitRecv and waitSend are the waits of a FIFO's receiver for data and of
// its sender for credits. On a Proxied FIFO the far end is a proxy fed by
// the network poller, which a goroutine yielding in a loop keeps the
// scheduler from polling: such waits yield no longer than the spin
// (BenchmarkNetPingPong in lib/transport, 8 B there and back through four
// proxies on loopback, got faster with the proxies' yield cut and again
// with these waits'; docs/log/performance-2026-11.md 13).
//
// A wait for a step of at most PollMaxBytes on a FIFO with a Poll hook
// polls the network while it spins: see Fifo.Poll.
//
// peer is the rank at the FIFO's other end, named in the wait's trace
// record (see Waiter.For).
func (f *Fifo) waitRecv(peer, nbytes int, ready func() bool, what func() string) error {
	on := steptrace.OnFlag // LL and LL128: the lines' flags
	if f.Proto == Simple {
		on = steptrace.OnTail
	}
	f.RecvWaiter.For(on, peer)
	if poll := f.Poll; poll != nil && nbytes <= PollMaxBytes {
		arrived := ready
		polling := func() bool { return arrived() || poll() && arrived() }
		if f.Hold == nil {
			return f.RecvWaiter.waitKick(polling, f.SendKick, what, f.YieldFor(f.RecvWaiter))
		}
		f.Hold(true)
		// Parked, the rank no longer polls: the proxy reads again, and the
		// park looks only at the FIFO (a poll there would take the socket
		// back from the proxy it just handed it to).
		return f.RecvWaiter.waitKickPark(polling, arrived, func() { f.Hold(false) }, f.SendKick, what, f.YieldFor(f.RecvWaiter))
	}
	return f.RecvWaiter.waitKick(ready, f.SendKick, what, f.YieldFor(f.RecvWaiter))
}

func (f *Fifo) waitSend(peer int, ready func() bool, what func() string) error {
	f.SendWaiter.For(steptrace.OnHead, peer)
	return f.SendWaiter.waitKick(ready, f.RecvKick, what, f.YieldFor(f.SendWaiter))
}

// YieldFor is how long a wait of w on this FIFO yields before it parks:
// w's own YieldFor, or 0 on a FIFO a network proxy serves (see waitRecv).
func (f *Fifo) YieldFor(w *Waiter) time.Duration {
	if f.log != nil {
		return 0
	}
	return w.YieldFor
}

// wakeReceiver hands a post on: to the network (Flush), or to the
// receiving goroutine. A network proxy it readied runs at once: the poster
// yields its processor, where the proxy was queued next, instead of going
// on to spin for its own receive while the proxy waits behind it for a
// processor (on 2 cores, 2 processes: faster 8 B sendrecv;
// docs/log/performance-2026-11.md 13f).
func (f *Fifo) wakeReceiver() {
	if f.Flush != nil && f.Flush() {
		return
	}
	if f.RecvWaiter.wake1() && f.log != nil {
		runtime.Gosched()
	}
}

// logPost records a published slice (Proxied FIFOs only).
func (f *Fifo) logPost(step uint64, steps, nbytes int) {
	l := f.log
	n := l.posted.Load()
	l.entries[n%Steps] = Post{Step: step, Steps: steps, NBytes: nbytes}
	l.posted.Store(n + 1)
}

// Posted is how many slices the sender has published (Proxied FIFOs).
func (f *Fifo) Posted() uint64 { return f.log.posted.Load() }

// PostAt is post i, once Posted() > i and before the proxy released it.
func (f *Fifo) PostAt(i uint64) Post { return f.log.entries[i%Steps] }

// fifoCtl is a FIFO's counters (NCCL's connFifo and head/tail words). It
// holds no Go pointers, so it may live in memory shared by two processes.
type fifoCtl struct {
	_ [64]byte
	// tail is the number of steps the sender has published (Simple only).
	// Written (Store, release) by the sender after the slot's data and size;
	// loaded (acquire) by the receiver. Only increases.
	tail atomic.Uint64
	_    [56]byte
	// head is the number of steps the receiver has consumed: the sender's
	// credits. Written by the receiver after it finished reading a slot;
	// loaded by the sender before it overwrites a slot. Only increases.
	head atomic.Uint64
	_    [56]byte
	// sizes[slot] is the payload byte count of the step in slot. Written by
	// the sender before it publishes the step (tail store or line flags);
	// read by the receiver after it saw the step, and by network proxies.
	sizes [Steps]atomic.Int64
}

// fifoCtlBytes is the control block's room at the start of a FIFO's
// memory (FifoBytes), a multiple of the 64-byte line.
const fifoCtlBytes = 256

// FifoOptions are the rarely changed knobs of a FIFO.
type FifoOptions struct {
	StartStep uint64      // initial step of both ends and of head/tail
	LLFlags   LLFlagSpace // zero value means DefaultLLFlags
	// Direct lets a Simple sender post a slice by reference to its own
	// memory instead of copying it into the slot (NCCL's P2P direct read
	// within a process). Only NewFifo honours it; a FIFO in memory shared
	// by two processes (NewFifoAt) never posts by reference. On a Proxied
	// FIFO the reader is the sending proxy, in the sender's process: it
	// writes the referenced bytes to its socket itself.
	Direct bool
	// Proxied says a proxy goroutine, not a rank, is the FIFO's other end
	// (a network connection): every post is also logged (Posts) so the
	// proxy learns each slice's first step, steps and bytes whatever the
	// protocol. Only NewFifo honours it.
	Proxied bool
}

// NewFifo allocates a FIFO of buffSize bytes (validated by ValidateBuffSize).
func NewFifo(p Protocol, buffSize int, opt FifoOptions) (*Fifo, error) {
	if err := ValidateBuffSize(p, buffSize); err != nil {
		return nil, err
	}
	f := newFifo(p, buffSize, opt)
	f.direct = opt.Direct && p == Simple
	if opt.Proxied {
		f.log = new(postLog)
	}
	f.ctl = new(fifoCtl)
	switch p {
	case Simple:
		f.buf = make([]byte, buffSize)
	default:
		f.lines = make([]uint64, buffSize/8)
	}
	f.initMemory()
	return f, nil
}

// FifoBytes is the memory a FIFO of buffSize bytes takes in NewFifoAt:
// its counters, then its buffer.
func FifoBytes(buffSize int) int { return fifoCtlBytes + buffSize }

// NewFifoAt lays a FIFO out in mem (FifoBytes(buffSize) bytes, 64-byte
// aligned), memory that two processes share: each process makes its own
// Fifo over the same bytes. The one that creates the memory passes init,
// which writes the starting counters and flags; the other must not.
func NewFifoAt(p Protocol, buffSize int, opt FifoOptions, mem []byte, init bool) (*Fifo, error) {
	if err := ValidateBuffSize(p, buffSize); err != nil {
		return nil, err
	}
	if len(mem) < FifoBytes(buffSize) || uintptr(unsafe.Pointer(unsafe.SliceData(mem)))%64 != 0 {
		return nil, fmt.Errorf("proto: %s FIFO of %d bytes needs %d bytes of 64-byte-aligned memory, got %d", p, buffSize, FifoBytes(buffSize), len(mem))
	}
	f := newFifo(p, buffSize, opt)
	f.ctl = (*fifoCtl)(unsafe.Pointer(&mem[0]))
	data := mem[fifoCtlBytes : fifoCtlBytes+buffSize]
	switch p {
	case Simple:
		f.buf = data
	default:
		f.lines = unsafe.Slice((*uint64)(unsafe.Pointer(&data[0])), buffSize/8)
	}
	if init {
		f.initMemory()
	}
	return f, nil
}

func newFifo(p Protocol, buffSize int, opt FifoOptions) *Fifo {
	f := &Fifo{Proto: p, StepBytes: buffSize / Steps, ll: opt.LLFlags, startStep: opt.StartStep, From: -1, To: -1}
	if f.ll.Mask == 0 {
		f.ll = DefaultLLFlags
	}
	return f
}

// initMemory writes the starting counters and, for LL and LL128, the
// flags of the previous round in every line.
func (f *Fifo) initMemory() {
	start := f.startStep
	f.ctl.head.Store(start)
	f.ctl.tail.Store(start)
	perSlot := f.StepBytes / 8
	switch f.Proto {
	case LL:
		// Every line starts with the flag of the previous round of its slot, so
		// fresh memory never matches what a receiver expects (not even flag 0
		// after a wrap).
		for slot := 0; slot < Steps; slot++ {
			fl := uint64(f.ll.flag(start+uint64(slot)-Steps)) << 32
			for i := slot * perSlot; i < (slot+1)*perSlot; i++ {
				f.lines[i] = fl
			}
		}
	case LL128:
		for slot := 0; slot < Steps; slot++ {
			fl := start + uint64(slot) - Steps + 1
			for i := slot*perSlot + LL128DataWords; i < (slot+1)*perSlot; i += LL128LineWords {
				f.lines[i] = fl
			}
		}
	}
}

// StepData is the payload capacity of one step.
func (f *Fifo) StepData() int { return f.Proto.StepData(f.StepBytes * Steps) }

// Head and Tail expose the counters to tests and proxies.
func (f *Fifo) Head() uint64 { return f.ctl.head.Load() }
func (f *Fifo) Tail() uint64 { return f.ctl.tail.Load() }

// Size returns the byte count recorded for slot.
func (f *Fifo) Size(slot int) int64 { return f.ctl.sizes[slot].Load() }

// Lines exposes the raw LL/LL128 words to wire-format tests.
func (f *Fifo) Lines() []uint64 { return f.lines }

// Buffer exposes the raw Simple buffer to wire-format tests.
func (f *Fifo) Buffer() []byte { return f.buf }

// Proxied reports whether a network proxy moves this FIFO's posts.
func (f *Fifo) Proxied() bool { return f.log != nil }

// Direct reports whether a Simple slice may be posted by reference.
func (f *Fifo) Direct() bool { return f.direct }

// RefMinBytes is the least slice worth posting by reference: any on an
// in-process FIFO, proxyRefMin on a network connection's, whose sender
// would otherwise wait at the end of its operation for the proxy to have
// written a small slice, a wake-up and a system call on the critical path
// that a copy of the few bytes saves.
func (f *Fifo) RefMinBytes() int {
	if f.log != nil {
		return proxyRefMin
	}
	return 0
}

// proxyRefMin: see RefMinBytes.
const proxyRefMin = 64 << 10

// SendEnd is the sender's view of a FIFO. It is owned by one goroutine at a time.
type SendEnd struct {
	F    *Fifo
	Step uint64 // next step to write; only this end changes it
	Desc string // "rank 0 -> rank 1, channel 2": for error messages
	// lent says a slice posted by reference may still be read: Drain
	// must wait before the sender's memory changes hands.
	lent bool
}

// RecvEnd is the receiver's view of a FIFO. It is owned by one goroutine at a time.
type RecvEnd struct {
	F    *Fifo
	Step uint64 // next step to read; only this end changes it
	Desc string
}

// Peer is the rank at the other end of the FIFO: its receiver's
// (F.To), for traces.
func (e *SendEnd) Peer() int { return e.F.To }

// Peer is the rank at the other end of the FIFO: its sender's (F.From),
// for traces.
func (e *RecvEnd) Peer() int { return e.F.From }

// NewEnds returns both ends of f, starting at its start step.
func NewEnds(f *Fifo, desc string) (*SendEnd, *RecvEnd) {
	return &SendEnd{F: f, Step: f.startStep, Desc: desc}, &RecvEnd{F: f, Step: f.startStep, Desc: desc}
}

// AlignStep rounds the step up to a multiple of n before an operation that
// moves n steps per slice, so a slice never straddles the end of the buffer
// (NCCL's roundUp in loadSendConn/loadRecvConn). Both ends do the same.
func (e *SendEnd) AlignStep(n int) { e.Step = roundUp(e.Step, uint64(n)) }
func (e *RecvEnd) AlignStep(n int) { e.Step = roundUp(e.Step, uint64(n)) }

func roundUp(x, n uint64) uint64 { return (x + n - 1) / n * n }

// waitCredit waits until the receiver released enough slots for steps more
// steps starting at e.Step.
func (e *SendEnd) waitCredit(steps int) error {
	f := e.F
	need := e.Step + uint64(steps)
	ready := func() bool { return f.ctl.head.Load()+Steps >= need }
	if !ready() {
		if err := f.waitSend(f.To, ready, func() string {
			return fmt.Sprintf("%s credits from the receiver (%s step %d, head %d)", e.Desc, f.Proto, e.Step, f.ctl.head.Load())
		}); err != nil {
			return err
		}
	}
	if f.Overrun != nil {
		if h := f.ctl.head.Load(); h+Steps < need {
			f.Overrun(e.Step, h)
		}
	}
	return nil
}

func (e *RecvEnd) checkSize(slot int, want int) error {
	if got := e.F.ctl.sizes[slot].Load(); got != int64(want) {
		return fmt.Errorf("%s: %s step %d carries %d bytes but the receiver expects %d (send and recv sizes differ)",
			e.Desc, e.F.Proto, e.Step, got, want)
	}
	return nil
}

// release returns credits for steps slots to the sender.
func (e *RecvEnd) release(steps int) {
	e.Step += uint64(steps)
	e.F.ctl.head.Store(e.Step)
	e.F.SendWaiter.Wake()
}

// CanSend reports, without waiting, whether steps more steps may be written.
func (e *SendEnd) CanSend(steps int) bool {
	return e.F.ctl.head.Load()+Steps >= e.Step+uint64(steps)
}

// CanRecv reports, without waiting, whether a step (or Simple slice of steps
// steps) carrying nbytes has fully arrived. Lines are published in order, so
// the last line's flag vouches for the ones before it.
func (e *RecvEnd) CanRecv(steps, nbytes int) bool {
	if e.canRecv(steps, nbytes) {
		return true
	}
	return e.F.Poll != nil && nbytes <= PollMaxBytes && e.F.Poll() && e.canRecv(steps, nbytes)
}

// Arrived is CanRecv without polling the network: what a parked waiter
// looks at (see Fifo.Hold).
func (e *RecvEnd) Arrived(steps, nbytes int) bool { return e.canRecv(steps, nbytes) }

// Hold tells the transport that the caller will poll this end (CanRecv)
// for a step of nbytes while it waits, until it calls Unhold as it parks;
// it reports whether there was anything to tell (see Fifo.Hold).
func (e *RecvEnd) Hold(nbytes int) bool {
	f := e.F
	if f.Hold == nil || f.Poll == nil || nbytes > PollMaxBytes {
		return false
	}
	f.Hold(true)
	return true
}

// Unhold ends Hold: the caller is about to park.
func (e *RecvEnd) Unhold() { e.F.Hold(false) }

// PollMaxBytes is the largest step whose receiver polls the network itself
// (Fifo.Poll): a small message's. Larger steps come in streams, which the
// proxy keeps up with alone (VM, 2 processes as 2 hosts: ranks polling
// made 8 B-4 KiB allreduces faster and 32 KiB ones slower;
// docs/log/performance-2026-11.md 13f).
const PollMaxBytes = 4 << 10

func (e *RecvEnd) canRecv(steps, nbytes int) bool {
	f := e.F
	switch f.Proto {
	case Simple:
		return f.ctl.tail.Load() >= e.Step+uint64(steps)
	case LL:
		if nbytes == 0 {
			return true
		}
		words := f.llWords(e.Step)
		w := (nbytes - 1) / LLDataPerLine * 2
		flag := f.ll.flag(e.Step)
		return uint32(atomic.LoadUint64(&words[w])>>32) == flag && uint32(atomic.LoadUint64(&words[w+1])>>32) == flag
	default:
		if nbytes == 0 {
			return true
		}
		words := f.ll128Words(e.Step)
		line := (nbytes - 1) / LL128DataPerLine
		return atomic.LoadUint64(&words[line*LL128LineWords+LL128DataWords]) == e.Step+1
	}
}

// The control block must fit its room.
var _ [fifoCtlBytes - unsafe.Sizeof(fifoCtl{})]byte
