package proto

import "fmt"

// Simple protocol: payload goes straight into the slot buffer; the sender
// publishes a slice of steps by storing tail (release) after the data and
// the size; the receiver waits for tail, reads in place, then stores head.
// A slice of n steps occupies n consecutive slots; AlignStep keeps it from
// wrapping past the end of the buffer.

// SimpleAcquire waits for credits for a slice of steps steps and returns the
// slice's buffer (steps*StepBytes bytes) to write into.
func (e *SendEnd) SimpleAcquire(steps int) ([]byte, error) {
	if err := e.waitCredit(steps); err != nil {
		return nil, err
	}
	f := e.F
	slot := int(e.Step % Steps)
	return f.buf[slot*f.StepBytes : (slot+steps)*f.StepBytes], nil
}

// SimplePost publishes nbytes written into the acquired slice and advances
// the step by steps.
func (e *SendEnd) SimplePost(steps, nbytes int) {
	f := e.F
	if f.direct {
		f.refs[e.Step%Steps] = nil
	}
	f.ctl.sizes[e.Step%Steps].Store(int64(nbytes))
	if f.log != nil {
		f.logPost(e.Step, steps, nbytes)
	}
	e.Step += uint64(steps)
	f.ctl.tail.Store(e.Step)
	f.wakeReceiver()
}

// SimplePostRef publishes, for an acquired slice of steps steps, data (the
// sender's own memory) in place of the slot's bytes: the receiver reads
// data itself, which saves one copy on each side. The sender must leave
// data unchanged until Drain returns. Only on a Direct FIFO.
func (e *SendEnd) SimplePostRef(steps int, data []byte) {
	f := e.F
	if !f.direct {
		panic("proto: SimplePostRef on a FIFO that is not Direct")
	}
	f.refs[e.Step%Steps] = data
	e.lent = true
	f.ctl.sizes[e.Step%Steps].Store(int64(len(data)))
	if f.log != nil {
		f.logPost(e.Step, steps, len(data))
	}
	e.Step += uint64(steps)
	f.ctl.tail.Store(e.Step)
	f.wakeReceiver()
}

// Drain waits until the receiver has released every slice this end posted
// by reference, so the memory they point to may change: a rank calls it
// before its part of an operation counts as done. Nothing to wait for when
// nothing was lent.
func (e *SendEnd) Drain() error {
	if !e.lent {
		return nil
	}
	f := e.F
	ready := func() bool { return f.ctl.head.Load() >= e.Step }
	if !ready() {
		if err := f.waitSend(f.To, ready, func() string {
			return fmt.Sprintf("%s to finish reading the sender's buffer (Simple step %d, head %d)", e.Desc, e.Step, f.ctl.head.Load())
		}); err != nil {
			return err
		}
	}
	f.refs = [Steps][]byte{} // every slot is the sender's again; let the memory go
	e.lent = false
	return nil
}

// SimpleWait waits for the slice of steps steps starting at e.Step and
// returns its first nbytes bytes, after checking the sender sent nbytes.
func (e *RecvEnd) SimpleWait(steps, nbytes int) ([]byte, error) {
	f := e.F
	need := e.Step + uint64(steps)
	ready := func() bool { return f.ctl.tail.Load() >= need }
	if !ready() {
		if err := f.waitRecv(f.From, nbytes, ready, func() string {
			return fmt.Sprintf("%s data (Simple step %d, tail %d)", e.Desc, e.Step, f.ctl.tail.Load())
		}); err != nil {
			return nil, err
		}
	}
	slot := int(e.Step % Steps)
	if err := e.checkSize(slot, nbytes); err != nil {
		return nil, err
	}
	if f.direct {
		if r := f.refs[slot]; r != nil {
			return r[:nbytes], nil
		}
	}
	return f.buf[slot*f.StepBytes : slot*f.StepBytes+nbytes], nil
}

// SimpleExpect shows a network proxy where the next slice's bytes go in
// the caller's memory (dst, exactly the slice's bytes), so that it may read
// them off the socket straight into dst. It does nothing unless the FIFO
// is the receiving end of a network connection (Simple, Proxied). dst
// must stay the caller's until the slice is waited for (SimpleWaitInto).
func (e *RecvEnd) SimpleExpect(dst []byte) { e.SimpleExpectAhead(0, dst) }

// SimpleExpectAhead is SimpleExpect for the slice that starts ahead steps
// after the next one (0 <= ahead < Steps): a rank that knows where its
// next slices go shows them all, so the proxy, which reads ahead of the
// rank, lands them too. The first memory shown for a slice is where it
// lands.
func (e *RecvEnd) SimpleExpectAhead(ahead int, dst []byte) {
	f := e.F
	if f.log == nil || f.Proto != Simple || ahead < 0 || ahead >= Steps {
		return
	}
	step := e.Step + uint64(ahead)
	i := step % Steps
	if f.landStep[i].Load() == step+1 {
		return
	}
	f.landRef[i] = dst
	f.landStep[i].Store(step + 1)
}

// SimpleWaitInto is SimpleWait for a slice whose bytes go to dst: it
// expects them there first (SimpleExpect) and returns dst itself when the
// proxy put them there, else the slot to copy from (CopyUnlessSame).
func (e *RecvEnd) SimpleWaitInto(steps int, dst []byte) ([]byte, error) {
	e.SimpleExpect(dst)
	b, err := e.SimpleWait(steps, len(dst))
	if err != nil {
		return nil, err
	}
	f := e.F
	if f.log != nil {
		i := e.Step % Steps
		ref := f.landRef[i]
		f.landRef[i] = nil // the proxy is done with it: let the memory go
		if f.landed[i] {
			// Where the slice was expected first: dst itself, unless an
			// earlier SimpleExpectAhead named other memory for it.
			return ref, nil
		}
	}
	return b, nil
}

// SimpleLanding is where a proxy reads the slice of steps at e.Step,
// nbytes long, into: the receiving rank's own memory when it expects
// exactly this slice (SimpleExpect), else slot. landed says which; pass it
// to SimplePostLanded.
func (e *SendEnd) SimpleLanding(slot []byte, nbytes int) (dst []byte, landed bool) {
	if e.SimpleExpected(0, nbytes) {
		return e.F.landRef[e.Step%Steps], true
	}
	return slot[:nbytes], false
}

// SimpleExpected reports whether the rank has shown where the slice that
// starts ahead steps after e.Step goes, nbytes long (0 <= ahead < Steps):
// SimpleLanding will land it there.
func (e *SendEnd) SimpleExpected(ahead, nbytes int) bool {
	f := e.F
	if ahead < 0 || ahead >= Steps {
		return false
	}
	step := e.Step + uint64(ahead)
	i := step % Steps
	return f.landStep[i].Load() == step+1 && len(f.landRef[i]) == nbytes
}

// SimplePostLanded is SimplePost for a slice read where SimpleLanding said.
func (e *SendEnd) SimplePostLanded(steps, nbytes int, landed bool) {
	e.F.landed[e.Step%Steps] = landed
	e.SimplePost(steps, nbytes)
}

// SimpleRelease hands the slice's slots back to the sender.
func (e *RecvEnd) SimpleRelease(steps int) { e.release(steps) }
