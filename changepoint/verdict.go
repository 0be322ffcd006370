package changepoint

import (
	"fmt"
	"math"
)

// Regressions returns the change points among cps, found in a series of n
// points, that are regressions (see ChangePoint.Regression) and lie within
// its newest points: Index >= n-newest. This is what a CI job gates on
// (tune history changes --fail-on-change): a step for the worse that the
// newest runs brought, not one already in the history before them.
func Regressions(cps []ChangePoint, n, newest int, higherIsBetter bool) []ChangePoint {
	var out []ChangePoint
	for _, c := range cps {
		if c.Index >= n-newest && c.Regression(higherIsBetter) {
			out = append(out, c)
		}
	}
	return out
}

// madScale turns a median absolute deviation into a standard deviation for
// normal noise.
const madScale = 1.4826

// Noise is the run-to-run spread of a series once its steps are taken out.
type Noise struct {
	// Level is the median of the newest segment: what the next run should
	// measure if nothing changed.
	Level float64 `json:"level"`
	// Rel is the robust relative standard deviation of one run: 1.4826 x
	// the median absolute deviation of the residuals v/median(segment) - 1
	// over every segment.
	Rel float64 `json:"rel"`
	// N is how many residuals it is estimated from (one a run).
	N int `json:"n"`
}

// EstimateNoise measures the noise of values around the segment medians that
// the change points cps (from Detect on the same values) delimit, so a step
// is not mistaken for noise. It needs at least 3 values.
func EstimateNoise(values []float64, cps []ChangePoint) (Noise, error) {
	if err := checkSeries(values); err != nil {
		return Noise{}, err
	}
	if len(values) < 3 {
		return Noise{}, fmt.Errorf("changepoint: %d values: the noise of a series needs at least 3", len(values))
	}
	cuts := []int{0}
	for _, c := range cps {
		if c.Index <= cuts[len(cuts)-1] || c.Index >= len(values) {
			return Noise{}, fmt.Errorf("changepoint: change point at %d: want increasing indexes inside the series' %d values (Detect's, on the same values)", c.Index, len(values))
		}
		cuts = append(cuts, c.Index)
	}
	cuts = append(cuts, len(values))
	res := make([]float64, 0, len(values))
	var level float64
	for i := 0; i+1 < len(cuts); i++ {
		seg := values[cuts[i]:cuts[i+1]]
		level = median(seg)
		for _, v := range seg {
			res = append(res, v/level-1)
		}
	}
	m := median(res)
	for i, r := range res {
		res[i] = math.Abs(r - m)
	}
	return Noise{Level: level, Rel: madScale * median(res), N: len(values)}, nil
}

// Z is how many noise units a candidate run is from the level, positive when
// it is worse: slower for a time, slower for a bandwidth when higherIsBetter.
// +Inf when the series had no spread at all and the candidate is worse.
func (n Noise) Z(candidate float64, higherIsBetter bool) float64 {
	d := candidate/n.Level - 1
	if higherIsBetter {
		d = -d
	}
	if n.Rel == 0 {
		switch {
		case d > 0:
			return math.Inf(1)
		case d < 0:
			return math.Inf(-1)
		}
		return 0
	}
	return d / n.Rel
}

// MachineFactors says, per run, how much slower than usual the machine ran
// that run: the median over keys of the run's value relative to the key's
// median over all runs. series[k][r] is key k's value in run r (a time or a
// bandwidth, all keys the same kind), NaN where run r has no key k.
//
// Dividing each value by its run's factor takes out what slowed every key
// at once: on a shared machine, other jobs coming and going (this project's
// 2-core VM ran 2-3x slower for minutes at a time, and its copy bandwidth,
// ref_copy_gbps, did not follow). A change confined to a minority of the
// keys moves the median little and stays; a change that slows most keys
// alike is taken out with the machine's swings, so a series normalised this
// way cannot see a regression of everything. It needs at least 3 keys;
// many more make it steadier.
func MachineFactors(series [][]float64) ([]float64, error) {
	if len(series) < 3 {
		return nil, fmt.Errorf("changepoint: machine factors of %d keys: want at least 3 (the median over keys must outvote one key's own change)", len(series))
	}
	runs := len(series[0])
	meds := make([]float64, len(series))
	for k, s := range series {
		if len(s) != runs {
			return nil, fmt.Errorf("changepoint: key %d has %d runs, key 0 has %d: want one value (or NaN) per run for every key", k, len(s), runs)
		}
		var present []float64
		for r, v := range s {
			if math.IsNaN(v) {
				continue
			}
			if !(v > 0) || math.IsInf(v, 0) {
				return nil, fmt.Errorf("changepoint: key %d, run %d is %v: want a finite positive measurement, or NaN for none", k, r, v)
			}
			present = append(present, v)
		}
		if len(present) == 0 {
			return nil, fmt.Errorf("changepoint: key %d has no value in any of the %d runs", k, runs)
		}
		meds[k] = median(present)
	}
	out := make([]float64, runs)
	ratios := make([]float64, 0, len(series))
	for r := range out {
		ratios = ratios[:0]
		for k, s := range series {
			if !math.IsNaN(s[r]) {
				ratios = append(ratios, s[r]/meds[k])
			}
		}
		if len(ratios) == 0 {
			return nil, fmt.Errorf("changepoint: run %d has no value for any of the %d keys", r, len(series))
		}
		out[r] = median(ratios)
	}
	return out, nil
}

// RunNoise is a series' run-to-run noise: the mean over runs of how far
// each lies from the median of the noiseWidth runs around it, relative,
// each capped at noiseCap. The rolling median follows the series' steps
// and a shared machine's slow spells, so what is left is how one run
// differs from its neighbours; the cap keeps a few stalls of 20x from
// outweighing the rest, and the mean (not a median) still sees a series
// that flips between two quantised values. It compares ways of measuring
// the same runs (a run's median time against its fastest iteration): the
// one with less noise finds a step sooner. It needs at least 3 values.
func RunNoise(values []float64) (float64, error) {
	if err := checkSeries(values); err != nil {
		return 0, err
	}
	if len(values) < 3 {
		return 0, fmt.Errorf("changepoint: %d values: the noise of a series needs at least 3", len(values))
	}
	w := min(noiseWidth, len(values))
	var sum float64
	for i, v := range values {
		lo := max(0, min(i-w/2, len(values)-w))
		sum += min(math.Abs(v/median(values[lo:lo+w])-1), noiseCap)
	}
	return sum / float64(len(values)), nil
}

// noiseWidth and noiseCap: RunNoise's window (runs) and cap (relative).
const (
	noiseWidth = 11
	noiseCap   = 0.25
)
