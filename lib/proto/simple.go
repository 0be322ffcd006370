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
	f.ctl.sizes[e.Step%Steps].Store(int64(nbytes))
	e.Step += uint64(steps)
	f.ctl.tail.Store(e.Step)
	f.RecvWaiter.Wake()
}

// SimpleWait waits for the slice of steps steps starting at e.Step and
// returns its first nbytes bytes, after checking the sender sent nbytes.
func (e *RecvEnd) SimpleWait(steps, nbytes int) ([]byte, error) {
	f := e.F
	need := e.Step + uint64(steps)
	ready := func() bool { return f.ctl.tail.Load() >= need }
	if !ready() {
		if err := f.RecvWaiter.WaitKick(ready, f.SendKick, func() string {
			return fmt.Sprintf("%s data (Simple step %d, tail %d)", e.Desc, e.Step, f.ctl.tail.Load())
		}); err != nil {
			return nil, err
		}
	}
	slot := int(e.Step % Steps)
	if err := e.checkSize(slot, nbytes); err != nil {
		return nil, err
	}
	return f.buf[slot*f.StepBytes : slot*f.StepBytes+nbytes], nil
}

// SimpleRelease hands the slice's slots back to the sender.
func (e *RecvEnd) SimpleRelease(steps int) { e.release(steps) }
