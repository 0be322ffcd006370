package ci

import "github.com/gccl/gccl/results"

// ValueOf is what the gate reads from one record in metric m under
// normalisation n: the record's central value (its median time if measured,
// else its reported one, converted to the metric) and its per-iteration
// values, ascending and thinned as the gate thins them (nil when fewer than
// two were recorded). ok is false when the record cannot give the metric:
// no time, no bandwidth for busbw, or no ref_copy_gbps under NormCopy.
// It lets a store of past runs (package history) judge a series by the
// same values the gate compares.
func ValueOf(r results.Record, m Metric, n Normalization) (value float64, iters []float64, ok bool) {
	if n == NormCopy && !(r.RefCopyGBps > 0) {
		return 0, nil, false
	}
	v, ok := runOf(r, m, n)
	return v.value, v.iters, ok
}
