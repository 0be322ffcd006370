package ccl

import (
	"fmt"
	"testing"
	"time"
)

// 8 ranks x 4 channels is 32 runners on this 2-core machine: waits must
// yield and park rather than spin, or a runner starves the peer it waits
// for. A wait that sees no progress for 10 s (20 s under -race) fails the
// operation, so a stall shows up as an error here (no timing is asserted).
func TestOversubscribed8x4(t *testing.T) {
	for _, p := range []string{"LL", "LL128", "Simple"} {
		// No progress for this long fails the test: a stall that does not
		// end (a lost wake-up) still fails, while a loaded machine's
		// starvation does not (2 s was crossed once in a CI run on a
		// machine that two stray busy loops and perf's tests kept busy: a
		// rank waited 2 s for its peer's credits; 8 ranks x 4 channels on
		// 2 cores). The race detector slows every step 5-10x.
		timeout := 10 * time.Second
		if raceEnabled {
			timeout = 20 * time.Second
		}
		comms := initT(t, 8, Config{Proto: protoReq(p), NChannels: 4, Timeout: timeout})
		const count = 300_000
		perRank(comms, func(c *Comm) {
			in := make([]float32, count)
			for i := range in {
				in[i] = float32(c.Rank() + i%5)
			}
			out := make([]float32, count)
			for it := 0; it < 3; it++ {
				must(t, c.AllReduce(asBytes(in), asBytes(out), count, Float32, Sum))
				must(t, c.Synchronize())
			}
			for i, v := range out {
				if want := float32(28 + 8*(i%5)); v != want {
					t.Errorf("%s rank %d [%d] = %v want %v", p, c.Rank(), i, v, want)
					return
				}
			}
		})
	}
}

// BenchmarkOversubscribed reports the time per ring step of a Ring
// allreduce of 8 ranks x 4 channels, and 16 ranks x 2 and x 4, more
// runners than most machines' processors (2(n-1) steps per chunk), with
// each rank's channels folded into one runner and not (fold.go), side by
// side.
func BenchmarkOversubscribed(b *testing.B) {
	for _, shape := range [][2]int{{8, 4}, {16, 2}, {16, 4}} {
		for _, p := range []string{"LL", "LL128", "Simple"} {
			for _, size := range []int{8, 64 << 10, 16 << 20} {
				for _, fold := range []bool{true, false} {
					name := fmt.Sprintf("ranks=%d/nch=%d/proto=%s/size=%s/fold=%v", shape[0], shape[1], p, sizeName(size), fold)
					b.Run(name, func(b *testing.B) {
						withFolding(fold, func() { benchOversubscribed(b, shape[0], shape[1], p, size) })
					})
				}
			}
		}
	}
}

func benchOversubscribed(b *testing.B, n, nch int, p string, size int) {
	comms := initT(b, n, Config{Algo: algoReq("Ring"), Proto: protoReq(p), NChannels: nch})
	bufs := make([][]byte, n)
	for r := range bufs {
		bufs[r] = make([]byte, size)
	}
	run := func(iters int) {
		perRank(comms, func(c *Comm) {
			for i := 0; i < iters; i++ {
				must(b, c.AllReduce(bufs[c.Rank()], bufs[c.Rank()], size/4, Float32, Sum))
				must(b, c.Synchronize())
			}
		})
	}
	run(2) // connect and allocate the FIFOs outside the timing
	b.ResetTimer()
	start := time.Now()
	perRank(comms, func(c *Comm) {
		for i := 0; i < b.N; i++ {
			must(b, c.AllReduce(bufs[c.Rank()], bufs[c.Rank()], size/4, Float32, Sum))
			must(b, c.Synchronize())
		}
	})
	op := time.Since(start).Seconds() / float64(b.N)
	b.ReportMetric(op*1e6, "us/op")
	b.ReportMetric(op*1e6/float64(2*(n-1)), "us/step")
}
