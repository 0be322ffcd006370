package ccl

import (
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"
)

// BenchmarkTraceOverhead is the step timeline's cost: float32 sum
// allreduce of 2 ranks, one goroutine per rank calling AllReduce and
// Synchronize, in batches with the timeline off and on, alternating on
// one set of communicators (which goes first swaps every round), so a
// slow spell of the machine hits both alike. It reports each mode's
// median batch time per operation and the overhead of on against off.
// Every batch fits the tracks: none drops a record.
//
//	go test ./lib/ccl -run '^$' -bench TraceOverhead -benchtime 1x
//
// every=N records one operation in N (Comm.SampleTrace).
func BenchmarkTraceOverhead(b *testing.B) {
	for _, size := range []int{8, 1 << 20} {
		for _, algo := range []string{"auto", "Ring"} {
			for _, every := range []int{1, 32} {
				b.Run(fmt.Sprintf("size=%s/algo=%s/every=%d", sizeName(size), algo, every), func(b *testing.B) {
					benchTraceOverhead(b, algo, size, every)
				})
			}
		}
	}
}

func benchTraceOverhead(b *testing.B, algo string, size, every int) {
	const n, rounds = 2, 15
	cfg := Config{Timeout: time.Minute}
	if algo != "auto" {
		cfg.Algo = algoReq(algo)
	}
	comms := initT(b, n, cfg)
	batch := max(2000*8/size, 1)
	if size >= 1<<20 {
		batch = 150
	}
	run := func(iters int) time.Duration {
		var wg sync.WaitGroup
		start := time.Now()
		for _, c := range comms {
			wg.Add(1)
			go func(c *Comm) {
				defer wg.Done()
				allReduceLoop(b, c, ownLines(size), ownLines(size), size/4, iters)
			}(c)
		}
		wg.Wait()
		return time.Since(start)
	}
	traceAll := func(on bool) {
		for _, c := range comms {
			var err error
			if on {
				err = c.StartTrace(1 << 16)
			} else if err = c.StopTrace(); err == nil {
				snap, terr := c.TakeTrace()
				if err = terr; err == nil && snap.Dropped > 0 {
					err = fmt.Errorf("rank %d dropped %d records, kept %d", c.Rank(), snap.Dropped, snap.Records())
				}
			}
			if err != nil {
				b.Fatal(err)
			}
		}
	}
	for _, c := range comms {
		if err := c.SampleTrace(every); err != nil {
			b.Fatal(err)
		}
	}
	run(batch) // warm up
	var off, on []float64
	b.ResetTimer()
	for r := 0; r < rounds; r++ {
		for k := 0; k < 2; k++ {
			traced := (r+k)%2 == 1
			if traced {
				traceAll(true)
			}
			us := run(batch).Seconds() / float64(batch) * 1e6
			if traced {
				traceAll(false)
				on = append(on, us)
			} else {
				off = append(off, us)
			}
		}
	}
	b.StopTimer()
	slices.Sort(off)
	slices.Sort(on)
	mOff, mOn := off[len(off)/2], on[len(on)/2]
	b.ReportMetric(mOff, "off_us/op")
	b.ReportMetric(mOn, "on_us/op")
	b.ReportMetric((mOn/mOff-1)*100, "overhead_%")
	b.ReportMetric(0, "ns/op")
	if ch := comms[0].LastChoice(); ch.Algo != "" {
		b.Logf("%s %s, batches of %d", ch.Algo, ch.Proto, batch)
	}
}
