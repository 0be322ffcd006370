package results_test

import (
	"math"
	"testing"

	"github.com/gccl/gccl/perf"
	"github.com/gccl/gccl/results"
)

// The gate derives busbw from the time with results' table; the perf
// binaries print it with theirs. They must agree for every collective.
func TestBusBwFromTimeMatchesPerf(t *testing.T) {
	tests := []*perf.Test{perf.AllReduce, perf.AllGather, perf.ReduceScatter, perf.Broadcast, perf.Reduce,
		perf.AlltoAll, perf.Gather, perf.Scatter, perf.SendRecv, perf.Hypercube}
	for _, pt := range tests {
		for _, n := range []int{1, 2, 3, 4, 8} {
			for _, size := range []int64{1 << 10, 3 << 20} {
				param, row := pt.Counts(size, 4, n)
				const sec = 12.5e-6
				_, want := pt.BusBw(param, 4, n, sec)
				got, ok := results.BusBwFromTime(pt.Collective, n, row, sec*1e6)
				if !ok || math.Abs(got-want) > 1e-12*want {
					t.Errorf("%s n=%d size %d: BusBwFromTime %g, %v; perf prints %g", pt.Collective, n, size, got, ok, want)
				}
			}
		}
	}
}

func TestBusBwFromTimeUnknown(t *testing.T) {
	for _, c := range []struct {
		coll  string
		n     int
		size  int64
		us    float64
		why   string
		okish bool
	}{
		{"alltoallv", 2, 1024, 10, "a test outside nccl-tests' standard set", false},
		{"allreduce", 0, 1024, 10, "no rank count", false},
		{"allreduce", 2, 0, 10, "size 0", false},
		{"allreduce", 2, 1024, 0, "time 0", false},
		{"AllReduce", 2, 1000, 10, "names in any case", true},
	} {
		got, ok := results.BusBwFromTime(c.coll, c.n, c.size, c.us)
		if ok != c.okish {
			t.Errorf("%s: ok %v, want %v (got %g)", c.why, ok, c.okish, got)
		}
	}
	if got, _ := results.BusBwFromTime("allreduce", 2, 1000, 10); got != 0.1 {
		t.Errorf("allreduce on 2 ranks, 1000 B in 10 us: %g GB/s, want 0.1", got)
	}
}
