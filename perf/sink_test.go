package perf

import (
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gccl/gccl/results"
)

// sinkFor opens the sink of a run writing -J, --out and --csv into dir.
func sinkFor(t *testing.T, dir string) (*sink, RunConfig) {
	t.Helper()
	o, err := parseOptions(AllReduce.Prog, []string{"-J", filepath.Join(dir, "r.json"), "--out", filepath.Join(dir, "r.jsonl"), "--csv", filepath.Join(dir, "r.csv")}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	configs := o.configs()
	s, err := openSink(o, Embedded{}, time.Now(), configs)
	if err != nil {
		t.Fatal(err)
	}
	return s, configs[0]
}

// state is what each of the sink's files is: "absent" or "N records".
func state(t *testing.T, dir string) string {
	t.Helper()
	noTempFiles(t, dir)
	var out []string
	for _, name := range []string{"r.json", "r.jsonl", "r.csv"} {
		recs, err := results.ReadFile(filepath.Join(dir, name))
		switch {
		case errors.Is(err, os.ErrNotExist):
			out = append(out, name+" absent")
		case err != nil:
			out = append(out, name+" INVALID: "+err.Error())
		default:
			out = append(out, name+" "+strings.Repeat("r", len(recs)))
		}
	}
	return strings.Join(out, ", ")
}

func sinkRecord(size int64) results.Record {
	return results.Record{Schema: results.SchemaVersion, Tool: "gccl " + Version, Collective: "allreduce", Type: "float", Op: "sum", Root: -1,
		NRanks: 2, NProcs: 1, RanksPerProc: 2, Algorithm: "auto", Protocol: "auto", Placement: results.OutOfPlace, Size: size, Count: size / 4,
		Iterations: 20, AggIters: 1, TimeUs: 10, AlgBw: 1, BusBw: 1, Timestamp: time.Now()}
}

// Every way a run ends leaves each result file valid or absent, and no
// temporary file: completed (all written), stopped in order (those with
// records written), abandoned (JSONL and CSV with records put in place,
// -J removed), or an early return (nothing).
func TestSinkSettles(t *testing.T) {
	for _, c := range []struct {
		name    string
		records int
		end     func(*sink) error
		want    string
		kept    string
	}{
		{"completed", 2, func(s *sink) error { return s.commit(false) }, "r.json rr, r.jsonl rr, r.csv rr", "complete"},
		{"stopped", 1, func(s *sink) error { return s.commit(true) }, "r.json r, r.jsonl r, r.csv r", "valid and partial, the sizes measured"},
		{"stopped before a record", 0, func(s *sink) error { return s.commit(true) }, "r.json absent, r.jsonl absent, r.csv absent", "not written (no size finished)"},
		{"abandoned", 2, func(s *sink) error { s.abandon(); return nil }, "r.json absent, r.jsonl rr, r.csv rr", "removed (not yet written)"},
		{"early return", 1, func(s *sink) error { s.close(); return nil }, "r.json absent, r.jsonl absent, r.csv absent", ""},
	} {
		dir := t.TempDir()
		s, rc := sinkFor(t, dir)
		for i := range c.records {
			if err := s.add(rc, sinkRecord(int64(1024<<i))); err != nil {
				t.Fatal(err)
			}
		}
		if err := c.end(s); err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		s.close() // every exit path's last word: changes nothing settled
		if got := state(t, dir); got != c.want {
			t.Errorf("%s: %s, want %s", c.name, got, c.want)
		}
		if kept := s.kept(); !strings.Contains(kept, c.kept) {
			t.Errorf("%s: the message %q does not say %q", c.name, kept, c.kept)
		}
	}
}
