package proto_test

import (
	"bytes"
	"strings"
	"testing"
	"time"
	"unsafe"

	"github.com/gccl/gccl/lib/proto"
)

// TestSimplePostRef posts slices by reference and by copy on one Direct
// FIFO: the receiver gets the sender's very memory for a reference and the
// slot's bytes for a copy (a stale reference never leaks into a later copied
// step), and Drain returns only once every lent slice was released.
func TestSimplePostRef(t *testing.T) {
	f, s, r, _, _ := newFifo(t, proto.Simple, smallSimple, proto.FifoOptions{Direct: true})
	if !f.Direct() {
		t.Fatal("NewFifo with Options.Direct: FIFO is not Direct")
	}
	mine := bytes.Repeat([]byte{7}, 300)
	for round := 0; round < 3*proto.Steps; round++ {
		byRef := round%3 != 2
		buf, err := s.SimpleAcquire(1)
		if err != nil {
			t.Fatal(err)
		}
		if byRef {
			s.SimplePostRef(1, mine[:100+round])
		} else {
			copy(buf, bytes.Repeat([]byte{byte(round)}, 50))
			s.SimplePost(1, 50)
		}
		want := 50
		if byRef {
			want = 100 + round
		}
		got, err := r.SimpleWait(1, want)
		if err != nil {
			t.Fatal(err)
		}
		switch {
		case byRef && unsafe.SliceData(got) != unsafe.SliceData(mine):
			t.Fatalf("round %d: a slice posted by reference arrived as a copy", round)
		case !byRef && !bytes.Equal(got, bytes.Repeat([]byte{byte(round)}, 50)):
			t.Fatalf("round %d: a copied slice arrived as %v...", round, got[:4])
		}
		r.SimpleRelease(1)
	}
	if err := s.Drain(); err != nil {
		t.Fatal(err)
	}

	// Drain waits for the receiver.
	if _, err := s.SimpleAcquire(1); err != nil {
		t.Fatal(err)
	}
	s.SimplePostRef(1, mine)
	drained := make(chan error, 1)
	go func() { drained <- s.Drain() }()
	select {
	case err := <-drained:
		t.Fatalf("Drain returned (%v) before the receiver released the lent slice", err)
	case <-time.After(50 * time.Millisecond):
	}
	if _, err := r.SimpleWait(1, len(mine)); err != nil {
		t.Fatal(err)
	}
	r.SimpleRelease(1)
	if err := <-drained; err != nil {
		t.Fatal(err)
	}
}

// TestDrainTimesOut: a receiver that never reads makes Drain fail with the
// connection and what it waited for, not hang.
func TestDrainTimesOut(t *testing.T) {
	f, s, _, _, _ := newFifo(t, proto.Simple, smallSimple, proto.FifoOptions{Direct: true})
	f.SendWaiter = proto.NewWaiter(proto.NewAbort(), 100*time.Millisecond)
	if _, err := s.SimpleAcquire(1); err != nil {
		t.Fatal(err)
	}
	s.SimplePostRef(1, make([]byte, 10))
	err := s.Drain()
	if err == nil || !strings.Contains(err.Error(), "test conn") || !strings.Contains(err.Error(), "finish reading") {
		t.Fatalf("Drain with a silent receiver: %v", err)
	}
}

// TestDirectOnlyInProcess: only Simple FIFOs in Go memory post by reference;
// one laid out in shared memory (two processes) never does, nor LL/LL128.
func TestDirectOnlyInProcess(t *testing.T) {
	for _, p := range []proto.Protocol{proto.LL, proto.LL128} {
		size := smallLL
		if p == proto.LL128 {
			size = smallLL128
		}
		f, err := proto.NewFifo(p, size, proto.FifoOptions{Direct: true})
		if err != nil || f.Direct() {
			t.Errorf("%s FIFO: Direct %v (%v), want false", p, f != nil && f.Direct(), err)
		}
	}
	f, err := proto.NewFifoAt(proto.Simple, smallSimple, proto.FifoOptions{Direct: true}, aligned(proto.FifoBytes(smallSimple)), true)
	if err != nil || f.Direct() {
		t.Errorf("FIFO in shared memory: Direct %v (%v), want false", f != nil && f.Direct(), err)
	}
}
