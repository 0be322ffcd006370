package bootstrap

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"net"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
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
}

// heartbeatOf is the silence a job with this timeout takes for a lost
// link: half the timeout, so that every rank hears of a lost host before
// its own waits time out.
// The root reads a joining process's timeout back from it (Root.admit).
func heartbeatOf(timeout time.Duration) time.Duration { return timeout / 2 }

// ErrLost is wrapped by every error of a job that failed elsewhere: a
// process lost or aborted, or the root gone.
var ErrLost = errors.New("bootstrap: the job failed")

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
// of nranks, and returns once every rank has joined.
func Join(addr string, token [tokenBytes]byte, nranks int, ranks []int, info ProcInfo, opt JoinOptions) (*Client, error) {
	if opt.Timeout <= 0 {
		opt.Timeout = 5 * time.Minute
	}
	deadline := time.Now().Add(opt.Timeout)
	var conn net.Conn
	for pause := 5 * time.Millisecond; ; pause = min(2*pause, 200*time.Millisecond) {
		var err error
		conn, err = net.DialTimeout("tcp", addr, time.Until(deadline))
		if err == nil {
			break
		}
		// The root may not listen yet: it starts with another process.
		if !errors.Is(err, syscall.ECONNREFUSED) || time.Now().Add(pause).After(deadline) {
			return nil, fmt.Errorf("bootstrap: connecting to the root at %s: %w", addr, err)
		}
		time.Sleep(pause)
	}
	info.Ranks = append([]int(nil), ranks...)
	if err := writeFrame(conn, frameHello, hello{token: token, nranks: nranks, info: info, heartbeat: heartbeatOf(opt.Timeout)}.encode()); err != nil {
		conn.Close()
		return nil, fmt.Errorf("bootstrap: joining the root at %s: %w", addr, err)
	}
	// The root answers by its own deadline, which started when it did: in
	// another process, maybe one started a second or more after this one
	// on a loaded machine, so this one waits longer than its own timeout
	// before it calls the root silent (seen in CI: a process gave up on a
	// root 1 s late and the job failed naming it, not the absent rank).
	_ = conn.SetReadDeadline(deadline.Add(joinAnswerGrace))
	typ, p, err := readFrame(conn)
	_ = conn.SetReadDeadline(time.Time{})
	if err != nil {
		conn.Close()
		return nil, fmt.Errorf("bootstrap: joining the root at %s: no answer: %w (a wrong job token is refused without one)", addr, err)
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
	where := fmt.Sprintf("the bootstrap root at %s (host %s, pid %d", addr, root.host, root.pid)
	for _, p := range procs {
		if p.Pid == root.pid && p.Host == root.host {
			where += ": the " + p.String()
		}
	}
	c := &Client{conn: conn, addr: addr, rootDesc: where + ")", timeout: opt.Timeout, index: index, procs: procs, nranks: nranks,
		results: make(chan result, 1), lost: make(chan struct{}), done: make(chan struct{})}
	go c.read()
	return c, nil
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
		typ, p, err := readFrame(c.conn)
		if err != nil {
			var ne net.Error
			switch {
			case c.closing.Load():
			case errors.As(err, &ne) && ne.Timeout():
				c.markLost(fmt.Errorf("%w: lost %s: no heartbeat for %v (its host unreachable, or the process stopped)", ErrLost, c.rootDesc, silence))
			default:
				c.markLost(fmt.Errorf("%w: lost %s: connection closed (%v)", ErrLost, c.rootDesc, err))
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
