//go:build unix

package transport

import (
	"bytes"
	"runtime"
	"testing"
	"time"

	"github.com/gccl/gccl/lib/proto"
)

// TestNetHoldLeavesSocketToRank: while a rank holds a small-frame socket
// (it polls it as it waits, proto.Fifo.Hold) its proxy leaves every frame
// to it; once the rank lets go (as it parks) the proxy reads every frame
// again; and a rank that holds the socket but starts no new wait has the
// proxy take it back after a lease, so frames never sit unread.
func TestNetHoldLeavesSocketToRank(t *testing.T) {
	msg := func(i int) []byte { return []byte{byte(i), byte(i >> 8), 1, 2, 3, 4, 5, 6} }
	// await waits, looking with look alone, for frame i and checks it.
	await := func(t *testing.T, r *proto.RecvEnd, i int, look func() bool) {
		t.Helper()
		for deadline := time.Now().Add(10 * time.Second); !look(); runtime.Gosched() {
			if time.Now().After(deadline) {
				t.Fatalf("frame %d never arrived", i)
			}
		}
		got := make([]byte, 8)
		if err := r.LLRecv(got); err != nil {
			t.Fatalf("frame %d: %v", i, err)
		}
		if !bytes.Equal(got, msg(i)) {
			t.Fatalf("frame %d: %v, want %v", i, got, msg(i))
		}
	}
	pair := func(t *testing.T, lease time.Duration) (*proto.SendEnd, *proto.RecvEnd, *proxy) {
		old := holdLease
		holdLease = lease // before the proxies start; restored after they stop
		t.Cleanup(func() { holdLease = old })
		s, r, _, rc := netPair(t, proto.LL, 8*8*proto.LLLineBytes, proto.NewAbort())
		for deadline := time.Now().Add(10 * time.Second); !rc.proxy.rx.ready.Load(); runtime.Gosched() {
			if time.Now().After(deadline) {
				t.Fatal("the receiving proxy never readied its socket for ranks")
			}
		}
		return s, r, rc.proxy
	}

	t.Run("held, then let go", func(t *testing.T) {
		s, r, px := pair(t, time.Hour)
		const n = 20
		if !r.Hold(8) {
			t.Fatal("a network LL receive has no Hold")
		}
		for i := 0; i < n; i++ {
			if err := s.LLSend(msg(i)); err != nil {
				t.Fatal(err)
			}
			// Time for the proxy to be woken by the frame and read it,
			// were it not leaving the socket to the rank.
			time.Sleep(2 * time.Millisecond)
			await(t, r, i, func() bool { return r.CanRecv(1, 8) })
		}
		if got := px.polled.Load(); got != n {
			t.Errorf("held: the rank read %d of %d frames, want all (its proxy leaves them to it)", got, n)
		}
		r.Unhold()
		for i := n; i < 2*n; i++ {
			if err := s.LLSend(msg(i)); err != nil {
				t.Fatal(err)
			}
			await(t, r, i, func() bool { return r.Arrived(1, 8) }) // no polling
		}
		if got := px.polled.Load(); got != n {
			t.Errorf("let go: the rank read %d more frames, want none (it no longer polls)", got-n)
		}
	})

	t.Run("held, no wait after", func(t *testing.T) {
		s, r, px := pair(t, 20*time.Millisecond)
		r.Hold(8)
		for i := 0; i < 3; i++ {
			if err := s.LLSend(msg(i)); err != nil {
				t.Fatal(err)
			}
			await(t, r, i, func() bool { return r.Arrived(1, 8) }) // the proxy must read it
		}
		if got := px.polled.Load(); got != 0 {
			t.Errorf("the rank read %d frames, want none (it never polled)", got)
		}
	})
}
