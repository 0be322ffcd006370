package ccl

import (
	"fmt"
	"sync"
	"testing"
	"time"
)

// BenchmarkAllReduce measures float32 sum allreduce for 2 and 4 ranks over
// sizes, protocols and channel counts, reporting nccl-tests' busBw and, in
// the same process and run, single-goroutine copy() bandwidth on a buffer of
// the same size: compare the two as a ratio, never as absolute numbers.
//
//	go test ./lib/ccl -run '^$' -bench AllReduce -benchtime 200x
func BenchmarkAllReduce(b *testing.B) {
	sizes := []int{8, 64, 512, 4 << 10, 32 << 10, 256 << 10, 2 << 20, 16 << 20, 32 << 20, 64 << 20}
	for _, n := range []int{2, 4} {
		for _, p := range []string{"LL", "LL128", "Simple"} {
			for _, nch := range []int{1, 2, 4} {
				for _, size := range sizes {
					name := fmt.Sprintf("ranks=%d/proto=%s/nch=%d/size=%s", n, p, nch, sizeName(size))
					b.Run(name, func(b *testing.B) { benchAllReduce(b, n, p, nch, size) })
				}
			}
		}
	}
}

func benchAllReduce(b *testing.B, n int, p string, nch, size int) {
	comms, err := InitAll(n, Config{Proto: protoReq(p), NChannels: nch, Timeout: time.Minute})
	if err != nil {
		b.Fatal(err)
	}
	defer func() {
		for _, c := range comms {
			c.Destroy()
		}
	}()
	count := size / 4
	bufs := make([][2][]byte, n)
	for r := range bufs {
		bufs[r] = [2][]byte{make([]byte, size), make([]byte, size)}
	}
	run := func(iters int) {
		var wg sync.WaitGroup
		for _, c := range comms {
			wg.Add(1)
			go func(c *Comm) {
				defer wg.Done()
				allReduceLoop(b, c, bufs[c.Rank()][0], bufs[c.Rank()][1], count, iters)
			}(c)
		}
		wg.Wait()
	}
	run(3) // warm up: connections, buffers, goroutines
	b.SetBytes(int64(size))
	b.ResetTimer()
	start := time.Now()
	run(b.N)
	el := time.Since(start)
	b.StopTimer()
	sec := el.Seconds() / float64(b.N)
	busBw := float64(size) / sec / 1e9 * 2 * float64(n-1) / float64(n)
	cp := copyBandwidth(size)
	b.ReportMetric(busBw, "busBW_GB/s")
	b.ReportMetric(cp, "copy_GB/s")
	b.ReportMetric(busBw/cp, "busBW/copy")
	b.ReportMetric(sec*1e6, "us/op")
}

// copyBandwidth is single-goroutine copy() of size bytes, in GB/s of bytes
// copied, measured now (median of 5 timings of enough repetitions).
func copyBandwidth(size int) float64 {
	src, dst := make([]byte, size), make([]byte, size)
	reps := max(1, (64<<20)/size)
	var best []float64
	for k := 0; k < 5; k++ {
		start := time.Now()
		for i := 0; i < reps; i++ {
			copy(dst, src)
		}
		best = append(best, float64(size*reps)/time.Since(start).Seconds()/1e9)
	}
	return median(best)
}

func median(v []float64) float64 {
	s := append([]float64(nil), v...)
	for i := range s {
		for j := i + 1; j < len(s); j++ {
			if s[j] < s[i] {
				s[i], s[j] = s[j], s[i]
			}
		}
	}
	return s[len(s)/2]
}

func sizeName(n int) string {
	switch {
	case n >= 1<<20 && n%(1<<20) == 0:
		return fmt.Sprintf("%dM", n>>20)
	case n >= 1<<10 && n%(1<<10) == 0:
		return fmt.Sprintf("%dK", n>>10)
	}
	return fmt.Sprintf("%dB", n)
}
