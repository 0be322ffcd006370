// NetListener, the per-process listener of Net's connections, and the
// handshake both ends run: admission of a connection by proof of the
// job's token (readHello, admit), and dialling it (dialNet, hello).

package transport

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
	"time"

	"github.com/gccl/gccl/lib/internal/handshake"
)

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
