// root.go: the root of a job's bootstrap: its options and state, the accept
// loop, a connection's serve loop, and Wait and Close. The handshake is in
// root_handshake.go, membership and heartbeat in root_members.go, the
// collectives it relays in root_gather.go.

package bootstrap

import (
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
		case frameClock:
			if err := m.answerClock(p); err != nil {
				r.fail(fmt.Sprintf("%v sent a malformed clock request: %v", m.info, err))
			}
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
