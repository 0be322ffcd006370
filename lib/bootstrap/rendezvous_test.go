package bootstrap

import (
	"bytes"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gccl/gccl/internal/syncbuf"
)

var testToken = [tokenBytes]byte{1, 2, 3}

// lockedBuf is a log a root writes from its goroutines.
type lockedBuf = syncbuf.Buffer

func newRoot(t *testing.T, timeout time.Duration) (*Root, *lockedBuf) {
	t.Helper()
	log := new(lockedBuf)
	r, err := ServeRoot("127.0.0.1:0", testToken, RootOptions{Timeout: timeout, Log: log})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	return r, log
}

// joinAll joins one client per entry of procs (each the ranks of a
// process) concurrently and returns them in the same order.
func joinAll(t *testing.T, r *Root, nranks int, procs [][]int, timeout time.Duration) ([]*Client, []error) {
	t.Helper()
	cs := make([]*Client, len(procs))
	errs := make([]error, len(procs))
	var wg sync.WaitGroup
	for i, ranks := range procs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			cs[i], errs[i] = Join(r.Addr(), testToken, nranks, ranks,
				ProcInfo{Host: "h", HostID: "h/1", Pid: 1000 + i, Blob: []byte(fmt.Sprint("blob", i))}, JoinOptions{Timeout: timeout})
		}()
	}
	wg.Wait()
	return cs, errs
}

func closeAll(cs []*Client) {
	for _, c := range cs {
		if c != nil {
			c.Close()
		}
	}
}

// each runs f on every client concurrently and returns the errors.
func each(cs []*Client, f func(i int, c *Client) error) []error {
	errs := make([]error, len(cs))
	var wg sync.WaitGroup
	for i, c := range cs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = f(i, c)
		}()
	}
	wg.Wait()
	return errs
}

func noErr(t *testing.T, what string, errs []error) {
	t.Helper()
	for i, err := range errs {
		if err != nil {
			t.Fatalf("%s: process %d: %v", what, i, err)
		}
	}
}

// TestCollectives: 1 to 4 processes, one of them holding several ranks,
// every collective against its exact result.
func TestCollectives(t *testing.T) {
	layouts := [][][]int{{{0}}, {{1}, {0}}, {{2}, {0}, {1}}, {{0, 1}, {2}, {3}}, {{3}, {2}, {1}, {0}}}
	for _, layout := range layouts {
		t.Run(fmt.Sprint(layout), func(t *testing.T) {
			nranks := 0
			for _, p := range layout {
				nranks += len(p)
			}
			r, _ := newRoot(t, 10*time.Second)
			cs, errs := joinAll(t, r, nranks, layout, 10*time.Second)
			noErr(t, "join", errs)
			defer closeAll(cs)
			n := len(layout)
			// Process indexes follow each process's lowest rank.
			for _, c := range cs {
				if c.NProcs() != n || c.NRanks() != nranks {
					t.Fatalf("NProcs %d NRanks %d, want %d %d", c.NProcs(), c.NRanks(), n, nranks)
				}
				for i, p := range c.Procs() {
					if i > 0 && p.Ranks[0] < c.Procs()[i-1].Ranks[0] {
						t.Fatalf("processes not ordered by rank: %v", c.Procs())
					}
				}
				me := c.Procs()[c.Index()]
				if string(me.Blob) != "blob"+strconv.Itoa(me.Pid-1000) {
					t.Fatalf("process %d sees itself as %+v", c.Index(), me)
				}
			}
			noErr(t, "barrier", each(cs, func(i int, c *Client) error { return c.Barrier() }))
			noErr(t, "allgather", each(cs, func(i int, c *Client) error {
				got, err := c.AllGather([]byte{byte(c.Index()), 7})
				if err != nil {
					return err
				}
				for k, b := range got {
					if !bytes.Equal(b, []byte{byte(k), 7}) {
						return fmt.Errorf("part %d = %v", k, b)
					}
				}
				return nil
			}))
			noErr(t, "broadcast", each(cs, func(i int, c *Client) error {
				got, err := c.Broadcast(n-1, []byte("from "+strconv.Itoa(c.Index())))
				if err == nil && string(got) != "from "+strconv.Itoa(n-1) {
					err = fmt.Errorf("got %q", got)
				}
				return err
			}))
			noErr(t, "allreduce", each(cs, func(i int, c *Client) error {
				x := float64(c.Index())
				// Exact in any order: halves and small integers.
				for _, tc := range []struct {
					op   ReduceOp
					want float64
				}{{Sum, float64(n*(n-1))/2 + 0.5*float64(n)}, {Max, float64(n-1) + 0.5}, {Min, 0.5}} {
					v := []float64{x + 0.5, -(x + 0.5)}
					if err := c.AllReduceFloat64(v, tc.op); err != nil {
						return err
					}
					if v[0] != tc.want {
						return fmt.Errorf("op %d: %v, want %v", tc.op, v[0], tc.want)
					}
				}
				iv := []int64{int64(c.Index()) + 1, 1 << 40}
				if err := c.AllReduceInt64(iv, Sum); err != nil {
					return err
				}
				if iv[0] != int64(n*(n+1)/2) || iv[1] != int64(n)<<40 {
					return fmt.Errorf("int sums %v", iv)
				}
				return nil
			}))
		})
	}
}

func TestWrongTokenAndGarbageRefused(t *testing.T) {
	r, log := newRoot(t, 10*time.Second)
	// A stranger with the wrong token, others sending garbage or an older
	// version's hello, while the job's two processes join.
	var wrong [tokenBytes]byte
	_, err := Join(r.Addr(), wrong, 2, []int{0}, ProcInfo{Pid: 66}, JoinOptions{Timeout: time.Second})
	if err == nil || !strings.Contains(err.Error(), "not this job's bootstrap root (it could not prove the job token)") {
		t.Fatalf("a wrong token: %v; want the root named as not this job's", err)
	}
	// The stranger hears of its refusal before the root logs it: wait for
	// the root's count (taken with the log line, under one lock), so that
	// the stranger's is the interval's first refusal, logged in full, and
	// the garbage below lands in the rate limit's summary.
	waitCounts(t, r, map[string]int{reasonAuth: 1})
	send := func(b []byte) {
		c, err := net.Dial("tcp", r.Addr())
		if err != nil {
			t.Fatal(err)
		}
		c.Write(b)
		c.Close()
	}
	send([]byte{0xff, 0xff, 0xff, 0x7f, 1, 2, 3})
	var short bytes.Buffer
	writeFrame(&short, frameOpen, []byte(wireMagic+" but short"))
	send(short.Bytes())
	var old bytes.Buffer // gccl-bs2's hello: magic, the token, ranks, a blob
	writeFrame(&old, frameOpen, append([]byte("gccl-bs2"), make([]byte, 4<<10)...))
	send(old.Bytes())
	cs, errs := joinAll(t, r, 2, [][]int{{0}, {1}}, 5*time.Second)
	noErr(t, "join", errs)
	defer closeAll(cs)
	noErr(t, "barrier", each(cs, func(i int, c *Client) error { return c.Barrier() }))
	want := map[string]int{reasonAuth: 1, reasonNotGCCL: 2, reasonVersion: 1}
	waitCounts(t, r, want)
	r.Close() // logs what the rate limit held back
	if !strings.Contains(log.String(), "failed authentication (it holds another job's token") {
		t.Errorf("the root's log does not say why the stranger was refused:\n%s", log.String())
	}
	// Every refusal is in the log once: on a line of its own (the first of
	// an interval) or counted in the rate limit's summary, whichever the
	// order of arrival made it.
	for reason, n := range want {
		if got := loggedRefusals(log.String(), reason); got != n {
			t.Errorf("the root's log tells of %d refusals for %q, want %d:\n%s", got, reason, n, log.String())
		}
	}
}

// loggedRefusals counts the refusals for reason in a root's log: lines
// "refused a connection from ADDR: REASON ..." and summaries "refused N
// connections ... (K REASON, ...)".
func loggedRefusals(log, reason string) int {
	one := regexp.MustCompile(`refused a connection from \S+: ` + regexp.QuoteMeta(reason))
	many := regexp.MustCompile(`(\d+) ` + regexp.QuoteMeta(reason) + `[,;)]`)
	n := len(one.FindAllString(log, -1))
	for _, line := range strings.Split(log, "\n") {
		if !strings.Contains(line, "connections in the last") {
			continue
		}
		for _, m := range many.FindAllStringSubmatch(line, -1) {
			k, _ := strconv.Atoi(m[1])
			n += k
		}
	}
	return n
}

// waitCounts waits up to 5 s until the root counted at least want of
// each reason of refusal, and fails the test if it did not.
func waitCounts(t *testing.T, r *Root, want map[string]int) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		got := r.refusals.Counts()
		ok := true
		for k, n := range want {
			ok = ok && got[k] >= n
		}
		if ok {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("refusals counted %v, want at least %v", got, want)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func TestSilentConnectionDropped(t *testing.T) {
	r, log := newRoot(t, 300*time.Millisecond) // the hello deadline is min(10 s, timeout)
	c, err := net.Dial("tcp", r.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetReadDeadline(time.Now().Add(5 * time.Second))
	if _, err := c.Read(make([]byte, 1)); err == nil {
		t.Fatal("the root kept a connection that never said hello")
	}
	// The root closes the connection, then logs the refusal.
	logged := func() bool {
		return strings.Contains(log.String(), "refused a connection from") && strings.Contains(log.String(), "no hello within 300ms")
	}
	for deadline := time.Now().Add(5 * time.Second); !logged() && time.Now().Before(deadline); {
		time.Sleep(time.Millisecond)
	}
	if !logged() {
		t.Errorf("not logged as a connection with no hello: %q", log.String())
	}
}

// A rank that never joins is named to every process, by the root's
// timeout or, where the processes' own is shorter, by theirs: every
// process hears which rank never came and none gives up first (seen in
// CI: one did, and the job failed naming it).
func TestNeverJoins(t *testing.T) {
	for _, c := range []struct {
		root, proc, within time.Duration
		want               string
	}{
		{300 * time.Millisecond, 5 * time.Second, 3 * time.Second, "rank 1 never joined"},
		{time.Minute, 400 * time.Millisecond, 5 * time.Second, "rank 1 never joined within 400ms"},
	} {
		r, _ := newRoot(t, c.root)
		start := time.Now()
		cs, errs := joinAll(t, r, 3, [][]int{{0}, {2}}, c.proc)
		for i, err := range errs {
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("root %v, processes %v: process %d: %v, want %q", c.root, c.proc, i, err, c.want)
			}
		}
		if d := time.Since(start); d > c.within {
			t.Errorf("root %v, processes %v: took %v, want at most %v", c.root, c.proc, d, c.within)
		}
		closeAll(cs)
	}
}

func TestRefusals(t *testing.T) {
	r, _ := newRoot(t, 2*time.Second)
	a, errA := make(chan *Client, 1), make(chan error, 1)
	go func() {
		c, err := Join(r.Addr(), testToken, 3, []int{0, 1}, ProcInfo{Pid: 1}, JoinOptions{Timeout: 2 * time.Second})
		a <- c
		errA <- err
	}()
	time.Sleep(50 * time.Millisecond)
	_, err := Join(r.Addr(), testToken, 3, []int{1}, ProcInfo{Pid: 2}, JoinOptions{Timeout: time.Second})
	if err == nil || !strings.Contains(err.Error(), "rank 1 is claimed twice") {
		t.Errorf("a rank claimed twice: %v", err)
	}
	_, err = Join(r.Addr(), testToken, 4, []int{2}, ProcInfo{Pid: 3}, JoinOptions{Timeout: time.Second})
	if err == nil || !strings.Contains(err.Error(), "says 4 ranks, the job 3") {
		t.Errorf("a different rank count: %v", err)
	}
	c, err := Join(r.Addr(), testToken, 3, []int{2}, ProcInfo{Pid: 4}, JoinOptions{Timeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if c0 := <-a; c0 != nil {
		defer c0.Close()
	}
	if err := <-errA; err != nil {
		t.Fatal(err)
	}
	if _, err := Join(r.Addr(), testToken, 5, []int{7}, ProcInfo{}, JoinOptions{Timeout: time.Second}); err == nil {
		t.Error("rank 7 of 5 accepted")
	}
}

// TestLostProcess: a process whose connection ends without goodbye makes
// every other process's Lost fire at once, naming it; a collective waiting
// for it fails then, not at the timeout.
func TestLostProcess(t *testing.T) {
	r, _ := newRoot(t, 30*time.Second)
	cs, errs := joinAll(t, r, 3, [][]int{{0}, {1}, {2}}, 30*time.Second)
	noErr(t, "join", errs)
	defer closeAll(cs[:2])
	var got error
	var mu sync.Mutex
	cs[0].OnLost(func(err error) { mu.Lock(); got = err; mu.Unlock() })
	start := time.Now()
	barrier := make(chan error, 1)
	go func() { barrier <- cs[1].Barrier() }()
	time.Sleep(20 * time.Millisecond)
	cs[2].conn.Close() // dies: no goodbye
	select {
	case err := <-barrier:
		if !errors.Is(err, ErrLost) || !strings.Contains(err.Error(), "rank 2 (host h, pid 1002)") {
			t.Errorf("barrier: %v, want the loss of rank 2 named", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the barrier waited on for a lost process")
	}
	<-cs[0].Lost()
	if d := time.Since(start); d > 3*time.Second {
		t.Errorf("loss seen after %v", d)
	}
	if !strings.Contains(cs[0].LostErr().Error(), "connection closed") {
		t.Errorf("LostErr: %v", cs[0].LostErr())
	}
	deadline := time.Now().Add(2 * time.Second)
	for {
		mu.Lock()
		g := got
		mu.Unlock()
		if g != nil || time.Now().After(deadline) {
			if g == nil {
				t.Error("OnLost callback not run")
			}
			break
		}
		time.Sleep(5 * time.Millisecond)
	}
	if err := cs[0].Barrier(); !errors.Is(err, ErrLost) {
		t.Errorf("a collective after the loss: %v", err)
	}
}

func TestAbortPropagates(t *testing.T) {
	r, _ := newRoot(t, 30*time.Second)
	cs, errs := joinAll(t, r, 2, [][]int{{0}, {1}}, 30*time.Second)
	noErr(t, "join", errs)
	defer closeAll(cs)
	cs[1].Abort(errors.New("disk on fire"))
	select {
	case <-cs[0].Lost():
	case <-time.After(5 * time.Second):
		t.Fatal("abort not propagated")
	}
	if err := cs[0].LostErr(); !strings.Contains(err.Error(), "disk on fire") || !strings.Contains(err.Error(), "pid 1001") {
		t.Errorf("LostErr %v", err)
	}
}

func TestRootGone(t *testing.T) {
	r, _ := newRoot(t, 30*time.Second)
	cs, errs := joinAll(t, r, 2, [][]int{{0}, {1}}, 30*time.Second)
	noErr(t, "join", errs)
	defer closeAll(cs)
	r.Close()
	for _, c := range cs {
		select {
		case <-c.Lost():
		case <-time.After(5 * time.Second):
			t.Fatal("the root's end went unnoticed")
		}
		if err := c.LostErr(); !strings.Contains(err.Error(), r.Addr()) {
			t.Errorf("LostErr %v does not name the root", err)
		}
	}
}

// TestNoLeaks: goroutines come back to where they were after a job's
// root and clients close, and the root's Wait sees every goodbye.
func TestNoLeaks(t *testing.T) {
	before := runtime.NumGoroutine()
	r, err := ServeRoot("127.0.0.1:0", testToken, RootOptions{Timeout: 10 * time.Second, Log: new(lockedBuf)})
	if err != nil {
		t.Fatal(err)
	}
	cs, errs := joinAll(t, r, 3, [][]int{{0}, {1, 2}}, 10*time.Second)
	noErr(t, "join", errs)
	noErr(t, "barrier", each(cs, func(i int, c *Client) error { return c.Barrier() }))
	closeAll(cs)
	if !r.Wait(5 * time.Second) {
		t.Error("Wait: not every process said goodbye")
	}
	r.Close()
	deadline := time.Now().Add(5 * time.Second)
	for runtime.NumGoroutine() > before && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if n := runtime.NumGoroutine(); n > before {
		buf := make([]byte, 1<<16)
		t.Errorf("%d goroutines, %d before:\n%s", n, before, buf[:runtime.Stack(buf, true)])
	}
}

// TestKilledChildProcess: a real process (this test binary) joins and is
// killed with SIGKILL; the other process sees the loss, naming its pid.
func TestKilledChildProcess(t *testing.T) {
	if os.Getenv("BOOTSTRAP_CHILD_ADDR") != "" {
		return
	}
	r, _ := newRoot(t, 30*time.Second)
	cmd := exec.Command(os.Args[0], "-test.run=^TestHelperClient$")
	cmd.Env = append(os.Environ(), "BOOTSTRAP_CHILD_ADDR="+r.Addr())
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	c, err := Join(r.Addr(), testToken, 2, []int{0}, ProcInfo{Host: "h", Pid: os.Getpid()}, JoinOptions{Timeout: 30 * time.Second})
	if err != nil {
		cmd.Process.Kill()
		cmd.Wait()
		t.Fatal(err)
	}
	defer c.Close()
	if err := c.Barrier(); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	cmd.Process.Kill()
	cmd.Wait()
	select {
	case <-c.Lost():
	case <-time.After(5 * time.Second):
		t.Fatal("the killed process went unnoticed")
	}
	if d := time.Since(start); d > 2*time.Second {
		t.Errorf("noticed after %v", d)
	}
	if !strings.Contains(c.LostErr().Error(), "pid "+strconv.Itoa(cmd.Process.Pid)) {
		t.Errorf("LostErr %v does not name pid %d", c.LostErr(), cmd.Process.Pid)
	}
}

func TestHelperClient(t *testing.T) {
	addr := os.Getenv("BOOTSTRAP_CHILD_ADDR")
	if addr == "" {
		t.Skip("the child of TestKilledChildProcess")
	}
	c, err := Join(addr, testToken, 2, []int{1}, ProcInfo{Host: "h", Pid: os.Getpid()}, JoinOptions{Timeout: 30 * time.Second})
	if err != nil {
		os.Exit(2)
	}
	c.Barrier()
	time.Sleep(time.Minute) // until killed
}

// FuzzDecode: no input makes a decoder panic.
func FuzzDecode(f *testing.F) {
	f.Add(hello{nranks: 4, info: ProcInfo{Ranks: []int{1, 2}, Host: "h", HostID: "x", Pid: 9, Blob: []byte("b")}}.encode())
	f.Add(open{nonce: [32]byte{1}}.encode())
	f.Add(challenge{nonce: [32]byte{1}, proof: [32]byte{2}}.encode())
	f.Add([]byte("gccl-bs2 and the rest"))
	f.Add(encodeTable(0, rootProc{"h", 1, 0}, []ProcInfo{{Ranks: []int{0}, Host: "h"}}))
	f.Add(coll{seq: 3, kind: collAllGather, data: []byte{1}}.encode())
	f.Add(encodeResult(3, [][]byte{{1}, {}}))
	f.Add([]byte{0xff, 0xff, 0xff, 0xff})
	f.Fuzz(func(t *testing.T, b []byte) {
		if h, err := decodeHello(b); err == nil {
			if h2, err := decodeHello(h.encode()); err != nil || h2.nranks != h.nranks || len(h2.info.Ranks) != len(h.info.Ranks) {
				t.Fatalf("hello round trip: %v", err)
			}
		}
		decodeTable(b)
		decodeColl(b)
		decodeResult(b)
		decodeStr(b)
		if o, err := decodeOpen(b); err == nil {
			if o2, err := decodeOpen(o.encode()); err != nil || o2 != o {
				t.Fatalf("open round trip: %v", err)
			}
		}
		if c, err := decodeChallenge(b); err == nil {
			if c2, err := decodeChallenge(c.encode()); err != nil || c2 != c {
				t.Fatalf("challenge round trip: %v", err)
			}
		}
		readFrame(bytes.NewReader(b), maxFrame)
		readFrame(bytes.NewReader(b), preAuthFrame)
	})
}

// A process that stops answering (its host cut off: no FIN, no RST) fails
// the job within its heartbeat and a ping's period, and the others hear
// which process it was; one that keeps answering, however idle, does not.
func TestHeartbeatLosesASilentProcess(t *testing.T) {
	r, _ := newRoot(t, 10*time.Second)
	const timeout = 800 * time.Millisecond // heartbeat 400 ms
	joined := make(chan *Client, 1)
	go func() {
		c, err := Join(r.Addr(), testToken, 2, []int{0}, ProcInfo{Host: "alive", Pid: 1}, JoinOptions{Timeout: timeout})
		if err != nil {
			t.Error(err)
		}
		joined <- c
	}()
	// Rank 1 joins by hand and then never reads or writes again.
	silent, err := net.Dial("tcp", r.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer silent.Close()
	if err := authenticate(silent, r.Addr(), testToken, time.Now().Add(5*time.Second)); err != nil {
		t.Fatal(err)
	}
	h := hello{nranks: 2, info: ProcInfo{Ranks: []int{1}, Host: "cutoff", Pid: 2}, heartbeat: timeout / 2}
	if err := writeFrame(silent, frameHello, h.encode()); err != nil {
		t.Fatal(err)
	}
	if typ, _, err := readFrame(silent, maxFrame); err != nil || typ != frameTable {
		t.Fatalf("no table: type %d, %v", typ, err)
	}
	alive := <-joined
	if alive == nil {
		t.FailNow()
	}
	defer alive.Close()
	start := time.Now()
	select {
	case <-alive.Lost():
	case <-time.After(5 * time.Second):
		t.Fatal("the job was not failed 5 s after a process fell silent")
	}
	took := time.Since(start)
	err = alive.LostErr()
	if !errors.Is(err, ErrLost) || !strings.Contains(err.Error(), "rank 1") || !strings.Contains(err.Error(), "cutoff") || !strings.Contains(err.Error(), "no answer") {
		t.Errorf("error %v: want the lost job naming rank 1 on host cutoff, silent", err)
	}
	if took > timeout {
		t.Errorf("the silent process was found after %v, want within the heartbeat (%v) and a ping's period", took, timeout/2)
	}
}

// A root that falls silent (the link to it cut) is lost to each process
// within its heartbeat, with an error that says so.
func TestHeartbeatLosesASilentRoot(t *testing.T) {
	addr := fakeRoot(t, func(c net.Conn) { // the table, and never another word
		writeFrame(c, frameTable, encodeTable(0, rootProc{host: "roothost", pid: 9, index: -1}, []ProcInfo{{Ranks: []int{0}, Host: "me", Pid: 1}}))
		time.Sleep(10 * time.Second)
	})
	c, err := Join(addr, testToken, 1, []int{0}, ProcInfo{Host: "me", Pid: 1}, JoinOptions{Timeout: 600 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	select {
	case <-c.Lost():
	case <-time.After(5 * time.Second):
		t.Fatal("a silent root was not noticed in 5 s")
	}
	if err := c.LostErr(); !strings.Contains(err.Error(), "no heartbeat") || !strings.Contains(err.Error(), "roothost") {
		t.Errorf("error %v: want the root on roothost named, silent", err)
	}
}

// A job that fails before a process got its table (another process got
// its own first and aborted) fails that process's Join with the reason,
// not a complaint about the message's type (seen in CI: GCCL_NSOCKS
// disagreed, and a process learnt it as "a message of type 7").
func TestJoinLearnsOfAnEarlyFailure(t *testing.T) {
	addr := fakeRoot(t, func(c net.Conn) { // the job failed before this process's table
		writeFrame(c, frameLost, encodeStr("the process of rank 1 aborted: GCCL_NSOCKS differs"))
	})
	_, err := Join(addr, testToken, 2, []int{0}, ProcInfo{Host: "me", Pid: 1}, JoinOptions{Timeout: 5 * time.Second})
	if !errors.Is(err, ErrLost) || !strings.Contains(fmt.Sprint(err), "GCCL_NSOCKS differs") {
		t.Fatalf("Join: %v; want ErrLost with the root's reason", err)
	}
}

// Processes that answer their pings stay in the job however long it is
// idle: many heartbeats pass without a collective.
func TestHeartbeatKeepsAnIdleJob(t *testing.T) {
	r, _ := newRoot(t, 10*time.Second)
	cs, errs := joinAll(t, r, 2, [][]int{{0}, {1}}, 400*time.Millisecond) // heartbeat 200 ms
	noErr(t, "join", errs)
	defer closeAll(cs)
	time.Sleep(time.Second)
	for i, c := range cs {
		if err := c.LostErr(); err != nil {
			t.Errorf("client %d lost while idle: %v", i, err)
		}
	}
	noErr(t, "barrier", each(cs, func(i int, c *Client) error { return c.Barrier() }))
}

// fakeRoot listens on loopback for one process, authenticates it with
// testToken, reads its hello and hands the connection to answer; it
// returns the address.
func fakeRoot(t *testing.T, answer func(c net.Conn)) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		defer c.Close()
		if reason, detail := (&Root{token: testToken}).authenticate(c, 5*time.Second); reason != "" {
			t.Errorf("fakeRoot: %s (%s)", reason, detail)
			return
		}
		if typ, _, err := readFrame(c, maxFrame); err != nil || typ != frameHello {
			t.Errorf("fakeRoot: a frame of type %d where the hello belongs: %v", typ, err)
			return
		}
		answer(c)
	}()
	return ln.Addr().String()
}

// A process that loses the root names it as its caller named it (a
// process may be in two jobs, each with a root) and says which ranks' process
// it ran in, found by the process's number and not by host and pid (which
// --hosts makes differ from the root's own hostname).
func TestLostRootNamesItsProcess(t *testing.T) {
	r, _ := newRoot(t, 10*time.Second)
	joined := make(chan *Client, 1)
	go func() {
		// This process: the one the root runs in.
		c, err := Join(r.Addr(), testToken, 2, []int{0}, ProcInfo{Host: "host0 on vm", Pid: 7}, JoinOptions{Timeout: 5 * time.Second, Name: "the communicator's"})
		if err != nil {
			t.Error(err)
		}
		joined <- c
	}()
	other, err := net.Dial("tcp", r.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	if err := authenticate(other, r.Addr(), testToken, time.Now().Add(5*time.Second)); err != nil {
		t.Fatal(err)
	}
	h := hello{nranks: 2, info: ProcInfo{Ranks: []int{1}, Host: "host1 on vm", Pid: 8}, process: thisProcess + 2}
	if err := writeFrame(other, frameHello, h.encode()); err != nil {
		t.Fatal(err)
	}
	typ, p, err := readFrame(other, maxFrame)
	if err != nil || typ != frameTable {
		t.Fatalf("no table: type %d, %v", typ, err)
	}
	if _, root, _, err := decodeTable(p); err != nil || root.index != 0 {
		t.Errorf("the table names process %d as the root's (%v), want 0", root.index, err)
	}
	c := <-joined
	if c == nil {
		t.FailNow()
	}
	defer c.Close()
	r.Close()
	select {
	case <-c.Lost():
	case <-time.After(5 * time.Second):
		t.Fatal("a closed root was not noticed in 5 s")
	}
	want := "lost the communicator's bootstrap root at " + r.Addr() + " (in the process of rank 0 (host host0 on vm, pid 7))"
	if err := c.LostErr(); !strings.Contains(err.Error(), want) {
		t.Errorf("error %v: want %q", err, want)
	}
}
