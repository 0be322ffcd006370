package cli

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/gccl/gccl/results"
)

// BenchmarkHistoryAdd10k: tune history add of one JSONL file of 10,000
// records (20 per-iteration samples each, as perf -I writes), reading
// included, into a history that grows by a run per iteration. The target
// (issue 44) is under 2 s.
func BenchmarkHistoryAdd10k(b *testing.B) {
	fixture, err := results.ReadFile(gateRuns)
	if err != nil {
		b.Fatal(err)
	}
	dir := b.TempDir()
	file := filepath.Join(dir, "runs.jsonl")
	f, err := os.Create(file)
	if err != nil {
		b.Fatal(err)
	}
	w := results.NewJSONLWriter(f)
	for i := range 10000 {
		r := fixture[i%len(fixture)]
		r.Size = int64(8 * (1 + i/len(fixture))) // a key of its own per record but the 5 repeats
		if err := w.Write(r); err != nil {
			b.Fatal(err)
		}
	}
	if err := w.Flush(); err != nil {
		b.Fatal(err)
	}
	f.Close()
	db := filepath.Join(dir, "history.db")
	i := 0
	for b.Loop() {
		i++
		if code, _, stderr := runCLI("history", "add", "--db", db, "--commit", fmt.Sprint(i), file); code != exitOK {
			b.Fatal(stderr)
		}
	}
	b.ReportMetric(10000*float64(b.N)/b.Elapsed().Seconds(), "records/s")
}
