package bootstrap

import (
	"bytes"
	"encoding/binary"
	"encoding/hex"
	"io"
	"net"
	"os"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gccl/gccl/internal/syncbuf"
)

// recorder keeps what connections sent it.
type recorder = syncbuf.Buffer

// listen is a loopback listener closed with the test.
func listen(t *testing.T) net.Listener {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	return ln
}

// squat serves ln as a program squatting a root's port would, as far as
// it can go: it answers each open with a challenge in the root's format
// (its proof made up) and records everything a process sends it; done
// hears of each connection's end.
func squat(ln net.Listener, rec *recorder, done chan<- struct{}) {
	for {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		go func() {
			defer func() { done <- struct{}{} }()
			defer c.Close()
			_ = c.SetDeadline(time.Now().Add(10 * time.Second))
			in := io.TeeReader(c, rec)
			if typ, _, err := readFrame(in, preAuthFrame); err != nil || typ != frameOpen {
				return
			}
			writeFrame(c, frameChallenge, challenge{nonce: [32]byte{9}, proof: [32]byte{7}}.encode())
			io.Copy(io.Discard, in) // until the process hangs up
		}()
	}
}

// relay serves ln as a wire tap would: each connection goes on to addr,
// and what the processes send is recorded; done hears of each
// connection's end.
func relay(ln net.Listener, addr string, rec *recorder, done chan<- struct{}) {
	for {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		go func() {
			defer func() { done <- struct{}{} }()
			defer c.Close()
			up, err := net.Dial("tcp", addr)
			if err != nil {
				return
			}
			defer up.Close()
			go io.Copy(c, up)
			io.Copy(up, io.TeeReader(c, rec))
		}()
	}
}

func waitDone(t *testing.T, done <-chan struct{}) {
	t.Helper()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("the recorded connection did not end")
	}
}

// noSecret fails the test if b holds the job's token, or the secret it
// came from, in any form a process has it.
func noSecret(t *testing.T, b []byte, secret string, token [tokenBytes]byte) {
	t.Helper()
	if len(b) == 0 {
		t.Fatal("nothing recorded")
	}
	for what, s := range map[string][]byte{"the secret": []byte(secret), "the token": token[:],
		"the token in hex": []byte(hex.EncodeToString(token[:])), "half the token": token[:16]} {
		if bytes.Contains(b, s) {
			t.Errorf("the %d bytes sent hold %s", len(b), what)
		}
	}
}

// replay sends b to the root at addr as a new connection and reads what
// comes back until the root hangs up; it fails the test if the root
// admitted the connection (a table, a refusal of a joined process).
func replay(t *testing.T, addr string, b []byte) {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(5 * time.Second))
	if _, err := c.Write(b); err != nil {
		t.Fatal(err)
	}
	for {
		typ, _, err := readFrame(c, maxFrame)
		if err != nil {
			if ne, ok := err.(net.Error); ok && ne.Timeout() {
				t.Fatal("the root kept a replayed connection open")
			}
			return
		}
		if typ != frameChallenge {
			t.Fatalf("the root answered a replay with a message of type %d", typ)
		}
	}
}

func members(r *Root) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.members)
}

// A program squatting the root's port learns nothing it can use: the
// process, finding that it cannot prove the token, says so and sends
// nothing more (never the token, nor anything made from it but a nonce);
// what it did send, replayed to a later job's root with the same token,
// joins nothing.
func TestPortSquatterLearnsNothing(t *testing.T) {
	const secret = "the job's GCCL_JOB_TOKEN"
	ln := listen(t)
	var rec recorder
	done := make(chan struct{}, 1)
	go squat(ln, &rec, done)
	id, err := IDFor(Launch{Root: ln.Addr().String()}, secret)
	if err != nil {
		t.Fatal(err)
	}
	_, err = JoinID(id, 2, []int{1}, ProcInfo{Host: "h", Pid: 5, Blob: []byte("settings")}, JoinOptions{Timeout: 5 * time.Second})
	if err == nil || !strings.Contains(err.Error(), "is not this job's bootstrap root (it could not prove the job token): the root's port is taken by another program or another job") {
		t.Fatalf("Join at a squatter: %v; want the squatter named as not this job's root", err)
	}
	waitDone(t, done)
	got := rec.Bytes()
	noSecret(t, got, secret, id.Token())
	if bytes.Contains(got, []byte("settings")) {
		t.Error("the process sent its hello to a root that could not prove the token")
	}

	// The later job, on another port, with the same token.
	later, err := ServeRoot("127.0.0.1:0", id.Token(), RootOptions{Timeout: 10 * time.Second, Log: new(lockedBuf)})
	if err != nil {
		t.Fatal(err)
	}
	defer later.Close()
	replay(t, later.Addr(), got)
	waitCounts(t, later, map[string]int{reasonAuth: 1})
	if n := members(later); n != 0 {
		t.Fatalf("the later root admitted %d processes from a replay", n)
	}
}

// A wire tap between a job's processes and its root records a whole
// join; replayed to a later job's root with the same token, it joins
// nothing: that root's fresh nonce makes the recorded proof wrong. The
// tap never saw the token either.
func TestRecordedJoinReplayRefused(t *testing.T) {
	const secret = "another job token"
	id, err := IDFor(Launch{Root: "127.0.0.1:1"}, secret) // for its token

	if err != nil {
		t.Fatal(err)
	}
	token := id.Token()
	a, err := ServeRoot("127.0.0.1:0", token, RootOptions{Timeout: 10 * time.Second, Log: new(lockedBuf)})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	tap := listen(t)
	var rec recorder
	done := make(chan struct{}, 1)
	go relay(tap, a.Addr(), &rec, done)
	c, err := Join(tap.Addr().String(), token, 1, []int{0}, ProcInfo{Host: "h", Pid: 1}, JoinOptions{Timeout: 5 * time.Second})
	if err != nil {
		t.Fatalf("a join through the tap: %v", err)
	}
	if err := c.Barrier(); err != nil {
		t.Fatal(err)
	}
	c.Close()
	waitDone(t, done)
	got := rec.Bytes()
	noSecret(t, got, secret, token)

	b, err := ServeRoot("127.0.0.1:0", token, RootOptions{Timeout: 10 * time.Second, Log: new(lockedBuf)})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	replay(t, b.Addr(), got)
	waitCounts(t, b, map[string]int{reasonAuth: 1})
	if n := members(b); n != 0 {
		t.Fatalf("the later root admitted %d processes from a replay", n)
	}
	// And the later job itself joins.
	c, err = Join(b.Addr(), token, 1, []int{0}, ProcInfo{Host: "h", Pid: 2}, JoinOptions{Timeout: 5 * time.Second})
	if err != nil {
		t.Fatalf("the later job's own join: %v", err)
	}
	c.Close()
}

// A wrong token fails both ends cleanly: the process hears that the root
// could not prove the token, the root logs an authentication failure
// once, and the job's own processes join.
func TestWrongTokenBothSides(t *testing.T) {
	r, log := newRoot(t, 10*time.Second)
	other := testToken
	other[31] ^= 1
	start := time.Now()
	_, err := Join(r.Addr(), other, 1, []int{0}, ProcInfo{Pid: 3}, JoinOptions{Timeout: 30 * time.Second})
	if err == nil || !strings.Contains(err.Error(), "not this job's bootstrap root (it could not prove the job token)") ||
		!strings.Contains(err.Error(), EnvJobToken) {
		t.Fatalf("Join with a wrong token: %v", err)
	}
	if d := time.Since(start); d > 10*time.Second {
		t.Errorf("the wrong token failed after %v: want at once, not at the timeout", d)
	}
	waitCounts(t, r, map[string]int{reasonAuth: 1})
	if s := log.String(); strings.Count(s, "\n") != 1 || !strings.Contains(s, "refused a connection from 127.0.0.1:") ||
		!strings.Contains(s, "failed authentication (it holds another job's token)") {
		t.Errorf("the root's log: %q; want one line naming the failed authentication", s)
	}
	cs, errs := joinAll(t, r, 1, [][]int{{0}}, 5*time.Second)
	noErr(t, "join", errs)
	closeAll(cs)
}

// The root authenticates at most maxUnauth connections at once: the next
// is answered busy and closed at once, and a process told busy tries
// again until a place frees.
func TestBusyAtTheLimit(t *testing.T) {
	r, _ := newRoot(t, 30*time.Second)
	var hold []net.Conn
	defer func() {
		for _, c := range hold {
			c.Close()
		}
	}()
	for range maxUnauth {
		c, err := net.Dial("tcp", r.Addr())
		if err != nil {
			t.Fatal(err)
		}
		hold = append(hold, c)
	}
	for deadline := time.Now().Add(5 * time.Second); r.unauth.Len() < maxUnauth; time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("the root holds %d silent connections, want %d", r.unauth.Len(), maxUnauth)
		}
	}
	extra, err := net.Dial("tcp", r.Addr())
	if err != nil {
		t.Fatal(err)
	}
	extra.SetDeadline(time.Now().Add(5 * time.Second))
	if typ, _, err := readFrame(extra, preAuthFrame); err != nil || typ != frameBusy {
		t.Fatalf("connection %d: type %d, %v; want busy", maxUnauth+1, typ, err)
	}
	if _, _, err := readFrame(extra, preAuthFrame); err != io.EOF {
		t.Fatalf("after busy: %v, want the connection closed", err)
	}
	extra.Close()
	joined := make(chan error, 1)
	go func() {
		cs, errs := joinAll(t, r, 1, [][]int{{0}}, 20*time.Second)
		closeAll(cs)
		joined <- errs[0]
	}()
	time.Sleep(300 * time.Millisecond)
	select {
	case err := <-joined:
		t.Fatalf("joined while every place was held: %v", err)
	default:
	}
	for _, c := range hold {
		c.Close()
	}
	if err := <-joined; err != nil {
		t.Fatalf("once the places freed: %v", err)
	}
	waitCounts(t, r, map[string]int{"over the limit of 64 unauthenticated connections": 2, reasonClosed: maxUnauth})
}

// logLines are the lines of log that report refused connections, and the
// connections they count.
func logLines(log string) (lines, refused int) {
	many := regexp.MustCompile(`refused (\d+) connections in the last`)
	for _, l := range strings.Split(log, "\n") {
		if m := many.FindStringSubmatch(l); m != nil {
			n, _ := strconv.Atoi(m[1])
			lines, refused = lines+1, refused+n
		} else if strings.Contains(l, "refused a connection from") {
			lines, refused = lines+1, refused+1
		}
	}
	return lines, refused
}

func sum(m map[string]int) int {
	n := 0
	for _, v := range m {
		n += v
	}
	return n
}

// Many refusals make few lines: the first at once, then at most one per
// interval with the counts by reason; together they count every one.
func TestRefusalLogIsRateLimited(t *testing.T) {
	defer func(d time.Duration) { refusalLogEvery = d }(refusalLogEvery)
	refusalLogEvery = 200 * time.Millisecond
	r, log := newRoot(t, 10*time.Second)
	start := time.Now()
	const n = 300
	for i := range n {
		c, err := net.Dial("tcp", r.Addr())
		if err != nil {
			t.Fatal(err)
		}
		c.Write([]byte{0xff, 0xff, 0xff, 0x7f, 1, 2, 3})
		c.Close()
		if i%50 == 49 {
			time.Sleep(100 * time.Millisecond)
		}
	}
	waitCounts(t, r, map[string]int{reasonNotGCCL: n})
	elapsed := time.Since(start)
	r.Close()
	lines, refused := logLines(log.String())
	if most := 2 + int(elapsed/refusalLogEvery); lines > most || lines < 2 {
		t.Errorf("%d lines in %v for %d refusals, want 2 to %d:\n%s", lines, elapsed, n, most, log.String())
	}
	if refused != n || !strings.Contains(log.String(), "not a gccl bootstrap connection") {
		t.Errorf("the lines count %d refusals, want %d, by reason:\n%s", refused, n, log.String())
	}
}

// vmRSS is this process's resident memory (0 where /proc says nothing).
func vmRSS() int64 {
	b, _ := os.ReadFile("/proc/self/status")
	for _, l := range strings.Split(string(b), "\n") {
		if f := strings.Fields(l); len(f) >= 2 && f[0] == "VmRSS:" {
			kb, _ := strconv.ParseInt(f[1], 10, 64)
			return kb << 10
		}
	}
	return 0
}

func liveHeap() int64 {
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return int64(ms.HeapAlloc)
}

// A flood of 2000 strangers, half announcing 16 MiB first frames, half
// silent, in waves held open: the root's memory grows by well under
// 50 MiB (before the limits, 200 such cost it 3.3 GiB of heap), a job
// joins and runs meanwhile, and the log stays a few lines that count them
// all.
func TestFloodOfStrangersBounded(t *testing.T) {
	if testing.Short() {
		t.Skip("2000 connections: not under -short")
	}
	files := raiseFileLimit()
	wave := min(500, (files-200)/2) // both ends of each connection are in this process
	if wave < 50 {
		t.Skipf("%d open files allowed: too few for the flood", files)
	}
	defer func(d time.Duration) { refusalLogEvery = d }(refusalLogEvery)
	refusalLogEvery = time.Second
	r, log := newRoot(t, time.Minute)
	heap0, rss0 := liveHeap(), vmRSS()
	start := time.Now()
	type outcome struct {
		cs   []*Client
		errs []error
	}
	job := make(chan outcome, 1)
	var peakHeap, peakRSS int64
	announce := make([]byte, 5+len(wireMagic)+4096)
	binary.LittleEndian.PutUint32(announce, 16<<20)
	announce[4] = frameOpen
	copy(announce[5:], wireMagic)
	const total = 2000
	for opened := 0; opened < total; {
		var conns []net.Conn
		for i := 0; i < wave && opened < total; i, opened = i+1, opened+1 {
			c, err := net.Dial("tcp", r.Addr())
			if err != nil {
				t.Fatalf("connection %d: %v", opened, err)
			}
			if i%2 == 0 {
				c.SetWriteDeadline(time.Now().Add(time.Second))
				c.Write(announce)
			}
			conns = append(conns, c)
		}
		if opened == len(conns) { // the job starts joining with the first wave
			go func() {
				cs, errs := joinAll(t, r, 3, [][]int{{0}, {1}, {2}}, 60*time.Second)
				job <- outcome{cs, errs}
			}()
		}
		time.Sleep(200 * time.Millisecond)
		peakHeap, peakRSS = max(peakHeap, liveHeap()-heap0), max(peakRSS, vmRSS()-rss0)
		for _, c := range conns {
			c.Close()
		}
	}
	var o outcome
	select {
	case o = <-job:
	case <-time.After(90 * time.Second):
		t.Fatal("the job did not join within 90 s of the flood")
	}
	noErr(t, "join", o.errs)
	noErr(t, "allgather", each(o.cs, func(i int, c *Client) error {
		got, err := c.AllGather([]byte{byte(c.Index())})
		if err == nil && (len(got) != 3 || got[2][0] != 2) {
			t.Errorf("allgather: %v", got)
		}
		return err
	}))
	closeAll(o.cs)
	t.Logf("2000 strangers (%d at a time): the live heap grew by at most %.1f MiB, resident memory by %.1f MiB",
		wave, float64(peakHeap)/(1<<20), float64(peakRSS)/(1<<20))
	if peakHeap > 50<<20 || peakRSS > 50<<20 {
		t.Errorf("memory grew by %d MiB of heap, %d MiB resident: want under 50 MiB", peakHeap>>20, peakRSS>>20)
	}
	for deadline := time.Now().Add(30 * time.Second); sum(r.refusals.Counts()) < total; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("refusals counted: %v, want %d in all", r.refusals.Counts(), total)
		}
	}
	counts := r.refusals.Counts()
	elapsed := time.Since(start)
	r.Close()
	if counts["over the limit of 64 unauthenticated connections"] == 0 || counts[reasonNotGCCL] == 0 {
		t.Errorf("refusals %v: want some over the limit, some not gccl (16 MiB first frames)", counts)
	}
	lines, refused := logLines(log.String())
	if most := 2 + int(elapsed/refusalLogEvery); lines > most || refused != sum(counts) {
		t.Errorf("%d lines counting %d refusals in %v, want at most %d counting %d:\n%s", lines, refused, elapsed, most, sum(counts), log.String())
	}
	t.Logf("log:\n%s", log.String())
}
