package ccl

import (
	"fmt"
	"testing"
)

// Operations on a stream run in order as whole operations: a later one may
// split its data over channels differently (another count, protocol or
// grain), so it must not start a channel before every channel of the one
// before it is done. Each step reads what the step before wrote, with no
// Synchronize in between; -race also watches the buffers.
func TestStreamOrdersDependentOperations(t *testing.T) {
	for _, driver := range []string{"goroutine per rank", "one goroutine"} {
		t.Run(driver, func(t *testing.T) {
			const n = 3
			cfg := smallBuffers
			cfg.NChannels = 3
			comms := initT(t, n, cfg)
			// Sizes alternate between LL (small) and Simple (large) under auto,
			// so the channel parts of consecutive steps differ.
			counts := []int{100_000, 700, 50_000, 37, 90_000, 5}
			bufs := make([][][]float32, n)
			for r := range bufs {
				bufs[r] = make([][]float32, len(counts)+1)
				bufs[r][0] = make([]float32, counts[0])
				for i := range bufs[r][0] {
					bufs[r][0][i] = float32(r + i%3)
				}
				for s := range counts {
					bufs[r][s+1] = make([]float32, counts[0])
				}
			}
			enqueue := func(c *Comm) {
				r := c.Rank()
				for s, cnt := range counts {
					must(t, c.AllReduce(asBytes(bufs[r][s][:cnt]), asBytes(bufs[r][s+1][:cnt]), cnt, Float32, Sum))
				}
			}
			if driver == "one goroutine" {
				for _, c := range comms {
					enqueue(c)
				}
				for _, c := range comms {
					must(t, c.Synchronize())
				}
			} else {
				perRank(comms, func(c *Comm) {
					enqueue(c)
					must(t, c.Synchronize())
				})
			}
			// Step s multiplies the sum over ranks: x_{s+1} = n * x_s (all ranks equal after step 1).
			for r := 0; r < n; r++ {
				last := counts[len(counts)-1]
				for i := 0; i < last; i++ {
					want := float32(n*(n-1)/2+n*(i%3)) * pow(n, len(counts)-1)
					if got := bufs[r][len(counts)][i]; got != want {
						t.Fatalf("rank %d [%d] = %v want %v", r, i, got, want)
					}
				}
			}
		})
	}
}

func pow(b, e int) float32 {
	out := float32(1)
	for i := 0; i < e; i++ {
		out *= float32(b)
	}
	return out
}

var _ = fmt.Sprint
