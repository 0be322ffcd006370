package ccl

import (
	"strings"
	"testing"
	"time"
)

// Marks time a stream's operations without stopping it: each mark's time
// is when the operations before it finished (or when it was taken, if they
// had), so the times of marks taken between back-to-back operations never
// decrease and their differences add up to the loop. A mark whose
// operation's time was overwritten, or that was never turned on, is an
// error naming the fix; the results are unchanged.
func TestCompletionMarks(t *testing.T) {
	for _, count := range []int{2, 50_000} { // the one-shot fast path and channel plans
		comms := initT(t, 3, Config{})
		const ops = 12
		bufs := make([][]float32, len(comms))
		marks := make([][]Mark, len(comms))
		perRank(comms, func(c *Comm) {
			r := c.Rank()
			bufs[r] = make([]float32, count)
			for i := range bufs[r] {
				bufs[r][i] = 1
			}
			if _, err := c.Mark(); err == nil || !strings.Contains(err.Error(), "RecordCompletions") {
				t.Errorf("a mark with marks off: %v", err)
			}
			must(t, c.RecordCompletions(ops+1))
			for i := 0; i < ops; i++ {
				m, err := c.Mark()
				must(t, err)
				marks[r] = append(marks[r], m)
				must(t, c.AllReduce(asBytes(bufs[r]), asBytes(bufs[r]), count, Float32, Sum))
			}
			m, err := c.Mark()
			must(t, err)
			marks[r] = append(marks[r], m)
			must(t, c.Synchronize())
		})
		for _, c := range comms {
			r := c.Rank()
			// Each operation triples every element: 3^ops, exact in float32.
			want := float32(1)
			for i := 0; i < ops; i++ {
				want *= 3
			}
			if bufs[r][count-1] != want {
				t.Fatalf("count %d rank %d: %v, want %v", count, r, bufs[r][count-1], want)
			}
			var prev time.Time
			for i, m := range marks[r] {
				at, err := c.MarkTime(m)
				if err != nil {
					t.Fatalf("count %d rank %d mark %d: %v", count, r, i, err)
				}
				if at.Before(prev) {
					t.Errorf("count %d rank %d: mark %d at %v, before mark %d at %v", count, r, i, at, i-1, prev)
				}
				prev = at
			}
			if !marks[r][0].done {
				t.Errorf("count %d rank %d: the first mark, after nothing in flight, is not done when taken", count, r)
			}
		}
		// A log too small for the loop (the one above, 16 slots, is reused
		// for any smaller request): the first marks' times are overwritten.
		small := make([]Mark, 0, 8)
		perRank(comms, func(c *Comm) {
			must(t, c.RecordCompletions(2))
			var first Mark
			for i := 0; i < 40; i++ {
				m, err := c.Mark()
				must(t, err)
				if i == 1 {
					first = m
				}
				must(t, c.AllReduce(asBytes(bufs[c.Rank()]), asBytes(bufs[c.Rank()]), count, Float32, Max))
			}
			must(t, c.Synchronize())
			if c.Rank() == 0 {
				small = append(small, first)
			}
		})
		if _, err := comms[0].MarkTime(small[0]); err == nil || !strings.Contains(err.Error(), "overwritten") {
			t.Errorf("count %d: an overwritten mark: %v", count, err)
		}
		perRank(comms, func(c *Comm) { must(t, c.RecordCompletions(0)) })
		if _, err := comms[0].Mark(); err == nil {
			t.Errorf("count %d: marks still on after RecordCompletions(0)", count)
		}
	}
}
