package proto_test

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/gccl/gccl/lib/proto"
)

func llFlag(space proto.LLFlagSpace, step uint64) uint32 {
	if space.Mask == 0 {
		space = proto.DefaultLLFlags
	}
	return uint32((step + 1) & space.Mask)
}

// checkLLWire checks the bytes of the slot of step after LLSend(data): one
// 16-byte line {data1 u32, flag1 u32, data2 u32, flag2 u32} (little-endian)
// per 8 payload bytes, the last line zero padded, flag = low 32 bits of
// step+1 (masked). Lines after the data keep an older flag, except at a
// cleaning step, where every line of the slot carries the current flag.
func checkLLWire(f *proto.Fifo, space proto.LLFlagSpace, step uint64, data []byte) error {
	if space.Mask == 0 {
		space = proto.DefaultLLFlags
	}
	per := f.StepBytes / 8
	slot := int(step % proto.Steps)
	words := f.Lines()[slot*per : (slot+1)*per]
	raw := rawBytes(words)
	flag := llFlag(space, step)
	padded := make([]byte, (len(data)+7)/8*8)
	copy(padded, data)
	nLines := len(padded) / 8
	for i := 0; i < len(raw)/proto.LLLineBytes; i++ {
		line := raw[i*proto.LLLineBytes : (i+1)*proto.LLLineBytes]
		f1 := binary.LittleEndian.Uint32(line[4:])
		f2 := binary.LittleEndian.Uint32(line[12:])
		if i < nLines {
			d := padded[i*8 : i*8+8]
			if !bytes.Equal(line[0:4], d[0:4]) || !bytes.Equal(line[8:12], d[4:8]) || f1 != flag || f2 != flag {
				return fmt.Errorf("line %d = % x, want data % x / % x and flag %#x", i, line, d[0:4], d[4:8], flag)
			}
			continue
		}
		if step&space.Clean == space.Clean {
			if f1 != flag || f2 != flag {
				return fmt.Errorf("cleaning step %d: line %d has flags %#x/%#x, want %#x", step, i, f1, f2, flag)
			}
		} else if f1 == flag || f2 == flag {
			return fmt.Errorf("line %d after the data carries the current flag %#x", i, flag)
		}
	}
	return nil
}

// TestLLWireFormat sends every size 0..64 (one full step of the smallest
// buffer) and checks the lines byte by byte, then receives them in another
// goroutine.
func TestLLWireFormat(t *testing.T) {
	for _, start := range []uint64{0, 1<<32 - 40} { // the second crosses flag 0 and cleaning steps
		t.Run(fmt.Sprint(start), func(t *testing.T) {
			f, s, r, abort, _ := newFifo(t, proto.LL, smallLL, proto.FifoOptions{StartStep: start})
			if f.StepData() != 64 || f.StepBytes != 128 || len(f.Lines()) != smallLL/8 {
				t.Fatalf("StepData %d StepBytes %d words %d", f.StepData(), f.StepBytes, len(f.Lines()))
			}
			const n = 65
			errc := make(chan error, 1)
			go func() {
				dst := make([]byte, 64)
				for i := 0; i < n; i++ {
					step := r.Step
					if err := r.LLRecv(dst[:i]); err != nil {
						abort.Trigger(err)
						errc <- err
						return
					}
					if want := payload(step, i); !bytes.Equal(dst[:i], want) {
						err := fmt.Errorf("step %d: %s", step, firstDiff(dst[:i], want))
						abort.Trigger(err)
						errc <- err
						return
					}
				}
				errc <- nil
			}()
			cleaned := 0
			for i := 0; i < n; i++ {
				step := s.Step
				data := payload(step, i)
				if err := s.LLSend(data); err != nil {
					t.Fatalf("LLSend step %d: %v", step, err)
				}
				if err := checkLLWire(f, proto.DefaultLLFlags, step, data); err != nil {
					abort.Trigger(err)
					t.Fatalf("step %d (%d bytes): %v", step, i, err)
				}
				if got := f.Size(int(step % proto.Steps)); got != int64(i) {
					t.Fatalf("Size after %d bytes = %d", i, got)
				}
				if step&proto.DefaultLLFlags.Clean == proto.DefaultLLFlags.Clean {
					cleaned++
				}
			}
			if err := <-errc; err != nil {
				t.Fatal(err)
			}
			if start != 0 && cleaned != proto.Steps {
				t.Fatalf("saw %d cleaning steps, want %d", cleaned, proto.Steps)
			}
		})
	}
}

// TestLLFreshLinesNeverMatch: a new FIFO's lines never carry the flag of the
// step the receiver will look for first, whatever the start step.
func TestLLFreshLinesNeverMatch(t *testing.T) {
	for _, space := range []proto.LLFlagSpace{proto.DefaultLLFlags, proto.TestLLFlags} {
		for _, start := range []uint64{0, 1, 7, 8, 255, 256, 1<<32 - 1, 1 << 32, 1<<32 + 3} {
			f, err := proto.NewFifo(proto.LL, smallLL, proto.FifoOptions{StartStep: start, LLFlags: space})
			if err != nil {
				t.Fatal(err)
			}
			per := f.StepBytes / 8
			for step := start; step < start+proto.Steps; step++ {
				slot := int(step % proto.Steps)
				for _, w := range f.Lines()[slot*per : (slot+1)*per] {
					if uint32(w>>32) == llFlag(space, step) {
						t.Fatalf("space %+v start %d: fresh line of slot %d carries flag %#x of step %d", space, start, slot, llFlag(space, step), step)
					}
				}
			}
		}
	}
}

// llWrapSize makes slot 0 carry a full step only every 256 steps and nothing
// in between: without cleaning its lines would still hold flag(s) when step
// s+256 (same flag in TestLLFlags) comes. The other slots carry random sizes.
func llWrapSize(step uint64, capacity int) int {
	if step%proto.Steps == 0 {
		if step%256 == 0 {
			return capacity
		}
		return 0
	}
	return randomSize(step, capacity)
}

// TestLLFlagWrap streams thousands of steps through LL with flags that wrap
// every 256 steps (TestLLFlags), starting just below a multiple of 256 and
// near 2^32, and with the production flags across the 32-bit wrap. The
// sender pauses before each aliasing-prone step until the receiver is
// looking at the slot, and checks the wire and the cleaning rule after every
// send.
func TestLLFlagWrap(t *testing.T) {
	cases := []struct {
		space proto.LLFlagSpace
		start uint64
		ops   int
	}{
		{proto.TestLLFlags, 256*3 - 3, 3000},
		{proto.TestLLFlags, 1<<32 - 5, 3000},
		{proto.TestLLFlags, 256*9 - 8, 2000},
		{proto.DefaultLLFlags, 1<<32 - 700, 1500},
	}
	for _, c := range cases {
		t.Run(fmt.Sprintf("mask%#x/start%d", c.space.Mask, c.start), func(t *testing.T) {
			var cleanSteps atomic.Int64
			res, err := runStream(t, streamCfg{
				proto: proto.LL, buff: smallLL, opt: proto.FifoOptions{StartStep: c.start, LLFlags: c.space},
				ops:   c.ops,
				size:  llWrapSize,
				pause: func(step uint64) bool { return step%256 == 0 },
				afterSend: func(f *proto.Fifo, step uint64, data []byte) error {
					if step&c.space.Clean == c.space.Clean {
						cleanSteps.Add(1)
					}
					return checkLLWire(f, c.space, step, data)
				},
			})
			if err != nil {
				t.Fatal(err)
			}
			if res.overruns != 0 {
				t.Fatalf("Overrun hook fired")
			}
			if cleanSteps.Load() == 0 {
				t.Fatalf("the stream never hit a cleaning step")
			}
		})
	}
}

// TestLLWrapNeedsCleaning is the control experiment for TestLLFlagWrap:
// with a flag space whose cleaning never fires, the same stream must be
// caught reading a stale line whose flag aliases the expected one. It shows
// the stream test is sensitive to the cleaning rule.
func TestLLWrapNeedsCleaning(t *testing.T) {
	noClean := proto.LLFlagSpace{Mask: 0xff, Clean: 1 << 40} // never matches these steps
	_, err := runStream(t, streamCfg{
		proto: proto.LL, buff: smallLL, opt: proto.FifoOptions{LLFlags: noClean},
		ops:   3000,
		size:  llWrapSize,
		pause: func(step uint64) bool { return step%256 == 0 },
	})
	// The stale lines are taken for the new step: the receiver sees either
	// the old data or the old size.
	if err == nil || !strings.Contains(err.Error(), "data mismatch") && !strings.Contains(err.Error(), "sizes differ") {
		t.Fatalf("stream without cleaning: got %v, want a data or size mismatch from an aliased flag", err)
	}
	t.Logf("detected as expected: %v", err)
}

// TestLLSizeMismatch: a receiver that expects fewer bytes than were sent gets
// an error naming both sizes.
func TestLLSizeMismatch(t *testing.T) {
	_, s, r, _, _ := newFifo(t, proto.LL, smallLL, proto.FifoOptions{StartStep: 1<<32 - 1})
	if err := s.LLSend(payload(0, 40)); err != nil {
		t.Fatal(err)
	}
	err := r.LLRecv(make([]byte, 24))
	if err == nil || !strings.Contains(err.Error(), "40") || !strings.Contains(err.Error(), "24") {
		t.Fatalf("LLRecv(24) of a 40-byte step: %v, want an error naming 40 and 24", err)
	}
	if errors.Is(err, proto.ErrTimeout) || errors.Is(err, proto.ErrAborted) {
		t.Fatalf("size mismatch reported as %v", err)
	}
}

// TestLLOversizePanics: a step larger than the slot is a programming error.
func TestLLOversizePanics(t *testing.T) {
	_, s, _, _, _ := newFifo(t, proto.LL, smallLL, proto.FifoOptions{})
	defer func() {
		if recover() == nil {
			t.Fatalf("LLSend of 65 bytes into a 64-byte step did not panic")
		}
	}()
	_ = s.LLSend(make([]byte, 65))
}

// TestStoreLines checks StoreLines word by word against the LL layout,
// for every length from 0 to 5 lines and a bit (whole lines go through
// the assembly on amd64, the last part line through Go), at unaligned
// data starts, and that it writes no word past its lines.
func TestStoreLines(t *testing.T) {
	const flag = uint64(0x9abcdef0) << 32
	src := make([]byte, 64)
	for i := range src {
		src[i] = byte(7*i + 3)
	}
	for start := 0; start < 3; start++ {
		for n := 0; n <= 42; n++ {
			data := src[start : start+n]
			words := make([]uint64, 16)
			for i := range words {
				words[i] = 0x5555
			}
			got := proto.StoreLines(words, data, flag)
			lines := (n + 7) / 8
			if got != 2*lines {
				t.Fatalf("start %d n %d: wrote %d words, want %d", start, n, got, 2*lines)
			}
			for l := 0; l < lines; l++ {
				var b [8]byte
				copy(b[:], data[8*l:min(8*l+8, n)])
				lo := uint64(b[0]) | uint64(b[1])<<8 | uint64(b[2])<<16 | uint64(b[3])<<24
				hi := uint64(b[4]) | uint64(b[5])<<8 | uint64(b[6])<<16 | uint64(b[7])<<24
				if words[2*l] != lo|flag || words[2*l+1] != hi|flag {
					t.Fatalf("start %d n %d line %d: words %#x %#x, want %#x %#x", start, n, l, words[2*l], words[2*l+1], lo|flag, hi|flag)
				}
			}
			for i := 2 * lines; i < len(words); i++ {
				if words[i] != 0x5555 {
					t.Fatalf("start %d n %d: word %d past the lines written", start, n, i)
				}
			}
		}
	}
}
