package tuner

import (
	"math"
	"testing"
	"time"

	"github.com/gccl/gccl/results"
)

// runRecords builds the out-of-place records of one side-by-side run that
// started at minute start: each config's time at bytes is t[config] x luck.
func runRecords(start int, interleaved bool, bytes int64, luck float64, t map[string]float64) []results.Record {
	var recs []results.Record
	for _, c := range []string{"LL", "LL128", "Simple"} {
		us, ok := t[c]
		if !ok {
			continue
		}
		recs = append(recs, results.Record{
			Timestamp: time.Date(2026, 11, 23, 0, start, 0, 0, time.UTC), Host: "h",
			Collective: "allreduce", NRanks: 2, NHosts: 1, Algorithm: "Ring", Protocol: c, Channels: 1,
			Placement: results.OutOfPlace, Size: bytes, MedianUs: us * luck, TimeUs: us * luck, Interleaved: interleaved,
		})
	}
	return recs
}

// usOf returns the collected median of each protocol at bytes.
func usOf(t *testing.T, series []Series, bytes int64) map[string]float64 {
	t.Helper()
	out := map[string]float64{}
	for _, s := range series {
		for _, m := range s.Samples {
			if m.Bytes == bytes {
				out[s.Key.Proto] = m.Us
			}
		}
	}
	return out
}

func nearRel(a, b float64) bool { return math.Abs(a/b-1) < 1e-12 }

// A run's luck, shared by its configurations, is removed exactly: every
// run is scaled to the median run, so every run's time (not only the
// median of them) is the truth times the median luck.
func TestCollectRemovesARunsLuck(t *testing.T) {
	truth := map[string]float64{"LL": 10, "LL128": 10.5, "Simple": 12}
	var recs []results.Record
	recs = append(recs, runRecords(1, true, 64, 1.0, truth)...)
	recs = append(recs, runRecords(2, true, 64, 1.3, truth)...)
	recs = append(recs, runRecords(3, true, 64, 0.9, truth)...)
	for _, s := range Collect(recs) {
		want := truth[s.Key.Proto]
		if len(s.Samples) != 1 || len(s.Samples[0].Times) != 3 {
			t.Fatalf("%s: samples %+v, want one size of three runs", s.Key.Proto, s.Samples)
		}
		for _, us := range append(s.Samples[0].Times, s.Samples[0].Us) {
			if !nearRel(us, want) {
				t.Errorf("%s: time %.6g, want %.6g (truth x the median run's luck 1.0)", s.Key.Proto, us, want)
			}
		}
	}
}

// Where runs' luck and one slow measurement combine, the raw median of
// runs inverts two configurations and the scaled one does not: LL is 8%
// slow in run 1, whose luck (1.0) is the median; raw, LL's median run is
// then 10.8 against LL128's 10.5; scaled, runs 2 and 3 give LL 10.
func TestCollectKeepsTheOrderPoolingLoses(t *testing.T) {
	var recs []results.Record
	recs = append(recs, runRecords(1, true, 64, 1.0, map[string]float64{"LL": 10.8, "LL128": 10.5, "Simple": 12})...)
	recs = append(recs, runRecords(2, true, 64, 1.3, map[string]float64{"LL": 10, "LL128": 10.5, "Simple": 12})...)
	recs = append(recs, runRecords(3, true, 64, 0.8, map[string]float64{"LL": 10, "LL128": 10.5, "Simple": 12})...)
	got := usOf(t, Collect(recs), 64)
	if !nearRel(got["LL"], 10) || !nearRel(got["LL128"], 10.5) || !nearRel(got["Simple"], 12) {
		t.Errorf("scaled medians %v, want LL 10, LL128 10.5, Simple 12", got)
	}
}

// Records of separate runs (not interleaved) and a single run are left as
// they are: the median of the runs' medians.
func TestCollectLeavesSeparateRunsAndSingleRuns(t *testing.T) {
	truth := map[string]float64{"LL": 10, "LL128": 10.5, "Simple": 12}
	var sep []results.Record
	sep = append(sep, runRecords(1, false, 64, 1.0, truth)...)
	sep = append(sep, runRecords(2, false, 64, 2.0, map[string]float64{"LL": 10})...)
	sep = append(sep, runRecords(3, false, 64, 3.0, map[string]float64{"LL": 10})...)
	got := usOf(t, Collect(sep), 64)
	if !nearRel(got["LL"], 20) || !nearRel(got["LL128"], 10.5) {
		t.Errorf("separate runs: %v, want LL 20 (median of 10, 20, 30) and LL128 10.5", got)
	}
	one := runRecords(1, true, 64, 1.7, truth)
	got = usOf(t, Collect(one), 64)
	for c, us := range truth {
		if !nearRel(got[c], us*1.7) {
			t.Errorf("single run %s: %.6g, want %.6g", c, got[c], us*1.7)
		}
	}
}

// One configuration that was unlucky on its own in a run is outvoted by
// the others: the run keeps factor 1, and that config's median over the
// runs ignores its bad run.
func TestCollectOutvotesOneBadConfig(t *testing.T) {
	truth := map[string]float64{"LL": 10, "LL128": 10.5, "Simple": 12}
	bad := map[string]float64{"LL": 30, "LL128": 10.5, "Simple": 12}
	var recs []results.Record
	recs = append(recs, runRecords(1, true, 64, 1.0, truth)...)
	recs = append(recs, runRecords(2, true, 64, 1.0, bad)...)
	recs = append(recs, runRecords(3, true, 64, 1.0, truth)...)
	got := usOf(t, Collect(recs), 64)
	for c, us := range truth {
		if !nearRel(got[c], us) {
			t.Errorf("%s: %.6g, want %.6g", c, got[c], us)
		}
	}
}

// Runs that share fewer than two configurations at a size cannot be told
// apart from the configurations: left alone. Sizes are blocks of their own.
func TestCollectNeedsTwoSharedConfigs(t *testing.T) {
	var recs []results.Record
	recs = append(recs, runRecords(1, true, 64, 1.0, map[string]float64{"LL": 10, "LL128": 11})...)
	recs = append(recs, runRecords(2, true, 64, 2.0, map[string]float64{"LL": 10, "Simple": 12})...)
	// At 128 B both runs share all three: run 2's luck goes.
	recs = append(recs, runRecords(1, true, 128, 1.0, map[string]float64{"LL": 20, "LL128": 21, "Simple": 22})...)
	recs = append(recs, runRecords(2, true, 128, 2.0, map[string]float64{"LL": 20, "LL128": 21, "Simple": 22})...)
	series := Collect(recs)
	got := usOf(t, series, 64)
	if !nearRel(got["LL"], 15) || !nearRel(got["LL128"], 11) || !nearRel(got["Simple"], 24) {
		t.Errorf("64 B: %v, want raw LL 15 (mean of 10 and 20), LL128 11, Simple 24", got)
	}
	got = usOf(t, series, 128)
	for c, us := range map[string]float64{"LL": 20, "LL128": 21, "Simple": 22} {
		// Two runs: each is scaled to their geometric middle, sqrt(2).
		if want := us * math.Sqrt2; !nearRel(got[c], want) {
			t.Errorf("128 B %s: %.6g, want %.6g", c, got[c], want)
		}
	}
}
