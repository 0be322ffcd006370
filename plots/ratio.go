package plots

import (
	"fmt"
	"math"
)

// Pair is one configuration measured in both sets of a comparison, and the
// ratio of the candidate's metric to the baseline's at every size both
// measured.
type Pair struct {
	Label      string
	Base, Cand Curve
	Ratio      []Point // Y = Cand/Base; N is 1
}

// Geomean is the geometric mean of the pair's ratios (NaN without any).
func (p Pair) Geomean() float64 {
	if len(p.Ratio) == 0 {
		return math.NaN()
	}
	s := 0.0
	for _, r := range p.Ratio {
		s += math.Log(r.Y)
	}
	return math.Exp(s / float64(len(p.Ratio)))
}

// Ratio divides cand's metric by base's at every size both have. A
// bandwidth ratio is taken from the times where both sides have them
// (base time over cand time, times the copy bandwidths' ratio for the
// normalised metric): the same bytes move, and a printed bandwidth of 0.00
// says nothing. Sizes on one side only, and sizes where a value is not
// positive, are left out.
func Ratio(base, cand Curve, m Metric) []Point {
	at := make(map[int64]Point, len(base.Points))
	for _, p := range base.Points {
		at[p.Bytes] = p
	}
	var out []Point
	for _, c := range cand.Points {
		b, ok := at[c.Bytes]
		if !ok {
			continue
		}
		r := math.NaN()
		switch {
		case m == Time:
			r = c.Y / b.Y
		case b.Us > 0 && c.Us > 0 && m == BusBWNorm:
			r = b.Us / c.Us * base.RefCopy / cand.RefCopy
		case b.Us > 0 && c.Us > 0:
			r = b.Us / c.Us
		case b.Y > 0:
			r = c.Y / b.Y
		}
		if !(r > 0) || math.IsInf(r, 0) {
			continue
		}
		out = append(out, Point{Bytes: c.Bytes, Y: r, N: 1})
	}
	return out
}

// Pairs matches the curves of two sets by group. When each set has exactly
// one curve they pair whatever their groups (a run against a log that does
// not record its configuration). Unmatched curves, and pairs with no size
// in common, come back as warnings: they are drawn without a ratio.
func Pairs(base, cand []Curve, m Metric) ([]Pair, []string) {
	var warns []string
	if len(base) == 1 && len(cand) == 1 {
		p := Pair{Label: cand[0].Label, Base: base[0], Cand: cand[0], Ratio: Ratio(base[0], cand[0], m)}
		if base[0].ID() != cand[0].ID() {
			p.Label = fmt.Sprintf("%s vs %s", cand[0].Label, base[0].Label)
		}
		if len(p.Ratio) == 0 {
			return nil, []string{fmt.Sprintf("%s: no size measured in both sets", p.Label)}
		}
		return []Pair{p}, nil
	}
	byID := make(map[string]int, len(base))
	for i, c := range base {
		byID[c.ID()] = i
	}
	matched := map[string]bool{}
	var out []Pair
	for _, c := range cand {
		i, ok := byID[c.ID()]
		if !ok {
			warns = append(warns, fmt.Sprintf("%s: only in the candidate", c.Label))
			continue
		}
		matched[c.ID()] = true
		p := Pair{Label: c.Label, Base: base[i], Cand: c, Ratio: Ratio(base[i], c, m)}
		if len(p.Ratio) == 0 {
			warns = append(warns, fmt.Sprintf("%s: no size measured in both sets", c.Label))
			continue
		}
		out = append(out, p)
	}
	for _, c := range base {
		if !matched[c.ID()] {
			warns = append(warns, fmt.Sprintf("%s: only in the baseline", c.Label))
		}
	}
	return out, warns
}
