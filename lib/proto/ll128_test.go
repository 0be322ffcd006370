package proto_test

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"strings"
	"testing"

	"github.com/gccl/gccl/lib/proto"
)

// checkLL128Wire checks the slot of step after LL128Send(data): each
// 128-byte line holds up to 120 payload bytes (15 words) and then the flag
// step+1 as a little-endian u64 in its last 8 bytes; lines past the data
// are not published (their flag is not step+1).
func checkLL128Wire(f *proto.Fifo, step uint64, data []byte) error {
	per := f.StepBytes / 8
	slot := int(step % proto.Steps)
	raw := rawBytes(f.Lines()[slot*per : (slot+1)*per])
	nLines := (len(data) + proto.LL128DataPerLine - 1) / proto.LL128DataPerLine
	for i := 0; i < len(raw)/proto.LL128LineBytes; i++ {
		line := raw[i*proto.LL128LineBytes : (i+1)*proto.LL128LineBytes]
		flag := binary.LittleEndian.Uint64(line[proto.LL128DataPerLine:])
		if i >= nLines {
			if flag == step+1 {
				return fmt.Errorf("line %d past the %d-byte payload carries the current flag", i, len(data))
			}
			continue
		}
		if flag != step+1 {
			return fmt.Errorf("line %d flag = %#x, want %#x", i, flag, step+1)
		}
		d := data[i*proto.LL128DataPerLine : min((i+1)*proto.LL128DataPerLine, len(data))]
		if !bytes.Equal(line[:len(d)], d) {
			return fmt.Errorf("line %d payload: %s", i, firstDiff(line[:len(d)], d))
		}
	}
	return nil
}

// TestLL128WireFormat sends sizes around line boundaries up to a full step
// and checks every line, then receives in another goroutine.
func TestLL128WireFormat(t *testing.T) {
	if proto.LL128DataPerLine != 120 || proto.LL128LineWords != 16 || proto.LL128DataWords != 15 {
		t.Fatalf("LL128 constants: %d data bytes, %d words, %d data words", proto.LL128DataPerLine, proto.LL128LineWords, proto.LL128DataWords)
	}
	sizes := []int{0, 1, 7, 8, 119, 120, 121, 239, 240, 241, 1000, 1799, 1800, 1801, 1919, 1920}
	for _, start := range []uint64{0, 6, 1<<32 - 3} {
		t.Run(fmt.Sprint(start), func(t *testing.T) {
			f, s, r, abort, _ := newFifo(t, proto.LL128, smallLL128, proto.FifoOptions{StartStep: start})
			if f.StepData() != 1920 || f.StepBytes != 2048 {
				t.Fatalf("StepData %d StepBytes %d", f.StepData(), f.StepBytes)
			}
			errc := make(chan error, 1)
			go func() {
				dst := make([]byte, 1920)
				for _, n := range sizes {
					step := r.Step
					if err := r.LL128Recv(dst[:n]); err != nil {
						abort.Trigger(err)
						errc <- err
						return
					}
					if want := payload(step, n); !bytes.Equal(dst[:n], want) {
						err := fmt.Errorf("step %d: %s", step, firstDiff(dst[:n], want))
						abort.Trigger(err)
						errc <- err
						return
					}
				}
				errc <- nil
			}()
			for _, n := range sizes {
				step := s.Step
				data := payload(step, n)
				if err := s.LL128Send(data); err != nil {
					t.Fatalf("LL128Send step %d: %v", step, err)
				}
				if err := checkLL128Wire(f, step, data); err != nil {
					abort.Trigger(err)
					t.Fatalf("step %d (%d bytes): %v", step, n, err)
				}
				if got := f.Size(int(step % proto.Steps)); got != int64(n) {
					t.Fatalf("Size after %d bytes = %d", n, got)
				}
			}
			if err := <-errc; err != nil {
				t.Fatal(err)
			}
		})
	}
}

// TestLL128Stream streams random sizes with wire checks after every send and
// a sender that pauses before some steps so the receiver waits on the flags
// of lines still holding older steps.
func TestLL128Stream(t *testing.T) {
	for _, start := range []uint64{0, 1<<32 - 11} {
		t.Run(fmt.Sprint(start), func(t *testing.T) {
			res, err := runStream(t, streamCfg{
				proto: proto.LL128, buff: smallLL128, opt: proto.FifoOptions{StartStep: start},
				ops:       2000,
				size:      randomSize,
				pause:     func(step uint64) bool { return step%199 == 0 },
				afterSend: checkLL128Wire,
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

// TestLL128DefaultBuffer moves a full step of the default 4,915,200-byte
// buffer (576000 B of payload) across.
func TestLL128DefaultBuffer(t *testing.T) {
	res, err := runStream(t, streamCfg{
		proto: proto.LL128, buff: proto.DefaultLL128BuffSize, opt: proto.FifoOptions{StartStep: 3},
		ops: 10,
		size: func(step uint64, capacity int) int {
			if capacity != 576000 {
				panic(fmt.Sprintf("capacity %d", capacity))
			}
			return []int{capacity, capacity - 1, 1, 0, 575999 - 119}[step%5]
		},
		afterSend: checkLL128Wire,
	})
	if err != nil || res.overruns != 0 {
		t.Fatalf("%v (overruns %d)", err, res.overruns)
	}
}

func TestLL128SizeMismatch(t *testing.T) {
	_, s, r, _, _ := newFifo(t, proto.LL128, smallLL128, proto.FifoOptions{StartStep: 1 << 32})
	if err := s.LL128Send(payload(0, 300)); err != nil {
		t.Fatal(err)
	}
	err := r.LL128Recv(make([]byte, 130))
	if err == nil || !strings.Contains(err.Error(), "300") || !strings.Contains(err.Error(), "130") {
		t.Fatalf("LL128Recv(130) of a 300-byte step: %v, want an error naming 300 and 130", err)
	}
}

func TestLL128OversizePanics(t *testing.T) {
	_, s, _, _, _ := newFifo(t, proto.LL128, smallLL128, proto.FifoOptions{})
	defer func() {
		if recover() == nil {
			t.Fatalf("LL128Send of 1921 bytes into a 1920-byte step did not panic")
		}
	}()
	_ = s.LL128Send(make([]byte, 1921))
}
