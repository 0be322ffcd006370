package ci

import (
	"slices"
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
