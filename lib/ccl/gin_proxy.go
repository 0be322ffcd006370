// gin_proxy.go: the proxies that carry GIN (gin.go). Each local rank has
// a sending proxy per GIN context: a goroutine that takes the rank's
// queued operations in order and lands those for ranks of this process
// itself (copy into the window, then the signal: hosts simulated in one
// process go through the same queue and proxy, an in-process FIFO in place
// of the network), and writes the others as frames (transport.GinHeader
// and payload) on its connection to the destination's process. Each
// connection has a receiving proxy in the destination's process that reads
// the frames in order, writes each payload into the window's memory, then
// adds to the signal (or stores a barrier arrival) and wakes the rank's
// waiters.
//
// Connections: per context, per local rank, one TCP connection to every
// other process of the job (on the job's network listener across hosts,
// on a loopback listener of this process's own within one host), opened
// by DevCommCreate with the job's token handshake under the key
// gin-<device communicator>-c<context>-r<rank>-p<process>.

package ccl

import (
	"bufio"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gccl/gccl/lib/proto"
	"github.com/gccl/gccl/lib/transport"
)

// Limits on the GIN requirements (a context costs a goroutine per local
// rank and a connection per local rank and remote process).
const (
	maxGinContexts = 64
	maxGinIndices  = 1 << 20
)

// ginSet is the GIN of one DevCommCreate in this process.
type ginSet struct {
	w                      *world
	seq                    int // the device communicator's number (names its connections)
	nCtx, nSig, nCtr, nBar int
	ranks                  map[int]*ginRank // the local ranks'
	stop                   *proto.Abort     // close, or the world's abort, stops the sending proxies
	conns                  []net.Conn       // every connection, closed by close
	wg                     sync.WaitGroup   // the proxies' goroutines
	// mu guards closed: set by close (the last Destroy); read by the
	// abort hook and the proxies' failure path.
	mu     sync.Mutex
	closed bool
}

// ginRank is one local rank's GIN state.
type ginRank struct {
	rank int
	// signals[i] is added to by the proxies that land remote actions for
	// this rank (atomic Add after the payload's write: a release), read
	// by the rank's coops (Load: an acquire) and reset by them.
	signals []atomic.Uint64
	// counters[i] is added to by this rank's sending proxies once a put's
	// source is consumed; read and reset by the rank's coops.
	counters []atomic.Uint64
	// bars[index*nRanks+r] is the last epoch rank r announced on GIN
	// barrier index to this rank: stored by the proxy that lands r's
	// arrival (its own rank's included), loaded by this rank's sessions.
	bars  []atomic.Uint32
	tx    []*ginTx // per context: the rank's sending proxy
	waits ginWaits
}

// ginWaits are the waiters of one rank's GIN waits (signals, counters,
// flushes, barriers): any of its goroutines may wait, each on a waiter of
// its own, which every change to the rank's GIN words wakes.
type ginWaits struct {
	// n counts the waiters registered (or registering): incremented by a
	// waiting goroutine before it registers, read by wakers after their
	// atomic write. A waker that reads 0 knows every later waiter will see
	// its write (the seq-cst pair: write then load n / add n then load
	// the word).
	n  atomic.Int32
	mu sync.Mutex // guards set
	// set holds the waiters of the goroutines waiting now.
	set map[*proto.Waiter]struct{}
}

// wait waits for ready: spinning and yielding first, then parked on a
// waiter that wake reaches.
func (ws *ginWaits) wait(w *world, ready func() bool, what func() string) error {
	if ready() {
		return nil
	}
	wt := proto.NewWaiter(w.abort, w.set.timeout)
	ws.n.Add(1)
	ws.mu.Lock()
	if ws.set == nil {
		ws.set = map[*proto.Waiter]struct{}{}
	}
	ws.set[wt] = struct{}{}
	ws.mu.Unlock()
	err := wt.Wait(ready, what)
	ws.mu.Lock()
	delete(ws.set, wt)
	ws.mu.Unlock()
	ws.n.Add(-1)
	return err
}

// wake wakes the rank's waiting goroutines, after a write to a GIN word.
func (ws *ginWaits) wake() {
	if ws.n.Load() == 0 {
		return
	}
	ws.mu.Lock()
	for wt := range ws.set {
		wt.Wake()
	}
	ws.mu.Unlock()
}

// ginOp is one queued GIN operation.
type ginOp struct {
	h    transport.GinHeader
	data []byte  // the payload: the source window's bytes (not copied) or a value's
	win  *winSet // the destination window (puts)
	ctr  int     // the local counter to add 1 to once data is consumed; -1: none
}

// ginTx is a local rank's sending proxy of one context.
type ginTx struct {
	set  *ginSet
	rank *ginRank
	ctx  int
	mu   sync.Mutex // guards queue and issued
	// queue holds the operations posted and not yet taken by the proxy.
	queue  []ginOp
	issued uint64 // operations posted so far
	// posted mirrors issued for the proxy's wait: written under mu by
	// post, read by the proxy.
	posted atomic.Uint64
	taken  uint64 // operations the proxy took; the proxy's own
	// done counts the operations whose source is consumed: written by
	// the proxy after each, read by Flush (and wakes the rank's waiters).
	done atomic.Uint64
	// closing asks the proxy to end once the queue is empty: set by
	// close, read by the proxy.
	closing atomic.Bool
	waiter  *proto.Waiter // the proxy's
	out     map[int]*ginOut
}

// ginOut is a sending proxy's connection to one process.
type ginOut struct {
	conn  net.Conn
	wr    *bufio.Writer
	dirty bool // written since the last flush; the proxy's
}

// post queues op and wakes the proxy.
func (t *ginTx) post(op ginOp) error {
	t.mu.Lock()
	if t.closing.Load() {
		t.mu.Unlock()
		return errors.New("the device communicator is destroyed")
	}
	t.queue = append(t.queue, op)
	t.issued++
	t.posted.Store(t.issued)
	t.mu.Unlock()
	t.waiter.Wake()
	return nil
}

// issuedCount is the operations posted so far.
func (t *ginTx) issuedCount() uint64 {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.issued
}

// run is the sending proxy: it takes the queue in batches, lands or
// sends each operation in order, then flushes its connections.
func (t *ginTx) run() error {
	ready := func() bool { return t.posted.Load() > t.taken || t.closing.Load() }
	for {
		if !ready() {
			if err := t.waiter.Wait(ready, func() string { return "the next GIN operation" }); err != nil {
				return nil // stopped: close, or the job aborted (its waits report it)
			}
		}
		t.mu.Lock()
		ops := t.queue
		t.queue = nil
		t.mu.Unlock()
		if len(ops) == 0 && t.closing.Load() {
			return nil
		}
		t.taken += uint64(len(ops))
		for i := range ops {
			if err := t.send(&ops[i]); err != nil {
				return err
			}
			ops[i] = ginOp{} // the source is the rank's again
		}
		for _, o := range t.out {
			if o.dirty {
				o.dirty = false
				if err := o.wr.Flush(); err != nil {
					return fmt.Errorf("to %s: %w", o.conn.RemoteAddr(), err)
				}
			}
		}
	}
}

// send lands op (a rank of this process) or writes its frame, then
// completes it locally.
func (t *ginTx) send(op *ginOp) error {
	s := t.set
	if r := s.ranks[op.h.Dst]; r != nil {
		if op.h.Kind == transport.GinPut {
			copy(op.win.bufs[op.h.Dst][op.h.Off:], op.data)
		}
		r.land(s, op.h, t.rank.rank)
	} else {
		o := t.out[s.w.job.procOf[op.h.Dst]]
		var hdr [transport.GinHeaderBytes]byte
		op.h.Put(hdr[:])
		if _, err := o.wr.Write(hdr[:]); err != nil {
			return fmt.Errorf("to %s: %w", s.w.job.rankName(op.h.Dst), err)
		}
		if _, err := o.wr.Write(op.data); err != nil {
			return fmt.Errorf("to %s: %w", s.w.job.rankName(op.h.Dst), err)
		}
		o.dirty = true
	}
	if op.ctr >= 0 {
		t.rank.counters[op.ctr].Add(1)
	}
	t.done.Add(1)
	t.rank.waits.wake()
	return nil
}

// land does a frame's remote action at rank r once its payload is in
// place: the signal's add (release), or a barrier arrival of rank from.
func (r *ginRank) land(s *ginSet, h transport.GinHeader, from int) {
	if h.Kind == transport.GinArrive {
		r.bars[h.Index*s.w.n+from].Store(uint32(h.Off))
	}
	if h.Sig >= 0 {
		r.signals[h.Sig].Add(h.Add)
	}
	r.waits.wake()
}

// recv is the receiving proxy of the connection from rank src: frames in
// order, each payload read straight into the window's memory before its
// signal is added. The sender's close between frames ends it.
func (s *ginSet) recv(conn net.Conn, src int) error {
	rd := bufio.NewReaderSize(conn, 64<<10)
	var hdr [transport.GinHeaderBytes]byte
	for {
		if _, err := io.ReadFull(rd, hdr[:]); err != nil {
			if err == io.EOF {
				return nil
			}
			return err
		}
		h := transport.ParseGinHeader(hdr[:])
		r := s.ranks[h.Dst]
		if err := s.checkFrame(h, r); err != nil {
			return err
		}
		if h.Kind == transport.GinPut {
			ws, err := s.w.ginWindow(h.Win)
			if err != nil {
				return err
			}
			part := ws.bufs[h.Dst]
			if h.Off > uint64(len(part)) || uint64(h.N) > uint64(len(part))-h.Off {
				return fmt.Errorf("a put of bytes %d..%d past rank %d's part of window %d (%d bytes)", h.Off, h.Off+uint64(h.N), h.Dst, h.Win, len(part))
			}
			if _, err := io.ReadFull(rd, part[h.Off:h.Off+uint64(h.N)]); err != nil {
				return err
			}
		}
		r.land(s, h, src)
	}
}

// checkFrame refuses a frame this process cannot land.
func (s *ginSet) checkFrame(h transport.GinHeader, r *ginRank) error {
	switch {
	case r == nil:
		return fmt.Errorf("a GIN frame for rank %d, not a rank of this process", h.Dst)
	case h.Sig >= s.nSig || h.Sig < -1:
		return fmt.Errorf("a GIN frame for signal %d of %d", h.Sig, s.nSig)
	case h.Kind == transport.GinArrive && h.Index >= s.nBar:
		return fmt.Errorf("a GIN barrier arrival at index %d of %d", h.Index, s.nBar)
	case h.Kind != transport.GinPut && h.N != 0, h.Kind < transport.GinPut || h.Kind > transport.GinArrive:
		return fmt.Errorf("a malformed GIN frame (kind %d, %d bytes)", h.Kind, h.N)
	}
	return nil
}

// badIndex is the error of a signal, counter or barrier index out of
// range.
func (s *ginSet) badIndex(what string, idx, n int, field string) error {
	if n == 0 {
		return fmt.Errorf("%s %d: the device communicator has no GIN %ss (ask for %s)", what, idx, what, field)
	}
	return fmt.Errorf("%s %d is out of range: want 0..%d (%s)", what, idx, n-1, field)
}

// ginWindow is window index of this process, waiting for it while this
// process has yet to build it (a peer's put may arrive before).
func (w *world) ginWindow(index int) (*winSet, error) {
	deadline := time.Now().Add(joinWait(w.set.timeout))
	for {
		w.dev.mu.Lock()
		ws, n := w.dev.wins[index], w.dev.nWin
		w.dev.mu.Unlock()
		switch {
		case ws != nil:
			return ws, nil
		case index < n:
			return nil, fmt.Errorf("a put into window %d, which this process deregistered", index)
		case w.abort.Aborted():
			return nil, w.abort.Err()
		case time.Now().After(deadline):
			return nil, fmt.Errorf("a put into window %d, which this process never registered", index)
		}
		time.Sleep(time.Millisecond)
	}
}

// devBlob is a process's part of DevCommCreate's exchange.
type devBlob struct {
	Reqs    DevCommRequirements
	GinAddr string // where this process's GIN connections are dialled ("": none)
}

// ginListener is the listener this process's GIN peers dial: the job's
// network listener across hosts, else one on loopback made on first use
// and closed at the teardown.
func (w *world) ginListener() (*transport.NetListener, error) {
	j := w.job
	if j.listener != nil {
		return j.listener, nil
	}
	w.dev.mu.Lock()
	defer w.dev.mu.Unlock()
	if w.dev.ginLn != nil {
		return w.dev.ginLn, nil
	}
	l, err := transport.ListenNet("127.0.0.1:0", hex.EncodeToString(j.token[:]), func(format string, args ...any) {
		fmt.Fprintf(os.Stderr, format+"\n", args...)
	})
	if err != nil {
		return nil, fmt.Errorf("GIN: %w", err)
	}
	w.dev.ginLn = l
	w.mu.Lock()
	w.closers = append(w.closers, l.Close)
	w.mu.Unlock()
	return l, nil
}

// ginKey names the connection of context ctx from rank src to process pi.
func ginKey(seq, ctx, src, pi int) string {
	return fmt.Sprintf("gin-%d-c%d-r%d-p%d", seq, ctx, src, pi)
}

// buildGin makes the GIN of device communicator seq: every local rank's
// words, its sending proxies and their connections to the other
// processes (whose listener addresses blobs hold), and the receiving
// proxies of theirs.
func (w *world) buildGin(reqs DevCommRequirements, seq int, blobs [][]byte) (*ginSet, error) {
	s := &ginSet{w: w, seq: seq, nCtx: reqs.GinContextCount, nSig: reqs.GinSignalCount, nCtr: reqs.GinCounterCount,
		nBar: reqs.ginBarrierCount(), ranks: map[int]*ginRank{}, stop: proto.NewAbort()}
	for _, c := range w.local {
		r := &ginRank{rank: c.rank, signals: make([]atomic.Uint64, s.nSig), counters: make([]atomic.Uint64, s.nCtr),
			bars: make([]atomic.Uint32, s.nBar*w.n)}
		for ctx := range s.nCtx {
			t := &ginTx{set: s, rank: r, ctx: ctx, waiter: proto.NewWaiter(s.stop, 0), out: map[int]*ginOut{}}
			r.tx = append(r.tx, t)
		}
		s.ranks[c.rank] = r
	}
	var rx []func() error
	if w.job != nil && len(w.job.procs) > 1 {
		var err error
		if rx, err = s.connect(blobs); err != nil {
			s.closeConns()
			return nil, err
		}
	}
	w.abort.OnTrigger(func() {
		s.stop.Trigger(ErrAborted)
		s.closeConns() // the receiving proxies end
	})
	for _, r := range s.ranks {
		for _, t := range r.tx {
			s.goProxy(fmt.Sprintf("rank %d's GIN context %d", r.rank, t.ctx), t.run)
		}
	}
	for _, f := range rx {
		s.goProxy("a GIN receiving proxy", f)
	}
	return s, nil
}

// connect dials every other process for every context and local rank,
// then takes the connections the other processes dialled; it returns the
// receiving proxies to start.
func (s *ginSet) connect(blobs [][]byte) ([]func() error, error) {
	w, j := s.w, s.w.job
	addrs := make([]string, len(blobs))
	for pi, b := range blobs {
		var o devBlob
		if err := json.Unmarshal(b, &o); err != nil || (pi != j.self && o.GinAddr == "") {
			return nil, fmt.Errorf("GIN: process %d (ranks %v) sent no GIN address", pi, j.procs[pi].Ranks)
		}
		addrs[pi] = o.GinAddr
	}
	l, err := w.ginListener()
	if err != nil {
		return nil, err
	}
	token, timeout := hex.EncodeToString(j.token[:]), joinWait(w.set.timeout)
	for ctx := range s.nCtx {
		for _, c := range w.local {
			t := s.ranks[c.rank].tx[ctx]
			for pi := range j.procs {
				if pi == j.self {
					continue
				}
				conn, err := transport.DialNet(addrs[pi], token, ginKey(s.seq, ctx, c.rank, pi), timeout, w.abort.Aborted)
				if err != nil {
					return nil, fmt.Errorf("GIN: dialling process %d (ranks %v) at %s: %w", pi, j.procs[pi].Ranks, addrs[pi], err)
				}
				s.conns = append(s.conns, conn)
				t.out[pi] = &ginOut{conn: conn, wr: bufio.NewWriterSize(conn, 64<<10)}
			}
		}
	}
	var rx []func() error
	for ctx := range s.nCtx {
		for pi, p := range j.procs {
			if pi == j.self {
				continue
			}
			for _, src := range p.Ranks {
				conn, err := l.Await(ginKey(s.seq, ctx, src, j.self), timeout, w.abort.Aborted)
				if err != nil {
					return nil, fmt.Errorf("GIN: %s never connected: %w", j.rankName(src), err)
				}
				s.conns = append(s.conns, conn)
				rx = append(rx, func() error {
					if err := s.recv(conn, src); err != nil {
						return fmt.Errorf("from %s: %w", j.rankName(src), err)
					}
					return nil
				})
			}
		}
	}
	return rx, nil
}

// goProxy runs a proxy; a failure while the set is open aborts the world,
// once the job's own notice (a lost process, named) had a moment to come
// first, as the network transport's proxies do.
func (s *ginSet) goProxy(desc string, run func() error) {
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		err := run()
		if err == nil || s.isClosed() || s.w.abort.Aborted() {
			return
		}
		select {
		case <-s.w.abort.Done():
		case <-time.After(transport.LinkErrorGrace):
		}
		s.w.abort.Trigger(fmt.Errorf("ccl: GIN: %s: the link failed: %w", desc, err))
	}()
}

func (s *ginSet) isClosed() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.closed
}

// closeConns closes every connection (their proxies end).
func (s *ginSet) closeConns() {
	s.mu.Lock()
	conns := s.conns
	s.conns = nil
	s.mu.Unlock()
	for _, c := range conns {
		c.Close()
	}
}

// close ends the GIN of the last local device communicator destroyed:
// the sending proxies send what was queued, then every connection closes
// and every proxy is waited for.
func (s *ginSet) close() {
	s.mu.Lock()
	s.closed = true
	s.mu.Unlock()
	for _, r := range s.ranks {
		for _, t := range r.tx {
			t.mu.Lock()
			t.closing.Store(true)
			t.mu.Unlock()
			t.waiter.Wake()
		}
	}
	done := make(chan struct{})
	go func() {
		for _, r := range s.ranks {
			for _, t := range r.tx {
				// A proxy drained once everything posted is done.
				for t.done.Load() < t.posted.Load() && !s.stop.Aborted() {
					time.Sleep(time.Millisecond)
				}
			}
		}
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(closeGinFlush):
	}
	s.stop.Trigger(ErrAborted)
	s.closeConns()
	s.wg.Wait()
}

// closeGinFlush bounds how long Destroy waits for the queued operations.
const closeGinFlush = 5 * time.Second
