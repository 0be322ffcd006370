package ci

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/gccl/gccl/results"
)

// Builders for synthetic result sets.

// rec is one run of allreduce at size with a median time of us
// microseconds (busbw follows) on a machine of copy bandwidth ref.
func rec(size int64, us, ref float64) results.Record {
	bw := float64(size) / us / 1e3 // GB/s; the factor does not matter, only that busbw*time is constant
	return results.Record{Schema: 1, Collective: "allreduce", Type: "float", Op: "sum", Root: -1,
		Algorithm: "auto", Protocol: "auto", NRanks: 2, NHosts: 1, Placement: results.OutOfPlace,
		Size: size, Count: size / 4, TimeUs: us, MedianUs: us, AlgBw: bw, BusBw: bw, RefCopyGBps: ref}
}

// runs returns one record per time.
func runs(size int64, ref float64, us ...float64) []results.Record {
	var out []results.Record
	for _, t := range us {
		out = append(out, rec(size, t, ref))
	}
	return out
}

// jitter returns n times around us, each scaled by a factor uniform in
// [1-spread, 1+spread], from a fixed seed.
func jitter(seed uint64, n int, us, spread float64) []float64 {
	rng := rand.New(rand.NewPCG(seed, 1))
	out := make([]float64, n)
	for i := range out {
		out[i] = us * (1 + spread*(2*rng.Float64()-1))
	}
	return out
}

// slower returns a copy of r, the time scaled by f (bandwidths by 1/f).
func slower(r results.Record, f float64) results.Record {
	r.TimeUs *= f
	r.MedianUs *= f
	r.MinUs *= f
	r.MaxUs *= f
	r.P99Us *= f
	r.AlgBw /= f
	r.BusBw /= f
	it := make([]float64, len(r.IterTimesUs))
	for i, t := range r.IterTimesUs {
		it[i] = t * f
	}
	r.IterTimesUs = it
	return r
}

func read(t *testing.T, path string) []results.Record {
	t.Helper()
	recs, err := results.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return recs
}

// readSweep reads realSweep: every record in full mode, every fourth with
// -short (the race detector makes the bootstrap slow).
func readSweep(t *testing.T) []results.Record {
	recs := read(t, realSweep)
	if !testing.Short() {
		return recs
	}
	var out []results.Record
	for i := 0; i < len(recs); i += 4 {
		out = append(out, recs[i])
	}
	return out
}

func mustCompare(t *testing.T, base, cand []results.Record, opt Options) *Report {
	t.Helper()
	rep, err := Compare(base, cand, opt)
	if err != nil {
		t.Fatalf("Compare: %v", err)
	}
	return rep
}

// verdicts maps each compared key to its verdict.
func verdicts(r *Report) map[Key]Verdict {
	m := map[Key]Verdict{}
	for _, c := range r.Comparisons {
		m[c.Key] = c.Verdict
	}
	return m
}

func near(a, b, tol float64) bool { return math.Abs(a-b) <= tol }
