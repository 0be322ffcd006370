package prims

import (
	"bytes"
	"testing"
	"time"

	"github.com/gccl/gccl/lib/proto"
)

// TestP2PLandsAhead: a Simple receive over a network connection shows its
// proxy where its next chunks go, a FIFO's depth ahead, so a proxy that
// reads a burst of frames before the receiving goroutine runs again lands
// every one of them in the receive buffer (no slot, no copy).
func TestP2PLandsAhead(t *testing.T) {
	const chunk = 4096
	f, err := proto.NewFifo(proto.Simple, proto.Steps*chunk, proto.FifoOptions{Proxied: true})
	if err != nil {
		t.Fatal(err)
	}
	abort := proto.NewAbort()
	w := proto.NewWaiter(abort, 10*time.Second)
	f.RecvWaiter, f.SendWaiter = w, proto.NewWaiter(abort, 10*time.Second)
	px, rank := proto.NewEnds(f, "p2p landing")
	buf := make([]byte, proto.Steps*chunk)
	done := make(chan error, 1)
	go func() { done <- RunP2P(w, []*Xfer{{Recv: rank, Buf: buf, Chunk: chunk}}) }()

	deadline := time.Now().Add(10 * time.Second)
	for !px.SimpleExpected(proto.Steps-1, chunk) {
		if time.Now().After(deadline) {
			t.Fatalf("the receive never showed where its chunk %d goes", proto.Steps-1)
		}
		time.Sleep(time.Millisecond)
	}
	landed := 0
	for i := range proto.Steps { // the proxy's burst
		slot, err := px.SimpleAcquire(1)
		if err != nil {
			t.Fatal(err)
		}
		dst, ok := px.SimpleLanding(slot, chunk)
		copy(dst, bytes.Repeat([]byte{byte(i + 1)}, chunk))
		if ok {
			landed++
		}
		px.SimplePostLanded(1, chunk, ok)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if landed != proto.Steps {
		t.Errorf("%d of %d chunks landed in the receive buffer", landed, proto.Steps)
	}
	for i := range proto.Steps {
		if !bytes.Equal(buf[i*chunk:(i+1)*chunk], bytes.Repeat([]byte{byte(i + 1)}, chunk)) {
			t.Fatalf("chunk %d wrong", i)
		}
	}
}
