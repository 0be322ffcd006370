package ci

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/gccl/gccl/results"
)

// ValueOf gives the gate's values: the median time when measured, busbw
// from the size by the collective's formula, iterations ascending, and no
// value under NormCopy for a record without ref_copy_gbps.
func TestValueOf(t *testing.T) {
	r := results.Record{Collective: "allreduce", NRanks: 2, Size: 1 << 20, TimeUs: 100, MedianUs: 80,
		IterTimesUs: []float64{90, 70, 80}, RefCopyGBps: 4}
	if v, it, ok := ValueOf(r, Time, NormNone); !ok || v != 80 || !slices.Equal(it, []float64{70, 80, 90}) {
		t.Errorf("time: %v %v %v, want 80 [70 80 90] true", v, it, ok)
	}
	k, _ := results.BusBwFromTime("allreduce", 2, 1<<20, 1)
	if v, it, ok := ValueOf(r, BusBW, NormCopy); !ok || v != k/80/4 || len(it) != 3 || it[0] != k/90/4 {
		t.Errorf("busbw/copy: %v %v %v, want %v", v, it, ok, k/80/4)
	}
	r.RefCopyGBps = 0
	if _, _, ok := ValueOf(r, BusBW, NormCopy); ok {
		t.Error("NormCopy without ref_copy_gbps gave a value")
	}
	if _, _, ok := ValueOf(results.Record{Collective: "allreduce"}, Time, NormNone); ok {
		t.Error("a record with no time gave a value")
	}
}

// FastestOf reads min_us as ValueOf reads the median: the least time, the
// most busbw, normalised alike; nothing without min_us.
func TestFastestOf(t *testing.T) {
	r := results.Record{Collective: "allreduce", NRanks: 2, Size: 1 << 20, TimeUs: 100, MedianUs: 80, MinUs: 50,
		IterTimesUs: []float64{90, 70, 80}, RefCopyGBps: 4}
	if v, ok := FastestOf(r, Time, NormNone); !ok || v != 50 {
		t.Errorf("time: %v %v, want 50", v, ok)
	}
	k, _ := results.BusBwFromTime("allreduce", 2, 1<<20, 1)
	if v, ok := FastestOf(r, BusBW, NormCopy); !ok || v != k/50/4 {
		t.Errorf("busbw/copy: %v %v, want %v", v, ok, k/50/4)
	}
	if v, ok := FastestOf(r, Time, NormCopy); !ok || v != 50*4 {
		t.Errorf("time*copy: %v %v, want 200", v, ok)
	}
	if m, _, _ := ValueOf(r, Time, NormNone); m != 80 {
		t.Errorf("FastestOf changed the caller's record: median now %v", m)
	}
	r.MinUs = 0
	if _, ok := FastestOf(r, Time, NormNone); ok {
		t.Error("a record without min_us gave a fastest value")
	}
}

func TestParseStat(t *testing.T) {
	for in, want := range map[string]Stat{"median": StatMedian, " MIN ": StatFastest, "fastest": StatFastest, "p5": StatLow, "auto": StatAuto} {
		if got, err := ParseStat(in); err != nil || got != want {
			t.Errorf("ParseStat(%q) = %v, %v; want %v", in, got, err, want)
		}
	}
	for _, s := range []Stat{StatMedian, StatFastest, StatLow, StatAuto} {
		if got, err := ParseStat(s.String()); err != nil || got != s {
			t.Errorf("ParseStat(%v.String()) = %v, %v", s, got, err)
		}
	}
	if _, err := ParseStat("mean"); err == nil || !errors.Is(err, ErrBadOption) || !strings.Contains(err.Error(), "want median, p5, min or auto") {
		t.Errorf("ParseStat(mean): %v", err)
	}
}

// LowOf is the 5th lowest time in a hundred, the 5th highest bandwidth;
// nothing from fewer than 20 samples.
func TestLowOf(t *testing.T) {
	v := make([]float64, 200)
	for i := range v {
		v[i] = float64(i + 1)
	}
	if got, ok := LowOf(v, Time); !ok || got != 11 {
		t.Errorf("time: %v %v, want 11 (index 10 of 200)", got, ok)
	}
	if got, ok := LowOf(v, BusBW); !ok || got != 190 {
		t.Errorf("busbw: %v %v, want 190 (index 189 of 200)", got, ok)
	}
	if got, ok := LowOf(v[:20], Time); !ok || got != 2 {
		t.Errorf("20 samples: %v %v, want 2", got, ok)
	}
	if _, ok := LowOf(v[:19], Time); ok {
		t.Error("19 samples gave a 5th percentile")
	}
}
