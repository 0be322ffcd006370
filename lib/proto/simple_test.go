package proto_test

import (
	"bytes"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/gccl/gccl/lib/proto"
)

// TestSimpleSlices moves slices of 1 and 2 steps (aligned with AlignStep on
// both ends), checks the slice buffer, the tail/head counters and the size
// carried in the slot of the slice's first step.
func TestSimpleSlices(t *testing.T) {
	for _, start := range []uint64{0, 1, 1<<32 - 3} {
		t.Run(fmt.Sprint(start), func(t *testing.T) {
			f, s, r, abort, _ := newFifo(t, proto.Simple, smallSimple, proto.FifoOptions{StartStep: start})
			if f.StepData() != 512 || f.StepBytes != 512 || len(f.Buffer()) != smallSimple {
				t.Fatalf("StepData %d StepBytes %d buffer %d", f.StepData(), f.StepBytes, len(f.Buffer()))
			}
			type op struct{ k, n int }
			ops := []op{{1, 0}, {1, 1}, {2, 1024}, {1, 512}, {2, 513}, {2, 0}, {1, 100}, {1, 511}, {2, 1}, {2, 1023}}
			ops = append(ops, ops...)
			ops = append(ops, ops...)
			errc := make(chan error, 1)
			go func() {
				for _, o := range ops {
					r.AlignStep(o.k)
					step := r.Step
					got, err := r.SimpleWait(o.k, o.n)
					if err == nil {
						if want := payload(step, o.n); !bytes.Equal(got, want) {
							err = fmt.Errorf("step %d: %s", step, firstDiff(got, want))
						}
					}
					if err != nil {
						abort.Trigger(err)
						errc <- err
						return
					}
					r.SimpleRelease(o.k)
					if f.Head() != step+uint64(o.k) {
						errc <- fmt.Errorf("head %d after releasing step %d+%d", f.Head(), step, o.k)
						return
					}
				}
				errc <- nil
			}()
			for _, o := range ops {
				s.AlignStep(o.k)
				step := s.Step
				if step%uint64(o.k) != 0 || step < start {
					t.Fatalf("AlignStep(%d) gave step %d", o.k, step)
				}
				buf, err := s.SimpleAcquire(o.k)
				if err != nil {
					t.Fatal(err)
				}
				if len(buf) != o.k*f.StepBytes {
					t.Fatalf("SimpleAcquire(%d) = %d bytes", o.k, len(buf))
				}
				// The slice is the slot's place in the buffer.
				slot := int(step % proto.Steps)
				if &buf[0] != &f.Buffer()[slot*f.StepBytes] {
					t.Fatalf("slice of step %d is not at slot %d", step, slot)
				}
				copy(buf, payload(step, o.n))
				s.SimplePost(o.k, o.n)
				if s.Step != step+uint64(o.k) || f.Tail() != s.Step {
					t.Fatalf("after posting step %d+%d: step %d tail %d", step, o.k, s.Step, f.Tail())
				}
				if got := f.Size(slot); got != int64(o.n) {
					t.Fatalf("Size(%d) = %d, want %d", slot, got, o.n)
				}
			}
			if err := <-errc; err != nil {
				t.Fatal(err)
			}
		})
	}
}

func TestAlignStep(t *testing.T) {
	f, err := proto.NewFifo(proto.Simple, smallSimple, proto.FifoOptions{StartStep: 5})
	if err != nil {
		t.Fatal(err)
	}
	s, r := proto.NewEnds(f, "x")
	for _, c := range []struct {
		n          int
		from, want uint64
	}{{1, 5, 5}, {2, 5, 6}, {2, 6, 6}, {4, 5, 8}, {8, 9, 16}, {2, 1<<32 - 1, 1 << 32}} {
		s.Step, r.Step = c.from, c.from
		s.AlignStep(c.n)
		r.AlignStep(c.n)
		if s.Step != c.want || r.Step != c.want {
			t.Errorf("AlignStep(%d) from %d = %d/%d, want %d", c.n, c.from, s.Step, r.Step, c.want)
		}
	}
}

// TestSimpleSizeMismatch: the receiver's error names both sizes.
func TestSimpleSizeMismatch(t *testing.T) {
	for _, k := range []int{1, 2} {
		_, s, r, _, _ := newFifo(t, proto.Simple, smallSimple, proto.FifoOptions{StartStep: 1<<32 - 2})
		s.AlignStep(k)
		r.AlignStep(k)
		buf, err := s.SimpleAcquire(k)
		if err != nil {
			t.Fatal(err)
		}
		copy(buf, "hello")
		s.SimplePost(k, 100)
		_, err = r.SimpleWait(k, 200)
		if err == nil || !strings.Contains(err.Error(), "100") || !strings.Contains(err.Error(), "200") || !strings.Contains(err.Error(), "test conn") {
			t.Fatalf("slice %d: SimpleWait(200) of a 100-byte post: %v, want an error naming both sizes and the connection", k, err)
		}
		if errors.Is(err, proto.ErrTimeout) {
			t.Fatalf("size mismatch reported as a timeout: %v", err)
		}
	}
}

// TestSimpleDefaultBuffer moves slices of the default 1 MiB buffer and of
// NCCL's 4 MiB one.
func TestSimpleDefaultBuffer(t *testing.T) {
	for _, buff := range []int{proto.DefaultSimpleBuffSize, proto.NCCLSimpleBuffSize} {
		res, err := runStream(t, streamCfg{
			proto: proto.Simple, buff: buff, opt: proto.FifoOptions{StartStep: 7},
			ops:        12,
			size:       func(step uint64, capacity int) int { return []int{capacity, capacity - 1, 1, 0}[step%4] },
			sliceSteps: func(op int) int { return 2 - op%2 },
		})
		if err != nil || res.overruns != 0 {
			t.Fatalf("buffer %d: %v (overruns %d)", buff, err, res.overruns)
		}
	}
}

// TestSimpleLanding: on the receiving FIFO of a network connection, a rank
// that expects a slice in its own memory gets it there from its proxy (the
// slice it is handed back is that memory, not the slot); a slice the proxy
// read before the rank expected it comes from the slot; a slice of another
// length than expected never lands. Every byte arrives either way.
func TestSimpleLanding(t *testing.T) {
	f, err := proto.NewFifo(proto.Simple, 8*4096, proto.FifoOptions{Proxied: true})
	if err != nil {
		t.Fatal(err)
	}
	px, rank := proto.NewEnds(f, "landing")
	// proxyPost plays the receiving proxy: the frame's bytes go where
	// SimpleLanding says.
	proxyPost := func(payload []byte) bool {
		slot, err := px.SimpleAcquire(1)
		if err != nil {
			t.Fatal(err)
		}
		dst, landed := px.SimpleLanding(slot, len(payload))
		copy(dst, payload)
		px.SimplePostLanded(1, len(payload), landed)
		return landed
	}
	fill := func(b byte, n int) []byte { return bytes.Repeat([]byte{b}, n) }

	// Expected first: the proxy lands it in the rank's buffer.
	dst := make([]byte, 100)
	rank.SimpleExpect(dst)
	if !proxyPost(fill(1, 100)) {
		t.Fatal("an expected slice did not land in the rank's buffer")
	}
	got, err := rank.SimpleWaitInto(1, dst)
	if err != nil || &got[0] != &dst[0] || !bytes.Equal(dst, fill(1, 100)) {
		t.Fatalf("landed slice: err %v, handed back the rank's buffer %v, bytes right %v", err, err == nil && &got[0] == &dst[0], bytes.Equal(dst, fill(1, 100)))
	}
	rank.SimpleRelease(1)

	// Posted before the rank expected it: the slot, copied by the rank.
	if proxyPost(fill(2, 64)) {
		t.Fatal("a slice nobody expected landed")
	}
	dst = make([]byte, 64)
	got, err = rank.SimpleWaitInto(1, dst)
	if err != nil || &got[0] == &dst[0] || !bytes.Equal(got, fill(2, 64)) {
		t.Fatalf("slot slice: err %v, bytes %v", err, got)
	}
	rank.SimpleRelease(1)

	// Expected with another length: not landed; the size check reports it.
	dst = make([]byte, 32)
	rank.SimpleExpect(dst)
	if proxyPost(fill(3, 48)) {
		t.Fatal("a slice of 48 bytes landed in a 32-byte buffer")
	}
	if _, err := rank.SimpleWaitInto(1, dst); err == nil {
		t.Fatal("a 48-byte slice where 32 were expected: no error")
	}

	// A FIFO that is not a network connection's never lands.
	g, _ := proto.NewFifo(proto.Simple, 8*4096, proto.FifoOptions{})
	s, r := proto.NewEnds(g, "plain")
	r.SimpleExpect(make([]byte, 8))
	slot, _ := s.SimpleAcquire(1)
	if _, landed := s.SimpleLanding(slot, 8); landed {
		t.Fatal("an in-process FIFO landed a slice")
	}
}

// TestSimpleExpectAhead: a rank that shows where its next slices go, a
// FIFO's depth ahead, gets every one of them landed even though the proxy
// reads them all before the rank waits for the first; the first memory
// shown for a slice is where it lands, and what SimpleWaitInto hands back.
func TestSimpleExpectAhead(t *testing.T) {
	f, err := proto.NewFifo(proto.Simple, proto.Steps*4096, proto.FifoOptions{Proxied: true})
	if err != nil {
		t.Fatal(err)
	}
	px, rank := proto.NewEnds(f, "ahead")
	const n = 3*proto.Steps + 1 // wraps the ring of expectations three times
	buf := make([]byte, n*100)
	chunk := func(i int) []byte { return buf[i*100 : (i+1)*100] }
	landed := 0
	for first := 0; first < n; first += proto.Steps {
		last := min(first+proto.Steps, n)
		for i := first; i < last; i++ {
			rank.SimpleExpectAhead(i-first, chunk(i))
		}
		// Shown again with other memory: the first showing stands.
		rank.SimpleExpectAhead(0, make([]byte, 100))
		for i := first; i < last; i++ { // the proxy reads every frame first
			slot, err := px.SimpleAcquire(1)
			if err != nil {
				t.Fatal(err)
			}
			dst, ok := px.SimpleLanding(slot, 100)
			for j := range dst {
				dst[j] = byte(i)
			}
			if ok {
				landed++
			}
			px.SimplePostLanded(1, 100, ok)
		}
		for i := first; i < last; i++ {
			got, err := rank.SimpleWaitInto(1, chunk(i))
			if err != nil || &got[0] != &chunk(i)[0] || !bytes.Equal(chunk(i), bytes.Repeat([]byte{byte(i)}, 100)) {
				t.Fatalf("slice %d: err %v, not handed back in place or bytes wrong", i, err)
			}
			rank.SimpleRelease(1)
		}
	}
	if landed != n {
		t.Fatalf("%d of %d slices landed", landed, n)
	}
	// Out of range: ignored.
	rank.SimpleExpectAhead(proto.Steps, make([]byte, 100))
	rank.SimpleExpectAhead(-1, make([]byte, 100))
	slot, _ := px.SimpleAcquire(1)
	if _, ok := px.SimpleLanding(slot, 100); ok {
		t.Fatal("a slice shown out of range landed")
	}
}
