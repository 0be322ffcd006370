package tuner

import (
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"
)

// Run-to-run noise (issue 18).
//
// Two runs of one configuration at one size differ by an additive term
// (launch and scheduling jitter, a few to tens of microseconds) plus a
// relative one (clocks, placement): |t1 - t2| <= AddUs + Rel*t for most
// pairs. A forced configuration displaces the default at a size only when
// it is faster by more than that: one run that looked 10% faster is no
// evidence where separate runs of one configuration differ by about
// DefaultNoisePrior's additive term at small sizes (docs/TUNING.md).
//
// EstimateNoise fits the envelope from the repeats the data hold: several
// runs of one key and size (separate files or -N cycles), and the two
// placement columns of one run, which measure the same configuration.
// With no repeats it has nothing to fit, and the caller's stated prior
// (--noise, DefaultNoisePrior) stands.

// Noise is the run-to-run spread of one time: AddUs + Rel x the time.
type Noise struct {
	AddUs float64 // additive, microseconds
	Rel   float64 // relative, a fraction
	// Pairs is how many repeat pairs it was estimated from (0: a prior).
	Pairs int
	// Source says where it came from: "estimated from N repeat pairs",
	// "prior (--noise)", ...
	Source string
}

// At is the noise of a time of us microseconds.
func (n Noise) At(us float64) float64 { return n.AddUs + n.Rel*us }

func (n Noise) String() string {
	return fmt.Sprintf("%gus+%g%%", round3(n.AddUs), round3(100*n.Rel))
}

func round3(x float64) float64 { return math.Round(x*1000) / 1000 }

// DefaultNoisePrior is the prior when the data hold no repeats: what
// separate nccl-tests runs of one configuration differed by on H200s,
// microseconds at small sizes and a few percent at large ones, rounded up
// (docs/TUNING.md).
var DefaultNoisePrior = Noise{AddUs: 20, Rel: 0.05, Source: "prior"}

// ParseNoise reads "15us+1%", "15us", "2%", "0.5us+0.02": an additive term
// in us (or ms, ns), a relative term as a percent or fraction, either or
// both joined by "+".
func ParseNoise(s string) (Noise, error) {
	var n Noise
	s = strings.TrimSpace(s)
	if s == "" {
		return n, fmt.Errorf("empty noise: want e.g. 15us+1%%")
	}
	for _, part := range strings.Split(s, "+") {
		p := strings.TrimSpace(strings.ToLower(part))
		unit := 0.0
		for _, u := range []struct {
			suf string
			us  float64
		}{{"us", 1}, {"µs", 1}, {"ms", 1e3}, {"ns", 1e-3}} {
			if strings.HasSuffix(p, u.suf) {
				p, unit = strings.TrimSuffix(p, u.suf), u.us
				break
			}
		}
		pct := strings.HasSuffix(p, "%")
		p = strings.TrimSuffix(p, "%")
		v, err := strconv.ParseFloat(strings.TrimSpace(p), 64)
		if err != nil || v < 0 || math.IsInf(v, 0) || math.IsNaN(v) {
			return Noise{}, fmt.Errorf("invalid noise term %q in %q: want an additive time such as 15us and/or a relative one such as 1%% or 0.01", part, s)
		}
		switch {
		case unit > 0:
			n.AddUs += v * unit
		case pct:
			n.Rel += v / 100
		default:
			n.Rel += v
		}
	}
	if n.Rel >= 1 {
		return Noise{}, fmt.Errorf("invalid noise %q: a relative term of 100%% or more leaves nothing to compare", s)
	}
	return n, nil
}

// repeatPair is two times of one configuration at one size.
type repeatPair struct{ t, d float64 } // mean time, absolute difference

// pairsOf returns the repeat pairs of the series: every pair of run times
// at one size (Sample.Runs: one per record), those of separate runs
// (across) apart from those of one run (the two placement columns, which
// share the run's state and so understate how runs differ).
func pairsOf(series []Series) (across, within []repeatPair) {
	for _, s := range series {
		for _, m := range s.Samples {
			r := m.Runs
			for i := 0; i < len(r); i++ {
				for j := i + 1; j < len(r); j++ {
					if !(r[i] > 0 && r[j] > 0) {
						continue
					}
					p := repeatPair{t: (r[i] + r[j]) / 2, d: math.Abs(r[i] - r[j])}
					if len(m.RunIDs) == len(r) && m.RunIDs[i] == m.RunIDs[j] {
						within = append(within, p)
					} else {
						across = append(across, p)
					}
				}
			}
		}
	}
	return across, within
}

// noiseCoverage is the share of repeat pairs the estimated envelope must
// cover.
const noiseCoverage = 0.9

// minNoisePairs is the fewest repeat pairs an estimate is made from.
const minNoisePairs = 8

// EstimateNoise fits AddUs + Rel*t to the repeats of separate runs in
// series (envelope). ok is false with fewer than minNoisePairs such pairs:
// the caller keeps its prior. Placement pairs of one run alone cannot
// show how runs differ; EstimateNoiseOr uses them only to raise a prior.
func EstimateNoise(series []Series) (Noise, bool) {
	across, _ := pairsOf(series)
	if len(across) < minNoisePairs {
		return Noise{Pairs: len(across)}, false
	}
	n := envelope(across)
	n.Source = fmt.Sprintf("estimated from %d pairs of separate runs (%.0f%% of them within it)", len(across), 100*noiseCoverage)
	return n, true
}

// EstimateNoiseOr is EstimateNoise, or, without repeats of separate runs,
// the prior, raised where the placement columns of single runs already
// differ by more.
func EstimateNoiseOr(series []Series, prior Noise) (n Noise, estimated bool) {
	if n, ok := EstimateNoise(series); ok {
		return n, true
	}
	_, within := pairsOf(series)
	n = prior
	n.Source = "the prior (no repeats of separate runs: -N cycles, --repeat, or several files of one tag)"
	if len(within) >= minNoisePairs {
		w := envelope(within)
		if w.AddUs > n.AddUs || w.Rel > n.Rel {
			n = Noise{AddUs: max(w.AddUs, n.AddUs), Rel: max(w.Rel, n.Rel)}
			n.Source = fmt.Sprintf("the prior, raised to cover %d placement pairs of single runs", len(within))
		} else {
			n.Source += fmt.Sprintf("; the placement columns of single runs differ by less (%v over %d pairs), but one run's columns share its luck", w, len(within))
		}
	}
	return n, false
}

// envelope is the tightest AddUs + Rel*t covering noiseCoverage of the
// pairs' differences: of the candidate slopes, the one whose envelope has
// the least mean height relative to the pairs' times.
func envelope(ps []repeatPair) Noise {
	// Candidate slopes: 0 and every pair's d/t; for each, the additive
	// term is the coverage quantile of what the slope leaves.
	slopes := []float64{0}
	for _, p := range ps {
		slopes = append(slopes, p.d/p.t)
	}
	sort.Float64s(slopes)
	if len(slopes) > 400 { // a grid of quantiles is as good and bounded
		grid := make([]float64, 0, 401)
		for i := 0; i <= 400; i++ {
			grid = append(grid, slopes[i*(len(slopes)-1)/400])
		}
		slopes = grid
	}
	// Tightness is the envelope's mean height relative to each pair's time:
	// times span decades, and the absolute mean would let the largest
	// sizes buy a small relative term with an additive one that swamps
	// every small size.
	var meanInvT float64
	for _, p := range ps {
		meanInvT += 1 / p.t
	}
	meanInvT /= float64(len(ps))
	best := Noise{AddUs: math.Inf(1)}
	bestH := math.Inf(1)
	left := make([]float64, len(ps))
	for _, r := range slopes {
		if r >= 1 {
			continue
		}
		for i, p := range ps {
			left[i] = math.Max(0, p.d-r*p.t)
		}
		a := quantile(left, noiseCoverage)
		if h := a*meanInvT + r; h < bestH {
			bestH, best = h, Noise{AddUs: a, Rel: r}
		}
	}
	best.Pairs = len(ps)
	return best
}

// quantile is the q-quantile of xs (sorted copy, nearest rank above).
func quantile(xs []float64, q float64) float64 {
	s := append([]float64(nil), xs...)
	sort.Float64s(s)
	i := int(math.Ceil(q*float64(len(s)))) - 1
	return s[min(max(i, 0), len(s)-1)]
}
