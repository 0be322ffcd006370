package bootstrap

import (
	"crypto/rand"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/gccl/gccl/lib/internal/handshake"
)

// MakeUniqueID is the unique id of a root at addr with token.
func MakeUniqueID(addr string, token [tokenBytes]byte) (UniqueID, error) {
	return makeID(addr, token)
}

// JoinOptions configure a Join.
type JoinOptions struct {
	// Timeout bounds the join (the root may start after this process:
	// refused connections are retried) and every collective (0: 5 minutes).
	// Half of it is the heartbeat: the longest silence from the root this
	// process, and from this process the root, takes for a lost link.
	Timeout time.Duration
	// Name says whose root this is in messages ("the communicator's", "the
	// harness's"): a process may be in several jobs, each with a root of
	// its own, and an error that names two addresses must say which is
	// which. "" is "the".
	Name string
}

// thisProcess tells the root which joined process it runs in (hello's
// process). Drawn once; a failed draw leaves 0, which only costs the
// messages the root's ranks.
var thisProcess = func() uint64 {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return binary.LittleEndian.Uint64(b[:]) | 1
}()

// heartbeatOf is the silence a job with this timeout takes for a lost
// link: half the timeout, so that every rank hears of a lost host before
// its own waits time out.
// The root reads a joining process's timeout back from it (Root.admit).
func heartbeatOf(timeout time.Duration) time.Duration { return timeout / 2 }

// ErrLost is wrapped by every error of a job that failed elsewhere: a
// process lost or aborted, or the root gone.
var ErrLost = errors.New("bootstrap: the job failed")

// ErrRootLost is wrapped, beside ErrLost, when this process lost the root
// itself (silent, or its connection closed): the root could not say which
// process failed. Without it, an ErrLost names the process (the root's
// word).
var ErrRootLost = errors.New("lost")

// Client is one process's link to its job's root.
type Client struct {
	conn     net.Conn
	addr     string
	rootDesc string // the root and the process it runs in, for messages
	timeout  time.Duration
	index    int
	procs    []ProcInfo
	nranks   int

	wmu     sync.Mutex // serialises writes to conn
	collMu  sync.Mutex // one collective at a time
	seq     uint64     // guarded by collMu
	results chan result
	// clock carries the root's clock answers from the reader to
	// ClockOffset, one measurement at a time (clockMu, which guards
	// clockID, the last request's id).
	clock   chan clockAnswer
	clockMu sync.Mutex
	clockID uint64

	lostOnce sync.Once
	lost     chan struct{} // closed when the job is lost
	lostErr  error         // written once before lost is closed
	cbMu     sync.Mutex
	cbs      []func(error) // guarded by cbMu; nil once run
	closing  atomic.Bool   // set by Close: the end of the connection is ours
	done     chan struct{} // closed when the reader exits
}

type result struct {
	seq   uint64
	parts [][]byte
}

// joinAnswerGrace is how much longer than its timeout a joining process
// waits for the root's answer (see Join).
const joinAnswerGrace = 5 * time.Second

// JoinID joins the job id names.
func JoinID(id UniqueID, nranks int, ranks []int, info ProcInfo, opt JoinOptions) (*Client, error) {
	addr, err := id.Root()
	if err != nil {
		return nil, err
	}
	return Join(addr, id.Token(), nranks, ranks, info, opt)
}

// Join connects to the root at addr as the process holding ranks of a job
// of nranks, and returns once every rank has joined. The root and this
// process prove to each other that they hold token without sending it
// (wire.go); this one proves it only to a root that proved it first.
func Join(addr string, token [tokenBytes]byte, nranks int, ranks []int, info ProcInfo, opt JoinOptions) (*Client, error) {
	if opt.Timeout <= 0 {
		opt.Timeout = 5 * time.Minute
	}
	deadline := time.Now().Add(opt.Timeout)
	conn, err := connect(addr, token, deadline, opt.Timeout)
	if err != nil {
		return nil, err
	}
	info.Ranks = append([]int(nil), ranks...)
	// The root answers by its own deadline, which started when it did: in
	// another process, maybe one started a second or more after this one
	// on a loaded machine, so this one waits longer than its own timeout
	// before it calls the root silent (seen in CI: a process gave up on a
	// root 1 s late and the job failed naming it, not the absent rank).
	_ = conn.SetDeadline(deadline.Add(joinAnswerGrace))
	err = writeFrame(conn, frameHello, hello{nranks: nranks, info: info, heartbeat: heartbeatOf(opt.Timeout), process: thisProcess}.encode())
	var typ byte
	var p []byte
	if err == nil {
		typ, p, err = readFrame(conn, maxFrame)
	}
	_ = conn.SetDeadline(time.Time{})
	if err != nil {
		conn.Close()
		var ne net.Error
		if errors.As(err, &ne) && ne.Timeout() {
			return nil, fmt.Errorf("bootstrap: joining the root at %s: no answer within %v: the root neither admitted nor refused this process (its host unreachable, or the root stopped)",
				addr, opt.Timeout+joinAnswerGrace)
		}
		return nil, fmt.Errorf("bootstrap: joining the root at %s: the connection ended before the root answered: %w", addr, err)
	}
	switch typ {
	case frameRefuse:
		reason, _ := decodeStr(p)
		conn.Close()
		return nil, fmt.Errorf("bootstrap: the root at %s refused to join: %s", addr, reason)
	case frameLost:
		// The job failed before this process's table went out: every rank
		// joined, another process got its table first and aborted (the
		// root sends the tables and the loss from different goroutines).
		reason, _ := decodeStr(p)
		conn.Close()
		return nil, fmt.Errorf("%w: %s", ErrLost, reason)
	case frameTable:
	default:
		conn.Close()
		return nil, fmt.Errorf("bootstrap: the root at %s answered with a message of type %d", addr, typ)
	}
	index, root, procs, err := decodeTable(p)
	if err != nil {
		conn.Close()
		return nil, err
	}
	name := opt.Name
	if name == "" {
		name = "the"
	}
	where := fmt.Sprintf("%s bootstrap root at %s (host %s, pid %d", name, addr, root.host, root.pid)
	if root.index >= 0 {
		where = fmt.Sprintf("%s bootstrap root at %s (in the %v", name, addr, procs[root.index])
	}
	c := &Client{conn: conn, addr: addr, rootDesc: where + ")", timeout: opt.Timeout, index: index, procs: procs, nranks: nranks,
		results: make(chan result, 1), clock: make(chan clockAnswer, 1), lost: make(chan struct{}), done: make(chan struct{})}
	go c.read()
	return c, nil
}

// errBusy is a root answering busy: too many connections authenticating.
var errBusy = errors.New("bootstrap: the root is busy")

// connect dials the root at addr and authenticates both ways, trying
// again while no root listens yet (it starts with another process) or
// the root is busy, until deadline.
func connect(addr string, token [tokenBytes]byte, deadline time.Time, timeout time.Duration) (net.Conn, error) {
	tries := 0
	for pause := 5 * time.Millisecond; ; pause = min(2*pause, 200*time.Millisecond) {
		tries++
		conn, err := net.DialTimeout("tcp", addr, time.Until(deadline))
		if err == nil {
			if err = authenticate(conn, addr, token, deadline); err == nil {
				return conn, nil
			}
			conn.Close()
			if !errors.Is(err, errBusy) {
				return nil, err
			}
		} else if !errors.Is(err, syscall.ECONNREFUSED) {
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				return nil, fmt.Errorf("bootstrap: connecting to the root at %s: no answer within %v (its host unreachable, or a firewall drops the connection): %w", addr, timeout, err)
			}
			return nil, fmt.Errorf("bootstrap: connecting to the root at %s: %w", addr, err)
		}
		if time.Now().Add(pause).After(deadline) {
			if errors.Is(err, errBusy) {
				return nil, fmt.Errorf("bootstrap: the root at %s was busy at each of %d tries in %v: more than %d connections were authenticating at once (a flood of connections to its port?)", addr, tries, timeout, maxUnauth)
			}
			return nil, fmt.Errorf("bootstrap: no bootstrap root listening at %s: connection refused for %v (%d tries): the root's process (rank 0's) has not started, or has exited", addr, timeout, tries)
		}
		time.Sleep(pause)
	}
}

// authenticate runs the process's side of the handshake (wire.go): the
// open, the root's challenge, whose proof it checks before it sends its
// own. A process that cannot prove the token is told so (a refuse, for
// the root's log) and learns only a nonce of this connection.
func authenticate(c net.Conn, addr string, token [tokenBytes]byte, deadline time.Time) error {
	within := min(helloDeadline, time.Until(deadline.Add(joinAnswerGrace)))
	_ = c.SetDeadline(time.Now().Add(within))
	defer c.SetDeadline(time.Time{})
	pn, err := handshake.Nonce()
	if err != nil {
		return fmt.Errorf("bootstrap: %w", err)
	}
	if err := writeFrame(c, frameOpen, open{nonce: pn}.encode()); err != nil {
		return fmt.Errorf("bootstrap: the process listening at %s closed the connection at once: %w", addr, err)
	}
	typ, p, err := readFrame(c, preAuthFrame)
	if err != nil {
		return notRootError(addr, err, within)
	}
	switch typ {
	case frameBusy:
		return errBusy
	case frameChallenge:
	default:
		return fmt.Errorf("bootstrap: the process listening at %s is not a gccl bootstrap root: it answered with a message of type %d", addr, typ)
	}
	ch, err := decodeChallenge(p)
	if err != nil {
		var other errOtherVersion
		if errors.As(err, &other) {
			return fmt.Errorf("bootstrap: the process listening at %s is a gccl bootstrap root of another version: %w", addr, err)
		}
		return fmt.Errorf("bootstrap: the process listening at %s is not a gccl bootstrap root: %w", addr, err)
	}
	if !handshake.Verify(ch.proof[:], token[:], rootLabel, pn[:], ch.nonce[:]) {
		_ = writeFrame(c, frameRefuse, encodeStr("the root's proof does not match this process's job token"))
		return fmt.Errorf("bootstrap: the process listening at %s is not this job's bootstrap root (it could not prove the job token): "+
			"the root's port is taken by another program or another job, or this process has another job's token "+
			"(%s, or the unique id, must be the same in every process of the job)", addr, EnvJobToken)
	}
	proof := procProof(token, pn, ch.nonce)
	if err := writeFrame(c, frameProof, proof[:]); err != nil {
		return fmt.Errorf("bootstrap: the root at %s closed the connection: %w", addr, err)
	}
	return nil
}

// notRootError says what a process listening at addr did instead of
// answering the open with a challenge.
func notRootError(addr string, err error, within time.Duration) error {
	var ne net.Error
	var size *frameSizeError
	switch {
	case errors.As(err, &ne) && ne.Timeout():
		return fmt.Errorf("bootstrap: the process listening at %s did not answer within %v: it is not a gccl bootstrap root of this version (the root's port is taken by another program?)", addr, within.Round(time.Millisecond))
	case errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF):
		return fmt.Errorf("bootstrap: the process listening at %s closed the connection without answering: it is not a gccl bootstrap root of this version "+
			"(another program holds the root's port, or a root of another gccl version), or the root is closing", addr)
	case errors.As(err, &size):
		return fmt.Errorf("bootstrap: the process listening at %s is not a gccl bootstrap root: it sent a frame of %d bytes where a challenge belongs", addr, size.n)
	default:
		return fmt.Errorf("bootstrap: the connection to the process listening at %s failed: %w", addr, err)
	}
}

// Procs are the job's processes, by index.
func (c *Client) Procs() []ProcInfo { return c.procs }

// Index is this process's index.
func (c *Client) Index() int { return c.index }

// NProcs is the number of processes.
func (c *Client) NProcs() int { return len(c.procs) }

// NRanks is the number of ranks.
func (c *Client) NRanks() int { return c.nranks }

// read receives the root's messages until the connection ends.
func (c *Client) read() {
	defer close(c.done)
	silence := heartbeatOf(c.timeout)
	for {
		// The root pings at least every silence/4: this much silence is
		// a lost link (or a stopped root), not a quiet one.
		_ = c.conn.SetReadDeadline(time.Now().Add(silence))
		typ, p, err := readFrame(c.conn, maxFrame)
		if err != nil {
			var ne net.Error
			switch {
			case c.closing.Load():
			case errors.As(err, &ne) && ne.Timeout():
				c.markLost(fmt.Errorf("%w: %w %s: no heartbeat for %v (its host unreachable, or the process stopped)", ErrLost, ErrRootLost, c.rootDesc, silence))
			default:
				c.markLost(fmt.Errorf("%w: %w %s: connection closed (%v)", ErrLost, ErrRootLost, c.rootDesc, err))
			}
			return
		}
		switch typ {
		case framePing:
			go c.send(framePong, nil) // not here: a blocked write must not stop the reader
		case frameResult:
			seq, parts, err := decodeResult(p)
			if err != nil {
				c.markLost(fmt.Errorf("%w: a malformed result from the root: %v", ErrLost, err))
				return
			}
			c.results <- result{seq, parts}
		case frameTime:
			if len(p) != 16 {
				c.markLost(fmt.Errorf("%w: a malformed clock answer from the root (%d bytes)", ErrLost, len(p)))
				return
			}
			a := clockAnswer{id: binary.LittleEndian.Uint64(p), ns: int64(binary.LittleEndian.Uint64(p[8:]))}
			select {
			case c.clock <- a:
			default: // an abandoned request's answer is in the way: replace it
				select {
				case <-c.clock:
				default:
				}
				c.clock <- a // the reader alone sends: there is room now
			}
		case frameLost:
			reason, _ := decodeStr(p)
			c.markLost(fmt.Errorf("%w: %s", ErrLost, reason))
		}
	}
}

func (c *Client) markLost(err error) {
	c.lostOnce.Do(func() {
		c.lostErr = err
		close(c.lost)
		c.cbMu.Lock()
		cbs := c.cbs
		c.cbs = nil
		c.cbMu.Unlock()
		for _, f := range cbs {
			go f(err)
		}
	})
}

// Lost is closed when the job is lost.
func (c *Client) Lost() <-chan struct{} { return c.lost }

// LostErr says why the job was lost (nil while it is not).
func (c *Client) LostErr() error {
	select {
	case <-c.lost:
		return c.lostErr
	default:
		return nil
	}
}

// OnLost runs f (in a goroutine of its own) when the job is lost, at once
// if it is.
func (c *Client) OnLost(f func(error)) {
	c.cbMu.Lock()
	select {
	case <-c.lost:
		c.cbMu.Unlock()
		go f(c.lostErr)
		return
	default:
	}
	c.cbs = append(c.cbs, f)
	c.cbMu.Unlock()
}

func (c *Client) send(typ byte, p []byte) error {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	_ = c.conn.SetWriteDeadline(time.Now().Add(c.timeout))
	return writeFrame(c.conn, typ, p)
}

// Abort tells the root (which tells the others) that this process gives
// up, and marks the job lost here.
func (c *Client) Abort(cause error) {
	if c.LostErr() == nil {
		_ = c.send(frameAbort, encodeStr(cause.Error()))
	}
	c.markLost(fmt.Errorf("%w: aborted here: %v", ErrLost, cause))
}

// Close says goodbye and closes the connection.
func (c *Client) Close() error {
	if c.closing.Swap(true) {
		return nil
	}
	_ = c.send(frameBye, nil)
	err := c.conn.Close()
	<-c.done
	return err
}

// collective runs one collective through the root.
func (c *Client) collective(kind byte, root int, op ReduceOp, data []byte) ([][]byte, error) {
	c.collMu.Lock()
	defer c.collMu.Unlock()
	if err := c.LostErr(); err != nil {
		return nil, err
	}
	c.seq++
	seq := c.seq
	if err := c.send(frameColl, coll{seq: seq, kind: kind, root: root, op: op, data: data}.encode()); err != nil {
		return nil, fmt.Errorf("bootstrap: %s: sending to the root at %s: %w", collNames[kind], c.addr, err)
	}
	t := time.NewTimer(c.timeout)
	defer t.Stop()
	select {
	case r := <-c.results:
		if r.seq != seq {
			return nil, fmt.Errorf("bootstrap: %s %d: the root answered collective %d", collNames[kind], seq, r.seq)
		}
		return r.parts, nil
	case <-c.lost:
		return nil, fmt.Errorf("bootstrap: %s: %w", collNames[kind], c.lostErr)
	case <-t.C:
		return nil, fmt.Errorf("bootstrap: %s: no answer within %v: another process has not called it", collNames[kind], c.timeout)
	}
}

// Barrier returns once every process called it.
func (c *Client) Barrier() error {
	_, err := c.collective(collBarrier, 0, 0, nil)
	return err
}

// AllGather returns every process's blob, by process index.
func (c *Client) AllGather(blob []byte) ([][]byte, error) {
	parts, err := c.collective(collAllGather, 0, 0, blob)
	if err == nil && len(parts) != len(c.procs) {
		err = fmt.Errorf("bootstrap: AllGather: %d parts for %d processes", len(parts), len(c.procs))
	}
	return parts, err
}

// Broadcast returns process root's blob (the others' blobs are ignored).
func (c *Client) Broadcast(root int, blob []byte) ([]byte, error) {
	if root < 0 || root >= len(c.procs) {
		return nil, fmt.Errorf("bootstrap: Broadcast from process %d: want 0..%d", root, len(c.procs)-1)
	}
	if c.index != root {
		blob = nil
	}
	parts, err := c.collective(collBroadcast, root, 0, blob)
	if err != nil {
		return nil, err
	}
	return parts[0], nil
}

// AllReduceFloat64 reduces vals over the processes, in place; every
// process gets the same bits (the root folds in process order).
func (c *Client) AllReduceFloat64(vals []float64, op ReduceOp) error {
	b := make([]byte, 8*len(vals))
	for i, v := range vals {
		binary.LittleEndian.PutUint64(b[8*i:], math.Float64bits(v))
	}
	parts, err := c.collective(collAllReduceF64, 0, op, b)
	if err != nil {
		return err
	}
	if len(parts[0]) != len(b) {
		return fmt.Errorf("bootstrap: AllReduceFloat64: %d bytes back for %d values", len(parts[0]), len(vals))
	}
	for i := range vals {
		vals[i] = math.Float64frombits(binary.LittleEndian.Uint64(parts[0][8*i:]))
	}
	return nil
}

// AllReduceInt64 is AllReduceFloat64 for int64 values.
func (c *Client) AllReduceInt64(vals []int64, op ReduceOp) error {
	b := make([]byte, 8*len(vals))
	for i, v := range vals {
		binary.LittleEndian.PutUint64(b[8*i:], uint64(v))
	}
	parts, err := c.collective(collAllReduceI64, 0, op, b)
	if err != nil {
		return err
	}
	if len(parts[0]) != len(b) {
		return fmt.Errorf("bootstrap: AllReduceInt64: %d bytes back for %d values", len(parts[0]), len(vals))
	}
	for i := range vals {
		vals[i] = int64(binary.LittleEndian.Uint64(parts[0][8*i:]))
	}
	return nil
}
