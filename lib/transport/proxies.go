// The proxy goroutines of Net's connections: the sending proxy turns the
// local FIFO's posts into frames (or its rank sends small ones itself,
// flush), the receiving proxy publishes each frame into its local FIFO;
// helpers move the parts of a slice on a multi-socket connection.

package transport

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"runtime"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/gccl/gccl/lib/proto"
)

// LinkErrorGrace is how long a proxy whose socket failed waits for the
// job's abort to arrive with its cause before it aborts the job naming its
// own peer (TestNetnsFaults: killed host 1's neighbour closed its link to
// rank 0 before the bootstrap told rank 0 of host 1, whom its error then
// failed to name).
const LinkErrorGrace = 500 * time.Millisecond

// proxy is one end's goroutine of a network connection.
type proxy struct {
	f          *proto.Fifo
	conn       net.Conn   // conns[0]: frame headers and small slices
	conns      []net.Conn // every socket of the connection
	threads    int        // goroutines moving the parts (the proxy is one)
	helpers    []chan []byte
	helperDone chan error
	// sideParts counts the parts moved on sockets other than socket 0:
	// written by whoever moves one (Add), read by tests.
	sideParts atomic.Uint64
	step      uint64 // the FIFO's first step
	waiter    *proto.Waiter
	stop      *proto.Abort // Close, or the job's abort, stops the proxy
	abort     *proto.Abort // the job's
	buf       []byte       // a frame's header, and an LL/LL128 payload; reused
	// Sending: whoever holds sendTok sends the posts, the proxy or a rank
	// flushing its own small ones (inline); tx is theirs while they hold
	// it (CompareAndSwap acquires, Store releases). sent counts the posts
	// sent whole: written by the holder, read by the proxy's wait.
	sendTok atomic.Bool
	sent    atomic.Uint64
	tx      sendState
	// raw is socket 0 as a system socket: a sending end's for writes that
	// never block (nil: no inline sends), a receiving LL/LL128 end's for
	// its reads (set by its proxy before rx.ready).
	raw syscall.RawConn
	// Receiving LL/LL128 frames (rxlines_unix.go): whoever holds rxTok
	// reads the socket, the proxy or a rank polling it while it waits;
	// rx is theirs while they hold it.
	rxTok atomic.Bool
	rx    rxState
	// holdRecv, when set (tests), holds a receiving LL/LL128 proxy before
	// it reads anything, once ranks may poll: only ranks read meanwhile.
	holdRecv chan struct{}
	// polled counts the frames a rank read and published itself: written
	// by the token's holder, read by tests.
	polled atomic.Uint64
	// inlined and handedOver count the posts a rank sent whole and those
	// whose frame the socket did not take whole, left to the proxy:
	// written by the token's holder, read by tests.
	inlined, handedOver atomic.Uint64
	peer, desc          string
	closed              atomic.Bool // set by close (any goroutine), read by the proxy
	closing             atomic.Bool // set by close first: a sending proxy ends once every post is sent
	done                chan struct{}
	// await, on the receiving end, waits for the sender's connections; the
	// proxy's goroutine calls it and then sets conns (under connMu, which
	// close also takes).
	await  func() ([]net.Conn, error)
	connMu sync.Mutex
	spin   time.Duration // Net.Spin
}

func (px *proxy) start(run func() error) {
	px.done = make(chan struct{})
	if px.abort != nil {
		px.abort.OnTrigger(func() { px.stop.Trigger(proto.ErrAborted) })
	}
	go func() {
		defer close(px.done)
		defer px.stopHelpers()
		if err := run(); err != nil && !px.closed.Load() && !px.stop.Aborted() && px.abort != nil {
			// A peer that aborted because it lost another rank closes its
			// sockets as its abort, naming that rank, reaches this process
			// through the bootstrap: give the notice a moment to land first,
			// so the error names the lost rank, not the messenger.
			select {
			case <-px.abort.Done():
			case <-time.After(LinkErrorGrace):
			}
			px.abort.Trigger(fmt.Errorf("net: %s: the link to %s failed: %w", px.desc, px.peer, err))
		}
	}()
}

// startHelpers starts the goroutines 1..threads-1 that move their
// sockets' parts of each slice: each takes a slice (the bytes to write, or
// the memory to read into), moves its parts and answers on helperDone.
func (px *proxy) startHelpers(send bool) {
	k := len(px.conns)
	px.helperDone = make(chan error, px.threads)
	for g := 1; g < px.threads; g++ {
		jobs := make(chan []byte, 1)
		px.helpers = append(px.helpers, jobs)
		go func() {
			for b := range jobs {
				px.helperDone <- px.moveParts(send, g, k, b)
			}
		}()
	}
}

// stopHelpers ends the helpers (the proxy's goroutine, as it exits).
func (px *proxy) stopHelpers() {
	for _, jobs := range px.helpers {
		close(jobs)
	}
	px.helpers = nil
}

// moveParts writes (send) or reads the parts of slice b that goroutine g
// owns: sockets g, g+threads, ... except socket 0's, which the proxy moves
// with the frame's header.
func (px *proxy) moveParts(send bool, g, k int, b []byte) error {
	for j := g; j < k; j += px.threads {
		if j == 0 {
			continue
		}
		lo, hi := sockPart(len(b), k, j)
		if lo == hi {
			continue
		}
		var err error
		if send {
			_, err = px.conns[j].Write(b[lo:hi])
		} else {
			_, err = io.ReadFull(px.conns[j], b[lo:hi])
		}
		if err != nil {
			return fmt.Errorf("socket %d of %d: %w", j, k, err)
		}
		px.sideParts.Add(1)
	}
	return nil
}

// startSlice hands slice b to the helpers, which move their parts while
// the proxy moves socket 0's with the frame header; it reports whether
// anything but socket 0 carries a part (then finishSlice must follow).
func (px *proxy) startSlice(b []byte) bool {
	k := len(px.conns)
	if lo, hi := sockPart(len(b), k, 1); lo == hi {
		return false // all of it on socket 0
	}
	for _, jobs := range px.helpers {
		jobs <- b
	}
	return true
}

// finishSlice moves the proxy's own parts of b beyond socket 0 and waits
// for the helpers' parts.
func (px *proxy) finishSlice(send bool, b []byte) error {
	err := px.moveParts(send, 0, len(px.conns), b)
	for range px.helpers {
		if herr := <-px.helperDone; err == nil {
			err = herr
		}
	}
	return err
}

func (px *proxy) startSend() { px.start(px.runSend) }

func (px *proxy) startRecv() { px.start(px.runRecv) }

// close ends the proxy: a sending proxy first sends every post it has
// (its rank may have finished an operation whose last steps are still
// here), for at most closeFlush; then the socket closes and the goroutine
// is waited for.
func (px *proxy) close() {
	px.closing.Store(true)
	px.waiter.Wake()
	if px.done != nil && px.await == nil {
		select {
		case <-px.done:
		case <-time.After(closeFlush):
		}
	}
	px.closed.Store(true)
	px.awaitPolls() // no rank reads the socket as it closes
	px.stop.Trigger(proto.ErrAborted)
	px.connMu.Lock()
	for _, c := range px.conns {
		c.Close()
	}
	px.connMu.Unlock()
	if px.done != nil {
		<-px.done
	}
}

// closeFlush bounds how long closing a sending proxy waits for it to send
// what its rank posted.
const closeFlush = 5 * time.Second

// runSend sends each post of the local FIFO as a frame, unless its rank
// sent it inline (flush).
func (px *proxy) runSend() error {
	px.startHelpers(true)
	f := px.f
	ready := func() bool { return px.closing.Load() || (f.Posted() > px.sent.Load() && !px.sendTok.Load()) }
	for {
		if !ready() {
			if err := px.waiter.Wait(ready, func() string { return "the next post" }); err != nil {
				return err
			}
		}
		if !px.sendTok.CompareAndSwap(false, true) {
			runtime.Gosched() // the rank is flushing: a few microseconds
			continue
		}
		i := px.sent.Load()
		if i >= f.Posted() {
			px.sendTok.Store(false)
			if px.closing.Load() {
				return nil // everything posted is sent
			}
			continue
		}
		err := px.sendPost(i)
		px.sendTok.Store(false)
		if err != nil {
			return err
		}
	}
}

// sendState is the frame being sent; the sendTok holder's.
type sendState struct {
	r       proto.RecvEnd // the proxy's read side of the FIFO
	built   uint64        // 1 + the post whose frame iov holds; 0 for none
	inline  bool          // built by a rank: one buffer, no split, nothing to release
	iov     [2][]byte     // header (+ LL payload), and a Simple slice
	off     int           // bytes of the frame written so far
	split   bool          // the helpers move parts of slice on other sockets
	slice   []byte        // the whole Simple slice (split: socket 0's part is in iov)
	release int           // steps to release once written (a Simple slot)
	inl     []byte        // an inline Simple frame: header and payload copied
	// streamOff counts the bytes of the frames built so far on socket 0:
	// where the next frame starts in its stream (see frameAlign).
	streamOff uint64
}

// inlineMax is the largest post a rank sends itself (flush): below it the
// wake-up and scheduling of the proxy cost more than the write, and the
// write is a short copy into the socket.
const inlineMax = 8 << 10

// buildFrame puts post i's frame in tx: the header, and the payload's
// place (a Simple slot, the rank's memory, or for LL/LL128 the payload
// unpacked from the lines into buf, which returns their credit). A frame
// built inline is one buffer, its Simple slot copied and released at once.
func (px *proxy) buildFrame(i uint64, inline bool) error {
	f, tx := px.f, &px.tx
	p := f.PostAt(i)
	tx.r.Step = p.Step
	pad := 0
	if f.Proto == proto.Simple && !inline {
		pad = framePad(tx.streamOff)
	}
	putFrameHeader(px.buf, p.Step, p.Steps, pad, p.NBytes)
	tx.built, tx.inline, tx.off, tx.split, tx.release = i+1, inline, 0, false, 0
	if f.Proto == proto.Simple {
		b, err := tx.r.SimpleWait(p.Steps, p.NBytes) // posted: at once
		if err != nil {
			tx.built = 0
			return err
		}
		if inline {
			if tx.inl == nil {
				tx.inl = make([]byte, frameHeader+inlineMax)
			}
			copy(tx.inl, px.buf[:frameHeader])
			n := copy(tx.inl[frameHeader:], b)
			tx.r.SimpleRelease(p.Steps)
			tx.iov = [2][]byte{tx.inl[:frameHeader+n]}
			tx.streamOff += uint64(frameHeader + n)
			return nil
		}
		// Header, padding and socket 0's part in one writev, the slice
		// straight from the FIFO's slot or the rank's own buffer, the
		// other parts on their sockets meanwhile; released once all
		// written. The padding is px.buf's zeros after the header.
		tx.split, tx.slice = px.startSlice(b), b
		_, hi := sockPart(len(b), len(px.conns), 0)
		tx.iov = [2][]byte{px.buf[:frameHeader+pad], b[:hi]}
		tx.release = p.Steps
		tx.streamOff += uint64(frameHeader + pad + hi)
		return nil
	}
	payload := px.buf[frameHeader : frameHeader+p.NBytes]
	var err error
	if f.Proto == proto.LL {
		err = tx.r.LLRecv(payload)
	} else {
		err = tx.r.LL128Recv(payload)
	}
	if err != nil {
		tx.built = 0
		return err
	}
	tx.iov = [2][]byte{px.buf[:frameHeader+p.NBytes]}
	tx.streamOff += uint64(frameHeader + p.NBytes)
	return nil
}

// sendPost writes post i's frame, or what a rank left of it, with
// blocking writes (the proxy).
func (px *proxy) sendPost(i uint64) error {
	tx := &px.tx
	if tx.built != i+1 {
		if err := px.buildFrame(i, false); err != nil {
			return err
		}
	}
	rest := tx.iov
	if k := min(tx.off, len(rest[0])); k > 0 {
		rest[0] = rest[0][k:]
		rest[1] = rest[1][tx.off-k:]
	}
	bufs := net.Buffers(rest[:])
	_, err := bufs.WriteTo(px.conn)
	if tx.split {
		if ferr := px.finishSlice(true, tx.slice); err == nil {
			err = ferr
		}
	}
	if err != nil {
		return err
	}
	px.sentPost(i)
	return nil
}

// sentPost ends post i: its slot released, the rank's memory the rank's
// again.
func (px *proxy) sentPost(i uint64) {
	tx := &px.tx
	if tx.release > 0 {
		tx.r.SimpleRelease(tx.release)
	}
	tx.iov, tx.slice, tx.built, tx.release = [2][]byte{}, nil, 0, 0
	px.sent.Store(i + 1)
}

// flush is the sending FIFO's Flush: the rank that just posted sends its
// small posts itself when the proxy is idle, with writes that never block.
// It reports whether every post is sent (the proxy then is not woken); a
// frame the socket did not take whole, or a large post, is the proxy's.
func (px *proxy) flush() bool {
	if px.raw == nil || px.closing.Load() || !px.sendTok.CompareAndSwap(false, true) {
		return false
	}
	f, tx := px.f, &px.tx
	for i := px.sent.Load(); i < f.Posted(); i++ {
		if tx.built == i+1 && !tx.inline {
			break // the proxy's frame, half written
		}
		if tx.built != i+1 {
			if f.PostAt(i).NBytes > inlineMax || px.buildFrame(i, true) != nil {
				break
			}
		}
		b := tx.iov[0]
		tx.off += writeNow(px.raw, b[tx.off:])
		if tx.off < len(b) {
			px.handedOver.Add(1)
			break
		}
		px.sentPost(i)
		px.inlined.Add(1)
	}
	px.sendTok.Store(false)
	return px.sent.Load() >= f.Posted()
}

// runRecv waits for the sender's connection, then reads frames and
// publishes each into the local FIFO at its step.
func (px *proxy) runRecv() error {
	conns, err := px.await()
	if err != nil {
		return err
	}
	px.connMu.Lock()
	px.conns, px.conn = conns, conns[0]
	closed := px.closed.Load()
	px.connMu.Unlock()
	if closed {
		for _, c := range conns {
			c.Close()
		}
		return nil
	}
	px.startHelpers(false)
	px.peer += fmt.Sprintf(" at %s", px.conn.RemoteAddr())
	f := px.f
	s := &proto.SendEnd{F: f, Step: px.step, Desc: px.desc + " (proxy)"}
	if f.Proto != proto.Simple && px.startLines(s) {
		return px.runRecvLines()
	}
	rd := bufio.NewReaderSize(spinReader(px.conn, px.spin), 64<<10)
	hdr := px.buf[:frameHeader]
	for {
		if _, err := io.ReadFull(rd, hdr); err != nil {
			if err == io.EOF {
				// The sender closed between frames: it sent all it had.
				// A peer that died is the bootstrap's to report.
				return nil
			}
			return err
		}
		step, steps, pad, n := parseFrameHeader(hdr)
		limit, maxPad := f.StepData(), 0
		if f.Proto == proto.Simple {
			limit, maxPad = steps*f.StepBytes, frameAlign-1
		}
		if steps < 1 || steps > proto.Steps || n > limit || step < s.Step || pad > maxPad {
			return fmt.Errorf("a malformed frame (step %d, %d steps, %d bytes, %d bytes of padding; next step %d, at most %d bytes, %d of padding)", step, steps, n, pad, s.Step, limit, maxPad)
		}
		s.Step = step
		if pad > 0 {
			if _, err := io.ReadFull(rd, px.buf[frameHeader:frameHeader+pad]); err != nil {
				return err
			}
		}
		if f.Proto == proto.Simple {
			slot, err := s.SimpleAcquire(steps)
			if err != nil {
				return err
			}
			// Straight into the rank's buffer when it waits for this
			// slice there (SimpleExpect), else into the slot.
			dst, landed := s.SimpleLanding(slot, n)
			split := px.startSlice(dst)
			_, hi := sockPart(n, len(px.conns), 0)
			_, err = io.ReadFull(rd, dst[:hi])
			if split {
				if ferr := px.finishSlice(false, dst); err == nil {
					err = ferr
				}
			}
			if err != nil {
				return err
			}
			s.SimplePostLanded(steps, n, landed)
			continue
		}
		payload := px.buf[frameHeader : frameHeader+n]
		if _, err := io.ReadFull(rd, payload); err != nil {
			return err
		}
		var err error
		if f.Proto == proto.LL {
			err = s.LLSend(payload)
		} else {
			err = s.LL128Send(payload)
		}
		if err != nil {
			return err
		}
	}
}

// spinReader returns c, or where spin > 0 a reader that polls c's socket
// without blocking for up to spin before it waits in the network poller:
// data that arrive within the spin are read without a thread's wake-up.
func spinReader(c net.Conn, spin time.Duration) io.Reader {
	sc, ok := c.(syscall.Conn)
	if spin <= 0 || !ok {
		return c
	}
	rc, err := sc.SyscallConn()
	if err != nil {
		return c
	}
	return &pollingReader{c: c, rc: rc, spin: spin}
}

// pollingReader is spinReader's reader. Only the receiving proxy's
// goroutine uses it.
type pollingReader struct {
	c    net.Conn
	rc   syscall.RawConn
	spin time.Duration
}

func (r *pollingReader) Read(p []byte) (int, error) {
	var n int
	var rerr error
	try := func(fd uintptr) bool {
		n, rerr = syscall.Read(int(fd), p)
		return true // never wait in the poller here: the loop below decides
	}
	var deadline time.Time
	for i := 0; ; i++ {
		if err := r.rc.Read(try); err != nil {
			return 0, err
		}
		switch {
		case rerr == nil && n > 0:
			return n, nil
		case rerr == nil: // n == 0: the peer closed
			return 0, io.EOF
		case rerr != syscall.EAGAIN && rerr != syscall.EINTR:
			return 0, rerr
		}
		if i&63 == 0 { // the clock only now and then
			now := time.Now()
			if deadline.IsZero() {
				deadline = now.Add(r.spin)
			} else if now.After(deadline) {
				return r.c.Read(p) // park in the poller
			}
		}
	}
}
