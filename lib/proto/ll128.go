package proto

import (
	"fmt"
	"sync/atomic"
	"unsafe"
)

// LL128 protocol: 128-byte lines of 15 payload words and one flag word in
// the last 8 bytes. The sender writes the payload with plain stores, then
// stores the flag (release); the receiver loads the flag (acquire), then the
// payload. The flag is the full 64-bit step+1, so it never wraps.

func (f *Fifo) ll128Words(step uint64) []uint64 {
	per := f.StepBytes / 8
	slot := int(step % Steps)
	return f.lines[slot*per : (slot+1)*per]
}

// wordBytes views words as bytes (little-endian machine order).
func wordBytes(words []uint64) []byte {
	if len(words) == 0 {
		return nil
	}
	return unsafe.Slice((*byte)(unsafe.Pointer(&words[0])), len(words)*8)
}

// LL128Send waits for one credit and writes data (at most StepData bytes) as
// LL128 lines of the current step, then advances the step.
func (e *SendEnd) LL128Send(data []byte) error {
	f := e.F
	if err := e.waitCredit(1); err != nil {
		return err
	}
	words := f.ll128Words(e.Step)
	if len(data) > len(words)/LL128LineWords*LL128DataPerLine {
		panic(fmt.Sprintf("proto: LL128 step of %d bytes exceeds the step", len(data)))
	}
	raw := wordBytes(words)
	flag := e.Step + 1
	f.ctl.sizes[e.Step%Steps].Store(int64(len(data)))
	last := -1
	for i, w := 0, 0; i < len(data); i, w = i+LL128DataPerLine, w+LL128LineWords {
		end := min(i+LL128DataPerLine, len(data))
		copy(raw[w*8:], data[i:end])
		storeRelaxed64(&words[w+LL128DataWords], flag) // release: after the line's data
		last = w + LL128DataWords
	}
	if last >= 0 {
		// A full barrier before the wake check (see LLSend).
		atomic.StoreUint64(&words[last], flag)
	}
	if f.log != nil {
		f.logPost(e.Step, 1, len(data)) // after the lines: the log's store releases them
	}
	e.Step++
	f.wakeReceiver()
	return nil
}

// LL128Recv waits for the lines of the current step, copies len(dst) payload
// bytes into dst, returns the credit and advances the step.
func (e *RecvEnd) LL128Recv(dst []byte) error {
	f := e.F
	words := f.ll128Words(e.Step)
	raw := wordBytes(words)
	flag := e.Step + 1
	if len(dst) > LL128DataPerLine {
		// Wait for the last line first (see LLRecv); every flag is still checked.
		last := &words[(len(dst)-1)/LL128DataPerLine*LL128LineWords+LL128DataWords]
		if atomic.LoadUint64(last) != flag {
			ready := func() bool { return atomic.LoadUint64(last) == flag }
			if err := f.waitRecv(f.From, len(dst), ready, func() string {
				return fmt.Sprintf("%s data (LL128 step %d, last line)", e.Desc, e.Step)
			}); err != nil {
				return err
			}
		}
	}
	for i, w := 0, 0; i < len(dst); i, w = i+LL128DataPerLine, w+LL128LineWords {
		fw := &words[w+LL128DataWords]
		if atomic.LoadUint64(fw) != flag {
			ready := func() bool { return atomic.LoadUint64(fw) == flag }
			if err := f.waitRecv(f.From, len(dst), ready, func() string {
				return fmt.Sprintf("%s data (LL128 step %d, line %d)", e.Desc, e.Step, w/LL128LineWords)
			}); err != nil {
				return err
			}
		}
		end := min(i+LL128DataPerLine, len(dst))
		copy(dst[i:end], raw[w*8:])
	}
	if len(dst) > 0 {
		if err := e.checkSize(int(e.Step%Steps), len(dst)); err != nil {
			return err
		}
	}
	e.release(1)
	return nil
}
