package board

import (
	"testing"

	"github.com/gccl/gccl/lib/board/layout"
)

// TestTwoShotBlocks checks the two-shot geometry exhaustively over rank
// counts, element sizes and every count a round holds (sampled past the
// first thousands): the blocks tile the round in rank order, each starts on
// a line pair, none is larger than the segment, and the whole round fits
// the slot.
func TestTwoShotBlocks(t *testing.T) {
	for n := 1; n <= 40; n++ {
		seg := layout.TwoShotSegment(n)
		if seg <= 0 || seg%(2*layout.LineBytes) != 0 || n*seg > layout.RoundBytes {
			t.Fatalf("n=%d: segment %d bytes: want a positive multiple of %d, n of them within %d", n, seg, 2*layout.LineBytes, layout.RoundBytes)
		}
		for _, elt := range []int{1, 2, 4, 8} {
			round := n * seg / elt
			for cnt := 0; cnt <= round; cnt++ {
				if cnt > 4096 && cnt%97 != 0 && cnt != round {
					continue
				}
				next := 0
				for b := range n {
					lo, hi := TwoShotBlock(cnt, n, elt, b)
					if lo != next || hi < lo || hi > cnt {
						t.Fatalf("n=%d elt=%d cnt=%d: block %d is [%d,%d), want it to start at %d and end by %d", n, elt, cnt, b, lo, hi, next, cnt)
					}
					if (lo*elt)%(2*layout.LineBytes) != 0 && lo < cnt {
						t.Fatalf("n=%d elt=%d cnt=%d: block %d starts at byte %d, not on a line pair", n, elt, cnt, b, lo*elt)
					}
					if (hi-lo)*elt > seg {
						t.Fatalf("n=%d elt=%d cnt=%d: block %d holds %d bytes, more than the segment's %d", n, elt, cnt, b, (hi-lo)*elt, seg)
					}
					next = hi
				}
				if next != cnt {
					t.Fatalf("n=%d elt=%d cnt=%d: blocks end at %d", n, elt, cnt, next)
				}
				if Lines(cnt*elt)*layout.LineBytes > layout.RoundBytes {
					t.Fatalf("n=%d elt=%d cnt=%d: the post does not fit a slot", n, elt, cnt)
				}
			}
		}
	}
}
