package history

import (
	"bytes"
	"math"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/gccl/gccl/ci"
	"github.com/gccl/gccl/results"
)

// A run of the gate's fixture: its defaults come from the records, its
// keys are the gate's, and each key's point is the median of the gate's
// values of its 5 records, with their samples pooled.
func TestAddRunsKeysSeries(t *testing.T) {
	recs := readRecords(t, gateRuns)
	s := mustOpen(t, dbPath(t))
	id := mustAdd(t, s, Run{Commit: "abc123", Branch: "main"}, recs)

	runs, err := s.Runs(Filter{})
	if err != nil || len(runs) != 1 {
		t.Fatalf("runs %v (%v), want 1", runs, err)
	}
	r := runs[0]
	if r.ID != id || r.Commit != "abc123" || r.Branch != "main" || r.Machine != "vm" || r.Tool != "gccl 0.1.0" ||
		r.Records != len(recs) || !r.Time.Equal(recs[0].Timestamp) {
		t.Errorf("run %+v: want the records' host vm, tool, timestamp %v and %d records", r, recs[0].Timestamp, len(recs))
	}
	if r.Meta["cpu"] != recs[0].CPU || r.Meta["cores"] != "2" || r.Meta["backend"] != "embedded" {
		t.Errorf("meta %v lacks the records' provenance", r.Meta)
	}

	want := map[ci.Key][]results.Record{}
	for _, rec := range recs {
		want[ci.KeyOf(rec)] = append(want[ci.KeyOf(rec)], rec)
	}
	keys, err := s.Keys(Filter{})
	if err != nil || len(keys) != len(want) || len(keys) != 7 {
		t.Fatalf("keys %v (%v), want the fixture's %d", keys, err, len(want))
	}
	if !slices.IsSortedFunc(keys, func(a, b ci.Key) int { return int(a.Size - b.Size) }) {
		t.Errorf("keys not in size order: %v", keys)
	}
	for _, k := range keys {
		for _, m := range []ci.Metric{ci.BusBW, ci.Time} {
			pts, err := s.Series(k, m, ci.NormCopy, Filter{})
			if err != nil || len(pts) != 1 {
				t.Fatalf("%s %s: %v (%v), want one point", k, m, pts, err)
			}
			var vals, iters, fastest []float64
			for _, rec := range want[k] {
				v, it, _ := ci.ValueOf(rec, m, ci.NormCopy)
				vals = append(vals, v)
				iters = append(iters, it...)
				f, ok := ci.FastestOf(rec, m, ci.NormCopy)
				if !ok {
					t.Fatalf("%s: a fixture record without min_us", k)
				}
				fastest = append(fastest, f)
			}
			best := slices.Min(fastest)
			if m.HigherIsBetter() {
				best = slices.Max(fastest)
			}
			if pts[0].Fastest != best {
				t.Errorf("%s %s: fastest %v, want the best of the records' %v", k, m, pts[0].Fastest, fastest)
			}
			slices.Sort(vals)
			slices.Sort(iters)
			p := pts[0]
			if p.RunID != id || p.Commit != "abc123" || p.Records != 5 || p.Value != vals[2] || !slices.Equal(p.Samples, iters) {
				t.Errorf("%s %s: point %v %d records value %v, %d samples; want value %v, %d samples",
					k, m, p.Commit, p.Records, p.Value, len(p.Samples), vals[2], len(iters))
			}
		}
	}
}

// Points come in run time order whatever the order of adding; the filter
// selects; a run whose records lack ref_copy_gbps has no point under
// NormCopy; a record with no samples drops the point's samples.
func TestSeriesOrderAndFilter(t *testing.T) {
	s := mustOpen(t, dbPath(t))
	base := synth(20, 10, 1)
	k := ci.KeyOf(base[3])
	add := func(commit, machine string, at time.Time, f float64, edit func([]results.Record)) int64 {
		recs := synth(20, 10, f)
		if edit != nil {
			edit(recs)
		}
		return mustAdd(t, s, Run{Commit: commit, Time: at, Machine: machine}, recs)
	}
	c := add("c3", "box", t0.Add(3*time.Hour), 3, nil)
	a := add("c1", "box", t0.Add(1*time.Hour), 1, nil)
	add("other", "big", t0.Add(2*time.Hour), 7, nil)
	b := add("c2", "box", t0.Add(2*time.Hour), 2, func(r []results.Record) {
		r[3].RefCopyGBps = 0
		r[3].IterTimesUs = nil
	})

	pts, err := s.Series(k, ci.Time, ci.NormNone, Filter{Machine: "box"})
	if err != nil {
		t.Fatal(err)
	}
	var ids []int64
	for _, p := range pts {
		ids = append(ids, p.RunID)
	}
	if !slices.Equal(ids, []int64{a, b, c}) {
		t.Fatalf("points of runs %v, want %v (by time, machine box only)", ids, []int64{a, b, c})
	}
	if pts[0].Value != base[3].TimeUs || math.Abs(pts[2].Value-3*base[3].TimeUs) > 1e-9 {
		t.Errorf("values %v %v, want %v and 3x", pts[0].Value, pts[2].Value, base[3].TimeUs)
	}
	if len(pts[0].Samples) != 10 || pts[1].Samples != nil {
		t.Errorf("samples %d and %v: want 10, then none for the record without", len(pts[0].Samples), pts[1].Samples)
	}
	norm, err := s.Series(k, ci.Time, ci.NormCopy, Filter{Machine: "box"})
	if err != nil || len(norm) != 2 || norm[0].RunID != a || norm[1].RunID != c || norm[0].Value != 5*base[3].TimeUs {
		t.Errorf("NormCopy: %+v (%v), want runs %d and %d, time x 5", norm, err, a, c)
	}
	if runs, _ := s.Runs(Filter{Commit: "other"}); len(runs) != 1 || runs[0].Machine != "big" {
		t.Errorf("Runs(commit other): %+v", runs)
	}
	if keys, _ := s.Keys(Filter{Branch: "nope"}); len(keys) != 0 {
		t.Errorf("keys of no run: %v", keys)
	}
}

// The same run added twice is kept once; a run differing in anything is
// a new one.
func TestAddDedupes(t *testing.T) {
	s := mustOpen(t, dbPath(t))
	recs := synth(30, 5, 1)
	id := mustAdd(t, s, Run{Commit: "c1"}, recs)
	if again, added, err := s.Add(Run{Commit: "c1"}, recs); err != nil || added || again != id {
		t.Errorf("the same run again: id %d added %v (%v), want %d not added", again, added, err, id)
	}
	mustAdd(t, s, Run{Commit: "c1", Branch: "b"}, recs)
	recs[7].TimeUs *= 1.0001
	mustAdd(t, s, Run{Commit: "c1"}, recs)
	if runs, _ := s.Runs(Filter{}); len(runs) != 3 {
		t.Errorf("%d runs, want 3", len(runs))
	}
}

// Runs that cannot be a point of a series are refused, naming why.
func TestAddRefuses(t *testing.T) {
	s := mustOpen(t, dbPath(t))
	noTime := synth(2, 0, 1)
	for i := range noTime {
		noTime[i].Timestamp = time.Time{}
	}
	nan := synth(3, 0, 1)
	nan[2].BusBw = math.NaN()
	noKey := synth(1, 0, 1)
	noKey[0].Collective = ""
	for _, c := range []struct {
		name string
		run  Run
		recs []results.Record
		says string
	}{
		{"no commit", Run{}, synth(1, 0, 1), "no commit"},
		{"no time", Run{Commit: "c"}, noTime, "no time"},
		{"no records", Run{Commit: "c", Time: t0}, nil, "no records"},
		{"NaN", Run{Commit: "c"}, nan, "record 3"},
		{"no collective", Run{Commit: "c"}, noKey, "no collective"},
		{"year 1800", Run{Commit: "c", Time: time.Date(1800, 1, 1, 0, 0, 0, 0, time.UTC)}, synth(1, 0, 1), "between 1970 and 2200"},
	} {
		if _, _, err := s.Add(c.run, c.recs); err == nil || !strings.Contains(err.Error(), c.says) {
			t.Errorf("%s: %v, want an error saying %q", c.name, err, c.says)
		}
	}
	if runs, _ := s.Runs(Filter{}); len(runs) != 0 {
		t.Errorf("refused runs were stored: %v", runs)
	}
}

// A history keeps no environment and no file names: the records' Env and
// Source are in neither the file nor its export.
func TestNoEnvironmentStored(t *testing.T) {
	path := dbPath(t)
	s := mustOpen(t, path)
	recs := synth(10, 3, 1)
	for i := range recs {
		recs[i].Env = map[string]string{"NCCL_IB_HCA": "mlx5_secretvalue", "GCCL_ALGO": "Ring"}
		recs[i].Source = "/home/someone/private/run.jsonl:3"
	}
	mustAdd(t, s, Run{Commit: "c1"}, recs)
	var export bytes.Buffer
	if _, err := s.Export(&export); err != nil {
		t.Fatal(err)
	}
	s.Close()
	for what, b := range map[string][]byte{"the file": readFile(t, path), "the export": export.Bytes()} {
		for _, w := range []string{"NCCL_IB_HCA", "mlx5_secretvalue", "GCCL_ALGO", "/home/someone"} {
			if bytes.Contains(b, []byte(w)) {
				t.Errorf("%s holds %q", what, w)
			}
		}
	}
	// The check can fail: what is kept is there.
	if !bytes.Contains(export.Bytes(), []byte("test cpu")) {
		t.Error("the export lacks the records' CPU")
	}
}
