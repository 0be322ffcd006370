package perf

import (
	"bytes"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"testing"
)

// firstRowRatios runs one size -N cycles times (so the first row and the
// same size in later positions share a run) and returns, per placement,
// the first row's time over the median of the later rows'.
func firstRowRatios(tb testing.TB, tc *Test, warm bool, argv ...string) [2]float64 {
	o, err := parseOptions(tc.Prog, argv, &bytes.Buffer{})
	if err != nil {
		tb.Fatal(err)
	}
	if err := o.fitAlgos(tc.Collective); err != nil {
		tb.Fatal(err)
	}
	o.noWarmUp = !warm
	var out, errw bytes.Buffer
	e := &engine{t: tc, o: o, be: Embedded{}, out: &out, errw: &errw, env: o.recordEnv()}
	if code, err := e.run(); code != exitOK || err != nil {
		tb.Fatalf("exit %d: %v %s", code, err, errw.String())
	}
	var times [2][]float64
	for _, row := range dataRows(out.String()) {
		f := strings.Fields(row)
		for k, col := range []int{5, 9} { // time columns: out of place, in place
			v, err := strconv.ParseFloat(f[col], 64)
			if err != nil {
				tb.Fatalf("row %q: %v", row, err)
			}
			times[k] = append(times[k], v)
		}
	}
	var ratios [2]float64
	for k, ts := range times {
		later := append([]float64(nil), ts[1:]...)
		sort.Float64s(later)
		ratios[k] = ts[0] / later[len(later)/2]
	}
	return ratios
}

// BenchmarkFirstRow shows what the warm-up pass is for: the first row's
// time over the same size measured in later positions of the same run
// (-N cycles), with the pass and without it, side by side. Report the
// medians over -count runs:
//
//	go test ./perf -run '^$' -bench FirstRow -count 10
func BenchmarkFirstRow(b *testing.B) {
	for _, c := range []struct {
		name string
		tc   *Test
		argv []string
	}{
		{"allreduce/ranks=2/8B", AllReduce, []string{"-g", "2", "-b", "8", "-e", "8", "-N", "5", "-n", "100", "-w", "5"}},
		{"allreduce/ranks=4/64K", AllReduce, []string{"-g", "4", "-b", "64K", "-e", "64K", "-N", "5", "-n", "20", "-w", "5"}},
		{"allgather/ranks=4/1M", AllGather, []string{"-g", "4", "-b", "1M", "-e", "1M", "-N", "5", "-n", "10", "-w", "5"}},
	} {
		for _, warm := range []bool{true, false} {
			b.Run(fmt.Sprintf("%s/warmup=%v", c.name, warm), func(b *testing.B) {
				var out, in float64
				for i := 0; i < b.N; i++ {
					r := firstRowRatios(b, c.tc, warm, c.argv...)
					out, in = out+r[0], in+r[1]
				}
				b.ReportMetric(out/float64(b.N), "first/later-out")
				b.ReportMetric(in/float64(b.N), "first/later-in")
			})
		}
	}
}

// The warm-up pass runs before the first size, untimed: the table and
// records are what they were, and every size a sweep warms is a size the
// collective can run (sizes double from -b up to -e, never past it).
func TestWarmUpLeavesOutputAlone(t *testing.T) {
	cleanBwEnv(t)
	cleanChoiceEnv(t)
	r := runPerf(t, AllReduce, "-g", "3", "-b", "24", "-e", "100", "-i", "20", "-n", "2", "-w", "0")
	if r.code != exitOK || len(dataRows(r.stdout)) != 4 {
		t.Fatalf("exit %d, %d rows: %s", r.code, len(dataRows(r.stdout)), r.stderr)
	}
	ratios := firstRowRatios(t, AllReduce, true, "-g", "2", "-b", "8", "-e", "8", "-N", "2", "-n", "2", "-w", "0")
	for _, v := range ratios {
		if !(v > 0) {
			t.Errorf("first/later ratio %v: the rows did not parse", v)
		}
	}
}

// TestWarmChunks checks the warm-up's chunk schedule for every count up to
// a few thousand and sizes from 1 B to 1 GiB: the chunks cover the
// operations exactly, start at warmChunkMin, never shrink but for the
// last, double until the limit, and hold no more than warmChunkBytes of
// data unless at warmChunkMin.
func TestWarmChunks(t *testing.T) {
	for _, bytes := range []int64{0, 1, 8, 4096, 1 << 20, 64 << 20, 1 << 30} {
		limit := warmChunkMax
		if bytes > 0 {
			limit = int(min(int64(warmChunkMax), max(warmChunkBytes/bytes, warmChunkMin)))
		}
		for ops := 0; ops <= 5000; ops++ {
			ends := warmChunks(ops, bytes)
			if ops == 0 {
				if len(ends) != 0 {
					t.Fatalf("ops 0: chunks %v", ends)
				}
				continue
			}
			if ends[len(ends)-1] != ops {
				t.Fatalf("ops %d bytes %d: last end %d", ops, bytes, ends[len(ends)-1])
			}
			prev, prevChunk := 0, 0
			for i, end := range ends {
				chunk := end - prev
				last := i == len(ends)-1
				switch {
				case chunk <= 0:
					t.Fatalf("ops %d bytes %d: empty chunk at %d: %v", ops, bytes, i, ends)
				case chunk > limit && chunk > warmChunkMin:
					t.Fatalf("ops %d bytes %d: chunk %d over the limit %d", ops, bytes, chunk, limit)
				case i == 0 && !last && chunk != warmChunkMin:
					t.Fatalf("ops %d bytes %d: first chunk %d, want %d", ops, bytes, chunk, warmChunkMin)
				case i > 0 && !last && chunk != min(2*prevChunk, limit):
					t.Fatalf("ops %d bytes %d: chunk %d after %d, want %d", ops, bytes, chunk, prevChunk, min(2*prevChunk, limit))
				}
				prev, prevChunk = end, chunk
			}
		}
	}
	// The figures the comment gives: 200000 operations of 8 B take about
	// 200 chunks, not 25000; 64 MiB operations stay at warmChunkMin.
	if n := len(warmChunks(200000, 8)); n > 210 {
		t.Errorf("200000 ops of 8 B: %d chunks", n)
	}
	if ends := warmChunks(40, 64<<20); len(ends) != 5 {
		t.Errorf("40 ops of 64 MiB: chunks %v, want 5 of 8", ends)
	}
}
