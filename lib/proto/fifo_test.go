package proto_test

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
	"unsafe"

	"github.com/gccl/gccl/lib/proto"
)

// Small valid buffers (8 steps each) keep the tests quick and make the
// slots wrap often.
const (
	smallLL     = proto.Steps * 8 * proto.LLLineBytes     // 8 lines a step: 64 B of payload
	smallLL128  = proto.Steps * 16 * proto.LL128LineBytes // 16 lines a step: 1920 B of payload
	smallSimple = proto.Steps * 512                       // 512 B a step
	waitTimeout = 5 * time.Second                         // generous: only a hang trips it
	pollLimit   = 10 * time.Second                        // test-side polling deadline
)

// newFifo makes a FIFO whose two waiters share one abort signal (so a
// failing end can release the other) and whose Overrun hook counts.
func newFifo(t testing.TB, p proto.Protocol, size int, opt proto.FifoOptions) (*proto.Fifo, *proto.SendEnd, *proto.RecvEnd, *proto.Abort, *atomic.Int64) {
	t.Helper()
	f, err := proto.NewFifo(p, size, opt)
	if err != nil {
		t.Fatalf("NewFifo(%v, %d): %v", p, size, err)
	}
	abort := proto.NewAbort()
	f.RecvWaiter = proto.NewWaiter(abort, waitTimeout)
	f.SendWaiter = proto.NewWaiter(abort, waitTimeout)
	overruns := new(atomic.Int64)
	f.Overrun = func(step, head uint64) { overruns.Add(1) }
	s, r := proto.NewEnds(f, "test conn")
	if s.Step != opt.StartStep || r.Step != opt.StartStep || f.Head() != opt.StartStep || f.Tail() != opt.StartStep {
		t.Fatalf("ends start at %d/%d, head %d tail %d, want %d", s.Step, r.Step, f.Head(), f.Tail(), opt.StartStep)
	}
	return f, s, r, abort, overruns
}

// aligned returns n zero bytes aligned to 64.
func aligned(n int) []byte {
	b := make([]byte, n+64)
	off := (64 - int(uintptr(unsafe.Pointer(&b[0]))%64)) % 64
	return b[off : off+n]
}

// newSplitFifo is newFifo with the sender and the receiver on two Fifo
// values over the same memory, each end's waiter asleep on its own bell
// and the other end's waiter a RemoteWaiter of that bell: what two
// processes sharing a segment have.
func newSplitFifo(t testing.TB, p proto.Protocol, size int, opt proto.FifoOptions) (*proto.Fifo, *proto.SendEnd, *proto.RecvEnd, *proto.Abort, *atomic.Int64) {
	t.Helper()
	mem := aligned(proto.FifoBytes(size))
	fs, err := proto.NewFifoAt(p, size, opt, mem, true)
	if err != nil {
		t.Fatalf("NewFifoAt(%v, %d): %v", p, size, err)
	}
	fr, err := proto.NewFifoAt(p, size, opt, mem, false)
	if err != nil {
		t.Fatal(err)
	}
	abort := proto.NewAbort()
	sendBell, recvBell := proto.BellAt(aligned(proto.BellBytes)), proto.BellAt(aligned(proto.BellBytes))
	abort.OnTrigger(sendBell.Interrupt)
	abort.OnTrigger(recvBell.Interrupt)
	fs.SendWaiter = proto.NewBellWaiter(abort, waitTimeout, sendBell)
	fs.RecvWaiter = proto.RemoteWaiter(recvBell)
	fr.RecvWaiter = proto.NewBellWaiter(abort, waitTimeout, recvBell)
	fr.SendWaiter = proto.RemoteWaiter(sendBell)
	overruns := new(atomic.Int64)
	fs.Overrun = func(step, head uint64) { overruns.Add(1) }
	s, _ := proto.NewEnds(fs, "test conn")
	_, r := proto.NewEnds(fr, "test conn")
	if fr.Head() != opt.StartStep || fr.Tail() != opt.StartStep {
		t.Fatalf("receiver's view: head %d tail %d, want %d", fr.Head(), fr.Tail(), opt.StartStep)
	}
	return fs, s, r, abort, overruns
}

// payload is the deterministic content of a step: distinct for every step.
func payload(step uint64, n int) []byte {
	b := make([]byte, (n+7)/8*8)
	x := splitmix(step ^ 0xdeadbeef)
	for i := 0; i < len(b); i += 8 {
		x = splitmix(x)
		binary.LittleEndian.PutUint64(b[i:], x)
	}
	return b[:n]
}

func splitmix(x uint64) uint64 {
	x += 0x9e3779b97f4a7c15
	x = (x ^ x>>30) * 0xbf58476d1ce4e5b9
	x = (x ^ x>>27) * 0x94d049bb133111eb
	return x ^ x>>31
}

// randomSize picks a step size in [0, capacity], hitting 0 and full often.
func randomSize(step uint64, capacity int) int {
	h := splitmix(step * 7)
	switch h % 8 {
	case 0:
		return 0
	case 1:
		return capacity
	default:
		return int(h>>8) % (capacity + 1)
	}
}

func firstDiff(a, b []byte) string {
	if len(a) != len(b) {
		return fmt.Sprintf("length %d, want %d", len(a), len(b))
	}
	for i := range a {
		if a[i] != b[i] {
			return fmt.Sprintf("byte %d = %#x, want %#x", i, a[i], b[i])
		}
	}
	return "equal"
}

// streamCfg drives one sender goroutine and one receiver goroutine over a
// FIFO for a number of operations (an operation moves one step, or one
// Simple slice of sliceSteps(op) steps).
type streamCfg struct {
	proto proto.Protocol
	buff  int
	opt   proto.FifoOptions
	ops   int
	// size is the byte count of the operation starting at step (both ends
	// compute it); capacity is what the operation can carry.
	size func(step uint64, capacity int) int
	// sliceSteps is the Simple slice width of operation op (default 1).
	sliceSteps func(op int) int
	// pause, when it returns true for a step, makes the sender wait until the
	// receiver is inside the receive of that step and then dawdle, so the
	// receiver looks at the slot before the sender writes it.
	pause func(step uint64) bool
	// slowRecv makes the receiver wait, before each operation, until the
	// sender is a full FIFO ahead (or done): the sender must fill all 8 slots
	// and then block on credits.
	slowRecv bool
	// pollCan makes both ends poll CanSend/CanRecv instead of blocking; once
	// CanRecv says yes, the receiver checks the whole step on the wire
	// before it receives.
	pollCan bool
	// afterSend runs in the sender goroutine right after each send.
	afterSend func(f *proto.Fifo, step uint64, data []byte) error
	// split gives each end its own Fifo over one piece of memory, and
	// waiters that sleep on bells: the layout of a FIFO shared by two
	// processes (NewFifoAt), run by two goroutines.
	split bool
}

type streamResult struct {
	maxAhead int64 // largest sender step - head seen by the sender
	overruns int64
}

func runStream(t *testing.T, cfg streamCfg) (streamResult, error) {
	t.Helper()
	var (
		f        *proto.Fifo
		s        *proto.SendEnd
		r        *proto.RecvEnd
		abort    *proto.Abort
		overruns *atomic.Int64
	)
	if cfg.split {
		f, s, r, abort, overruns = newSplitFifo(t, cfg.proto, cfg.buff, cfg.opt)
	} else {
		f, s, r, abort, overruns = newFifo(t, cfg.proto, cfg.buff, cfg.opt)
	}
	width := func(op int) int {
		if cfg.proto != proto.Simple || cfg.sliceSteps == nil {
			return 1
		}
		return cfg.sliceSteps(op)
	}
	var (
		published  atomic.Uint64 // sender's step after each send
		senderDone atomic.Bool
		recvAt     atomic.Uint64 // 1 + the step the receiver is receiving
		res        streamResult
		sendErr    error
		recvErr    error
		wg         sync.WaitGroup
	)
	published.Store(s.Step)
	fail := func(err error) error {
		abort.Trigger(err)
		return err
	}
	wg.Add(2)
	go func() { // sender
		defer wg.Done()
		defer senderDone.Store(true)
		for op := 0; op < cfg.ops; op++ {
			k := width(op)
			if cfg.proto == proto.Simple {
				s.AlignStep(k)
			}
			step := s.Step
			capacity := k * s.F.StepData()
			data := payload(step, cfg.size(step, capacity))
			if cfg.pause != nil && cfg.pause(step) {
				deadline := time.Now().Add(pollLimit)
				for recvAt.Load() < step+1 && !abort.Aborted() {
					if time.Now().After(deadline) {
						sendErr = fail(fmt.Errorf("receiver never reached step %d", step))
						return
					}
					runtime.Gosched()
				}
				time.Sleep(time.Millisecond)
			}
			if cfg.pollCan {
				deadline := time.Now().Add(pollLimit)
				for !s.CanSend(k) {
					if time.Now().After(deadline) || abort.Aborted() {
						sendErr = fail(fmt.Errorf("CanSend(%d) never true at step %d, head %d", k, step, f.Head()))
						return
					}
					runtime.Gosched()
				}
			}
			var err error
			switch cfg.proto {
			case proto.LL:
				err = s.LLSend(data)
			case proto.LL128:
				err = s.LL128Send(data)
			case proto.Simple:
				var buf []byte
				buf, err = s.SimpleAcquire(k)
				if err == nil {
					if len(buf) != k*f.StepBytes {
						err = fmt.Errorf("SimpleAcquire(%d) returned %d bytes, want %d", k, len(buf), k*f.StepBytes)
						break
					}
					copy(buf, data)
					s.SimplePost(k, len(data))
				}
			}
			if err != nil {
				sendErr = fail(fmt.Errorf("send op %d step %d: %w", op, step, err))
				return
			}
			if s.Step != step+uint64(k) {
				sendErr = fail(fmt.Errorf("send op %d: step %d -> %d, want +%d", op, step, s.Step, k))
				return
			}
			published.Store(s.Step)
			// Head only grows, so the distance seen now bounds the distance
			// at the time of the write from above.
			ahead := int64(s.Step - f.Head())
			if ahead > proto.Steps {
				sendErr = fail(fmt.Errorf("send op %d: sender at step %d, head %d: %d steps ahead", op, s.Step, f.Head(), ahead))
				return
			}
			res.maxAhead = max(res.maxAhead, ahead)
			if got := f.Size(int(step % proto.Steps)); got != int64(len(data)) {
				sendErr = fail(fmt.Errorf("send op %d step %d: Size = %d, want %d", op, step, got, len(data)))
				return
			}
			if cfg.afterSend != nil {
				if err := cfg.afterSend(f, step, data); err != nil {
					sendErr = fail(fmt.Errorf("send op %d step %d: %w", op, step, err))
					return
				}
			}
		}
	}()
	go func() { // receiver
		defer wg.Done()
		dst := make([]byte, 2*f.StepData())
		for op := 0; op < cfg.ops; op++ {
			k := width(op)
			if cfg.proto == proto.Simple {
				r.AlignStep(k)
			}
			step := r.Step
			capacity := k * f.StepData()
			n := cfg.size(step, capacity)
			if cfg.slowRecv {
				deadline := time.Now().Add(pollLimit)
				// Wait until the sender cannot start another operation
				// (it needs head + Steps >= its step + k).
				for published.Load()+uint64(k) <= f.Head()+proto.Steps && !senderDone.Load() {
					if time.Now().After(deadline) {
						recvErr = fail(fmt.Errorf("sender never filled the FIFO: receiver at step %d, sender at %d", step, published.Load()))
						return
					}
					time.Sleep(20 * time.Microsecond)
				}
			}
			if p := published.Load(); int64(p-r.Step) > proto.Steps {
				recvErr = fail(fmt.Errorf("recv op %d: sender published step %d with the receiver at %d", op, p, r.Step))
				return
			}
			recvAt.Store(step + 1)
			if cfg.pollCan {
				deadline := time.Now().Add(pollLimit)
				for !r.CanRecv(k, n) {
					if time.Now().After(deadline) || abort.Aborted() {
						recvErr = fail(fmt.Errorf("CanRecv(%d, %d) never true at step %d", k, n, step))
						return
					}
					runtime.Gosched()
				}
				if err := checkArrived(f, step, k, n); err != nil {
					recvErr = fail(fmt.Errorf("recv op %d step %d: CanRecv(%d, %d) was true but %w", op, step, k, n, err))
					return
				}
			}
			var got []byte
			var err error
			switch cfg.proto {
			case proto.LL:
				got = dst[:n]
				err = r.LLRecv(got)
			case proto.LL128:
				got = dst[:n]
				err = r.LL128Recv(got)
			case proto.Simple:
				got, err = r.SimpleWait(k, n)
			}
			if err != nil {
				recvErr = fail(fmt.Errorf("recv op %d step %d: %w", op, step, err))
				return
			}
			if want := payload(step, n); !bytes.Equal(got, want) {
				recvErr = fail(fmt.Errorf("recv op %d step %d (%d bytes): data mismatch: %s", op, step, n, firstDiff(got, want)))
				return
			}
			if cfg.proto == proto.Simple {
				r.SimpleRelease(k)
			}
			if r.Step != step+uint64(k) || f.Head() != r.Step {
				recvErr = fail(fmt.Errorf("recv op %d: step %d head %d, want %d", op, r.Step, f.Head(), step+uint64(k)))
				return
			}
		}
	}()
	wg.Wait()
	res.overruns = overruns.Load()
	// The first failure is the cause; the other end then sees the abort.
	switch {
	case recvErr != nil && !errors.Is(recvErr, proto.ErrAborted):
		return res, recvErr
	case sendErr != nil && !errors.Is(sendErr, proto.ErrAborted):
		return res, sendErr
	case recvErr != nil:
		return res, recvErr
	case sendErr != nil:
		return res, sendErr
	}
	if s.Step != r.Step {
		return res, fmt.Errorf("ends stopped at send step %d, recv step %d", s.Step, r.Step)
	}
	return res, nil
}

func protoBuff(p proto.Protocol) int {
	switch p {
	case proto.LL:
		return smallLL
	case proto.LL128:
		return smallLL128
	default:
		return smallSimple
	}
}

// TestCreditsNeverOverrun runs a fast sender against a slow receiver that
// only receives once the sender is a full FIFO ahead: the sender must get
// exactly 8 steps ahead and never more, and the Overrun hook never fires.
func TestCreditsNeverOverrun(t *testing.T) {
	starts := []uint64{0, 3, 1<<32 - 5}
	for _, p := range proto.All() {
		for _, width := range []int{1, 2} {
			if p != proto.Simple && width == 2 {
				continue
			}
			for _, start := range starts {
				t.Run(fmt.Sprintf("%v/slice%d/start%d", p, width, start), func(t *testing.T) {
					res, err := runStream(t, streamCfg{
						proto: p, buff: protoBuff(p), opt: proto.FifoOptions{StartStep: start, LLFlags: proto.TestLLFlags},
						ops: 120,
						// No empty steps: an empty LL/LL128 receive does not wait
						// for the sender, so it could run ahead of it.
						size:       func(step uint64, c int) int { return 1 + randomSize(step, c-1) },
						sliceSteps: func(int) int { return width },
						slowRecv:   true,
					})
					if err != nil {
						t.Fatal(err)
					}
					if res.overruns != 0 {
						t.Fatalf("Overrun hook fired %d times", res.overruns)
					}
					if res.maxAhead != proto.Steps {
						t.Fatalf("sender got at most %d steps ahead, want exactly %d", res.maxAhead, proto.Steps)
					}
				})
			}
		}
	}
}

// TestStreamAllProtocols streams thousands of steps of random sizes
// (including empty and full steps) through every protocol with a free-running
// receiver, from several start steps (some near the 2^32 wrap of LL flags).
func TestStreamAllProtocols(t *testing.T) {
	starts := []uint64{0, 5, 256*7 - 3, 1<<32 - 37}
	for _, p := range proto.All() {
		for _, start := range starts {
			t.Run(fmt.Sprintf("%v/start%d", p, start), func(t *testing.T) {
				res, err := runStream(t, streamCfg{
					proto: p, buff: protoBuff(p), opt: proto.FifoOptions{StartStep: start},
					ops:        2000,
					size:       randomSize,
					sliceSteps: func(op int) int { return 1 + op/7%2 }, // runs of 1- and 2-step slices
				})
				if err != nil {
					t.Fatal(err)
				}
				if res.overruns != 0 {
					t.Fatalf("Overrun hook fired %d times", res.overruns)
				}
			})
		}
	}
}

// TestStreamSplitViews streams through FIFOs whose two ends are separate
// views of one memory, waking each other through bells (futexes), with a
// free-running and with a slow receiver (which makes the sender sleep).
func TestStreamSplitViews(t *testing.T) {
	for _, p := range proto.All() {
		for _, start := range []uint64{0, 1<<32 - 37} {
			for _, slow := range []bool{false, true} {
				t.Run(fmt.Sprintf("%v/start%d/slow%v", p, start, slow), func(t *testing.T) {
					res, err := runStream(t, streamCfg{
						proto: p, buff: protoBuff(p), opt: proto.FifoOptions{StartStep: start},
						ops:  600,
						size: func(step uint64, c int) int { return 1 + randomSize(step, c-1) },
						// A slow receiver waits for a full FIFO, which a sender
						// aligning to a 2-step slice never makes: 1-step slices.
						sliceSteps: func(op int) int { return 1 + op/7%2*btoi(!slow) },
						slowRecv:   slow,
						split:      true,
					})
					if err != nil {
						t.Fatal(err)
					}
					if res.overruns != 0 {
						t.Fatalf("Overrun hook fired %d times", res.overruns)
					}
				})
			}
		}
	}
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}

// TestBellWaiterAbortAndTimeout: a waiter asleep on a bell returns on abort
// (promptly, not after its nap) and times out with the wait's description.
func TestBellWaiterAbortAndTimeout(t *testing.T) {
	abort := proto.NewAbort()
	bell := proto.BellAt(aligned(proto.BellBytes))
	abort.OnTrigger(bell.Interrupt)
	w := proto.NewBellWaiter(abort, 0, bell)
	done := make(chan error, 1)
	go func() { done <- w.Park(func() bool { return false }, func() string { return "nothing" }) }()
	time.Sleep(20 * time.Millisecond)
	abort.Trigger(errors.New("test abort"))
	select {
	case err := <-done:
		if !errors.Is(err, proto.ErrAborted) || !strings.Contains(err.Error(), "test abort") {
			t.Fatalf("want the abort's error, got %v", err)
		}
	case <-time.After(500 * time.Millisecond):
		t.Fatal("a waiter asleep on its bell did not see the abort within 500 ms")
	}
	w2 := proto.NewBellWaiter(proto.NewAbort(), 30*time.Millisecond, proto.BellAt(aligned(proto.BellBytes)))
	err := w2.Park(func() bool { return false }, func() string { return "the answer" })
	if !errors.Is(err, proto.ErrTimeout) || !strings.Contains(err.Error(), "the answer") {
		t.Fatalf("want a timeout naming the wait, got %v", err)
	}
}

// TestFifoAbortWakesBlockedEnds: a receiver waiting for data and a sender
// waiting for credits both return ErrAborted (wrapped) once the abort fires.
func TestFifoAbortWakesBlockedEnds(t *testing.T) {
	for _, p := range proto.All() {
		t.Run(p.String(), func(t *testing.T) {
			before := runtime.NumGoroutine()
			f, s, r, abort, _ := newFifo(t, p, protoBuff(p), proto.FifoOptions{StartStep: 1<<32 - 2})
			send := func() error {
				switch p {
				case proto.LL:
					return s.LLSend([]byte("12345678"))
				case proto.LL128:
					return s.LL128Send([]byte("12345678"))
				}
				buf, err := s.SimpleAcquire(1)
				if err == nil {
					copy(buf, "12345678")
					s.SimplePost(1, 8)
				}
				return err
			}
			recv := func() error {
				switch p {
				case proto.LL:
					return r.LLRecv(make([]byte, 8))
				case proto.LL128:
					return r.LL128Recv(make([]byte, 8))
				}
				_, err := r.SimpleWait(1, 8)
				return err
			}
			recvDone := make(chan error, 1)
			go func() { recvDone <- recv() }()
			time.Sleep(20 * time.Millisecond) // let it park (the test holds either way)
			abort.Trigger(errors.New("test abort"))
			select {
			case err := <-recvDone:
				if !errors.Is(err, proto.ErrAborted) || !strings.Contains(err.Error(), "test abort") {
					t.Fatalf("receiver returned %v, want ErrAborted with the cause", err)
				}
			case <-time.After(2 * time.Second):
				t.Fatalf("receiver still blocked after the abort")
			}

			// A fresh FIFO: fill all 8 slots, then the 9th send must block
			// until the abort.
			f, s, r, abort, _ = newFifo(t, p, protoBuff(p), proto.FifoOptions{StartStep: 1<<32 - 2})
			_ = r
			for i := 0; i < proto.Steps; i++ {
				if err := send(); err != nil {
					t.Fatalf("send %d: %v", i, err)
				}
			}
			sendDone := make(chan error, 1)
			go func() { sendDone <- send() }()
			select {
			case err := <-sendDone:
				t.Fatalf("9th send without credits returned %v", err)
			case <-time.After(20 * time.Millisecond):
			}
			abort.Trigger(nil)
			select {
			case err := <-sendDone:
				if !errors.Is(err, proto.ErrAborted) {
					t.Fatalf("sender returned %v, want ErrAborted", err)
				}
			case <-time.After(2 * time.Second):
				t.Fatalf("sender still blocked after the abort")
			}
			if f.Head() != 1<<32-2 {
				t.Fatalf("head moved without a receiver: %d", f.Head())
			}
			waitGoroutines(t, before)
		})
	}
}

// TestFifoTimeout: a receiver with nothing to receive and a sender with no
// credits time out with ErrTimeout and a message naming the connection.
func TestFifoTimeout(t *testing.T) {
	for _, p := range proto.All() {
		t.Run(p.String(), func(t *testing.T) {
			f, s, r, _, _ := newFifo(t, p, protoBuff(p), proto.FifoOptions{})
			f.RecvWaiter.Timeout = 50 * time.Millisecond
			f.SendWaiter.Timeout = 50 * time.Millisecond
			var err error
			start := time.Now()
			switch p {
			case proto.LL:
				err = r.LLRecv(make([]byte, 24))
			case proto.LL128:
				err = r.LL128Recv(make([]byte, 200))
			default:
				_, err = r.SimpleWait(1, 24)
			}
			if !errors.Is(err, proto.ErrTimeout) || !strings.Contains(err.Error(), "test conn") {
				t.Fatalf("receive with no sender: %v, want ErrTimeout naming the connection", err)
			}
			if el := time.Since(start); el < 50*time.Millisecond || el > 2*time.Second {
				t.Fatalf("receive timed out after %v, want ~50ms", el)
			}
			for i := 0; i < proto.Steps; i++ {
				switch p {
				case proto.LL:
					err = s.LLSend(nil)
				case proto.LL128:
					err = s.LL128Send(nil)
				default:
					_, err = s.SimpleAcquire(1)
					s.SimplePost(1, 0)
				}
				if err != nil {
					t.Fatalf("send %d: %v", i, err)
				}
			}
			switch p {
			case proto.LL:
				err = s.LLSend(nil)
			case proto.LL128:
				err = s.LL128Send(nil)
			default:
				_, err = s.SimpleAcquire(1)
			}
			if !errors.Is(err, proto.ErrTimeout) || !strings.Contains(err.Error(), "credits") {
				t.Fatalf("send without credits: %v, want ErrTimeout about credits", err)
			}
		})
	}
}

// waitGoroutines fails if the goroutine count does not settle back to
// before within a short time.
func waitGoroutines(t *testing.T, before int) {
	t.Helper()
	deadline := time.Now().Add(2 * time.Second)
	for runtime.NumGoroutine() > before {
		if time.Now().After(deadline) {
			buf := make([]byte, 1<<16)
			t.Fatalf("goroutines leaked: %d before, %d after\n%s", before, runtime.NumGoroutine(), buf[:runtime.Stack(buf, true)])
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// rawBytes views the LL/LL128 words as the bytes in memory (the wire).
func rawBytes(words []uint64) []byte {
	return unsafe.Slice((*byte)(unsafe.Pointer(&words[0])), len(words)*8)
}

// checkArrived reads a step straight off the wire, after CanRecv said it
// has fully arrived: every line must carry the step's flag and the payload
// must be the step's.
func checkArrived(f *proto.Fifo, step uint64, k, n int) error {
	want := payload(step, n)
	got := make([]byte, 0, n)
	slot := int(step % proto.Steps)
	switch f.Proto {
	case proto.Simple:
		if tail := f.Tail(); tail < step+uint64(k) {
			return fmt.Errorf("tail is %d", tail)
		}
		got = append(got, f.Buffer()[slot*f.StepBytes:slot*f.StepBytes+n]...)
	case proto.LL:
		per := f.StepBytes / 8
		words := f.Lines()[slot*per : (slot+1)*per]
		for i := 0; len(got) < n; i++ {
			w0 := atomic.LoadUint64(&words[2*i])
			w1 := atomic.LoadUint64(&words[2*i+1])
			if uint32(w0>>32) != uint32(w1>>32) {
				return fmt.Errorf("line %d has flags %#x and %#x", i, w0>>32, w1>>32)
			}
			var b [8]byte
			for j := 0; j < 4; j++ {
				b[j] = byte(w0 >> (8 * j))
				b[4+j] = byte(w1 >> (8 * j))
			}
			got = append(got, b[:min(8, n-len(got))]...)
		}
	case proto.LL128:
		per := f.StepBytes / 8
		words := f.Lines()[slot*per : (slot+1)*per]
		raw := rawBytes(words)
		for i := 0; len(got) < n; i++ {
			if fl := atomic.LoadUint64(&words[i*proto.LL128LineWords+proto.LL128DataWords]); fl != step+1 {
				return fmt.Errorf("line %d has flag %#x, want %#x", i, fl, step+1)
			}
			line := raw[i*proto.LL128LineBytes:]
			got = append(got, line[:min(proto.LL128DataPerLine, n-len(got))]...)
		}
	}
	if !bytes.Equal(got, want) {
		return fmt.Errorf("the wire holds other data: %s", firstDiff(got, want))
	}
	return nil
}

// TestCanSendCanRecvStream streams every protocol with both ends polling
// CanSend/CanRecv instead of blocking.
func TestCanSendCanRecvStream(t *testing.T) {
	for _, p := range proto.All() {
		for _, start := range []uint64{0, 256*2 - 3, 1<<32 - 9} {
			t.Run(fmt.Sprintf("%v/start%d", p, start), func(t *testing.T) {
				res, err := runStream(t, streamCfg{
					proto: p, buff: protoBuff(p), opt: proto.FifoOptions{StartStep: start, LLFlags: proto.TestLLFlags},
					ops:        600,
					size:       llWrapSize,
					sliceSteps: func(op int) int { return 1 + op/3%2 },
					pause:      func(step uint64) bool { return step%256 == 0 },
					pollCan:    true,
				})
				if err != nil {
					t.Fatal(err)
				}
				if res.overruns != 0 {
					t.Fatalf("Overrun hook fired")
				}
			})
		}
	}
}

// TestCanSendCanRecv pins the non-blocking probes on a quiet FIFO.
func TestCanSendCanRecv(t *testing.T) {
	for _, p := range proto.All() {
		t.Run(p.String(), func(t *testing.T) {
			// Not a cleaning step: there LL rewrites every line's flag.
			f, s, r, _, _ := newFifo(t, p, protoBuff(p), proto.FifoOptions{StartStep: 1<<32 + 4})
			send := func(n int) {
				t.Helper()
				var err error
				switch p {
				case proto.LL:
					err = s.LLSend(payload(s.Step, n))
				case proto.LL128:
					err = s.LL128Send(payload(s.Step, n))
				default:
					var buf []byte
					if buf, err = s.SimpleAcquire(1); err == nil {
						copy(buf, payload(s.Step, n))
						s.SimplePost(1, n)
					}
				}
				if err != nil {
					t.Fatal(err)
				}
			}
			n := f.StepData() / 2
			if !s.CanSend(proto.Steps) || s.CanSend(proto.Steps+1) {
				t.Fatalf("fresh FIFO: CanSend(8)=%v CanSend(9)=%v", s.CanSend(proto.Steps), s.CanSend(proto.Steps+1))
			}
			if r.CanRecv(1, n) {
				t.Fatalf("fresh FIFO: CanRecv before any send")
			}
			if p != proto.Simple && !r.CanRecv(1, 0) {
				t.Fatalf("an empty LL/LL128 step needs nothing from the wire")
			}
			send(n)
			if !r.CanRecv(1, n) {
				t.Fatalf("CanRecv false after the send")
			}
			if err := checkArrived(f, r.Step, 1, n); err != nil {
				t.Fatal(err)
			}
			if p != proto.Simple && r.CanRecv(1, f.StepData()) {
				t.Fatalf("CanRecv true for lines that were not sent")
			}
			for i := 1; i < proto.Steps; i++ {
				send(n)
			}
			if s.CanSend(1) {
				t.Fatalf("CanSend true with all 8 slots in flight")
			}
			dst := make([]byte, n)
			switch p {
			case proto.LL:
				_ = r.LLRecv(dst)
			case proto.LL128:
				_ = r.LL128Recv(dst)
			default:
				if _, err := r.SimpleWait(1, n); err != nil {
					t.Fatal(err)
				}
				r.SimpleRelease(1)
			}
			if !s.CanSend(1) || s.CanSend(2) {
				t.Fatalf("after one receive: CanSend(1)=%v CanSend(2)=%v", s.CanSend(1), s.CanSend(2))
			}
		})
	}
}
