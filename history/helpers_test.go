package history

import (
	"database/sql"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/gccl/gccl/results"
)

// gateRuns: the gate's fixture, 5 runs per key of 7 sizes, with
// per-iteration samples and ref_copy_gbps.
const gateRuns = "../ci/testdata/embedded_n5.jsonl"

func readRecords(t testing.TB, path string) []results.Record {
	t.Helper()
	recs, err := results.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return recs
}

// dbPath is a file name for a new history in a test's own directory.
func dbPath(t testing.TB) string {
	t.Helper()
	return filepath.Join(t.TempDir(), "history.db")
}

func mustOpen(t testing.TB, path string) *Store {
	t.Helper()
	s, err := Open(path, Options{Create: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func mustAdd(t testing.TB, s *Store, run Run, recs []results.Record) int64 {
	t.Helper()
	id, added, err := s.Add(run, recs)
	if err != nil {
		t.Fatal(err)
	}
	if !added {
		t.Fatalf("run %+v was not added", run)
	}
	return id
}

var t0 = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

// synth makes n records over a grid of keys (collectives x sizes x
// configurations), each with iters per-iteration times scaled by f, so
// that one run's value of a key is known.
func synth(n, iters int, f float64) []results.Record {
	colls := []string{"allreduce", "allgather", "reducescatter", "broadcast", "reduce"}
	protos := []string{"LL", "LL128", "Simple"}
	recs := make([]results.Record, n)
	for i := range recs {
		size := int64(8) << (i % 20)
		t := f * (2 + float64(size)/1e3)
		r := results.Record{
			Schema: results.SchemaVersion, Tool: "gccl 0.1.0", Timestamp: t0, Host: "box", CPU: "test cpu", Cores: 2,
			Backend: "embedded", NRanks: 2, NHosts: 1, Collective: colls[(i/20)%len(colls)], Type: "float", Op: "sum",
			Algorithm: "Ring", Protocol: protos[(i/100)%len(protos)], Channels: 1 + (i/300)%8, BuffSize: int64(i/2400) << 20,
			Placement: results.OutOfPlace, Size: size, TimeUs: t, MedianUs: t, BusBw: float64(size) / t / 1e3,
			RefCopyGBps: 5, Env: map[string]string{"NCCL_DEBUG": "INFO"},
		}
		for j := range iters {
			r.IterTimesUs = append(r.IterTimesUs, t*(1+float64(j)/1000))
		}
		recs[i] = r
	}
	return recs
}

// count is the number of rows of a table, read through a connection of
// its own.
func count(t testing.TB, path, table string) int {
	t.Helper()
	db, err := sql.Open("sqlite", dsn(path, time.Minute, false))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var n int
	if err := db.QueryRow(fmt.Sprintf("SELECT count(*) FROM %s", table)).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

func readFile(t testing.TB, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
