package ci

import (
	"fmt"

	"github.com/gccl/gccl/results"
)

// maxIterSamples bounds the per-iteration samples one record contributes: a
// record's samples are thinned to this many evenly spaced order statistics,
// so every run weighs the same when runs are pooled, and a baseline file
// stays small (see results.Thin).
const maxIterSamples = 100

// A run is what one record says about one key, in the compared metric
// (normalised if asked).
type run struct {
	value float64   // the run's central value: its median time if measured, else its reported one
	iters []float64 // per-iteration values, sorted, thinned; nil when not recorded
	ref   float64   // the run's ref_copy_gbps (0: not recorded)
}

// runOf converts a record to the metric. ok is false when the record cannot
// give the metric (no time, or no bandwidth for busbw: a 0-byte size).
func runOf(r results.Record, m Metric, n Normalization) (run, bool) {
	times := results.Thin(r.IterTimesUs, maxIterSamples)
	center := r.TimeUs
	switch {
	case r.MedianUs > 0:
		center = r.MedianUs
	case len(times) > 0:
		center = median(times)
	}
	var out run
	switch m {
	case Time:
		if !(center > 0) {
			return run{}, false
		}
		out = run{value: center, iters: times}
	case BusBW:
		// busbw = k/time with one k for every time of the record. k comes
		// from the size by the collective's formula where it is known, not
		// from the busbw column: nccl-tests prints that with two decimals,
		// so small sizes read 0.00 and a 17% drop can read 25%. Otherwise
		// the record's own busbw*time_us.
		k, known := results.BusBwFromTime(r.Collective, r.NRanks, r.Size, 1)
		if !known {
			k = r.BusBw * r.TimeUs
		}
		if !(k > 0 && center > 0) {
			if !(r.BusBw > 0) {
				return run{}, false
			}
			out = run{value: r.BusBw}
			break
		}
		out = run{value: k / center}
		if len(times) > 0 {
			out.iters = make([]float64, len(times))
			for i, t := range times {
				out.iters[len(times)-1-i] = k / t // ascending
			}
		}
	}
	if n == NormCopy {
		f := 1 / r.RefCopyGBps
		if m == Time {
			f = r.RefCopyGBps
		}
		out.value *= f
		for i := range out.iters {
			out.iters[i] *= f
		}
	}
	if len(out.iters) < 2 {
		out.iters = nil
	}
	out.ref = r.RefCopyGBps
	return out, true
}

// side is every run of one key on one side.
type side []run

// Unit of replication: what one value of a compared sample is.
const (
	UnitRuns       = "runs"       // one value per record: repeated runs, -N cycles, several files
	UnitIterations = "iterations" // per-iteration samples, pooled over the key's records
)

// sampleOf chooses the unit of replication for one key, the same on both
// sides, and returns each side's values. Runs are the honest unit (they
// carry run-to-run noise); they are used when both sides have enough runs
// for the U test to be able to reach significance at alpha. Otherwise
// per-iteration samples are pooled when both sides recorded them; otherwise
// the runs, however few.
func sampleOf(b, c side, alpha float64) (unit string, bv, cv []float64) {
	if len(b) >= 2 && len(c) >= 2 && minUTestP(len(b), len(c)) <= alpha {
		return UnitRuns, b.values(), c.values()
	}
	if b.allIters() && c.allIters() {
		return UnitIterations, b.pooled(), c.pooled()
	}
	return UnitRuns, b.values(), c.values()
}

func (s side) values() []float64 {
	v := make([]float64, len(s))
	for i, r := range s {
		v[i] = r.value
	}
	return v
}

func (s side) allIters() bool {
	for _, r := range s {
		if r.iters == nil {
			return false
		}
	}
	return len(s) > 0
}

func (s side) pooled() []float64 {
	var v []float64
	for _, r := range s {
		v = append(v, r.iters...)
	}
	return v
}

// collect groups the usable records of one side by key, dropping sizes below
// minSize. unusable counts records that cannot give the metric.
func collect(recs []results.Record, m Metric, n Normalization, minSize int64, what string) (map[Key]side, int, error) {
	out := map[Key]side{}
	unusable, small, noRef := 0, 0, 0
	for _, r := range recs {
		if r.Size < minSize {
			small++
			continue
		}
		if n == NormCopy && !(r.RefCopyGBps > 0) {
			noRef++
			continue
		}
		v, ok := runOf(r, m, n)
		if !ok {
			unusable++
			continue
		}
		k := KeyOf(r)
		out[k] = append(out[k], v)
	}
	if noRef > 0 {
		return nil, 0, fmt.Errorf("%w: %d of the %d %s records have no ref_copy_gbps (--normalize copy needs records written by this harness's perf binaries, which measure it; nccl-tests logs, and Go benchmarks that report no copy_GB/s, do not carry it: gate those with --normalize none, baseline and candidate from one machine)",
			ErrNoReference, noRef, len(recs), what)
	}
	if len(out) == 0 {
		switch {
		case len(recs) == 0:
			return nil, 0, fmt.Errorf("%w: the %s has no records", ErrNoRecords, what)
		case small == len(recs):
			return nil, 0, fmt.Errorf("%w: all %d %s records are below --min-size %s", ErrNoRecords, len(recs), what, results.SizeLabel(minSize))
		}
		return nil, 0, fmt.Errorf("%w: none of the %d %s records has a %s (and a positive time)", ErrNoRecords, len(recs), what, m)
	}
	return out, unusable, nil
}
