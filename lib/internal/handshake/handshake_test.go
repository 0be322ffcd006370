package handshake

import (
	"fmt"
	"net"
	"strings"
	"sync"
	"testing"
	"time"
)

// A proof binds its key, label and every part, and how the parts are
// cut: changing any one makes another proof.
func TestProofBindsEverything(t *testing.T) {
	key, a, b := []byte("token"), []byte("nonce-a"), []byte("nonce-b")
	p := Proof(key, "root", a, b)
	if !Verify(p[:], key, "root", a, b) {
		t.Fatal("a proof does not verify")
	}
	for name, q := range map[string][ProofBytes]byte{
		"another key":   Proof([]byte("tokem"), "root", a, b),
		"another label": Proof(key, "process", a, b),
		"parts swapped": Proof(key, "root", b, a),
		"parts recut":   Proof(key, "root", []byte("nonce-anonce"), []byte("-b")),
		"a part less":   Proof(key, "root", a),
	} {
		if q == p {
			t.Errorf("%s gives the same proof", name)
		}
	}
	if Verify(p[:len(p)-1], key, "root", a, b) {
		t.Error("a truncated proof verifies")
	}
	n1, _ := Nonce()
	n2, _ := Nonce()
	if n1 == n2 {
		t.Error("two nonces alike")
	}
}

type lines struct {
	mu sync.Mutex
	l  []string
}

func (g *lines) add(s string) { g.mu.Lock(); g.l = append(g.l, s); g.mu.Unlock() }
func (g *lines) get() []string {
	g.mu.Lock()
	defer g.mu.Unlock()
	return append([]string(nil), g.l...)
}

var peer = &net.TCPAddr{IP: net.IPv4(10, 0, 0, 1), Port: 4242}

// The first refusal after a quiet interval is logged at once with its
// detail; those within the interval make one summary line counting them by
// reason when it ends; Close logs what is pending and ends the log.
func TestRefusalsRateLimit(t *testing.T) {
	var got lines
	r := NewRefusals("root X", 300*time.Millisecond, got.add)
	r.Add(peer, "failed authentication", "its proof is wrong")
	if l := got.get(); len(l) != 1 || l[0] != "root X: refused a connection from 10.0.0.1:4242: failed authentication (its proof is wrong)" {
		t.Fatalf("the first refusal: %q", l)
	}
	for i := range 10 {
		r.Add(peer, fmt.Sprint("reason ", i%3), "")
	}
	if l := got.get(); len(l) != 1 {
		t.Fatalf("within the interval: %q, want the first line alone", l)
	}
	deadline := time.Now().Add(5 * time.Second)
	for len(got.get()) < 2 && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	l := got.get()
	if len(l) != 2 || l[1] != "root X: refused 10 connections in the last 300ms (4 reason 0, 3 reason 1, 3 reason 2; the first from 10.0.0.1:4242: reason 0)" {
		t.Fatalf("the summary: %q", l)
	}
	r.Add(peer, "late", "")
	r.Close()
	r.Add(peer, "after close", "")
	r.Close()
	if l := got.get(); len(l) != 3 || !strings.HasSuffix(l[2], "refused a connection from 10.0.0.1:4242: late") {
		t.Fatalf("at Close: %q", l)
	}
	if c := r.Counts(); c["failed authentication"] != 1 || c["reason 0"] != 4 || c["late"] != 1 || c["after close"] != 0 {
		t.Errorf("counts %v", c)
	}
}

// Reasons beyond maxReasons count as "other": a line stays bounded.
func TestRefusalsBoundReasons(t *testing.T) {
	var got lines
	r := NewRefusals("l", time.Hour, got.add)
	r.Add(peer, "first", "")
	for i := range 100 {
		r.Add(peer, fmt.Sprint("r", i), "")
	}
	r.Close()
	l := got.get()
	if len(l) != 2 || !strings.Contains(l[1], "refused 100 connections") || !strings.Contains(l[1], fmt.Sprintf("%d other", 100-(maxReasons-1))) {
		t.Fatalf("%q", l)
	}
}

// Pending holds at most its limit, frees a place on Leave, and after
// CloseAll closes every connection it held and takes no more.
func TestPendingLimit(t *testing.T) {
	p := NewPending(2)
	a, b := net.Pipe()
	c, d := net.Pipe()
	e, f := net.Pipe()
	defer b.Close()
	defer d.Close()
	defer f.Close()
	if !p.Enter(a) || !p.Enter(c) || p.Enter(e) {
		t.Fatal("want the first two held, the third refused")
	}
	p.Leave(c)
	if !p.Enter(e) || p.Len() != 2 {
		t.Fatal("a place freed by Leave was not taken")
	}
	p.CloseAll()
	if _, err := a.Write([]byte{1}); err == nil {
		t.Error("a connection held survived CloseAll")
	}
	if p.Enter(c) {
		t.Error("a connection entered after CloseAll")
	}
}
