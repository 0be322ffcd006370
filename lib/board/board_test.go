package board

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"

	"github.com/gccl/gccl/lib/board/layout"
)

func newTestBoard(n int) *Board {
	parts := make([][]uint64, n)
	for r := range parts {
		parts[r] = make([]uint64, RankWords)
	}
	return NewBoard(parts)
}

// TestPutGetRoundTrip: every length 0..3 lines + 1 and odd tails, at line
// offsets, comes back bit for bit, and a line of another round is reported
// missing.
func TestPutGetRoundTrip(t *testing.T) {
	saved := vectorLines
	defer func() { vectorLines = saved }()
	for _, vec := range []bool{false, saved} {
		vectorLines = vec
		testPutGetRoundTrip(t)
	}
}

func testPutGetRoundTrip(t *testing.T) {
	b := newTestBoard(2)
	rng := rand.New(rand.NewPCG(1, 2))
	seq := uint64(1)
	for n := 0; n <= 9*layout.LineBytes+1; n++ {
		for _, off := range []int{0, 1, 5} {
			data := make([]byte, n)
			for i := range data {
				data[i] = byte(rng.Uint32())
			}
			b.Put(1, seq, off, data)
			b.Publish(1, seq, off+Lines(n))
			got := make([]byte, n)
			if miss := b.Get(1, seq, off, got); miss != -1 || !bytes.Equal(got, data) {
				t.Fatalf("n=%d off=%d: Get = %d, %x; want -1, %x", n, off, miss, got, data)
			}
			if n > 0 {
				if !b.Arrived(1, seq, off+Lines(n)-1) {
					t.Fatalf("n=%d off=%d: last line not arrived", n, off)
				}
				// Slots rounds later the slot holds this round's flags:
				// a reader of that round finds its first line missing.
				if miss := b.Get(1, seq+Slots, off, got); miss != 0 {
					t.Fatalf("n=%d off=%d: stale round read as present (miss %d)", n, off, miss)
				}
			}
			seq++
		}
	}
}

// TestFlagsWrap: with 8-bit flags (a test flag space) and cleaning every 64
// rounds, thousands of rounds of varying length through every slot never
// let a reader take a stale line: a reader that waits for each round's
// lines sees exactly what was posted, while the writer runs ahead as far
// as the acks allow.
func TestFlagsWrap(t *testing.T) {
	const rounds = 5000
	b := newTestBoard(2)
	b.flagMask, b.clean = 0xff, 64
	payload := func(seq uint64) []byte {
		n := int(seq*37%uint64(layout.RoundBytes/64)) + 1
		d := make([]byte, n)
		for i := range d {
			d[i] = byte((seq*0x9e3779b97f4a7c15 + uint64(i)*0xbf58476d1ce4e5b9) >> 56)
		}
		return d
	}
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { // rank 0 writes
		defer wg.Done()
		for seq := uint64(1); seq <= rounds; seq++ {
			for !Free(seq, b.Acked(1)) {
			}
			d := payload(seq)
			b.Put(0, seq, 0, d)
			b.Publish(0, seq, Lines(len(d)))
		}
	}()
	for seq := uint64(1); seq <= rounds; seq++ { // rank 1 reads
		want := payload(seq)
		got := make([]byte, len(want))
		for b.Get(0, seq, 0, got) != -1 {
		}
		if !bytes.Equal(got, want) {
			t.Fatalf("round %d: read %x, posted %x", seq, got[:min(16, len(got))], want[:min(16, len(want))])
		}
		b.Ack(1, seq)
	}
	wg.Wait()
}

// TestUnpostedRoundIsAbsent: with 8-bit flags, rounds of every length in
// turn through every slot; before each round is posted, no line of it
// reads as present (a stale line whose flag aliases the round's is what
// cleaning prevents).
func TestUnpostedRoundIsAbsent(t *testing.T) {
	b := newTestBoard(1)
	b.flagMask, b.clean = 0xff, 64
	buf := make([]byte, layout.RoundBytes)
	for seq := uint64(1); seq <= 3000; seq++ {
		n := layout.LineBytes
		if seq%(Slots*3) == 1 {
			n = layout.RoundBytes // now and then a long round leaves old lines behind
		}
		for l := 0; l < Lines(n); l++ {
			if b.Arrived(0, seq, l) {
				t.Fatalf("round %d: line %d reads as present before the round was posted", seq, l)
			}
		}
		b.Put(0, seq, 0, buf[:n])
		b.Publish(0, seq, Lines(n))
		b.Ack(0, seq)
	}
}

func TestFree(t *testing.T) {
	for _, tc := range []struct {
		seq, acked uint64
		want       bool
	}{
		{1, 0, true}, {Slots, 0, true}, {Slots + 1, 0, false}, {Slots + 1, 1, true}, {100, 91, false}, {100, 92, true},
	} {
		if got := Free(tc.seq, tc.acked); got != tc.want {
			t.Errorf("Free(%d, %d) = %v, want %v", tc.seq, tc.acked, got, tc.want)
		}
	}
}

func TestNewBoardRejectsShortParts(t *testing.T) {
	defer func() {
		if recover() == nil {
			t.Fatal("NewBoard took a part of the wrong size")
		}
	}()
	NewBoard([][]uint64{make([]uint64, RankWords-1)})
}

// BenchmarkPutGet is one rank's post and one read of it, in one goroutine:
// the board's own cost per byte, without any cache traffic between cores.
func BenchmarkPutGet(b *testing.B) {
	for _, n := range []int{8, 1024, layout.RoundBytes} {
		b.Run(fmt.Sprint(n), func(b *testing.B) {
			bd := newTestBoard(1)
			src, dst := make([]byte, n), make([]byte, n)
			b.SetBytes(int64(n))
			for i := 0; i < b.N; i++ {
				seq := uint64(i + 1)
				bd.Put(0, seq, 0, src)
				bd.Publish(0, seq, Lines(n))
				if bd.Get(0, seq, 0, dst) != -1 {
					b.Fatal("missing line")
				}
				bd.Ack(0, seq)
			}
		})
	}
}

// TestGetReportsTheFirstMissingLine: with any one line of a posted round
// still holding an older flag, Get reports exactly that line (whether the
// vector loop or the Go loop reads it), and copies the lines before it.
func TestGetReportsTheFirstMissingLine(t *testing.T) {
	for _, vec := range []bool{false, vectorLines} {
		saved := vectorLines
		vectorLines = vec
		b := newTestBoard(1)
		const n = 7*layout.LineBytes + 3 // odd tail, blocks of two lines and one
		data := make([]byte, n)
		for i := range data {
			data[i] = byte(i*13 + 1)
		}
		for miss := 0; miss < Lines(n); miss++ {
			seq := uint64(miss + 1)
			b.Put(0, seq, 2, data)
			b.Publish(0, seq, 2+Lines(n))
			words := b.slot(0, seq)[2*(2+miss):]
			words[miss%2] = words[miss%2]&0xffffffff | (seq+Slots)<<32 // one word of the line is stale
			got := make([]byte, n)
			if m := b.Get(0, seq, 2, got); m != miss {
				t.Fatalf("vector %v: line %d stale, Get = %d", vec, miss, m)
			}
			if !bytes.Equal(got[:miss*layout.LineBytes], data[:miss*layout.LineBytes]) {
				t.Fatalf("vector %v: line %d stale, the lines before it read %x, want %x", vec, miss, got[:miss*layout.LineBytes], data[:miss*layout.LineBytes])
			}
		}
		vectorLines = saved
	}
}

// TestPlainRoundTrip: plain posts of every length up to a few lines, at
// offsets, come back as written once published and not before; a reader
// of the round Slots later finds the slot not yet there; LL posts of the
// same rounds, in their own memory, change nothing of them.
func TestPlainRoundTrip(t *testing.T) {
	b := newTestBoard(2)
	rng := rand.New(rand.NewPCG(3, 4))
	seq := uint64(1)
	for n := 0; n <= 3*64+1; n++ {
		for _, off := range []int{0, 8, 100} {
			data := make([]byte, n)
			for i := range data {
				data[i] = byte(rng.Uint32())
			}
			if b.PlainArrived(1, seq) {
				t.Fatalf("n=%d off=%d: round %d there before it was published", n, off, seq)
			}
			b.PutPlain(1, seq, off, data)
			junk := bytes.Repeat([]byte{0xff}, n) // an LL post of the same round
			b.Put(1, seq, 0, junk)
			b.Publish(1, seq, Lines(n))
			b.PublishPlain(1, seq)
			if !b.PlainArrived(1, seq) || b.PlainArrived(0, seq) {
				t.Fatalf("n=%d off=%d: arrival wrong", n, off)
			}
			if got := b.Plain(1, seq, off, n); !bytes.Equal(got, data) {
				t.Fatalf("n=%d off=%d: got %x, want %x", n, off, got, data)
			}
			if b.PlainArrived(1, seq+Slots) {
				t.Fatalf("n=%d off=%d: a stale round read as present", n, off)
			}
			seq++
		}
	}
	// The payload of one slot is not another's.
	b.PutPlain(0, 1, 0, []byte{1})
	b.PutPlain(0, 2, 0, []byte{2})
	if b.Plain(0, 1, 0, 1)[0] != 1 || b.Plain(0, 2, 0, 1)[0] != 2 {
		t.Fatal("plain slots overlap")
	}
	if len(b.Plain(0, 3, 0, PlainMax)) != PlainMax {
		t.Fatal("a plain slot does not hold PlainMax bytes")
	}
}
