package history

import (
	"bytes"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/gccl/gccl/ci"
)

// filled is a history of four runs: the gate's fixture and synthetic runs
// with and without samples, two on a branch.
func filled(t *testing.T) *Store {
	t.Helper()
	s := mustOpen(t, dbPath(t))
	mustAdd(t, s, Run{Commit: "fixture"}, readRecords(t, gateRuns))
	mustAdd(t, s, Run{Commit: "c1", Branch: "main", Time: t0}, synth(60, 0, 1))
	mustAdd(t, s, Run{Commit: "c2", Branch: "main", Time: t0.Add(time.Hour), Machine: "m2"}, synth(60, 7, 1.5))
	mustAdd(t, s, Run{Commit: "c0", Time: t0.Add(-time.Hour), Tool: "nccl-tests 2.19"}, synth(5, 2, 0.5))
	return s
}

func export(t *testing.T, s *Store) []byte {
	t.Helper()
	var b bytes.Buffer
	if _, err := s.Export(&b); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// Export then Import into a new history gives the same history: the same
// runs, keys, series, and the same export, byte for byte.
func TestExportImportRoundTrip(t *testing.T) {
	a := filled(t)
	out := export(t, a)
	if n := bytes.Count(out, []byte("\n")); n != 4 {
		t.Fatalf("export has %d lines, want one per run (4)", n)
	}
	b := mustOpen(t, dbPath(t))
	st, err := b.Import(bytes.NewReader(out), "a.jsonl")
	if err != nil || st.Added != 4 || st.Duplicates != 0 {
		t.Fatalf("import: %+v (%v), want 4 added", st, err)
	}
	if again := export(t, b); !bytes.Equal(again, out) {
		t.Errorf("the imported history exports differently:\n%.400s\nwas\n%.400s", again, out)
	}
	ra, _ := a.Runs(Filter{})
	rb, _ := b.Runs(Filter{})
	for i := range ra { // ids are each store's own: a's in order of adding
		ra[i].ID = 0
	}
	for i := range rb {
		rb[i].ID = 0
	}
	if !reflect.DeepEqual(ra, rb) {
		t.Errorf("runs differ:\n%+v\n%+v", ra, rb)
	}
	ka, _ := a.Keys(Filter{})
	kb, _ := b.Keys(Filter{})
	if !reflect.DeepEqual(ka, kb) || len(ka) != 67 {
		t.Fatalf("keys differ or not 67: %d, %d", len(ka), len(kb))
	}
	for _, k := range ka {
		pa, _ := a.Series(k, ci.BusBW, ci.NormCopy, Filter{})
		pb, _ := b.Series(k, ci.BusBW, ci.NormCopy, Filter{})
		for i := range pa {
			pa[i].RunID = 0
		}
		for i := range pb {
			pb[i].RunID = 0
		}
		if !reflect.DeepEqual(pa, pb) || len(pa) == 0 {
			t.Fatalf("%s: series differ or empty:\n%+v\n%+v", k, pa, pb)
		}
	}
}

// Importing runs a history holds, or a file twice, adds nothing.
func TestImportDedupes(t *testing.T) {
	a := filled(t)
	out := export(t, a)
	st, err := a.Import(bytes.NewReader(out), "a.jsonl")
	if err != nil || st.Added != 0 || st.Duplicates != 4 {
		t.Errorf("importing a history into itself: %+v (%v), want 4 duplicates", st, err)
	}
	b := mustOpen(t, dbPath(t))
	twice := append(append([]byte{}, out...), out...)
	st, err = b.Import(bytes.NewReader(twice), "twice.jsonl")
	if err != nil || st.Added != 4 || st.Duplicates != 4 {
		t.Errorf("a file holding every run twice: %+v (%v), want 4 added, 4 duplicates", st, err)
	}
	if runs, _ := b.Runs(Filter{}); len(runs) != 4 {
		t.Errorf("%d runs, want 4", len(runs))
	}
}

// A bad line is refused naming its line and what is wrong, and nothing
// of the file is added.
func TestImportRefusesBadLines(t *testing.T) {
	good := strings.SplitAfter(string(export(t, filled(t))), "\n")
	for _, c := range []struct {
		name, line, says string
	}{
		{"a results record", `{"schema":1,"tool":"gccl","collective":"allreduce"}`, "not a history export line"},
		{"not JSON", `allreduce 8 2.5`, "not a history export line"},
		{"a newer format", strings.Replace(good[1], `"format":1`, `"format":9`, 1), "format 9"},
		{"no commit", strings.Replace(good[1], `"commit":"c1"`, `"commit":""`, 1), "no commit"},
		{"a bad time", strings.Replace(good[1], `"time":"2026`, `"time":"yesterday`, 1), "not a history export line"},
		{"a negative time", strings.Replace(good[1], `"time_us":`, `"time_us":-`, 1), "time_us is -"},
		{"two values", strings.TrimSuffix(good[1], "\n") + " {}\n", "more than one"},
	} {
		s := mustOpen(t, dbPath(t))
		in := good[0] + "\n" + c.line // line 3
		_, err := s.Import(strings.NewReader(in), "in.jsonl")
		if err == nil || !strings.Contains(err.Error(), "in.jsonl:3:") || !strings.Contains(err.Error(), c.says) {
			t.Errorf("%s: %v, want an error at in.jsonl:3 saying %q", c.name, err, c.says)
		}
		if runs, _ := s.Runs(Filter{}); len(runs) != 0 {
			t.Errorf("%s: %d runs added from a refused file", c.name, len(runs))
		}
	}
}
