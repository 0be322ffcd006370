package ci

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/gccl/gccl/results"
)

// slowedLog rewrites an nccl-tests log as nccl-tests would print it had
// every operation taken f times as long: times with two decimals, algbw and
// busbw recomputed from them and rounded to two decimals too.
func slowedLog(t *testing.T, path string, f float64) string {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	for _, line := range strings.SplitAfter(string(data), "\n") {
		fs := strings.Fields(line)
		if len(fs) != 13 || strings.HasPrefix(fs[0], "#") {
			b.WriteString(line)
			continue
		}
		size, _ := strconv.ParseFloat(fs[0], 64)
		for _, col := range []int{5, 9} { // time of each placement
			us, _ := strconv.ParseFloat(fs[col], 64)
			us, _ = strconv.ParseFloat(fmt.Sprintf("%.2f", us*f), 64)
			algbw := size / us / 1e3
			fs[col] = fmt.Sprintf("%.2f", us)
			fs[col+1] = fmt.Sprintf("%.2f", algbw)
			fs[col+2] = fmt.Sprintf("%.2f", algbw) // 2 ranks: busbw = algbw
		}
		b.WriteString(strings.Join(fs, " ") + "\n")
	}
	out := t.TempDir() + "/slow_all_reduce_perf.txt"
	if err := os.WriteFile(out, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	return out
}

// An nccl-tests log is gated by its time column, not the rounded busbw:
// the busbw ratio reported is the inverse of the time ratio, and rows that
// print busbw 0.00 are compared too.
func TestNCCLTextGatedByTime(t *testing.T) {
	base := read(t, realNCCL)
	cand := read(t, slowedLog(t, realNCCL, 1.2))
	opt := DefaultOptions()
	opt.Thresholds = Uniform(0.20)
	rep := mustCompare(t, base, cand, opt)
	if len(rep.Comparisons) != len(base) {
		t.Fatalf("%d keys compared, want all %d rows' placements (0.00 rows kept)", len(rep.Comparisons), len(base))
	}
	zero := 0
	times := map[Key][2]float64{}
	for _, r := range base {
		times[KeyOf(r)] = [2]float64{r.TimeUs, 0}
		if r.BusBw == 0 {
			zero++
		}
	}
	for _, r := range cand {
		k := KeyOf(r)
		times[k] = [2]float64{times[k][0], r.TimeUs}
	}
	if zero == 0 {
		t.Fatal("the log has no 0.00 busbw row: the test needs one")
	}
	for _, c := range rep.Comparisons {
		tt := times[c.Key]
		if want := tt[0] / tt[1]; !near(c.Ratio, want, 1e-12) {
			t.Errorf("%s: busbw ratio %.4f, want the time ratio %.4f", c.Key, c.Ratio, want)
		}
		// 1.2x the time is a 16.7% busbw drop: within 20% everywhere,
		// though 512 B prints 0.04 -> 0.03, a 25% drop of the column.
		if c.Verdict != Unchanged {
			t.Errorf("%s: %s (ratio %.4f), want unchanged at a 20%% threshold", c.Key, c.Verdict, c.Ratio)
		}
	}
}

// A collective whose formula is unknown still gates on its busbw column.
func TestUnknownCollectiveGatesOnItsBusBw(t *testing.T) {
	mk := func(bw float64) []results.Record {
		r := rec(1<<20, 100, 1)
		r.Collective, r.BusBw = "alltoallv", bw
		return []results.Record{r}
	}
	rep := mustCompare(t, mk(10), mk(5), DefaultOptions())
	if c := rep.Comparisons[0]; !near(c.Ratio, 0.5, 1e-12) || c.Verdict != Regression {
		t.Errorf("alltoallv busbw 10 -> 5 at one time: ratio %v %s, want 0.5 regression", c.Ratio, c.Verdict)
	}
}
