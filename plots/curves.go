package plots

import (
	"errors"
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"

	"github.com/montanaflynn/stats"

	"github.com/gccl/gccl/results"
)

// Metric is what a curve plots against message size.
type Metric int

const (
	BusBW     Metric = iota // busbw_gbps, GB/s
	AlgBW                   // algbw_gbps, GB/s
	Time                    // time_us, microseconds (log axis)
	BusBWNorm               // busbw_gbps / ref_copy_gbps: busBW in units of the machine's copy bandwidth
)

var metricNames = [...]string{BusBW: "busbw", AlgBW: "algbw", Time: "time", BusBWNorm: "norm"}

func (m Metric) String() string {
	if m < 0 || int(m) >= len(metricNames) {
		return fmt.Sprintf("Metric(%d)", int(m))
	}
	return metricNames[m]
}

// ParseMetric reads busbw, algbw, time or norm (busbw-norm).
func ParseMetric(s string) (Metric, error) {
	t := strings.ToLower(strings.TrimSpace(s))
	if t == "busbw-norm" || t == "normalized" || t == "normalised" {
		t = "norm"
	}
	for m, n := range metricNames {
		if t == n {
			return Metric(m), nil
		}
	}
	return 0, fmt.Errorf("unknown metric %q (valid: busbw, algbw, time, norm)", s)
}

// Axis is the metric's axis label.
func (m Metric) Axis() string {
	switch m {
	case AlgBW:
		return "algBW (GB/s)"
	case Time:
		return "time (us)"
	case BusBWNorm:
		return "busBW / copy bandwidth"
	}
	return "busBW (GB/s)"
}

// Name is the metric in a title: "busBW".
func (m Metric) Name() string {
	switch m {
	case AlgBW:
		return "algBW"
	case Time:
		return "time"
	case BusBWNorm:
		return "busBW / copy bandwidth"
	}
	return "busBW"
}

// HigherIsBetter says which way a ratio improves.
func (m Metric) HigherIsBetter() bool { return m != Time }

// value is the metric of one record; ok is false when the record does not
// have it (no time, no copy bandwidth). With median, the record's median
// iteration time replaces its mean where it has one, and bandwidths scale
// by mean/median (bandwidth is bytes over time).
func (m Metric) value(r results.Record, median bool) (float64, bool) {
	scale := 1.0 // time over the time the record's bandwidths are of
	if median && r.MedianUs > 0 && r.TimeUs > 0 {
		scale = r.MedianUs / r.TimeUs
	}
	var v float64
	switch m {
	case BusBW:
		v = r.BusBw / scale
	case AlgBW:
		v = r.AlgBw / scale
	case Time:
		if r.TimeUs <= 0 {
			return 0, false
		}
		v = r.TimeUs * scale
	case BusBWNorm:
		if r.RefCopyGBps <= 0 {
			return 0, false
		}
		v = r.BusBw / scale / r.RefCopyGBps
	}
	if math.IsNaN(v) || math.IsInf(v, 0) || v < 0 {
		return 0, false
	}
	return v, true
}

// ErrNoPoints is returned when no record has anything to plot.
var ErrNoPoints = errors.New("nothing to plot")

// Point is one size of a curve: the median of the metric over the records
// of that size.
type Point struct {
	Bytes int64
	Y     float64
	N     int // records pooled
	// Us is the median time of the records pooled (their median_us with
	// CurveOptions.Median), 0 when none has one: the ratio of two
	// bandwidths at one size is the inverse ratio of their times, exact
	// where nccl-tests' printed bandwidth is rounded to 0.00.
	Us float64
	// Spread is how the metric spread over the iterations of the records
	// (the curve's SpreadKind); nil when they recorded none.
	Spread *Interval
}

// Curve is one configuration's points, by increasing size.
type Curve struct {
	// Group holds the values of the grouping fields (By), in order.
	Group []string
	// Label names the curve by the fields whose values differ between
	// the curves of a figure (see setLabels).
	Label  string
	Points []Point
	// BusFactor is busBW/algBW of the collective on these ranks (2(n-1)/n
	// for allreduce), read off the records; 0 when none says.
	BusFactor float64
	// RefCopy is the mean copy bandwidth of the records (GB/s), 0 if none.
	RefCopy float64
	// Spread is what the points' Spread shows, the same for every curve
	// of one BuildCurves.
	Spread SpreadKind

	recs []results.Record // the records pooled: for the gate's comparison, and to find a curve's model
}

// ID is the curve's group as one string (for matching across sets).
func (c Curve) ID() string { return strings.Join(c.Group, "\x00") }

// Records are the records the curve pools (those BuildCurves kept): what
// a gate compares.
func (c Curve) Records() []results.Record { return c.recs }

// MinBytes and MaxBytes bound the curve's sizes.
func (c Curve) MinBytes() int64 { return c.Points[0].Bytes }
func (c Curve) MaxBytes() int64 { return c.Points[len(c.Points)-1].Bytes }

// CurveOptions choose what BuildCurves plots.
type CurveOptions struct {
	Metric Metric
	By     []Field // nil: DefaultBy
	// Placement is results.OutOfPlace (the default, "") or
	// results.InPlace; "both" keeps both (group by placement to tell them
	// apart).
	Placement string
	// Median plots median iteration times (median_us, where recorded)
	// instead of the reported mean (time_us), as tune fit fits them.
	Median bool
}

func (o CurveOptions) by() []Field {
	if len(o.By) == 0 {
		return DefaultBy
	}
	return o.By
}

func (o CurveOptions) keep(r results.Record) bool {
	switch o.Placement {
	case "", results.OutOfPlace:
		return r.Placement == results.OutOfPlace
	case "both":
		return true
	}
	return r.Placement == o.Placement
}

// BuildCurves groups records into curves, one per distinct value of the
// By fields, pooling records of one group and size by their median. The
// curves are sorted by group (numbers as numbers, "auto" first) and
// labelled. Records without the metric, and of size 0, are skipped; none
// left is ErrNoPoints, with the reason.
func BuildCurves(recs []results.Record, o CurveOptions) ([]Curve, error) {
	by := o.by()
	type acc struct {
		c      Curve
		ys     map[int64][]float64
		us     map[int64][]float64
		spread map[int64]*spreadAcc
		bf     float64 // busbw/algbw of the record with the largest algbw
		bfAlg  float64
		refSum float64
		refN   int
	}
	kind := spreadKind(placed(recs, o))
	groups := map[string]*acc{}
	var order []string
	placed, valued := 0, 0
	for _, r := range recs {
		if !o.keep(r) {
			continue
		}
		placed++
		v, ok := o.Metric.value(r, o.Median)
		if !ok || r.Size <= 0 { // a log axis has no 0
			continue
		}
		valued++
		g := make([]string, len(by))
		for i, f := range by {
			g[i] = Value(f, r)
		}
		id := strings.Join(g, "\x00")
		a := groups[id]
		if a == nil {
			a = &acc{c: Curve{Group: g, Spread: kind}, ys: map[int64][]float64{}, us: map[int64][]float64{},
				spread: map[int64]*spreadAcc{}}
			groups[id] = a
			order = append(order, id)
		}
		a.ys[r.Size] = append(a.ys[r.Size], v)
		a.c.recs = append(a.c.recs, r)
		if kind != NoSpread {
			if a.spread[r.Size] == nil {
				a.spread[r.Size] = &spreadAcc{}
			}
			a.spread[r.Size].add(o.Metric, kind, r)
		}
		if us, ok := Time.value(r, o.Median); ok {
			a.us[r.Size] = append(a.us[r.Size], us)
		}
		if r.AlgBw > a.bfAlg && r.BusBw > 0 {
			a.bf, a.bfAlg = r.BusBw/r.AlgBw, r.AlgBw
		}
		if r.RefCopyGBps > 0 {
			a.refSum += r.RefCopyGBps
			a.refN++
		}
	}
	if valued == 0 {
		switch {
		case len(recs) == 0:
			return nil, fmt.Errorf("%w: no records", ErrNoPoints)
		case placed == 0:
			return nil, fmt.Errorf("%w: none of the %d records is %s", ErrNoPoints, len(recs), placementName(o.Placement))
		case o.Metric == BusBWNorm:
			return nil, fmt.Errorf("%w: none of the %d records has ref_copy_gbps (the copy bandwidth gccl's perf measures; nccl-tests logs lack it)", ErrNoPoints, placed)
		}
		return nil, fmt.Errorf("%w: none of the %d records has a %s", ErrNoPoints, placed, o.Metric.Name())
	}
	out := make([]Curve, 0, len(order))
	for _, id := range order {
		a := groups[id]
		for b, ys := range a.ys {
			p := Point{Bytes: b, Y: median(ys), N: len(ys)}
			if us := a.us[b]; len(us) > 0 {
				p.Us = median(us)
			}
			if sp := a.spread[b]; sp != nil {
				p.Spread = sp.interval(kind)
			}
			a.c.Points = append(a.c.Points, p)
		}
		sort.Slice(a.c.Points, func(i, j int) bool { return a.c.Points[i].Bytes < a.c.Points[j].Bytes })
		a.c.BusFactor = a.bf
		if a.refN > 0 {
			a.c.RefCopy = a.refSum / float64(a.refN)
		}
		out = append(out, a.c)
	}
	sortCurves(by, out)
	setLabels(by, out)
	return out, nil
}

func placementName(p string) string {
	switch p {
	case "", results.OutOfPlace:
		return "an out-of-place measurement"
	}
	return "an " + p + " measurement"
}

// median is the median of xs (NaN when empty); xs is left as it is.
func median(xs []float64) float64 {
	m, err := stats.Median(xs)
	if err != nil {
		return math.NaN()
	}
	return m
}

// sortCurves orders curves by their group values, field by field: "auto"
// first, numbers as numbers, names as strings.
func sortCurves(by []Field, cs []Curve) {
	sort.SliceStable(cs, func(i, j int) bool {
		for k, f := range by {
			a, b := cs[i].Group[k], cs[j].Group[k]
			if a == b {
				continue
			}
			return valueLess(f, a, b)
		}
		return false
	})
}

func valueLess(f Field, a, b string) bool {
	if a == "auto" || b == "auto" {
		return a == "auto"
	}
	if d, _ := defOf(f); d.numeric {
		x, errX := strconv.ParseFloat(a, 64)
		y, errY := strconv.ParseFloat(b, 64)
		if errX == nil && errY == nil {
			return x < y
		}
	}
	return a < b
}

// setLabels labels curves, of one set or of several drawn together, by the
// fields whose values differ between them: configuration fields joined
// with '/' ("Ring/LL128/2ch"; all of them "auto" reads "auto"), the others
// after it with spaces ("allreduce 4 ranks Ring/Simple"). When nothing
// differs (one curve), the configuration fields label it.
func setLabels(by []Field, sets ...[]Curve) {
	varies := make([]bool, len(by))
	var first []string
	for _, set := range sets {
		for _, c := range set {
			if first == nil {
				first = c.Group
			}
			for k := range by {
				if c.Group[k] != first[k] {
					varies[k] = true
				}
			}
		}
	}
	any := false
	for _, v := range varies {
		any = any || v
	}
	for _, set := range sets {
		for i := range set {
			show := varies
			if !any {
				show = make([]bool, len(by))
				for k, f := range by {
					d, _ := defOf(f)
					show[k] = d.config
				}
			}
			set[i].Label = label(by, set[i].Group, show)
		}
	}
}

// label joins the shown fields of a group: the fields before the
// configuration, the configuration, the fields after it.
func label(by []Field, group []string, show []bool) string {
	var pre, cfg, post []string
	allAuto := true
	for k, f := range by {
		if !show[k] {
			continue
		}
		d, _ := defOf(f)
		l := d.label(group[k])
		switch {
		case d.config:
			allAuto = allAuto && group[k] == "auto"
			if l != "" {
				cfg = append(cfg, l)
			}
		case l == "":
		case configAfter(by, k):
			pre = append(pre, l)
		default:
			post = append(post, l)
		}
	}
	parts := pre
	switch {
	case len(cfg) > 0 && allAuto:
		parts = append(parts, "auto")
	case len(cfg) > 0:
		parts = append(parts, strings.Join(cfg, "/"))
	}
	parts = append(parts, post...)
	if len(parts) == 0 {
		return "measured"
	}
	return strings.Join(parts, " ")
}

// configAfter reports whether a configuration field follows position k.
func configAfter(by []Field, k int) bool {
	for _, f := range by[k+1:] {
		if d, _ := defOf(f); d.config {
			return true
		}
	}
	return false
}
