package algo_test

import (
	"testing"

	"github.com/gccl/gccl/lib/algo"
)

func TestDivUpAlignUp(t *testing.T) {
	for a := 0; a <= 200; a++ {
		for b := 1; b <= 40; b++ {
			d := algo.DivUp(a, b)
			if d*b < a || (d-1)*b >= a && a > 0 || a == 0 && d != 0 {
				t.Fatalf("DivUp(%d,%d) = %d", a, b, d)
			}
			u := algo.AlignUp(a, b)
			if u%b != 0 || u < a || u-a >= b {
				t.Fatalf("AlignUp(%d,%d) = %d", a, b, u)
			}
		}
	}
}

// TestChannelPartExhaustive checks that the channels' parts tile [0,count):
// contiguous, disjoint, covering, each a multiple of grain except the last
// non-empty one, empty parts only at the end, and ActiveChannels counts the
// non-empty parts.
func TestChannelPartExhaustive(t *testing.T) {
	channels := []int{1, 2, 3, 4, 5, 6, 7, 8, 64}
	grains := []int{1, 3, 16, 128}
	for count := 0; count <= 300; count++ {
		for _, nc := range channels {
			for _, grain := range grains {
				next := 0 // where the next part must start
				lastNonEmpty := -1
				nonEmpty := 0
				for c := 0; c < nc; c++ {
					start, n := algo.ChannelPart(count, nc, grain, c)
					if n < 0 || start < 0 || start+n > count {
						t.Fatalf("count=%d nc=%d grain=%d c=%d: part [%d,+%d) outside [0,%d)", count, nc, grain, c, start, n, count)
					}
					if n > 0 {
						if start != next {
							t.Fatalf("count=%d nc=%d grain=%d c=%d: part starts at %d, want %d (not contiguous/disjoint)", count, nc, grain, c, start, next)
						}
						if lastNonEmpty != c-1 {
							t.Fatalf("count=%d nc=%d grain=%d c=%d: non-empty part after an empty one", count, nc, grain, c)
						}
						lastNonEmpty = c
						nonEmpty++
						next = start + n
						if next < count && n%grain != 0 {
							t.Fatalf("count=%d nc=%d grain=%d c=%d: non-final part of %d elements is not a multiple of the grain", count, nc, grain, c, n)
						}
					} else if start != count && count > 0 {
						// An empty part of an earlier channel would leave a hole.
						t.Fatalf("count=%d nc=%d grain=%d c=%d: empty part at %d before the end", count, nc, grain, c, start)
					}
				}
				if next != count {
					t.Fatalf("count=%d nc=%d grain=%d: parts cover [0,%d), want [0,%d)", count, nc, grain, next, count)
				}
				if got := algo.ActiveChannels(count, nc, grain); got != nonEmpty {
					t.Fatalf("ActiveChannels(%d,%d,%d) = %d, want %d", count, nc, grain, got, nonEmpty)
				}
				if nonEmpty > nc {
					t.Fatalf("count=%d nc=%d grain=%d: %d active channels", count, nc, grain, nonEmpty)
				}
			}
		}
	}
}

// ringLoops runs the chunk loop of a ring collective over a part and calls
// visit for every chunk span. It fails on a loop that does not advance.
func ringLoops(t *testing.T, part, nRanks, chunkElems, grain int, visit func(loopOff, chunk, k, off, n int)) {
	t.Helper()
	for off := 0; off < part; {
		chunk := algo.RingChunk(part, off, nRanks, chunkElems, grain)
		if chunk <= 0 {
			t.Fatalf("part=%d n=%d chunkElems=%d grain=%d: RingChunk at %d = %d", part, nRanks, chunkElems, grain, off, chunk)
		}
		for k := 0; k < nRanks; k++ {
			o, n := algo.ChunkSpan(part, off, chunk, k)
			visit(off, chunk, k, o, n)
		}
		off += nRanks * chunk
	}
}

// TestRingChunkCoversPart: for every part size 0..500, 1..9 ranks and
// several chunk/grain pairs, the loops `for off := 0; off < part; off +=
// nRanks*chunk` with chunk = RingChunk(part, off, ...) and chunk spans
// ChunkSpan(part, off, chunk, k), k < nRanks, visit every element of the part
// exactly once; no chunk exceeds chunkElems; every chunk is a multiple of the
// grain (chunkElems is one here); parts smaller than nRanks work.
func TestRingChunkCoversPart(t *testing.T) {
	combos := []struct{ chunkElems, grain int }{
		{1, 1}, {4, 1}, {7, 1}, {16, 16}, {32, 16}, {48, 16}, {64, 4}, {128, 128}, {384, 128}, {1 << 20, 16},
	}
	for part := 0; part <= 500; part++ {
		seen := make([]int, part)
		for nRanks := 1; nRanks <= 9; nRanks++ {
			for _, cb := range combos {
				clear(seen)
				ringLoops(t, part, nRanks, cb.chunkElems, cb.grain, func(loopOff, chunk, k, off, n int) {
					if chunk > cb.chunkElems {
						t.Fatalf("part=%d n=%d %+v: chunk %d exceeds chunkElems", part, nRanks, cb, chunk)
					}
					if chunk%cb.grain != 0 {
						t.Fatalf("part=%d n=%d %+v: chunk %d not a multiple of the grain", part, nRanks, cb, chunk)
					}
					if n < 0 || n > chunk || off < 0 || off+n > part {
						t.Fatalf("part=%d n=%d %+v loop %d chunk %d: span [%d,+%d) out of range", part, nRanks, cb, loopOff, k, off, n)
					}
					if n > 0 && off != loopOff+k*chunk {
						t.Fatalf("part=%d n=%d %+v loop %d chunk %d: span starts at %d, want %d", part, nRanks, cb, loopOff, k, off, loopOff+k*chunk)
					}
					for i := off; i < off+n; i++ {
						seen[i]++
					}
				})
				for i, c := range seen {
					if c != 1 {
						t.Fatalf("part=%d n=%d %+v: element %d visited %d times", part, nRanks, cb, i, c)
					}
				}
			}
		}
	}
}

// TestRingChunkShape pins the shape: a loop spreads what is left evenly over
// the ranks (rounded up to the grain) unless chunkElems caps it.
func TestRingChunkShape(t *testing.T) {
	cases := []struct{ part, off, n, chunkElems, grain, want int }{
		{1000, 0, 4, 1 << 20, 16, 256}, // 250 rounded up to 16
		{1000, 0, 4, 64, 16, 64},       // capped
		{1000, 768, 4, 64, 16, 64},     // 232 left: 58 -> 64
		{1000, 960, 4, 64, 16, 16},     // 40 left: 10 -> 16
		{3, 0, 8, 1 << 20, 1, 1},       // fewer elements than ranks
		{3, 0, 8, 1 << 20, 16, 16},
	}
	for _, c := range cases {
		if got := algo.RingChunk(c.part, c.off, c.n, c.chunkElems, c.grain); got != c.want {
			t.Errorf("RingChunk(%d,%d,%d,%d,%d) = %d, want %d", c.part, c.off, c.n, c.chunkElems, c.grain, got, c.want)
		}
	}
	// Chunks past the end of the part are empty and clamped to it.
	if off, n := algo.ChunkSpan(3, 0, 16, 5); off != 3 || n != 0 {
		t.Errorf("ChunkSpan past the end = (%d,%d), want (3,0)", off, n)
	}
	if off, n := algo.ChunkSpan(20, 0, 16, 1); off != 16 || n != 4 {
		t.Errorf("ChunkSpan of the partial chunk = (%d,%d), want (16,4)", off, n)
	}
}

// TestSlices checks the Simple protocol's slicing of a chunk.
//
// Always: the slices sum to nelem, are contiguous (every non-empty slice
// except possibly the last non-empty one has the full slice size) and
// trailing slices are empty.
//
// Capacity: the largest slice is min(SliceSize, nelem), so every slice fits
// in a slice buffer of sliceElems elements exactly when
//
//	nelem <= sliceElems  ||  nelem <= slicesPerChunk * 16*floor(sliceElems/16)
//
// (SliceSize rounds up to 16 elements; the floor sliceElems/32 never exceeds
// sliceElems). When sliceElems is a multiple of 16 this is simply
// nelem <= slicesPerChunk*sliceElems: a chunk that fits in its steps never
// overflows a slice. When sliceElems is a multiple of 32*16 the minimum
// sliceElems/32 is itself a multiple of 16, so SliceSize is always a
// multiple of 16. The test checks the condition both ways, by brute force.
func TestSlices(t *testing.T) {
	for _, spc := range []int{1, 2, 3, 4} {
		for _, sliceElems := range []int{0, 1, 10, 16, 17, 31, 32, 48, 100, 512, 1024, 1536, 4096} {
			for nelem := 0; nelem <= 5*sliceElems+70; nelem++ {
				size := algo.SliceSize(nelem, spc, sliceElems)
				if size < sliceElems/32 || size < algo.DivUp(nelem, spc) {
					t.Fatalf("SliceSize(%d,%d,%d) = %d: below the minimum", nelem, spc, sliceElems, size)
				}
				if sliceElems%(32*16) == 0 && size%16 != 0 {
					t.Fatalf("SliceSize(%d,%d,%d) = %d: not a multiple of 16", nelem, spc, sliceElems, size)
				}
				s := algo.Slices(nelem, spc, sliceElems)
				if len(s) != spc {
					t.Fatalf("Slices(%d,%d,%d) has %d slices", nelem, spc, sliceElems, len(s))
				}
				sum, mx, ended := 0, 0, false
				for i, x := range s {
					if x < 0 {
						t.Fatalf("Slices(%d,%d,%d) = %v: negative", nelem, spc, sliceElems, s)
					}
					if ended && x != 0 {
						t.Fatalf("Slices(%d,%d,%d) = %v: data after a short slice (slice %d)", nelem, spc, sliceElems, s, i)
					}
					if x < size {
						ended = true
					}
					sum += x
					mx = max(mx, x)
				}
				if sum != nelem {
					t.Fatalf("Slices(%d,%d,%d) = %v sums to %d", nelem, spc, sliceElems, s, sum)
				}
				used := 1
				for used < spc && s[used] > 0 {
					used++
				}
				if got := algo.SlicesUsed(nelem, spc, sliceElems); got != used {
					t.Fatalf("SlicesUsed(%d,%d,%d) = %d; Slices = %v", nelem, spc, sliceElems, got, s)
				}
				if mx != min(size, nelem) {
					t.Fatalf("Slices(%d,%d,%d) = %v: largest %d, want min(size %d, nelem)", nelem, spc, sliceElems, s, mx, size)
				}
				fits := nelem <= sliceElems || nelem <= spc*16*(sliceElems/16)
				if (mx <= sliceElems) != fits {
					t.Fatalf("Slices(%d,%d,%d) = %v (size %d): fits=%v but condition says %v", nelem, spc, sliceElems, s, size, mx <= sliceElems, fits)
				}
				if sliceElems%16 == 0 && fits != (nelem <= spc*sliceElems || nelem <= sliceElems) {
					t.Fatalf("condition mismatch for multiple-of-16 slice (%d,%d,%d)", nelem, spc, sliceElems)
				}
			}
		}
	}
	// NCCL's formula on concrete numbers.
	if got := algo.SliceSize(100, 2, 4096); got != 4096/32 {
		t.Errorf("small chunk: SliceSize = %d, want the minimum %d", got, 4096/32)
	}
	if got := algo.SliceSize(8000, 2, 4096); got != 4000 {
		t.Errorf("SliceSize(8000,2,4096) = %d, want 4000", got)
	}
	if got := algo.SliceSize(8001, 2, 4096); got != 4016 {
		t.Errorf("SliceSize(8001,2,4096) = %d, want 4016", got)
	}
}
