package ci

import (
	"fmt"
	"strings"

	"github.com/gccl/gccl/results"
)

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

// FastestOf is the record's fastest iteration (its min_us) in metric m
// under normalisation n: the least time, or the most bandwidth. ok is false
// when the record has no min_us or cannot give the metric. Interference
// from other work on a shared host only adds time, so a run's fastest
// iteration moves with the code more than with its neighbours (Chen &
// Revels, "Robust benchmarking in noisy environments", 2016): on the
// project's shared 2-vCPU VM its run-to-run noise (changepoint.RunNoise)
// was 1.0-3.3% where the median's was 6-10% (changepoint/testdata/README.md).
func FastestOf(r results.Record, m Metric, n Normalization) (float64, bool) {
	if !(r.MinUs > 0) || (n == NormCopy && !(r.RefCopyGBps > 0)) {
		return 0, false
	}
	r.MedianUs, r.IterTimesUs = r.MinUs, nil
	v, ok := runOf(r, m, n)
	return v.value, ok
}

// A Stat is what one run's value of a key is in a history's series.
type Stat int

const (
	StatMedian  Stat = iota // the median time of the run's records (ValueOf): the gate's value
	StatFastest             // the fastest iteration over the run's records (FastestOf)
	StatLow                 // the 5th percentile of the run's iterations, pooled over its records (LowOf)
	StatAuto                // per key, whichever of the others has the least run-to-run noise
)

// Stats are the values StatAuto chooses among, in the order it prefers
// them on a tie.
var Stats = []Stat{StatMedian, StatLow, StatFastest}

// ParseStat reads "median", "p5", "min" (or "fastest") or "auto".
func ParseStat(s string) (Stat, error) {
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "median":
		return StatMedian, nil
	case "min", "fastest":
		return StatFastest, nil
	case "p5":
		return StatLow, nil
	case "auto":
		return StatAuto, nil
	}
	return 0, fmt.Errorf("%w: stat %q: want median, p5, min or auto", ErrBadOption, s)
}

func (s Stat) String() string {
	switch s {
	case StatFastest:
		return "min"
	case StatLow:
		return "p5"
	case StatAuto:
		return "auto"
	}
	return "median"
}

// lowPercent is StatLow's percentile: low enough that the host's
// interference (which only adds time) rarely reaches it, high enough to
// average over many iterations rather than rest on one lucky one. Measured
// on a 16-core Xeon, a run's 5th percentile had 1.7-2.2% run-to-run noise
// from 4 KiB to 2 MiB where its median had 2-5% and its minimum 2.5-7%
// (changepoint/testdata/README.md).
const lowPercent = 5

// minLowSamples: fewer per-iteration samples than this do not give a 5th
// percentile.
const minLowSamples = 20

// LowOf is the 5th percentile of a run's per-iteration values in metric m
// (ascending, pooled over its records, as ValueOf gives them and a
// history's Point.Samples holds them): of the times the 5th lowest in a
// hundred, of the bandwidths the 5th highest. ok is false with fewer than
// 20 samples.
func LowOf(sorted []float64, m Metric) (float64, bool) {
	n := len(sorted)
	if n < minLowSamples {
		return 0, false
	}
	i := n * lowPercent / 100
	if m.HigherIsBetter() {
		i = n - 1 - i
	}
	return sorted[i], true
}
