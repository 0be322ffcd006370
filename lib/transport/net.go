package transport

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"runtime"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/gccl/gccl/lib/internal/handshake"
	"github.com/gccl/gccl/lib/proto"
)

// Net connects ranks on different hosts over TCP with NCCL's proxy design:
// each end has a FIFO in its own memory that its rank uses exactly as in
// one process, and a proxy goroutine bridges the two over a socket. On the
// sending host the proxy reads each published slice from the local FIFO
// (as the receiver would), returns its credit and writes one frame; on the
// receiving host the proxy reads the frame and publishes it into the local
// FIFO (as the sender would), at the same step.
//
// LL and LL128 lines are rebuilt by the receiving proxy, not carried: the
// wire holds payload only (half of LL's bytes), and the receiving FIFO's
// flags are then written with the stores the protocol's ordering relies
// on, which a socket's copy into memory does not promise.
//
// A connection is opened by the sender: it dials the receiving process's
// listener (one per process, NetListener), both ends prove they hold the
// job's token without sending it, and the sender names the connection
// (see dialNet); the listener refuses and logs a wrong token and goes on.
type Net struct {
	Listener *NetListener
	// Addr is the listener address of the process that holds rank.
	Addr  func(rank int) (string, error)
	Token string
	// Timeout bounds dialling and waiting for the sender's dial.
	Timeout time.Duration
	// Stop reports that the job aborted: waits for a peer end early.
	Stop func() bool
	// Abort is the job's abort signal: the proxies stop with it, and a
	// proxy whose socket fails triggers it with an error naming the peer.
	Abort *proto.Abort
	// Spin is how long an idle proxy polls (its FIFO, or its socket
	// without blocking) before it parks: zero parks at once. Spinning
	// saves a thread wake-up per hop (NCCL's proxies poll), and is only
	// for hosts whose processors outnumber the goroutines that spin.
	Spin time.Duration
	// Socks is the sockets per connection (GCCL_NSOCKS; 0 or 1: one): a
	// Simple slice of at least Socks x MinSockPart bytes is cut into that
	// many parts, part j on socket j. Threads is the goroutines per end
	// that move them (GCCL_NSOCKS_THREADS; 0 or 1: the proxy alone): socket
	// j belongs to goroutine j % Threads, goroutine 0 being the proxy.
	// Both ends of a job must agree on Socks.
	Socks, Threads int
}

// LinkErrorGrace is how long a proxy whose socket failed waits for the
// job's abort to arrive with its cause before it aborts the job naming its
// own peer (TestNetnsFaults: killed host 1's neighbour closed its link to
// rank 0 before the bootstrap told rank 0 of host 1, whom its error then
// failed to name).
const LinkErrorGrace = 500 * time.Millisecond

// MinSockPart is the least part of a slice a socket of a multi-socket
// connection carries: smaller slices go whole on socket 0.
const MinSockPart = 64 << 10

// MaxSocks bounds Net.Socks.
const MaxSocks = 16

// sockParts cuts a slice of n bytes over k sockets: part j is
// [off(j), off(j+1)) with off(j) = j*n/k rounded down to 64 bytes, all of
// it on socket 0 when n < k*MinSockPart. Both ends compute it alike.
func sockPart(n, k, j int) (lo, hi int) {
	if k <= 1 || n < k*MinSockPart {
		if j == 0 {
			return 0, n
		}
		return 0, 0
	}
	cut := func(j int) int {
		if j >= k {
			return n
		}
		return j * n / k &^ 63
	}
	return cut(j), cut(j + 1)
}

func (Net) Name() string { return "net" }

func (Net) CanConnect(from, to Peer) bool { return from.Host != to.Host }

// NetKey names a connection's protocol on the wire (as Shm names segments).
func NetKey(req Request) string {
	return fmt.Sprintf("%d-%d-c%d-%s-%s-%d", req.From.Rank, req.To.Rank, req.Channel, req.Kind, req.Proto, req.BuffSize)
}

// frameHeader is a frame's header, little-endian: the slice's first step
// (u64), its steps (u16), the padding before its payload (u16) and its
// payload bytes (u32); the padding (zeros), then the payload follow.
const frameHeader = 16

// frameAlign is where a proxy's Simple payload starts in its socket's byte
// stream: padding puts it at a multiple of 64 bytes, as it sits in the
// rank's buffer, so the kernel's copy into the socket has source and
// destination alike aligned (AMD's rep movsb runs at half speed
// otherwise: 2 namespaces' 128 MiB allreduce on the EPYC VM spent 25% of
// its samples in _copy_from_iter unaligned, 12% aligned). Frames of at
// most inlineMax that a rank writes itself are not padded.
const frameAlign = 64

func putFrameHeader(b []byte, step uint64, steps, pad, n int) {
	binary.LittleEndian.PutUint64(b[0:], step)
	binary.LittleEndian.PutUint16(b[8:], uint16(steps))
	binary.LittleEndian.PutUint16(b[10:], uint16(pad))
	binary.LittleEndian.PutUint32(b[12:], uint32(n))
}

func parseFrameHeader(b []byte) (step uint64, steps, pad, n int) {
	return binary.LittleEndian.Uint64(b[0:]), int(binary.LittleEndian.Uint16(b[8:])),
		int(binary.LittleEndian.Uint16(b[10:])), int(binary.LittleEndian.Uint32(b[12:]))
}

// framePad is the padding a Simple frame whose header starts at byte off
// of its socket's stream puts before its payload.
func framePad(off uint64) int {
	return int((frameAlign - (off+frameHeader)%frameAlign) % frameAlign)
}

func (t Net) Connect(req Request) (*Conn, error) {
	if req.Sides == BothSides {
		return nil, fmt.Errorf("net: ranks %d and %d are in one process: use the in-process transport", req.From.Rank, req.To.Rank)
	}
	opt := req.Options
	// The sending rank may post by reference (Direct): its proxy, in the
	// same process, writes those bytes to the socket straight from the
	// rank's buffer (two copies fewer per byte). The receiving FIFO's
	// sender is its proxy, which never does.
	opt.Proxied = true
	opt.Direct = opt.Direct && req.Sides == SendOnly
	f, err := proto.NewFifo(req.Proto, req.BuffSize, opt)
	if err != nil {
		return nil, err
	}
	key := NetKey(req)
	socks, threads := max(t.Socks, 1), min(max(t.Threads, 1), max(t.Socks, 1))
	px := &proxy{f: f, step: opt.StartStep, stop: proto.NewAbort(), abort: t.Abort, threads: threads,
		buf:  make([]byte, frameBufBytes(req.Proto, req.BuffSize)),
		desc: fmt.Sprintf("rank %d -> rank %d, channel %d (%s, %s)", req.From.Rank, req.To.Rank, req.Channel, req.Kind, req.Proto)}
	px.waiter = proto.NewWaiter(px.stop, 0) // idle between operations: no timeout
	// A proxy parks soon: its peer's data come through the network poller,
	// which a goroutine yielding in a loop keeps the scheduler from
	// polling (8 B round trip through four proxies on loopback: 110 us
	// with the ranks' 50 us yield phase, see BenchmarkNetPingPong).
	px.waiter.YieldFor = 0
	px.spin = t.Spin
	if t.Spin > 0 {
		px.waiter.SpinFor, px.waiter.NoBackOff = t.Spin, true
	}
	if req.Sides == SendOnly {
		addr, err := t.Addr(req.To.Rank)
		if err != nil {
			return nil, err
		}
		for j := 0; j < socks; j++ {
			c, err := dialNet(addr, t.Token, sockKey(key, j, socks), t.Timeout, t.Stop)
			if err != nil {
				for _, c := range px.conns {
					c.Close()
				}
				return nil, fmt.Errorf("dialling rank %d (host %q) at %s: %w", req.To.Rank, req.To.Host, addr, err)
			}
			px.conns = append(px.conns, c)
		}
		px.conn = px.conns[0]
		px.peer = fmt.Sprintf("rank %d (host %q, %s)", req.To.Rank, req.To.Host, addr)
		f.RecvWaiter = px.waiter // a post wakes the proxy
		px.tx.r = proto.RecvEnd{F: f, Step: px.step, Desc: px.desc + " (proxy)"}
		if sc, ok := px.conn.(syscall.Conn); ok {
			if raw, err := sc.SyscallConn(); err == nil {
				px.raw = raw
				f.Flush = px.flush
			}
		}
		return &Conn{SendSide: f, Start: px.startSend, Close: px.close, proxy: px}, nil
	}
	// The sender dials when its rank first needs the connection; waiting
	// for it here could deadlock two processes that each wait for the
	// other's dial. The proxy waits instead, and the rank's receive waits
	// (with their timeout) see nothing until it is there.
	px.peer = fmt.Sprintf("rank %d (host %q)", req.From.Rank, req.From.Host)
	px.await = func() ([]net.Conn, error) {
		stop := func() bool { return px.stop.Aborted() || (t.Stop != nil && t.Stop()) }
		var conns []net.Conn
		for j := 0; j < socks; j++ {
			c, err := t.Listener.Await(sockKey(key, j, socks), t.Timeout, stop)
			if err != nil {
				for _, c := range conns {
					c.Close()
				}
				return nil, fmt.Errorf("rank %d never connected: %w", req.From.Rank, err)
			}
			conns = append(conns, c)
		}
		return conns, nil
	}
	f.SendWaiter = px.waiter // a released slot wakes the proxy
	if req.Proto != proto.Simple && canPollLines {
		f.Poll = px.poll // a waiting rank reads small frames itself
		f.Hold = px.hold
	}
	return &Conn{RecvSide: f, Start: px.startRecv, Close: px.close, proxy: px}, nil
}

// frameBufBytes is a proxy's frame buffer: the header, and for LL and
// LL128 the payload it packs or unpacks (a Simple slice goes between the
// socket and the FIFO or the rank's memory directly, after its padding).
func frameBufBytes(p proto.Protocol, buffSize int) int {
	if p == proto.Simple {
		return frameHeader + frameAlign
	}
	return frameHeader + buffSize
}

// sockKey names socket j of k of the connection key: the key alone for a
// single socket, so ends that agree on one socket keep the old names.
func sockKey(key string, j, k int) string {
	if k <= 1 {
		return key
	}
	return fmt.Sprintf("%s/s%d-of-%d", key, j, k)
}

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

// The handshake of a connection to a NetListener (integers little
// endian), in which no end sends the job's token:
//
//	dialler  -> listener: netMagic | dialler's nonce [32]
//	listener -> dialler:  netMagic | listener's nonce [32] | listener's proof [32]
//	dialler  -> listener: 1 | dialler's proof [32] | key length u16 | key
//	                      (or 0 alone: the listener's proof failed, and close)
//	listener -> dialler:  1 (the connection is taken)
//
// The listener's proof is HMAC-SHA256(token, netListenerLabel | dialler's
// nonce | listener's nonce), the dialler's HMAC-SHA256(token, netDialerLabel
// | both nonces | key) (lib/internal/handshake). The dialler checks the
// listener's proof before it sends its own: a program on the listener's
// port learns a nonce, and a recorded proof is worthless against the
// listener's next nonce. Before the dialler's proof checks out the listener
// reads at most netPreAuthBytes, within netHelloDeadline, for at most
// maxNetUnauth connections at once (the next are closed at once).
const netMagic = "GCCLNET2"

const (
	netListenerLabel = netMagic + " listener"
	netDialerLabel   = netMagic + " dialer"
)

// maxNetKey bounds a connection's key (NetKey's are under 100 bytes).
const maxNetKey = 1 << 10

// netPreAuthBytes is the most a listener reads of a connection that has
// not proved the token: the nonce message and the proof with its key.
const netPreAuthBytes = len(netMagic) + handshake.NonceBytes + 1 + handshake.ProofBytes + 2 + maxNetKey

// netHelloDeadline bounds a connection's handshake.
const netHelloDeadline = 5 * time.Second

// maxNetUnauth bounds the connections a listener authenticates at once.
const maxNetUnauth = 64

// netRefusalEvery is the least time between two lines of a listener's log
// of refused connections (tests shorten it before ListenNet).
var netRefusalEvery = 10 * time.Second

// errNotPeer is a listener that could not prove the job's token: dialling
// it again is no use.
var errNotPeer = errors.New("not this job's network listener")

// socketBuffer is each socket's send and receive buffer: large, so a
// whole FIFO's worth of steps can be in flight.
const socketBuffer = 4 << 20

func tune(c net.Conn) {
	if tc, ok := c.(*net.TCPConn); ok {
		_ = tc.SetNoDelay(true)
		_ = tc.SetReadBuffer(socketBuffer)
		_ = tc.SetWriteBuffer(socketBuffer)
	}
}

// dialNet connects to the listener at addr, retrying until timeout (a
// listener that is busy, or not up yet), and authenticates with token and
// names the connection's key; a listener that cannot prove the token ends
// it at once.
func dialNet(addr, token, key string, timeout time.Duration, stop func() bool) (net.Conn, error) {
	if len(key) > maxNetKey {
		return nil, fmt.Errorf("a connection key of %d bytes: at most %d", len(key), maxNetKey)
	}
	if timeout <= 0 {
		timeout = time.Minute
	}
	deadline := time.Now().Add(timeout)
	for {
		c, err := net.DialTimeout("tcp", addr, time.Until(deadline))
		if err == nil {
			tune(c)
			if err = hello(c, addr, token, key, deadline); err == nil {
				return c, nil
			}
			c.Close()
			if errors.Is(err, errNotPeer) {
				return nil, err
			}
		}
		if time.Now().After(deadline) || (stop != nil && stop()) {
			return nil, err
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// hello runs the dialler's side of the handshake.
func hello(c net.Conn, addr, token, key string, deadline time.Time) error {
	if by := time.Now().Add(netHelloDeadline); by.Before(deadline) {
		deadline = by
	}
	_ = c.SetDeadline(deadline)
	defer c.SetDeadline(time.Time{})
	dn, err := handshake.Nonce()
	if err != nil {
		return err
	}
	if _, err := c.Write(append([]byte(netMagic), dn[:]...)); err != nil {
		return err
	}
	var ch [len(netMagic) + handshake.NonceBytes + handshake.ProofBytes]byte
	if _, err := io.ReadFull(c, ch[:]); err != nil {
		if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
			return fmt.Errorf("the process listening at %s closed the connection without answering (a listener busy with other connections, or not a gccl listener of this version)", addr)
		}
		return fmt.Errorf("the process listening at %s did not answer: %w", addr, err)
	}
	if string(ch[:len(netMagic)]) != netMagic {
		return fmt.Errorf("the process listening at %s is %w: it is not a gccl listener of this version (magic %q, want %q)", addr, errNotPeer, ch[:len(netMagic)], netMagic)
	}
	ln, proof := ch[len(netMagic):][:handshake.NonceBytes], ch[len(netMagic)+handshake.NonceBytes:]
	if !handshake.Verify(proof, []byte(token), netListenerLabel, dn[:], ln) {
		_, _ = c.Write([]byte{0})
		return fmt.Errorf("the process listening at %s is %w (it could not prove the job token): its port is taken by another program or another job, or the job's processes hold different tokens", addr, errNotPeer)
	}
	mine := handshake.Proof([]byte(token), netDialerLabel, dn[:], ln, []byte(key))
	msg := append([]byte{1}, mine[:]...)
	msg = binary.LittleEndian.AppendUint16(msg, uint16(len(key)))
	msg = append(msg, key...)
	if _, err := c.Write(msg); err != nil {
		return err
	}
	var ok [1]byte
	if _, err := io.ReadFull(c, ok[:]); err != nil {
		return fmt.Errorf("the listener at %s refused the connection after the handshake: %w", addr, err)
	}
	return nil
}

// NetListener is a process's listener for the network connections other
// processes open to its ranks. It authenticates each one and hands it to
// the Connect waiting for its key (or keeps it until one does).
type NetListener struct {
	ln    net.Listener
	token string
	logf  func(format string, args ...any)
	// unauth holds the connections authenticating; refusals counts and
	// logs those refused.
	unauth   *handshake.Pending
	refusals *handshake.Refusals

	mu      sync.Mutex
	waiting map[string]chan net.Conn // guarded by mu
	arrived map[string]net.Conn      // guarded by mu: came before their Await
	closed  bool                     // guarded by mu
}

// ListenNet listens on addr ("host:port"; port 0 picks one) for the job
// with token. logf receives the refused connections: at most one line per
// 10 s, counting them by reason.
func ListenNet(addr, token string, logf func(format string, args ...any)) (*NetListener, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("net: listening on %s: %w", addr, err)
	}
	if logf == nil {
		logf = func(string, ...any) {}
	}
	l := &NetListener{ln: ln, token: token, logf: logf, waiting: map[string]chan net.Conn{}, arrived: map[string]net.Conn{},
		unauth: handshake.NewPending(maxNetUnauth)}
	l.refusals = handshake.NewRefusals("gccl: net: listener "+l.Addr(), netRefusalEvery, func(line string) { logf("%s", line) })
	go l.acceptLoop()
	return l, nil
}

// Addr is where the listener listens.
func (l *NetListener) Addr() string { return l.ln.Addr().String() }

func (l *NetListener) acceptLoop() {
	for {
		c, err := handshake.Accept(l.ln, nil)
		if err != nil {
			return // closed
		}
		if !l.unauth.Enter(c) {
			c.Close()
			l.refused(c, fmt.Sprintf("over the limit of %d unauthenticated connections", maxNetUnauth), "")
			continue
		}
		go l.admit(c)
	}
}

// refused counts and logs a refused connection, unless the listener is
// closing (it closed the connection itself).
func (l *NetListener) refused(c net.Conn, reason, detail string) {
	l.mu.Lock()
	closed := l.closed
	l.mu.Unlock()
	if !closed {
		l.refusals.Add(c.RemoteAddr(), reason, detail)
	}
}

// admit authenticates a connection within netHelloDeadline and delivers
// it, or refuses and logs it. It never blocks the accept loop.
func (l *NetListener) admit(c net.Conn) {
	key, reason, detail := readHello(c, l.token)
	l.unauth.Leave(c)
	if reason != "" {
		l.refused(c, reason, detail)
		c.Close()
		return
	}
	tune(c)
	l.mu.Lock()
	defer l.mu.Unlock()
	switch {
	case l.closed:
		c.Close()
	case l.waiting[key] != nil:
		l.waiting[key] <- c
		delete(l.waiting, key)
	case l.arrived[key] != nil:
		l.logf("gccl: net: refused a second connection for %s from %s", key, c.RemoteAddr())
		c.Close()
	default:
		l.arrived[key] = c
	}
}

// Reasons a listener refuses a connection (its log counts by them).
const (
	netReasonAuth    = "failed authentication"
	netReasonClosed  = "closed before authenticating"
	netReasonNotGCCL = "not a gccl network connection"
)

// readHello runs the listener's side of the handshake; it returns the
// connection's key, or why it refuses it.
func readHello(c net.Conn, token string) (key, reason, detail string) {
	_ = c.SetDeadline(time.Now().Add(netHelloDeadline))
	defer c.SetDeadline(time.Time{})
	var open [len(netMagic) + handshake.NonceBytes]byte
	if _, err := io.ReadFull(c, open[:]); err != nil {
		return netHelloFailure(err)
	}
	if m := open[:len(netMagic)]; string(m) != netMagic {
		return "", netReasonNotGCCL, fmt.Sprintf("magic %q, want %q", m, netMagic)
	}
	dn := open[len(netMagic):]
	ln, err := handshake.Nonce()
	if err != nil {
		return "", "no nonce to challenge it with", err.Error()
	}
	proof := handshake.Proof([]byte(token), netListenerLabel, dn, ln[:])
	if _, err := c.Write(append(append([]byte(netMagic), ln[:]...), proof[:]...)); err != nil {
		return netHelloFailure(err)
	}
	var head [1 + handshake.ProofBytes + 2]byte
	if _, err := io.ReadFull(c, head[:1]); err != nil {
		return netHelloFailure(err)
	}
	switch head[0] {
	case 0:
		return "", netReasonAuth, "it holds another job's token"
	case 1:
	default:
		return "", netReasonNotGCCL, fmt.Sprintf("a proof's marker %d", head[0])
	}
	if _, err := io.ReadFull(c, head[1:]); err != nil {
		return netHelloFailure(err)
	}
	n := int(binary.LittleEndian.Uint16(head[1+handshake.ProofBytes:]))
	if n > maxNetKey {
		return "", netReasonNotGCCL, fmt.Sprintf("a connection key of %d bytes, at most %d", n, maxNetKey)
	}
	k := make([]byte, n)
	if _, err := io.ReadFull(c, k); err != nil {
		return netHelloFailure(err)
	}
	if !handshake.Verify(head[1:1+handshake.ProofBytes], []byte(token), netDialerLabel, dn, ln[:], k) {
		return "", netReasonAuth, "its proof does not match this job's token"
	}
	if _, err := c.Write([]byte{1}); err != nil {
		return netHelloFailure(err)
	}
	return string(k), "", ""
}

// netHelloFailure is readHello's refusal of a connection whose read or
// write failed with err, said as what happened.
func netHelloFailure(err error) (key, reason, detail string) {
	var ne net.Error
	switch {
	case errors.As(err, &ne) && ne.Timeout():
		return "", fmt.Sprintf("no hello within %v", netHelloDeadline), ""
	case errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF):
		return "", netReasonClosed, ""
	default:
		return "", netReasonClosed, err.Error()
	}
}

// Await returns the connection opened for key, waiting up to timeout (0:
// a minute) or until stop says the job aborted.
func (l *NetListener) Await(key string, timeout time.Duration, stop func() bool) (net.Conn, error) {
	l.mu.Lock()
	if c := l.arrived[key]; c != nil {
		delete(l.arrived, key)
		l.mu.Unlock()
		return c, nil
	}
	if l.closed {
		l.mu.Unlock()
		return nil, errors.New("net: the listener is closed")
	}
	ch := make(chan net.Conn, 1)
	l.waiting[key] = ch
	l.mu.Unlock()
	if timeout <= 0 {
		timeout = time.Minute
	}
	deadline := time.Now().Add(timeout)
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case c := <-ch:
			return c, nil
		case <-tick.C:
		}
		if time.Now().After(deadline) || (stop != nil && stop()) {
			l.mu.Lock()
			delete(l.waiting, key)
			l.mu.Unlock()
			select {
			case c := <-ch: // delivered meanwhile
				return c, nil
			default:
			}
			return nil, fmt.Errorf("no connection for %s within %v", key, timeout)
		}
	}
}

// Close stops listening and closes the connections no one took.
func (l *NetListener) Close() {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return
	}
	l.closed = true
	l.ln.Close()
	l.unauth.CloseAll()
	l.refusals.Close()
	for k, c := range l.arrived {
		c.Close()
		delete(l.arrived, k)
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
