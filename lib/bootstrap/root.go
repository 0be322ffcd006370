package bootstrap

import (
	"cmp"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gccl/gccl/lib/internal/handshake"
)

// ProcInfo describes one process of a job: what it told the root, and the
// ranks it holds.
type ProcInfo struct {
	Ranks  []int
	Host   string // hostname, for messages
	HostID string // host identity: processes with the same one share memory
	Pid    int
	Blob   []byte // whatever the process wants every other to know
}

func (p ProcInfo) String() string {
	return fmt.Sprintf("process of rank%s %s (host %s, pid %d)", plural(len(p.Ranks)), joinInts(p.Ranks), p.Host, p.Pid)
}

// RootOptions configure a root.
type RootOptions struct {
	// Timeout bounds the wait for every rank to join (0: 5 minutes).
	Timeout time.Duration
	// Log receives the root's lines (nil: os.Stderr): one per process it
	// refuses to join, and of the connections refused before they proved
	// the job's token, at most one per 10 s however many, counting them.
	Log io.Writer
}

// helloDeadline is how long a connection may take to authenticate and
// say hello.
const helloDeadline = 10 * time.Second

// maxUnauth bounds the connections authenticating at once: the next is
// answered busy and closed at once (its process tries again).
const maxUnauth = 64

// refusalLogEvery is the least time between two lines of the root's log
// of refused connections (tests shorten it before ServeRoot).
var refusalLogEvery = 10 * time.Second

// Root is the rendezvous of one job: every process connects to it, and
// it relays their collectives and watches their connections.
type Root struct {
	ln    net.Listener
	self  rootProc // this process: named by clients when the root is gone
	token [tokenBytes]byte
	opt   RootOptions
	wg    sync.WaitGroup
	// unauth holds the connections authenticating; refusals counts and
	// logs those refused before they joined.
	unauth   *handshake.Pending
	refusals *handshake.Refusals

	mu      sync.Mutex
	nranks  int                // fixed by the first valid hello; guarded by mu
	claimed map[int]*member    // rank -> its process; guarded by mu
	members []*member          // joined, in order of joining; guarded by mu
	procs   []*member          // by process index once the table is out; guarded by mu
	pending map[uint64]*gather // collectives under way, by sequence; guarded by mu
	failed  string             // why the job failed, "" while it has not; guarded by mu
	told    bool               // every process was sent failed; guarded by mu
	closed  bool               // guarded by mu
	left    chan struct{}      // closed when every process left or the job failed
	stop    chan struct{}      // closed by Close: the heartbeat ends
	timer   *time.Timer
	// joinBy is when the join times out (timer's deadline) and joinWithin
	// the timeout that set it: the root's own, or a joining process's
	// shorter one (guarded by mu).
	joinBy     time.Time
	joinWithin time.Duration
}

// member is one joined process.
type member struct {
	conn  net.Conn
	info  ProcInfo
	index int
	wmu   sync.Mutex // serialises writes to conn
	bye   bool       // guarded by Root.mu
	gone  bool       // guarded by Root.mu: its connection ended
	// heard is when the root last read a frame from it (unix ns): written
	// by its serve goroutine, read by the heartbeat goroutine.
	heard atomic.Int64
	// heartbeat is the silence the process tolerates (from its hello).
	heartbeat time.Duration
	// process is its thisProcess (from its hello).
	process uint64
}

func (m *member) send(typ byte, p []byte) {
	m.wmu.Lock()
	defer m.wmu.Unlock()
	_ = m.conn.SetWriteDeadline(time.Now().Add(helloDeadline))
	_ = writeFrame(m.conn, typ, p)
}

// gather is one collective's contributions.
type gather struct {
	kind  byte
	root  int
	op    ReduceOp
	parts [][]byte // by process index
	n     int
}

// ServeRoot listens on addr and serves the job whose token is token.
func ServeRoot(addr string, token [tokenBytes]byte, opt RootOptions) (*Root, error) {
	if opt.Timeout <= 0 {
		opt.Timeout = 5 * time.Minute
	}
	if opt.Log == nil {
		opt.Log = os.Stderr
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("bootstrap: root: %w", err)
	}
	host, _ := os.Hostname()
	r := &Root{ln: ln, self: rootProc{host: host, pid: os.Getpid(), index: -1}, token: token, opt: opt, claimed: map[int]*member{}, pending: map[uint64]*gather{}, left: make(chan struct{}), stop: make(chan struct{})}
	r.unauth = handshake.NewPending(maxUnauth)
	r.refusals = handshake.NewRefusals("gccl bootstrap root "+r.Addr(), refusalLogEvery, func(line string) { fmt.Fprintln(opt.Log, line) })
	r.joinBy, r.joinWithin = time.Now().Add(opt.Timeout), opt.Timeout
	r.timer = time.AfterFunc(opt.Timeout, r.joinTimedOut)
	r.wg.Add(1)
	go r.accept()
	return r, nil
}

// Addr is the address the root listens on, host:port.
func (r *Root) Addr() string { return r.ln.Addr().String() }

func (r *Root) accept() {
	defer r.wg.Done()
	for {
		c, err := handshake.Accept(r.ln, nil)
		if err != nil {
			return // closed
		}
		if !r.unauth.Enter(c) {
			r.busy(c)
			continue
		}
		r.wg.Add(1)
		go r.serve(c)
	}
}

// busy refuses a connection over maxUnauth at once: its process, told,
// tries again. A fresh socket's buffer takes the frame without blocking.
func (r *Root) busy(c net.Conn) {
	_ = c.SetWriteDeadline(time.Now().Add(100 * time.Millisecond))
	_ = writeFrame(c, frameBusy, nil)
	c.Close()
	r.refused(c, fmt.Sprintf("over the limit of %d unauthenticated connections", maxUnauth), "")
}

// refused counts and logs a connection refused before it joined, unless
// the root is closing (it closed the connection itself).
func (r *Root) refused(c net.Conn, reason, detail string) {
	r.mu.Lock()
	closed := r.closed
	r.mu.Unlock()
	if !closed {
		r.refusals.Add(c.RemoteAddr(), reason, detail)
	}
}

func (r *Root) logf(format string, a ...any) {
	fmt.Fprintf(r.opt.Log, "gccl bootstrap root %s: "+format+"\n", append([]any{r.Addr()}, a...)...)
}

// serve handles one connection: its handshake and hello, then its
// messages.
func (r *Root) serve(c net.Conn) {
	defer r.wg.Done()
	h, ok := r.handshake(c)
	if !ok {
		c.Close()
		return
	}
	m := &member{conn: c, info: h.info, heartbeat: h.heartbeat, process: h.process}
	m.heard.Store(time.Now().UnixNano())
	if reason := r.admit(m, h.nranks); reason != "" {
		r.logf("refused %s (pid %d): %s", c.RemoteAddr(), h.info.Pid, reason)
		m.send(frameRefuse, encodeStr(reason))
		c.Close()
		return
	}
	for {
		typ, p, err := readFrame(c, maxFrame)
		if err != nil {
			r.disconnected(m, err)
			return
		}
		m.heard.Store(time.Now().UnixNano())
		switch typ {
		case framePong:
		case frameColl:
			cl, err := decodeColl(p)
			if err != nil {
				r.fail(fmt.Sprintf("%v sent a malformed collective: %v", m.info, err))
				continue
			}
			r.contribute(m, cl)
		case frameAbort:
			cause, _ := decodeStr(p)
			r.fail(fmt.Sprintf("%v aborted: %s", m.info, cause))
		case frameBye:
			r.mu.Lock()
			m.bye = true
			r.checkLeft()
			r.mu.Unlock()
		default:
			r.fail(fmt.Sprintf("%v sent a message of unknown type %d", m.info, typ))
		}
	}
}

// Reasons the root refuses a connection before it joins (its log counts
// by them).
const (
	reasonAuth      = "failed authentication"
	reasonClosed    = "closed before authenticating"
	reasonNotGCCL   = "not a gccl bootstrap connection"
	reasonVersion   = "a gccl of another version"
	reasonBadHello  = "a malformed hello"
	reasonNoNonce   = "no nonce to challenge it with"
	reasonNoHelloIn = "no hello within %v"
)

// handshake authenticates c and reads its hello, all within the hello
// deadline; it counts and logs a refusal (false) otherwise.
func (r *Root) handshake(c net.Conn) (hello, bool) {
	within := min(helloDeadline, r.opt.Timeout)
	_ = c.SetDeadline(time.Now().Add(within))
	// Held among the unauthenticated until its hello is in (the next
	// frame): Close then never waits for a deadline.
	defer r.unauth.Leave(c)
	reason, detail := r.authenticate(c, within)
	if reason != "" {
		r.refused(c, reason, detail)
		return hello{}, false
	}
	typ, p, err := readFrame(c, maxFrame)
	var h hello
	switch {
	case err != nil:
		reason, detail = readFailure(c, err, within)
	case typ != frameHello:
		reason, detail = reasonBadHello, fmt.Sprintf("a message of type %d", typ)
	default:
		if h, err = decodeHello(p); err != nil {
			reason, detail = reasonBadHello, err.Error()
		}
	}
	if reason != "" {
		r.refused(c, reason, detail)
		return h, false
	}
	_ = c.SetDeadline(time.Time{})
	return h, true
}

// authenticate runs the root's side of the handshake (wire.go): the
// process's open, the root's challenge with its proof, the process's
// proof. It returns why it refuses the connection ("" for not).
func (r *Root) authenticate(c net.Conn, within time.Duration) (reason, detail string) {
	typ, p, err := readFrame(c, preAuthFrame)
	if err == nil && typ != frameOpen {
		err = fmt.Errorf("a first message of type %d", typ)
	}
	var o open
	if err == nil {
		o, err = decodeOpen(p)
	}
	if err != nil {
		return readFailure(c, err, within)
	}
	rn, err := handshake.Nonce()
	if err != nil {
		return reasonNoNonce, err.Error()
	}
	if err := writeFrame(c, frameChallenge, challenge{nonce: rn, proof: rootProof(r.token, o.nonce, rn)}.encode()); err != nil {
		return readFailure(c, err, within)
	}
	typ, p, err = readFrame(c, preAuthFrame)
	switch {
	case err != nil:
		return readFailure(c, err, within)
	case typ == frameRefuse: // it found the root's proof wrong
		return reasonAuth, "it holds another job's token"
	case typ != frameProof:
		return reasonNotGCCL, fmt.Sprintf("a message of type %d where its proof belongs", typ)
	case !handshake.Verify(p, r.token[:], procLabel, o.nonce[:], rn[:]):
		return reasonAuth, "its proof does not match this job's token"
	}
	return "", ""
}

// readFailure says why reading or writing a connection's handshake
// failed with err, as what happened: the deadline passed, the peer hung
// up, it sent what no gccl process of this version sends.
func readFailure(c net.Conn, err error, within time.Duration) (reason, detail string) {
	var ne net.Error
	var size *frameSizeError
	var other errOtherVersion
	switch {
	case errors.As(err, &ne) && ne.Timeout():
		return fmt.Sprintf(reasonNoHelloIn, within), ""
	case errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF):
		return reasonClosed, ""
	case errors.As(err, &other):
		return reasonVersion, other.Error()
	case errors.As(err, &size):
		// A gccl-bs2 hello (the token, ranks and blob) can outgrow an open:
		// its magic tells it apart from noise.
		var m [len(wireMagic)]byte
		if size.typ == frameOpen && size.n > uint32(len(m)) {
			if _, err := io.ReadFull(c, m[:]); err == nil {
				if _, err := checkMagic(m[:]); errors.As(err, &other) {
					return reasonVersion, other.Error()
				}
			}
		}
		return reasonNotGCCL, fmt.Sprintf("a frame of %d bytes where at most %d are taken before authentication", size.n, size.limit)
	case errors.As(err, new(*net.OpError)):
		return reasonClosed, err.Error()
	default:
		return reasonNotGCCL, err.Error()
	}
}

// admit registers a joining process; it returns why not ("" when
// admitted). The last rank to join sends everyone the table.
func (r *Root) admit(m *member, nranks int) string {
	r.mu.Lock()
	defer r.mu.Unlock()
	switch {
	case r.closed:
		return "the root is closed"
	case r.failed != "":
		return "the job already failed: " + r.failed
	case r.procs != nil:
		return "every rank has joined already"
	case r.nranks != 0 && nranks != r.nranks:
		return fmt.Sprintf("this process says %d ranks, the job %d", nranks, r.nranks)
	}
	seen := map[int]bool{}
	for _, rk := range m.info.Ranks {
		if o := r.claimed[rk]; o != nil || seen[rk] {
			return fmt.Sprintf("rank %d is claimed twice (also by pid %d)", rk, pidOf(o, m))
		}
		seen[rk] = true
	}
	r.nranks = nranks
	for _, rk := range m.info.Ranks {
		r.claimed[rk] = m
	}
	r.members = append(r.members, m)
	if len(r.claimed) < r.nranks {
		// A process gives up waiting at its own timeout (twice the
		// heartbeat it asks for; Join): the root answers by the earliest,
		// naming the ranks that never came, rather than let a process
		// give up and the job fail naming that one instead.
		if within := 2 * m.heartbeat; within > 0 {
			if by := time.Now().Add(within); by.Before(r.joinBy) {
				r.joinBy, r.joinWithin = by, within
				r.timer.Reset(within)
			}
		}
		return ""
	}
	r.timer.Stop()
	r.procs = slices.Clone(r.members)
	slices.SortFunc(r.procs, func(a, b *member) int { return slices.Min(a.info.Ranks) - slices.Min(b.info.Ranks) })
	infos := make([]ProcInfo, len(r.procs))
	self, ours := r.self, 0
	for i, p := range r.procs {
		p.index = i
		infos[i] = p.info
		if p.process == thisProcess {
			self.index, ours = i, ours+1
		}
	}
	if ours > 1 {
		self.index = -1 // several joins from this process (tests): none is the root's own
	}
	for i, p := range r.procs {
		r.wg.Add(1)
		go func() { // not under mu: a slow reader must not hold up the root
			defer r.wg.Done()
			p.send(frameTable, encodeTable(i, self, infos))
		}()
	}
	if limit := heartbeatLimit(r.procs); limit > 0 {
		r.wg.Add(1)
		go r.heartbeat(slices.Clone(r.procs), limit)
	}
	return ""
}

// heartbeatLimit is the smallest silence the processes tolerate (0: none
// asked for one).
func heartbeatLimit(ms []*member) time.Duration {
	var limit time.Duration
	for _, m := range ms {
		if m.heartbeat > 0 && (limit == 0 || m.heartbeat < limit) {
			limit = m.heartbeat
		}
	}
	return limit
}

// heartbeat pings every process each limit/4 and fails the job, naming
// the process, when one was silent for limit: a host cut off or stopped
// says nothing, and TCP alone would not notice for minutes. It stops when
// the job ends.
func (r *Root) heartbeat(ms []*member, limit time.Duration) {
	defer r.wg.Done()
	tick := time.NewTicker(limit / 4)
	defer tick.Stop()
	for {
		select {
		case <-r.left:
			return
		case <-r.stop:
			return
		case <-tick.C:
		}
		now := time.Now()
		for _, m := range ms {
			r.mu.Lock()
			quiet := m.bye || m.gone
			r.mu.Unlock()
			if quiet {
				continue
			}
			if silent := now.Sub(time.Unix(0, m.heard.Load())); silent > limit {
				r.fail(fmt.Sprintf("lost the %v: no answer for %v (its host unreachable, or the process stopped)", m.info, silent.Round(time.Millisecond)))
				return
			}
			go m.ping(limit / 4)
		}
	}
}

// ping sends m a ping, giving up after d (a full socket buffer on a dead
// link must not hold the heartbeat).
func (m *member) ping(d time.Duration) {
	if !m.wmu.TryLock() {
		return // a write is under way: the link is busy, not silent
	}
	defer m.wmu.Unlock()
	_ = m.conn.SetWriteDeadline(time.Now().Add(d))
	_ = writeFrame(m.conn, framePing, nil)
}

func pidOf(o, m *member) int {
	if o != nil {
		return o.info.Pid
	}
	return m.info.Pid
}

// joinTimedOut fails a job whose ranks did not all join in time.
func (r *Root) joinTimedOut() {
	r.mu.Lock()
	if r.procs != nil || r.closed {
		r.mu.Unlock()
		return
	}
	var missing []int
	for rk := 0; rk < max(r.nranks, 1); rk++ {
		if r.claimed[rk] == nil {
			missing = append(missing, rk)
		}
	}
	reason := fmt.Sprintf("rank%s %s never joined within %v", plural(len(missing)), joinInts(missing), r.joinWithin)
	if r.nranks == 0 {
		reason = fmt.Sprintf("no process joined within %v", r.joinWithin)
	}
	r.failed = reason
	members := slices.Clone(r.members)
	r.mu.Unlock()
	for _, m := range members {
		m.send(frameRefuse, encodeStr(reason))
		m.conn.Close()
	}
	r.mu.Lock()
	r.told = true
	r.checkLeft()
	r.mu.Unlock()
}

// contribute adds a process's part of a collective; the last part
// completes it.
func (r *Root) contribute(m *member, c coll) {
	r.mu.Lock()
	if r.failed != "" || r.procs == nil {
		r.mu.Unlock()
		return
	}
	g := r.pending[c.seq]
	if g == nil {
		g = &gather{kind: c.kind, root: c.root, op: c.op, parts: make([][]byte, len(r.procs))}
		r.pending[c.seq] = g
	}
	if g.kind != c.kind || g.root != c.root || g.op != c.op || g.parts[m.index] != nil {
		r.mu.Unlock()
		r.fail(fmt.Sprintf("collective %d: %v called %s (root %d, op %d) where another process called %s (root %d, op %d)",
			c.seq, m.info, collNames[c.kind], c.root, c.op, collNames[g.kind], g.root, g.op))
		return
	}
	g.parts[m.index] = append(c.data, 0)[:len(c.data)] // non-nil even when empty
	g.n++
	if g.n < len(r.procs) {
		r.mu.Unlock()
		return
	}
	delete(r.pending, c.seq)
	procs := r.procs
	r.mu.Unlock()
	res, err := complete(g)
	if err != "" {
		r.fail(fmt.Sprintf("collective %d (%s): %s", c.seq, collNames[g.kind], err))
		return
	}
	msg := encodeResult(c.seq, res)
	for _, p := range procs {
		p.send(frameResult, msg)
	}
}

// complete computes a collective's result from every process's part, in
// process order (so every process gets bit-identical floats).
func complete(g *gather) ([][]byte, string) {
	switch g.kind {
	case collBarrier:
		return nil, ""
	case collAllGather:
		return g.parts, ""
	case collBroadcast:
		if g.root < 0 || g.root >= len(g.parts) {
			return nil, fmt.Sprintf("root %d out of range 0..%d", g.root, len(g.parts)-1)
		}
		return [][]byte{g.parts[g.root]}, ""
	default:
		acc := slices.Clone(g.parts[0])
		for i, p := range g.parts[1:] {
			if len(p) != len(acc) {
				return nil, fmt.Sprintf("process %d gave %d values, process 0 %d", i+1, len(p)/8, len(acc)/8)
			}
			if g.kind == collAllReduceF64 {
				reduceF64(acc, p, g.op)
			} else {
				reduceI64(acc, p, g.op)
			}
		}
		return [][]byte{acc}, ""
	}
}

// disconnected handles a connection that ended: expected after goodbye,
// the job lost otherwise.
func (r *Root) disconnected(m *member, err error) {
	r.mu.Lock()
	m.gone = true
	// A root closing ends every connection itself: that loses no process.
	bye, failed, closed := m.bye, r.failed != "", r.closed
	r.checkLeft()
	r.mu.Unlock()
	m.conn.Close()
	if !bye && !failed && !closed {
		why := "connection closed"
		if err != io.EOF {
			why = err.Error()
		}
		r.fail(fmt.Sprintf("lost the %v: %s", m.info, why))
	}
}

// fail marks the job failed and tells every process still connected.
func (r *Root) fail(reason string) {
	r.mu.Lock()
	if r.failed != "" {
		r.mu.Unlock()
		return
	}
	r.failed = reason
	members := slices.Clone(r.members)
	r.mu.Unlock()
	// The root's own process last: told, it may exit at once, taking the
	// root with it before the others heard why.
	self := os.Getpid()
	slices.SortStableFunc(members, func(a, b *member) int {
		return cmp.Compare(boolInt(a.info.Pid == self), boolInt(b.info.Pid == self))
	})
	msg := encodeStr(reason)
	for _, m := range members {
		m.send(frameLost, msg)
	}
	// Only now may Wait return: the root's process exits after it, and a
	// process that saw its connection close before the reason arrived
	// would report the root lost instead of the rank that was (seen in
	// CI: a survivor of a killed rank 1 named rank 0's process).
	r.mu.Lock()
	r.told = true
	r.checkLeft()
	r.mu.Unlock()
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

// checkLeft closes left once every process said goodbye or is gone, or
// the job failed and every process was told why. Called with mu held.
func (r *Root) checkLeft() {
	select {
	case <-r.left:
		return
	default:
	}
	if r.failed != "" {
		if r.told {
			close(r.left)
		}
		return
	}
	if r.procs == nil {
		return
	}
	for _, m := range r.procs {
		if !m.bye && !m.gone {
			return
		}
	}
	close(r.left)
}

// Wait waits up to timeout until every process said goodbye or the job
// failed, and reports whether they did.
func (r *Root) Wait(timeout time.Duration) bool {
	select {
	case <-r.left:
		return true
	case <-time.After(timeout):
		return false
	}
}

// Close stops the root: the listener, every connection and their
// goroutines.
func (r *Root) Close() error {
	r.mu.Lock()
	if r.closed {
		r.mu.Unlock()
		return nil
	}
	r.closed = true
	close(r.stop)
	r.timer.Stop()
	members := slices.Clone(r.members)
	r.mu.Unlock()
	err := r.ln.Close()
	r.unauth.CloseAll()
	for _, m := range members {
		m.conn.Close()
	}
	r.wg.Wait()
	r.refusals.Close()
	return err
}

func plural(n int) string {
	if n == 1 {
		return ""
	}
	return "s"
}

func joinInts(v []int) string {
	s := make([]string, len(v))
	for i, x := range v {
		s[i] = fmt.Sprint(x)
	}
	return strings.Join(s, ", ")
}
