//go:build unix

package transport

import (
	"errors"
	"fmt"
	"io"
	"os"
	"runtime"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/gccl/gccl/lib/proto"
)

// Receiving LL/LL128 frames. A rank that waits for a small message need
// not wait for its proxy to be woken by Go's network poller and scheduled:
// while it spins it reads the socket itself (the FIFO's Poll hook), with
// reads that never block, and publishes whole frames into its own FIFO,
// as a process that busy-polls its sockets does. Whoever holds rxTok
// reads: the proxy, which waits in the poller for the socket to be
// readable and takes the token to read, or a polling rank. The frame
// being read (rx) carries over from one holder to the next, so either may
// finish what the other began. A rank reads until the socket is empty: a
// readiness it took from the proxy never comes back, so it must leave no
// bytes behind but a frame's unarrived rest (whose arrival wakes the
// proxy); a whole frame it cannot publish (no credit) it leaves to the
// proxy and wakes it through a read deadline in the past.
//
// A rank that waits on the FIFO holds the socket (Fifo.Hold) until it
// parks: the proxy, woken by the poller while a rank holds it, leaves the
// poller and waits for the rank to hand the socket back (as it parks, or
// when it meets a frame it cannot publish, or the end) instead of being
// woken for every frame the rank reads first (two process wake-ups per
// 8 B frame, strace: most of a small message's time on 2 cores). A rank
// that stops waiting without parking (its wait ended) keeps the socket
// for its next wait; should no wait come within a lease (holdLease), the
// proxy takes it back, so bytes never sit unread for long.

// rxState is the frame being read; the rxTok holder's.
type rxState struct {
	got   int // bytes of the frame read so far, header first (into proxy.buf)
	n     int // its payload bytes, known once the header is in
	step  uint64
	bad   error          // a malformed header: the frame's fate for every reader
	end   *proto.SendEnd // the proxy's end of the FIFO: publishes frames
	fd    int            // socket 0's descriptor, for the ranks' reads
	ready atomic.Bool    // end and fd are set: ranks may poll (set by the proxy once)
	// missed says the proxy, woken by the poller, found a rank holding
	// the token: set by the proxy, cleared by the rank as it lets go.
	missed atomic.Bool
	// using counts ranks between checking closed and finishing a read of
	// fd: close waits for none before it closes the socket, whose number
	// could otherwise be reused under a rank's read.
	using atomic.Int32
	// held: a rank polls the socket while it waits, and the proxy leaves
	// it to the rank. Set by the rank as a wait starts (Hold), cleared by
	// the rank as it parks or hands a frame over, or by the proxy when a
	// lease passes with no new wait; read by the proxy. holds counts the
	// waits that held it (the rank's), read by the proxy at each lease.
	held  atomic.Bool
	holds atomic.Uint64
	// handback wakes a proxy that left the poller (the rank's send, or
	// none: a stale one only makes it look at held again).
	handback chan struct{}
	lease    *time.Timer // the proxy's
}

// holdLease is how long the proxy leaves the socket to a rank that holds
// it but starts no new wait.
var holdLease = time.Millisecond // tests lengthen or shorten it before a proxy starts

var errWouldBlock = errors.New("would block")

// startLines readies the proxy of an LL/LL128 connection for frames read
// by either it or its rank; false where socket 0 is not a system socket
// (the generic loop then serves).
func (px *proxy) startLines(s *proto.SendEnd) bool {
	sc, ok := px.conn.(syscall.Conn)
	if !ok {
		return false
	}
	raw, err := sc.SyscallConn()
	if err != nil {
		return false
	}
	fd := -1
	if raw.Control(func(d uintptr) { fd = int(d) }) != nil || fd < 0 {
		return false
	}
	px.raw, px.rx.end, px.rx.fd = raw, s, fd
	px.rx.handback = make(chan struct{}, 1)
	px.rx.ready.Store(true)
	return true
}

// readFrame reads what it can of the current frame from fd and reports
// whether the frame is whole; errWouldBlock when the socket is empty
// first, io.EOF when the sender closed between frames.
func (px *proxy) readFrame(fd int) (bool, error) {
	rx, f := &px.rx, px.f
	if rx.bad != nil {
		return false, rx.bad
	}
	for {
		want := frameHeader
		if rx.got >= frameHeader {
			want += rx.n
		}
		if rx.got == want && rx.got >= frameHeader {
			return true, nil
		}
		m, err := readNow(fd, px.buf[rx.got:want])
		if m > 0 {
			rx.got += m
			if rx.got == frameHeader {
				hdr := px.buf[:frameHeader]
				step, steps, pad, n := parseFrameHeader(hdr)
				if steps != 1 || pad != 0 || n > f.StepData() || step < rx.end.Step {
					rx.bad = fmt.Errorf("a malformed frame (step %d, %d steps, %d bytes, %d bytes of padding; next step %d, 1 step of at most %d bytes, no padding)", step, steps, n, pad, rx.end.Step, f.StepData())
					return false, rx.bad
				}
				rx.step, rx.n = step, n
			}
			continue
		}
		if err != nil {
			return false, err
		}
		if rx.got == 0 {
			return false, io.EOF
		}
		return false, io.ErrUnexpectedEOF
	}
}

// publish writes the whole frame into the FIFO as its lines and starts
// the next; wait says it may wait for a credit (the proxy), else it
// reports false without one (a rank: the credit is its own to give).
func (px *proxy) publish(wait bool) (bool, error) {
	rx := &px.rx
	s := rx.end
	s.Step = rx.step
	if !wait && !s.CanSend(1) {
		return false, nil
	}
	payload := px.buf[frameHeader : frameHeader+rx.n]
	var err error
	if px.f.Proto == proto.LL {
		err = s.LLSend(payload)
	} else {
		err = s.LL128Send(payload)
	}
	rx.got, rx.n = 0, 0
	return err == nil, err
}

// readNow reads fd once without blocking.
func readNow(fd int, p []byte) (int, error) {
	for {
		m, err := rawRead(fd, p)
		switch {
		case err == syscall.EINTR:
			continue
		case err == syscall.EAGAIN || err == syscall.EWOULDBLOCK:
			return 0, errWouldBlock
		case err != nil:
			return 0, err
		}
		return m, nil
	}
}

// runRecvLines is the proxy's loop on an LL/LL128 connection.
func (px *proxy) runRecvLines() error {
	var held, whole bool
	var rerr error
	// try reads under the token; it reports whether the proxy keeps it (a
	// whole frame, or a failure). A rank holding the token reads what
	// woke the proxy, or else wakes it again when it lets go (missed).
	var left bool // the proxy left the poller: a rank holds the socket
	try := func(fd uintptr) bool {
		if px.rx.held.Load() {
			left = true
			return true
		}
		// missed before the token: a rank that lets go after this failed
		// attempt then sees it (seq-cst, as Waiter's sleeping word).
		px.rx.missed.Store(true)
		if !px.rxTok.CompareAndSwap(false, true) {
			return false
		}
		px.rx.missed.Store(false)
		whole, rerr = px.readFrame(int(fd))
		if held = whole || rerr != errWouldBlock; held {
			return true
		}
		px.rxTok.Store(false)
		return false
	}
	if px.holdRecv != nil {
		select {
		case <-px.holdRecv:
		case <-px.stop.Done():
			return nil
		}
	}
	tryOnce := func(fd uintptr) bool { try(fd); return true } // never waits
	var spinUntil time.Time
	for {
		if px.spin > 0 && spinUntil.IsZero() {
			spinUntil = time.Now().Add(px.spin)
		}
		held, left = false, false
		var err error
		if time.Now().Before(spinUntil) {
			// GCCL_NET_SPIN: poll before waiting in the poller.
			err = px.raw.Read(tryOnce)
		} else {
			err = px.raw.Read(try)
		}
		if err != nil {
			if held {
				px.rxTok.Store(false)
			}
			if errors.Is(err, os.ErrDeadlineExceeded) {
				_ = px.conn.SetReadDeadline(time.Time{}) // a rank's wake-up
				continue
			}
			return err
		}
		if left {
			if !px.awaitHandback() {
				return nil // stopped
			}
			continue
		}
		if !held {
			runtime.Gosched()
			continue
		}
		if !whole {
			px.rxTok.Store(false)
			if rerr == io.EOF {
				// The sender closed between frames: it sent all it had.
				// A peer that died is the bootstrap's to report.
				return nil
			}
			return rerr
		}
		_, err = px.publish(true)
		px.rxTok.Store(false)
		if err != nil {
			return err
		}
		spinUntil = time.Time{}
	}
}

// awaitHandback waits off the poller while a rank holds the socket, and
// takes it back when a lease passes with no new wait; false when the
// proxy is stopped.
func (px *proxy) awaitHandback() bool {
	rx := &px.rx
	seen := rx.holds.Load()
	for rx.held.Load() {
		if rx.lease == nil {
			rx.lease = time.NewTimer(holdLease)
		} else {
			rx.lease.Reset(holdLease)
		}
		select {
		case <-rx.handback:
		case <-rx.lease.C:
			if h := rx.holds.Load(); h == seen {
				rx.held.Store(false) // no wait came: read again
			} else {
				seen = h
			}
		case <-px.stop.Done():
			return false
		}
		rx.lease.Stop()
	}
	return true
}

// hold is the receiving FIFO's Hold: a rank starts waiting and polling
// (on), or is about to park (off: the proxy reads again).
func (px *proxy) hold(on bool) {
	rx := &px.rx
	if !rx.ready.Load() {
		return
	}
	if on {
		rx.holds.Add(1)
		if !rx.held.Load() {
			rx.held.Store(true)
		}
		return
	}
	px.handBack()
}

// handBack returns the socket to a proxy that left the poller for a rank.
func (px *proxy) handBack() {
	rx := &px.rx
	if rx.held.Load() {
		rx.held.Store(false)
		select {
		case rx.handback <- struct{}{}:
		default:
		}
	}
}

// poll is the receiving FIFO's Poll: a rank waiting for data reads the
// socket itself and publishes the whole frames it finds; it reports
// whether it published any.
func (px *proxy) poll() bool {
	rx := &px.rx
	if !rx.ready.Load() || px.closed.Load() || !px.rxTok.CompareAndSwap(false, true) {
		return false
	}
	rx.using.Add(1)
	published := false
	if !px.closed.Load() { // closed after this: close waits for using
		for {
			whole, err := px.readFrame(rx.fd)
			if err == errWouldBlock {
				break
			}
			if err != nil || !whole {
				px.wakeReader() // a failure, or the end: the proxy's to report
				break
			}
			ok, err := px.publish(false)
			if err != nil || !ok {
				px.wakeReader() // no credit (or a failure): the proxy publishes it
				break
			}
			published = true
			px.polled.Add(1)
		}
	}
	rx.using.Add(-1)
	px.rxTok.Store(false)
	if rx.missed.Swap(false) {
		// The proxy found the token taken: bytes that came after this
		// rank's last read may have woken it, and it waits for more.
		px.wakeReader()
	}
	return published
}

// wakeReader ends the proxy's wait in the poller (it then looks at the
// frame a rank left whole).
func (px *proxy) wakeReader() {
	px.handBack()
	_ = px.conn.SetReadDeadline(time.Unix(1, 0))
}

// awaitPolls waits until no rank reads the socket (close, before it
// closes it: closed is already set, so none starts).
func (px *proxy) awaitPolls() {
	for px.rx.using.Load() != 0 {
		runtime.Gosched()
	}
}

// canPollLines: ranks may read LL/LL128 frames themselves here.
const canPollLines = true
