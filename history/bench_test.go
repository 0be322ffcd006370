package history

import (
	"fmt"
	"testing"
	"time"

	"github.com/gccl/gccl/ci"
)

// BenchmarkAdd10k: one run of 10,000 records added (one transaction,
// prepared statements), with 0, 20 and 100 per-iteration samples a record.
// The target (issue 44) is tune history add of 10,000 records in under 2 s.
func BenchmarkAdd10k(b *testing.B) {
	for _, iters := range []int{0, 20, 100} {
		b.Run(fmt.Sprintf("samples=%d", iters), func(b *testing.B) {
			recs := synth(10000, iters, 1)
			s := mustOpen(b, dbPath(b))
			i := 0
			for b.Loop() {
				i++
				if _, added, err := s.Add(Run{Commit: fmt.Sprint(i)}, recs); err != nil || !added {
					b.Fatal(added, err)
				}
			}
			b.ReportMetric(float64(len(recs))*float64(b.N)/b.Elapsed().Seconds(), "records/s")
		})
	}
}

// BenchmarkSeries200x100: every key's series of a history of 100 runs of
// 200 keys (20 samples a record), what a report reads. The report's
// target (issue 44) is 200 keys x 100 runs in under 5 s, drawing included.
func BenchmarkSeries200x100(b *testing.B) {
	s := mustOpen(b, dbPath(b))
	for i := range 100 {
		recs := synth(200, 20, 1+float64(i%7)/100)
		if _, _, err := s.Add(Run{Commit: fmt.Sprint(i), Time: t0.Add(time.Duration(i) * time.Hour)}, recs); err != nil {
			b.Fatal(err)
		}
	}
	for b.Loop() {
		keys, err := s.Keys(Filter{})
		if err != nil || len(keys) != 200 {
			b.Fatal(len(keys), err)
		}
		for _, k := range keys {
			pts, err := s.Series(k, ci.BusBW, ci.NormCopy, Filter{})
			if err != nil || len(pts) != 100 {
				b.Fatal(len(pts), err)
			}
		}
	}
}
