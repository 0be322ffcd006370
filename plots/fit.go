package plots

import (
	"fmt"
	"math"

	"github.com/gccl/gccl/results"
)

// fitPerOctave is how densely a fitted model is sampled along the size
// axis: enough for the curve to look smooth through a segment break.
const fitPerOctave = 8

// Model is a fitted time model (tune fit's): the time in us it predicts
// for an operation of bytes.
type Model func(bytes int64) float64

// ModelOf finds the fitted model of a curve from the curve's records (the
// caller matches them to its models: plots does not fit), or says why the
// curve has none drawn.
type ModelOf func(recs []results.Record) (Model, error)

// FitPoints samples fitted model f over curve c's sizes in the curve's
// metric: the model's time, or the bandwidth it implies (algBW =
// bytes/time; busBW = algBW times the curve's bus factor; normalised by
// the curve's copy bandwidth). The samples are perOctave per octave, plus
// both ends.
func FitPoints(f Model, c Curve, m Metric, perOctave int) ([]Point, error) {
	if len(c.Points) == 0 {
		return nil, fmt.Errorf("%s: no points", c.Label)
	}
	if f == nil {
		return nil, fmt.Errorf("%s: no model", c.Label)
	}
	switch {
	case (m == BusBW || m == BusBWNorm) && c.BusFactor <= 0:
		return nil, fmt.Errorf("%s: no record gives busBW/algBW, so the model's busBW is unknown", c.Label)
	case m == BusBWNorm && c.RefCopy <= 0:
		return nil, fmt.Errorf("%s: no copy bandwidth to normalise the model by", c.Label)
	}
	perOctave = max(perOctave, 1)
	lo, hi := X(max(c.MinBytes(), 1)), X(max(c.MaxBytes(), 1))
	n := int(math.Ceil((hi - lo) * float64(perOctave)))
	var out []Point
	last := int64(-1)
	for i := 0; i <= n; i++ {
		x := hi
		if i < n {
			x = lo + float64(i)/float64(perOctave)
		}
		b := int64(math.Round(math.Exp2(x)))
		if b == last {
			continue
		}
		last = b
		us := f(b)
		if !(us > 0) {
			continue
		}
		out = append(out, Point{Bytes: b, Y: metricOfTime(m, b, us, c), N: 0})
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%s: the model predicts no positive time over the curve's sizes", c.Label)
	}
	return out, nil
}

// metricOfTime converts a time in us at size bytes to metric m.
func metricOfTime(m Metric, bytes int64, us float64, c Curve) float64 {
	alg := float64(bytes) / (us * 1e3) // GB/s
	switch m {
	case Time:
		return us
	case AlgBW:
		return alg
	case BusBWNorm:
		return alg * c.BusFactor / c.RefCopy
	}
	return alg * c.BusFactor
}

// curveModels finds the model of every curve with modelOf; the curves
// with none come back as warnings, each named by its label.
func curveModels(curves []Curve, modelOf ModelOf) (map[int]Model, []string) {
	out := map[int]Model{}
	var warns []string
	for i, c := range curves {
		f, err := modelOf(c.recs)
		if err != nil {
			warns = append(warns, fmt.Sprintf("%s: %v", c.Label, err))
			continue
		}
		out[i] = f
	}
	return out, warns
}
