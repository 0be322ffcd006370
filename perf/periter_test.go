package perf

import (
	"math"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gccl/gccl/results"
)

// syncCounting is the embedded stack, counting the Synchronize calls of
// its ranks.
type syncCounting struct {
	Embedded
	syncs atomic.Int64
}

type syncCountingRank struct {
	*embeddedRank
	n *atomic.Int64
}

func (r syncCountingRank) Synchronize() error {
	r.n.Add(1)
	return r.embeddedRank.Synchronize()
}

func (b *syncCounting) Init(n int, rc RunConfig) ([]Comm, error) {
	cs, err := b.Embedded.Init(n, rc)
	for i, c := range cs {
		cs[i] = syncCountingRank{embeddedRank: c.(*embeddedRank), n: &b.syncs}
	}
	return cs, err
}

// -I 1 and --precision time the operations of the plain loop, issued the
// same way: back to back, the stream never stopped between them (each
// iteration's time from marks in the stream, as nccl-tests' -I from CUDA
// events), so a point waits for its operations a few times, not once per
// iteration. Each iteration's time is the interval between two marks:
// they add up to no more than the loop's wall time.
func TestPerIterationTimingKeepsTheLoop(t *testing.T) {
	const iters = 200
	for _, mode := range [][]string{{"-I", "1"}, {"--precision", "50%", "--max-time", "20ms"}, {"-I", "1", "-R", "2", "-D", "2"}, {"-I", "1", "-R", "2", "-D", "1", "-g", "2", "-t", "1"}} {
		be := &syncCounting{}
		r := runWith(t, AllReduce, be, append([]string{"-t", "2", "-b", "64", "-e", "64", "-n", "200", "-w", "5", "-c", "0", "--out-of-place-only"}, mode...)...)
		if r.code != 0 {
			t.Fatalf("%v: exit %d: %s", mode, r.code, r.stderr)
		}
		// Per rank: the warm-up's chunks, the untimed operation, the end of
		// each batch; --precision may run a few batches.
		if got := be.syncs.Load(); got >= iters {
			t.Errorf("%v: %d Synchronize calls for %d timed iterations: the loop was stopped between operations", mode, got, iters)
		}
	}
	// One rank: its per-iteration times are the intervals between its
	// marks, which add up to no more than the loop's wall time (the
	// record's time times its iterations). With several ranks an
	// iteration's time is the slowest rank's interval.
	var recs []results.Record
	for _, dev := range [][]string{nil, {"-R", "2", "-D", "2"}} { // the collective, a -D kernel's launches
		_, rs, _, _ := recordRun(t, AllReduce, append([]string{"-t", "1", "-b", "64", "-e", "64", "-n", "200", "-w", "5", "-c", "0", "--out-of-place-only", "-I", "1"}, dev...)...)
		recs = append(recs, rs...)
	}
	for _, rec := range recs {
		if len(rec.IterTimesUs) != iters {
			t.Fatalf("%d iteration times, want %d", len(rec.IterTimesUs), iters)
		}
		sum := 0.0
		for _, v := range rec.IterTimesUs {
			if v < 0 {
				t.Fatalf("a negative iteration time: %v", rec.IterTimesUs)
			}
			sum += v
		}
		if total := rec.TimeUs * iters; sum > total*1.001+1 {
			t.Errorf("iterations add up to %.1f us, more than the loop's %.1f", sum, total)
		}
	}
}

// Threads whose events share a clock get one series: iteration i lasts from
// when the last rank of any thread passed event i to when the last passed
// event i+1, so the series adds up to the loop, whatever each thread's
// own jitter; a thread without such times leaves every series as it is.
func TestItersFromPassed(t *testing.T) {
	t0 := time.Unix(100, 0)
	at := func(us ...int) []time.Time {
		out := make([]time.Time, len(us))
		for i, u := range us {
			out[i] = t0.Add(time.Duration(u) * time.Microsecond)
		}
		return out
	}
	res := []threadResult{{passed: at(0, 10, 12, 30)}, {passed: at(1, 5, 20, 29)}}
	itersFromPassed(res, 2)
	want := []float64{4.5e-6, 5e-6, 5e-6} // (10-1)/2, (20-10)/2, (30-20)/2 us, per operation of -m 2
	for i, r := range res {
		if r.passed != nil || len(r.iters) != len(want) {
			t.Fatalf("thread %d: %+v", i, r)
		}
		for k := range want {
			if math.Abs(r.iters[k]-want[k]) > 1e-12 {
				t.Errorf("thread %d iteration %d: %v, want %v", i, k, r.iters[k], want[k])
			}
		}
	}
	mixed := []threadResult{{passed: at(0, 10)}, {iters: []float64{1e-6}}}
	itersFromPassed(mixed, 1)
	if mixed[0].iters != nil || mixed[1].iters[0] != 1e-6 {
		t.Errorf("a thread without clock events: %+v", mixed)
	}
}
