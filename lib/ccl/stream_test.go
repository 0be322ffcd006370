package ccl

import (
	"fmt"
	"sync"
	"testing"
	"time"
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

// Two goroutines drive two ranks each, the second one late: the first
// drives its ranks into waits that kick the other ranks' channels before
// any work is queued there. The kick must not be lost when the work arrives
// (a 5 s timeout turns a lost kick into a failure instead of a hang).
func TestLateDriverIsNotLost(t *testing.T) {
	for _, proto := range []string{"LL", "Simple"} {
		cfg := Config{Proto: protoReq(proto), NChannels: 2, Timeout: 5 * time.Second}
		comms := initT(t, 4, cfg)
		drive := func(cs []*Comm, delay time.Duration) {
			time.Sleep(delay)
			bufs := make([][]byte, len(cs))
			for i, c := range cs {
				bufs[i] = f32s([]float32{float32(c.Rank()), 1})
				must(t, c.AllReduce(bufs[i], bufs[i], 2, Float32, Sum))
			}
			for i, c := range cs {
				must(t, c.Synchronize())
				if got := asF32(bufs[i]); got[0] != 6 || got[1] != 4 {
					t.Errorf("%s rank %d: got %v want [6 4]", proto, c.Rank(), got)
				}
			}
		}
		var wg sync.WaitGroup
		wg.Add(2)
		go func() { defer wg.Done(); drive(comms[:2], 0) }()
		go func() { defer wg.Done(); drive(comms[2:], 30*time.Millisecond) }()
		wg.Wait()
	}
}
