package perf

import (
	"math"
	"testing"
)

// designFormula is DESIGN.md section 6, written out independently of the
// Test definitions: the param-count blocks algBw counts, the busBw factor,
// and how many param-count blocks the larger buffer holds (nccl-tests'
// getCollByteCount: the row's size column is that buffer).
type designFormula struct {
	algBlocks func(n int) float64
	factor    func(n int) float64
	rowBlocks func(n int) int64
}

func nf(n int) float64 { return float64(n) }

var design = map[string]designFormula{
	"allreduce":     {func(int) float64 { return 1 }, func(n int) float64 { return 2 * nf(n-1) / nf(n) }, func(int) int64 { return 1 }},
	"allgather":     {nf, func(n int) float64 { return nf(n-1) / nf(n) }, func(n int) int64 { return int64(n) }},
	"reducescatter": {nf, func(n int) float64 { return nf(n-1) / nf(n) }, func(n int) int64 { return int64(n) }},
	"alltoall":      {nf, func(n int) float64 { return nf(n-1) / nf(n) }, func(n int) int64 { return int64(n) }},
	"gather":        {nf, func(n int) float64 { return nf(n-1) / nf(n) }, func(n int) int64 { return int64(n) }},
	"scatter":       {nf, func(n int) float64 { return nf(n-1) / nf(n) }, func(n int) int64 { return int64(n) }},
	"broadcast":     {func(int) float64 { return 1 }, func(int) float64 { return 1 }, func(int) int64 { return 1 }},
	"reduce":        {func(int) float64 { return 1 }, func(int) float64 { return 1 }, func(int) int64 { return 1 }},
	"sendrecv":      {func(int) float64 { return 1 }, func(int) float64 { return 1 }, func(int) int64 { return 1 }},
	"hypercube":     {func(n int) float64 { return nf(n - 1) }, func(int) float64 { return 1 }, func(n int) int64 { return int64(n) }},
}

// blockTests are the tests whose buffers are whole param-count blocks: all
// but alltoallv, whose sizes alltoallv_test.go checks.
func blockTests() []*Test {
	var out []*Test
	for _, tt := range Tests {
		if tt.sizes == nil {
			out = append(out, tt)
		}
	}
	return out
}

func TestTestsList(t *testing.T) {
	seen := map[string]bool{}
	for _, tt := range Tests {
		if _, ok := design[tt.Collective]; !ok && tt.sizes == nil {
			t.Errorf("%v: no DESIGN.md formula", tt)
		}
		if seen[tt.Collective] {
			t.Errorf("%v listed twice", tt)
		}
		seen[tt.Collective] = true
	}
	if !seen["alltoallv"] {
		t.Errorf("alltoallv is not listed")
	}
	if n := len(blockTests()); n != len(design) {
		t.Errorf("Tests has %d block-geometry entries, DESIGN.md %d", n, len(design))
	}
}

func closeTo(a, b float64) bool {
	return a == b || math.Abs(a-b) <= 1e-12*math.Max(math.Abs(a), math.Abs(b))
}

// TestBandwidthFormulas: algBw and busBw of every test for 1 to 8 ranks.
func TestBandwidthFormulas(t *testing.T) {
	for _, tt := range blockTests() {
		d := design[tt.Collective]
		for n := 1; n <= 8; n++ {
			for _, c := range []struct {
				param, elt int
				sec        float64
			}{{1000, 4, 1e-3}, {1, 1, 1e-6}, {262144, 2, 0.125}, {0, 8, 1e-5}} {
				alg, bus := tt.BusBw(c.param, c.elt, n, c.sec)
				wantAlg := float64(c.param) * float64(c.elt) * d.algBlocks(n) / c.sec / 1e9
				wantBus := wantAlg * d.factor(n)
				if !closeTo(alg, wantAlg) || !closeTo(bus, wantBus) {
					t.Errorf("%s n=%d param=%d elt=%d sec=%g: algBw %g busBw %g, want %g %g",
						tt.Collective, n, c.param, c.elt, c.sec, alg, bus, wantAlg, wantBus)
				}
			}
			if alg, bus := tt.BusBw(100, 4, n, 0); alg != 0 || bus != 0 {
				t.Errorf("%s: zero time gives %g %g, want 0 0", tt.Collective, alg, bus)
			}
		}
	}
	// A few values by hand, as nccl-tests would print them.
	for _, c := range []struct {
		t          *Test
		n          int
		param, elt int
		sec        float64
		alg, bus   float64
	}{
		{AllReduce, 2, 268435456, 4, 3282.98e-6, 327.06, 327.06}, // the fixture's 1 GB row
		{AllReduce, 4, 1 << 20, 4, 1e-3, 4.194304, 6.291456},     // 2(n-1)/n = 1.5
		{AllGather, 8, 1 << 20, 4, 1e-3, 33.554432, 29.360128},   // 8 blocks, 7/8
		{Hypercube, 4, 1 << 20, 4, 1e-3, 12.582912, 12.582912},   // n-1 blocks
		{SendRecv, 2, 134217728, 4, 1509.53e-6, 355.65, 355.65},  // the sendrecv fixture
		{ReduceScatter, 1, 1 << 20, 4, 1e-3, 4.194304, 0},        // one rank moves nothing
		{Scatter, 3, 1000, 8, 1e-6, 24, 16},                      // 3 blocks, 2/3
	} {
		alg, bus := c.t.BusBw(c.param, c.elt, c.n, c.sec)
		if math.Abs(alg-c.alg) > 0.005 || math.Abs(bus-c.bus) > 0.005 {
			t.Errorf("%s n=%d: algBw %.4f busBw %.4f, want %.2f %.2f", c.t.Collective, c.n, alg, bus, c.alg, c.bus)
		}
	}
}

// TestCounts: param count and row size for sizes that are and are not
// multiples of n x elt, including sizes below n x elt.
func TestCounts(t *testing.T) {
	for _, tt := range blockTests() {
		d := design[tt.Collective]
		for n := 1; n <= 8; n++ {
			for _, elt := range []int{1, 2, 4, 8} {
				unit := int64(n * elt)
				sizes := []int64{0, 1, int64(elt), unit - 1, unit, unit + 1, unit + int64(elt), 3*unit - int64(elt),
					1024 * unit, 1024*unit + 3, 1 << 20, 1<<20 + 7, 1000, 999}
				for _, size := range sizes {
					if size < 0 {
						continue
					}
					param, row := tt.Counts(size, elt, n)
					blocks := d.rowBlocks(n)
					wantParam := size / int64(elt) / blocks
					wantRow := wantParam * blocks * int64(elt)
					if int64(param) != wantParam || row != wantRow {
						t.Errorf("%s n=%d elt=%d size=%d: param %d row %d, want %d %d",
							tt.Collective, n, elt, size, param, row, wantParam, wantRow)
					}
					if row > size {
						t.Errorf("%s n=%d elt=%d size=%d: row %d exceeds the requested size", tt.Collective, n, elt, size, row)
					}
				}
			}
		}
	}
	// Hand-checked cases (nccl-tests' getCollByteCount).
	for _, c := range []struct {
		t      *Test
		size   int64
		elt, n int
		param  int
		row    int64
		why    string
	}{
		{AllReduce, 8, 4, 2, 2, 8, "the fixture's first row"},
		{AllReduce, 10, 4, 3, 2, 8, "a partial element is dropped"},
		{AllGather, 8, 4, 3, 0, 0, "2 elements over 3 ranks: nothing per rank"},
		{AllGather, 1024, 4, 3, 85, 1020, "256 elements, 85 per rank"},
		{ReduceScatter, 1024, 4, 4, 64, 1024, "reduce_scatter 4 ranks: count column 64"},
		{AlltoAll, 100, 4, 3, 8, 96, "25 elements, 8 per peer"},
		{Gather, 7, 1, 8, 0, 0, "below n x elt"},
		{Scatter, 48, 8, 3, 2, 48, "six doubles over three ranks"},
		{Broadcast, 7, 8, 4, 0, 0, "below one element"},
		{Reduce, 4096, 2, 5, 2048, 4096, "rank count does not matter"},
		{SendRecv, 33, 4, 2, 8, 32, "sendrecv keeps whole elements"},
		{Hypercube, 64, 4, 4, 4, 64, "hypercube gathers n blocks"},
	} {
		param, row := c.t.Counts(c.size, c.elt, c.n)
		if param != c.param || row != c.row {
			t.Errorf("%s size %d elt %d n %d (%s): param %d row %d, want %d %d", c.t.Collective, c.size, c.elt, c.n, c.why, param, row, c.param, c.row)
		}
	}
}
