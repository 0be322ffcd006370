package proto

import (
	"encoding/binary"
	"fmt"
	"sync/atomic"
)

// LL protocol: every 8 payload bytes travel in one 16-byte line as two
// 64-bit words {data u32 | flag u32 << 32}; each word is one atomic store,
// so a reader that sees both flags equal to flag(step) has the whole line.
// There is no tail: the flags are the signal. Credits return through head.

func (f *Fifo) llWords(step uint64) []uint64 {
	per := f.StepBytes / 8
	slot := int(step % Steps)
	return f.lines[slot*per : (slot+1)*per]
}

// LLSend waits for one credit and writes data (at most StepData bytes) as
// LL lines of the current step, then advances the step.
func (e *SendEnd) LLSend(data []byte) error {
	f := e.F
	if err := e.waitCredit(1); err != nil {
		return err
	}
	words := f.llWords(e.Step)
	if len(data) > len(words)*4 {
		panic(fmt.Sprintf("proto: LL step of %d bytes exceeds the %d-byte step", len(data), len(words)*4))
	}
	flag := uint64(f.ll.flag(e.Step)) << 32
	f.ctl.sizes[e.Step%Steps].Store(int64(len(data)))
	w := StoreLines(words, data, flag)
	if e.Step&f.ll.Clean == f.ll.Clean {
		// Refresh every other line of the slot so no flag grows stale enough
		// to alias a future step once the flag space wraps.
		for ; w < len(words); w += 2 {
			storeRelaxed64(&words[w], flag)
			storeRelaxed64(&words[w+1], flag)
		}
	}
	if w > 0 {
		// Store the last word again with a full barrier: the wake check
		// below loads Waiter.sleeping, and that load must not pass the
		// line stores (the Dekker pair with the receiver going to sleep).
		atomic.StoreUint64(&words[w-1], words[w-1])
	}
	if f.log != nil {
		f.logPost(e.Step, 1, len(data)) // after the lines: the log's store releases them
	}
	e.Step++
	f.wakeReceiver()
	return nil
}

// LLRecv waits for the lines of the current step, copies len(dst) payload
// bytes into dst, returns the credit and advances the step.
func (e *RecvEnd) LLRecv(dst []byte) error {
	f := e.F
	words := f.llWords(e.Step)
	flag := f.ll.flag(e.Step)
	n := len(dst)
	if n > LLDataPerLine {
		// Wait for the step's last line first: the sender writes lines in
		// order, so the sweep below then finds every flag already set,
		// instead of polling each line while the sender is still writing
		// its cache line (one coherence round trip per step, not per line).
		// Every line's flags are still checked.
		last := (n - 1) / LLDataPerLine * 2
		if err := e.waitLLLine(n, words, last, flag); err != nil {
			return err
		}
	}
	for i, w := 0, 0; i < n; i, w = i+LLDataPerLine, w+2 {
		w0 := atomic.LoadUint64(&words[w])
		w1 := atomic.LoadUint64(&words[w+1])
		if uint32(w0>>32) != flag || uint32(w1>>32) != flag {
			ready := func() bool {
				w0 = atomic.LoadUint64(&words[w])
				w1 = atomic.LoadUint64(&words[w+1])
				return uint32(w0>>32) == flag && uint32(w1>>32) == flag
			}
			if err := f.waitRecv(f.From, n, ready, func() string {
				return fmt.Sprintf("%s data (LL step %d, line %d, flag %#x)", e.Desc, e.Step, w/2, flag)
			}); err != nil {
				return err
			}
		}
		LinePayload(dst[i:], w0, w1)
	}
	if n > 0 {
		if err := e.checkSize(int(e.Step%Steps), n); err != nil {
			return err
		}
	}
	e.release(1)
	return nil
}

// waitLLLine waits until both words of the line at word index w carry
// flag, in a step of n payload bytes.
func (e *RecvEnd) waitLLLine(n int, words []uint64, w int, flag uint32) error {
	ready := func() bool {
		return uint32(atomic.LoadUint64(&words[w])>>32) == flag && uint32(atomic.LoadUint64(&words[w+1])>>32) == flag
	}
	if ready() {
		return nil
	}
	f := e.F
	return f.waitRecv(f.From, n, ready, func() string {
		return fmt.Sprintf("%s data (LL step %d, line %d, flag %#x)", e.Desc, e.Step, w/2, flag)
	})
}

// StoreWord stores one LL word (data and flag) as the LL senders do: one
// plain 8-byte store on amd64 (ordered by x86's total store order), a
// sequentially consistent one elsewhere and under the race detector. For
// other LL-line writers (lib/board).
func StoreWord(addr *uint64, v uint64) { storeRelaxed64(addr, v) }

// StoreLines writes data as LL lines into words, 8 payload bytes per line
// (the last one zero-padded), each word {4 data bytes | flag}, flag already
// shifted to the high half; it returns the words written. Each word is one
// StoreWord, in order.
func StoreLines(words []uint64, data []byte, flag uint64) int {
	n := len(data)
	full := n / LLDataPerLine
	w, i := 2*full, full*LLDataPerLine
	if full > 0 {
		_ = words[w-1] // the words hold the lines (bounds check)
		storeFullLines(&words[0], &data[0], full, flag)
	}
	if i < n {
		var tail [LLDataPerLine]byte
		copy(tail[:], data[i:])
		v := binary.LittleEndian.Uint64(tail[:])
		storeRelaxed64(&words[w], v&0xffffffff|flag)
		storeRelaxed64(&words[w+1], v>>32|flag)
		w += 2
	}
	return w
}

// LinePayload copies the payload of the LL line (w0, w1) into dst: 8
// bytes, or fewer when dst is shorter (the last line of a message).
func LinePayload(dst []byte, w0, w1 uint64) {
	v := w0&0xffffffff | w1<<32
	if len(dst) >= LLDataPerLine {
		binary.LittleEndian.PutUint64(dst, v)
		return
	}
	var tail [LLDataPerLine]byte
	binary.LittleEndian.PutUint64(tail[:], v)
	copy(dst, tail[:])
}
