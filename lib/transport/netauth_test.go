package transport

import (
	"bytes"
	"encoding/hex"
	"fmt"
	"io"
	"net"
	"os"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gccl/gccl/internal/syncbuf"
)

// lineLog is a listener's logf that keeps its lines.
type lineLog struct {
	mu    sync.Mutex
	lines []string
}

func (g *lineLog) logf(format string, args ...any) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.lines = append(g.lines, fmt.Sprintf(format, args...))
}

func (g *lineLog) String() string {
	g.mu.Lock()
	defer g.mu.Unlock()
	return strings.Join(g.lines, "\n")
}

// recorder keeps what connections sent it.
type recorder = syncbuf.Buffer

func listenLoopback(t *testing.T) net.Listener {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	return ln
}

// netJobListener is a listener for token whose log the test reads.
func netJobListener(t *testing.T, token string) (*NetListener, *lineLog) {
	t.Helper()
	log := new(lineLog)
	l, err := ListenNet("127.0.0.1:0", token, log.logf)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(l.Close)
	return l, log
}

// waitNetCounts waits up to 5 s until l counted at least want of each
// reason of refusal.
func waitNetCounts(t *testing.T, l *NetListener, want map[string]int) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		got := l.refusals.Counts()
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

// noToken fails the test if b holds token, or the bytes it is the hex of.
func noToken(t *testing.T, b []byte, token string) {
	t.Helper()
	if len(b) == 0 {
		t.Fatal("nothing recorded")
	}
	raw, _ := hex.DecodeString(token)
	for what, s := range map[string][]byte{"the token": []byte(token), "its first half": []byte(token[:len(token)/2]), "its bytes": raw} {
		if len(s) > 0 && bytes.Contains(b, s) {
			t.Errorf("the %d bytes sent hold %s", len(b), what)
		}
	}
}

// replayNet sends b to the listener at addr as a new connection and
// reads until the listener hangs up.
func replayNet(t *testing.T, addr string, b []byte) {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(netHelloDeadline + 5*time.Second))
	c.Write(b)
	io.Copy(io.Discard, c)
}

const jobToken = "5f1d0c6e9a4b3c2d1e0f5f1d0c6e9a4b3c2d1e0f5f1d0c6e9a4b3c2d1e0f9a8b" // hex, as ccl makes it

// A program on a listener's port learns nothing it can use: the dialler
// finds that it cannot prove the token and sends nothing more than its
// nonce and a refusal; replayed to a real listener of the job, that joins
// nothing.
func TestNetSquatterLearnsNothing(t *testing.T) {
	ln := listenLoopback(t)
	var rec recorder
	done := make(chan struct{}, 1)
	go func() {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		defer func() { done <- struct{}{} }()
		defer c.Close()
		c.SetDeadline(time.Now().Add(10 * time.Second))
		in := io.TeeReader(c, &rec)
		var open [len(netMagic) + 32]byte
		if _, err := io.ReadFull(in, open[:]); err != nil {
			return
		}
		c.Write(append([]byte(netMagic), make([]byte, 64)...)) // a nonce, a made-up proof
		io.Copy(io.Discard, in)
	}()
	_, err := dialNet(ln.Addr().String(), jobToken, "0-1-c0-ring-Simple-65536", 5*time.Second, nil)
	if err == nil || !strings.Contains(err.Error(), "is not this job's network listener (it could not prove the job token)") {
		t.Fatalf("dialling a squatter: %v", err)
	}
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("the squatter's connection did not end")
	}
	got := rec.Bytes()
	noToken(t, got, jobToken)
	if bytes.Contains(got, []byte("ring-Simple")) {
		t.Error("the dialler named its connection to a listener that could not prove the token")
	}
	l, _ := netJobListener(t, jobToken)
	replayNet(t, l.Addr(), got)
	waitNetCounts(t, l, map[string]int{netReasonAuth: 1})
}

// A wire tap between two processes records a whole handshake; replayed
// to a listener of a later job with the same token, it delivers nothing:
// that listener's fresh nonce makes the recorded proof wrong.
func TestNetRecordedDialReplayRefused(t *testing.T) {
	a, _ := netJobListener(t, jobToken)
	tap := listenLoopback(t)
	var rec recorder
	done := make(chan struct{}, 1)
	go func() {
		c, err := tap.Accept()
		if err != nil {
			return
		}
		defer func() { done <- struct{}{} }()
		defer c.Close()
		up, err := net.Dial("tcp", a.Addr())
		if err != nil {
			return
		}
		defer up.Close()
		go io.Copy(c, up)
		io.Copy(up, io.TeeReader(c, &rec))
	}()
	const key = "0-1-c0-ring-Simple-65536"
	c, err := dialNet(tap.Addr().String(), jobToken, key, 5*time.Second, nil)
	if err != nil {
		t.Fatalf("dialling through the tap: %v", err)
	}
	if got, err := a.Await(key, 5*time.Second, nil); err != nil {
		t.Fatal(err)
	} else {
		got.Close()
	}
	c.Close()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("the tapped connection did not end")
	}
	got := rec.Bytes()
	noToken(t, got, jobToken)
	b, _ := netJobListener(t, jobToken)
	replayNet(t, b.Addr(), got)
	waitNetCounts(t, b, map[string]int{netReasonAuth: 1})
	if c, err := b.Await(key, 200*time.Millisecond, nil); err == nil {
		c.Close()
		t.Fatal("the later listener took a replayed connection")
	}
}

// A listener authenticates at most maxNetUnauth connections at once: the
// next is closed at once, and a dialler tries again until a place frees.
func TestNetListenerBusyAtTheLimit(t *testing.T) {
	l, _ := netJobListener(t, jobToken)
	var hold []net.Conn
	defer func() {
		for _, c := range hold {
			c.Close()
		}
	}()
	for range maxNetUnauth {
		c, err := net.Dial("tcp", l.Addr())
		if err != nil {
			t.Fatal(err)
		}
		hold = append(hold, c)
	}
	for deadline := time.Now().Add(5 * time.Second); l.unauth.Len() < maxNetUnauth; time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("the listener holds %d silent connections, want %d", l.unauth.Len(), maxNetUnauth)
		}
	}
	extra, err := net.Dial("tcp", l.Addr())
	if err != nil {
		t.Fatal(err)
	}
	extra.SetDeadline(time.Now().Add(netHelloDeadline - time.Second))
	if n, err := extra.Read(make([]byte, 1)); err != io.EOF {
		t.Fatalf("connection %d: read %d bytes, %v; want it closed at once", maxNetUnauth+1, n, err)
	}
	extra.Close()
	dialled := make(chan error, 1)
	go func() {
		c, err := dialNet(l.Addr(), jobToken, "k", 20*time.Second, nil)
		if c != nil {
			c.Close()
		}
		dialled <- err
	}()
	time.Sleep(300 * time.Millisecond)
	select {
	case err := <-dialled:
		t.Fatalf("dialled while every place was held: %v", err)
	default:
	}
	for _, c := range hold {
		c.Close()
	}
	if err := <-dialled; err != nil {
		t.Fatalf("once the places freed: %v", err)
	}
	if c, err := l.Await("k", 5*time.Second, nil); err != nil {
		t.Fatal(err)
	} else {
		c.Close()
	}
	waitNetCounts(t, l, map[string]int{fmt.Sprintf("over the limit of %d unauthenticated connections", maxNetUnauth): 2, netReasonClosed: maxNetUnauth})
}

// netLogLines are the lines of a listener's log that report refused
// connections, and the connections they count.
func netLogLines(log string) (lines, refused int) {
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

// A flood of 2000 strangers, in waves held open (a third silent, a third
// sending a long key's worth of noise, a third other noise): the
// listener's memory stays bounded, a real connection is made meanwhile,
// and its log is a few lines that count them all.
func TestNetFloodOfStrangersBounded(t *testing.T) {
	if testing.Short() {
		t.Skip("2000 connections: not under -short")
	}
	files := raiseFileLimit()
	wave := min(500, (files-200)/2)
	if wave < 50 {
		t.Skipf("%d open files allowed: too few for the flood", files)
	}
	defer func(d time.Duration) { netRefusalEvery = d }(netRefusalEvery)
	netRefusalEvery = time.Second
	l, log := netJobListener(t, jobToken)
	heap0, rss0 := liveHeap(), vmRSS()
	start := time.Now()
	var peakHeap, peakRSS int64
	dialled := make(chan error, 1)
	noise := bytes.Repeat([]byte{0xff}, 16<<10)
	const total = 2000
	for opened := 0; opened < total; {
		var conns []net.Conn
		for i := 0; i < wave && opened < total; i, opened = i+1, opened+1 {
			c, err := net.Dial("tcp", l.Addr())
			if err != nil {
				t.Fatalf("connection %d: %v", opened, err)
			}
			c.SetWriteDeadline(time.Now().Add(time.Second))
			switch i % 3 {
			case 1: // a gccl opening, then a proof with the longest key and noise
				c.Write(append([]byte(netMagic), make([]byte, 32)...))
				c.Write(append(append([]byte{1}, make([]byte, 32)...), 0xff, 0xff))
				c.Write(noise)
			case 2:
				c.Write(noise)
			}
			conns = append(conns, c)
		}
		if opened == len(conns) {
			go func() {
				c, err := dialNet(l.Addr(), jobToken, "k", 60*time.Second, nil)
				if c != nil {
					c.Close()
				}
				dialled <- err
			}()
		}
		time.Sleep(200 * time.Millisecond)
		peakHeap, peakRSS = max(peakHeap, liveHeap()-heap0), max(peakRSS, vmRSS()-rss0)
		for _, c := range conns {
			c.Close()
		}
	}
	select {
	case err := <-dialled:
		if err != nil {
			t.Fatalf("the job's own connection: %v", err)
		}
	case <-time.After(90 * time.Second):
		t.Fatal("the job's own connection was not made within 90 s of the flood")
	}
	if c, err := l.Await("k", 5*time.Second, nil); err != nil {
		t.Fatal(err)
	} else {
		c.Close()
	}
	t.Logf("2000 strangers (%d at a time): the live heap grew by at most %.1f MiB, resident memory by %.1f MiB",
		wave, float64(peakHeap)/(1<<20), float64(peakRSS)/(1<<20))
	if peakHeap > 50<<20 || peakRSS > 50<<20 {
		t.Errorf("memory grew by %d MiB of heap, %d MiB resident: want under 50 MiB", peakHeap>>20, peakRSS>>20)
	}
	total0 := func() int {
		n := 0
		for _, v := range l.refusals.Counts() {
			n += v
		}
		return n
	}
	for deadline := time.Now().Add(30 * time.Second); total0() < total; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("refusals counted: %v, want %d in all", l.refusals.Counts(), total)
		}
	}
	counts, refusedAll := l.refusals.Counts(), total0()
	elapsed := time.Since(start)
	l.Close()
	if counts[fmt.Sprintf("over the limit of %d unauthenticated connections", maxNetUnauth)] == 0 || counts[netReasonNotGCCL] == 0 {
		t.Errorf("refusals %v: want some over the limit, some not gccl", counts)
	}
	lines, refused := netLogLines(log.String())
	if most := 2 + int(elapsed/netRefusalEvery); lines > most || refused != refusedAll {
		t.Errorf("%d lines counting %d refusals in %v, want at most %d counting %d:\n%s", lines, refused, elapsed, most, refusedAll, log.String())
	}
	t.Logf("log:\n%s", log.String())
}
