package tuner

import (
	"errors"
	"fmt"
	"math"

	"github.com/montanaflynn/stats"
	"gonum.org/v1/gonum/stat/distuv"
)

// Fitting t(bytes) = alpha + bytes/beta to one configuration's medians.
//
// Weighting. Times span four or more decades, so every point counts by its
// relative error: the fit minimises sum ((pred-t)/t)^2, weighted least
// squares with weights 1/t^2, solved in closed form (a 2x2 QR).
//
// Robustness. After that first fit, iteratively reweighted least squares
// with Huber's weights on the relative residuals (tuning constant
// huberK, scale 1.4826*MAD of the residuals, never below relScaleFloor) so
// that one noisy point, typically a small size hit by a scheduler hiccup,
// does not bend the line.
//
// Constraints. beta lies in (0, MaxBetaGBs]: a series whose time does not
// grow with size gets beta = MaxBetaGBs (the data cannot tell a bandwidth).
// The first segment's alpha is a latency, so alpha >= 0; the fit is the
// best one on that box (interior, an edge or a corner; the objective is a
// convex quadratic). A second segment's alpha is only the intercept of a
// line that holds from its break on, and is unconstrained: when data leave
// a cache the slow line usually extends below zero at 0 bytes.
//
// Two segments. Every break that leaves at least minFirstPoints sizes below
// it and minSecondPoints from it on is tried (two suffice above: the knee
// shows at the top of a sweep, where sizes are few and times steadiest; a
// 2-point first segment would let one noisy small size pass for a knee),
// each side fitted as above, and the break with the least total
// cost is kept; the cost is Huber's loss of the relative residuals with
// delta = huberK * (the one-segment fit's residual scale), i.e. least
// squares that charges outliers linearly, the same yardstick for every
// candidate. Two segments are kept only if the data demand it, all of:
//   - the one-segment fit misses some point by more than kneeMinRelErr
//     (one line is good enough for tuning otherwise);
//   - the cost drops to at most kneeCostRatio of the one-segment cost
//     (the RMS relative error drops by 30% or more);
//   - the drop is significant: F = ((C1-C2)/3) / (C2/(n-5)) exceeds the
//     kneeFLevel quantile of F(3, n-5); the break counts as a third
//     parameter because it was searched for.
const (
	huberK          = 1.345
	relScaleFloor   = 0.005
	minFirstPoints  = 3
	minSecondPoints = 2
	kneeMinRelErr   = 0.10
	kneeCostRatio   = 0.49
	kneeFLevel      = 0.95
	irlsRounds      = 20
)

// MaxBetaGBs caps a fitted bandwidth: it is what a segment whose time does
// not grow with size gets.
const MaxBetaGBs = 1e6

// ErrTooFewSizes is returned for a series with fewer than two distinct
// sizes: nothing to fit a line to.
var ErrTooFewSizes = errors.New("fewer than 2 distinct sizes")

// sizeTime is one measured size: x bytes, t microseconds (> 0).
type sizeTime struct{ x, t float64 }

// abLine is t = a + b*x, a in us, b in us per byte.
type abLine struct{ a, b float64 }

func (l abLine) at(x float64) float64 { return l.a + l.b*x }

func (l abLine) segment(from int64) Segment {
	beta := MaxBetaGBs
	if l.b > minSlope {
		beta = 1 / (l.b * 1e3)
	}
	return Segment{FromBytes: from, AlphaUs: l.a, BetaGBs: beta}
}

// minSlope is the slope of MaxBetaGBs, in us per byte.
const minSlope = 1 / (MaxBetaGBs * 1e3)

// FitSeries fits the series' medians (Sample.Us against Sample.Bytes) as
// described at the top of this file. The fit's R2 is taken on log(time):
// 1 - sum (ln pred - ln t)^2 / sum (ln t - mean ln t)^2, the scale the fit
// weighs on (plain R^2 is about 1 for any line through the largest sizes).
func FitSeries(s Series) (Fit, error) {
	pts := make([]sizeTime, 0, len(s.Samples))
	distinct := 0
	for i, sm := range s.Samples {
		if !(sm.Us > 0) || math.IsInf(sm.Us, 0) {
			return Fit{}, fmt.Errorf("%s %s: size %d has time %v us", s.Key.Shape, s.Key.Config(), sm.Bytes, sm.Us)
		}
		if i > 0 && sm.Bytes < s.Samples[i-1].Bytes {
			return Fit{}, fmt.Errorf("%s %s: samples are not sorted by size", s.Key.Shape, s.Key.Config())
		}
		if i == 0 || sm.Bytes != s.Samples[i-1].Bytes {
			distinct++
		}
		pts = append(pts, sizeTime{float64(sm.Bytes), sm.Us})
	}
	if distinct < 2 {
		return Fit{}, fmt.Errorf("%s %s: %w (%d)", s.Key.Shape, s.Key.Config(), ErrTooFewSizes, distinct)
	}

	one := fitAB(pts, true)
	delta := huberK * relScale(relResiduals(pts, one))
	c1 := huberCost(pts, one, delta)
	segs := []Segment{one.segment(0)}
	method := MethodLine
	if k, l1, l2, c2, ok := bestBreak(pts, delta); ok && demandsBreak(pts, one, c1, c2) {
		segs = []Segment{l1.segment(0), l2.segment(int64(pts[k].x))}
		method = MethodKnee
	}
	if s.Key.Auto() {
		// The stack switches algorithm and protocol inside "auto": one
		// line prices it wrongly at both ends.
		if ps, how := autoSegments(s, pts); len(ps) > 1 {
			segs, method = ps, how
		}
	}

	f := Fit{Key: s.Key, Segments: segs, Points: len(pts), Method: method,
		MinBytes: s.Samples[0].Bytes, MaxBytes: s.Samples[len(s.Samples)-1].Bytes}
	rel := make([]float64, len(pts))
	var lnMean float64
	for _, p := range pts {
		lnMean += math.Log(p.t)
	}
	lnMean /= float64(len(pts))
	var ssRes, ssTot float64
	for i, p := range pts {
		pred := f.Predict(int64(p.x))
		rel[i] = math.Abs(pred/p.t - 1)
		f.MaxRelErr = max(f.MaxRelErr, rel[i])
		d := math.Log(max(pred, 1e-300)) - math.Log(p.t)
		ssRes += d * d
		e := math.Log(p.t) - lnMean
		ssTot += e * e
	}
	f.MedianRelErr, _ = stats.Median(rel)
	switch {
	case ssTot > 0:
		f.R2 = 1 - ssRes/ssTot
	case ssRes == 0:
		f.R2 = 1
	}
	f.Flagged = f.MaxRelErr > FlagRelErr
	return f, nil
}

// How a fit was made (Fit.Method).
const (
	MethodLine   = "one line"
	MethodKnee   = "two segments (a cache knee)"
	MethodChoice = "piecewise by the stack's logged choice"
	MethodBands  = "piecewise by size band"
)

// autoSegments prices an "auto" series piecewise. Where every sample
// says what the stack ran (Sample.Chosen: NCCL's TUNING log, gccl's own
// choice), each run of one choice is one configuration and gets its own
// fit (a line, or two segments at a knee; a choice seen at one size only
// joins its neighbour). Otherwise nothing says where the stack switched,
// and the price between two measured sizes is the line through them:
// a segment per measured interval, the last extended past the largest
// size. pts are the samples as fitted.
func autoSegments(s Series, pts []sizeTime) ([]Segment, string) {
	chosen := true
	for _, m := range s.Samples {
		chosen = chosen && m.Chosen != ""
	}
	var segs []Segment
	if !chosen {
		for i := 0; i+1 < len(pts); i++ {
			a, b := pts[i], pts[i+1]
			if a.x == b.x {
				continue
			}
			slope := max((b.t-a.t)/(b.x-a.x), 0)
			from := int64(a.x)
			if len(segs) == 0 {
				from = 0
			}
			segs = append(segs, abLine{a: a.t - slope*a.x, b: slope}.segment(from))
		}
		return segs, MethodBands
	}
	// Runs of one choice, index ranges [i, j).
	var runs [][2]int
	for i := 0; i < len(s.Samples); {
		j := i
		for j < len(s.Samples) && s.Samples[j].Chosen == s.Samples[i].Chosen {
			j++
		}
		runs = append(runs, [2]int{i, j})
		i = j
	}
	for k := 0; k < len(runs) && len(runs) > 1; {
		if distinctSizesOf(s.Samples[runs[k][0]:runs[k][1]]) >= 2 {
			k++
			continue
		}
		if k > 0 {
			runs[k-1][1] = runs[k][1]
		} else {
			runs[1][0] = runs[0][0]
		}
		runs = append(runs[:k], runs[k+1:]...)
		k = 0
	}
	for _, r := range runs {
		sub := Series{Key: Key{Shape: s.Key.Shape, Algo: "band"}, Samples: s.Samples[r[0]:r[1]]}
		f, err := FitSeries(sub)
		if err != nil {
			return nil, ""
		}
		for i, g := range f.Segments {
			if i == 0 && len(segs) > 0 {
				g.FromBytes = s.Samples[r[0]].Bytes
			}
			segs = append(segs, g)
		}
	}
	return segs, MethodChoice
}

func distinctSizesOf(ms []Sample) int {
	n := 0
	for i, m := range ms {
		if i == 0 || m.Bytes != ms[i-1].Bytes {
			n++
		}
	}
	return n
}

// FitAll fits every series; a series that cannot be fitted yields an error
// and the others are fitted still. The fits keep the series' order.
func FitAll(series []Series) ([]Fit, []error) {
	var fits []Fit
	var errs []error
	for _, s := range series {
		f, err := FitSeries(s)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		fits = append(fits, f)
	}
	return fits, errs
}

// bestBreak returns the break (the index of the second segment's first
// point) of least total cost, the two lines and that cost; ok is false
// when there are too few points for two segments.
func bestBreak(pts []sizeTime, delta float64) (k int, l1, l2 abLine, c float64, ok bool) {
	c = math.Inf(1)
	for i := minFirstPoints; i <= len(pts)-minSecondPoints; i++ {
		if pts[i].x == pts[i-1].x || distinctSizes(pts[:i]) < 2 || distinctSizes(pts[i:]) < 2 {
			continue
		}
		a, b := fitAB(pts[:i], true), fitAB(pts[i:], false)
		if b.at(pts[i].x) <= 0 {
			continue // the second line would predict no time at its own start
		}
		if ci := huberCost(pts[:i], a, delta) + huberCost(pts[i:], b, delta); ci < c {
			k, l1, l2, c, ok = i, a, b, ci, true
		}
	}
	return k, l1, l2, c, ok
}

// demandsBreak is the acceptance rule for two segments (see the top of
// this file): c1 is the one-segment cost, c2 the best two-segment cost.
func demandsBreak(pts []sizeTime, one abLine, c1, c2 float64) bool {
	worst := 0.0
	for _, r := range relResiduals(pts, one) {
		worst = max(worst, math.Abs(r))
	}
	if worst <= kneeMinRelErr || c2 > kneeCostRatio*c1 {
		return false
	}
	dof := float64(len(pts) - 2*2 - 1)
	if dof < 1 {
		return false
	}
	if c2 == 0 {
		return true
	}
	f := ((c1 - c2) / 3) / (c2 / dof)
	return f > distuv.F{D1: 3, D2: dof}.Quantile(kneeFLevel)
}

func distinctSizes(pts []sizeTime) int {
	n := 0
	for i := range pts {
		if i == 0 || pts[i].x != pts[i-1].x {
			n++
		}
	}
	return n
}

// relResiduals are the relative residuals pred/t - 1.
func relResiduals(pts []sizeTime, l abLine) []float64 {
	r := make([]float64, len(pts))
	for i, p := range pts {
		r[i] = l.at(p.x)/p.t - 1
	}
	return r
}

// relScale is a robust scale of relative residuals: 1.4826 * MAD (the
// standard deviation for normal residuals), at least relScaleFloor.
func relScale(r []float64) float64 {
	mad, err := stats.MedianAbsoluteDeviation(r)
	if err != nil || math.IsNaN(mad) {
		return relScaleFloor
	}
	return max(1.4826*mad, relScaleFloor)
}

// huberCost is Huber's loss of the relative residuals with threshold delta.
func huberCost(pts []sizeTime, l abLine, delta float64) float64 {
	var c float64
	for _, r := range relResiduals(pts, l) {
		if a := math.Abs(r); a <= delta {
			c += r * r / 2
		} else {
			c += delta * (a - delta/2)
		}
	}
	return c
}

// fitAB fits t = a + b*x minimising the Huber-weighted relative error by
// iteratively reweighted least squares. first says whether the line is a
// model's first segment (alpha >= 0). pts has at least 2 distinct sizes.
func fitAB(pts []sizeTime, first bool) abLine {
	aMin := math.Inf(-1)
	if first {
		aMin = 0
	}
	w := make([]float64, len(pts))
	for i := range w {
		w[i] = 1
	}
	l := solveAB(pts, w, aMin)
	for range irlsRounds {
		r := relResiduals(pts, l)
		s := relScale(r)
		for i, ri := range r {
			w[i] = 1
			if u := math.Abs(ri) / s; u > huberK {
				w[i] = huberK / u
			}
		}
		next := solveAB(pts, w, aMin)
		done := math.Abs(next.a-l.a) <= 1e-9*(math.Abs(l.a)+1e-9) && math.Abs(next.b-l.b) <= 1e-9*l.b
		l = next
		if done {
			break
		}
	}
	return l
}

// solveAB minimises sum w_i (a/t_i + b*x_i/t_i - 1)^2, i.e. the weighted
// squared relative error, over a >= aMin, b >= minSlope. The objective is a
// convex quadratic, so the optimum is the unconstrained one when feasible,
// else the best of the edges' own optima (each clipped into its edge).
func solveAB(pts []sizeTime, w []float64, aMin float64) abLine {
	// Columns u = 1/t, v = x/t, scaled to unit maximum for conditioning.
	var uMax, vMax float64
	for _, p := range pts {
		uMax = max(uMax, 1/p.t)
		vMax = max(vMax, p.x/p.t)
	}
	if vMax == 0 {
		vMax = 1
	}
	if l, ok := solveAB2(pts, w, uMax, vMax); ok && l.a >= aMin && l.b >= minSlope {
		return l
	}
	obj := func(l abLine) float64 {
		var s float64
		for i, p := range pts {
			d := l.at(p.x)/p.t - 1
			s += w[i] * d * d
		}
		return s
	}
	var cands []abLine
	if !math.IsInf(aMin, -1) { // edge a = aMin: best b
		var num, den float64
		for i, p := range pts {
			u, v := 1/p.t, p.x/p.t
			num += w[i] * v * (1 - aMin*u)
			den += w[i] * v * v
		}
		b := minSlope
		if den > 0 {
			b = max(num/den, minSlope)
		}
		cands = append(cands, abLine{aMin, b})
	}
	{ // edge b = minSlope: best a
		var num, den float64
		for i, p := range pts {
			u, v := 1/p.t, p.x/p.t
			num += w[i] * u * (1 - minSlope*v)
			den += w[i] * u * u
		}
		cands = append(cands, abLine{max(num/den, aMin), minSlope})
	}
	best := cands[0]
	for _, c := range cands[1:] {
		if obj(c) < obj(best) {
			best = c
		}
	}
	return best
}

// solveAB2 is the unconstrained weighted least squares of the rows
// sqrt(w)*(u/uScale, v/vScale) against sqrt(w), by modified Gram-Schmidt.
func solveAB2(pts []sizeTime, w []float64, uScale, vScale float64) (abLine, bool) {
	n := len(pts)
	q1, q2, y := make([]float64, n), make([]float64, n), make([]float64, n)
	for i, p := range pts {
		sw := math.Sqrt(w[i])
		q1[i] = sw / p.t / uScale
		q2[i] = sw * p.x / p.t / vScale
		y[i] = sw
	}
	r11 := abNorm(q1)
	if r11 == 0 {
		return abLine{}, false
	}
	abScale(q1, 1/r11)
	v2 := abNorm(q2)
	var r12 float64
	for range 2 { // project twice: one pass loses orthogonality when u and v are nearly parallel
		c := abDot(q1, q2)
		r12 += c
		for i := range q2 {
			q2[i] -= c * q1[i]
		}
	}
	r22 := abNorm(q2)
	if r22 <= 1e-12*v2 {
		return abLine{}, false
	}
	abScale(q2, 1/r22)
	c1, c2 := abDot(q1, y), abDot(q2, y)
	b := c2 / r22
	a := (c1 - r12*b) / r11
	return abLine{a / uScale, b / vScale}, true
}

func abDot(x, y []float64) float64 {
	var s float64
	for i := range x {
		s += x[i] * y[i]
	}
	return s
}

func abNorm(x []float64) float64 { return math.Sqrt(abDot(x, x)) }

func abScale(x []float64, c float64) {
	for i := range x {
		x[i] *= c
	}
}
