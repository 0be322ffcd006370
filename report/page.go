package report

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"math"
	"strings"
	"time"

	"github.com/gccl/gccl/results"
)

// Page is everything one report shows. Only one of Curves, Series and
// Gate need be present.
type Page struct {
	// Title heads the page; empty: DefaultTitle.
	Title string
	// Generated is when the report was made; zero leaves it unsaid.
	Generated time.Time
	// Meta describes the machine, the tool and the commits, in order:
	// a handful of short entries, never the environment. An entry that
	// looks like a credential is left out (see Write).
	Meta []Meta
	// Curves are busBW (or another metric) against message size, one
	// chart each: per collective, its series per configuration or per run.
	Curves []Curve
	// Series are the keys' values over the runs, oldest first, with the
	// change points a detector found in them.
	Series []KeySeries
	// Gate is the regression gate's table; nil: none was run.
	Gate *GateTable
	// Charts is how many keys are drawn in full; 0: DefaultCharts;
	// negative: none (every key keeps its sparkline).
	Charts int
}

// DefaultTitle heads a page without a title.
const DefaultTitle = "gccl performance report"

// DefaultCharts is how many keys a page draws in full unless told.
const DefaultCharts = 30

// Meta is one line of the page's metadata: "commit", "0a1b2c3".
type Meta struct {
	Name, Value string
}

// Curve is one chart of a metric against message size.
type Curve struct {
	Title  string // "allreduce float sum, 4 ranks"
	YLabel string // the metric's axis: "busBW (GB/s)"; empty: that
	Series []CurveSeries
}

// CurveSeries is one line of a curve chart: a configuration, or a run.
type CurveSeries struct {
	Name   string
	Points []SizePoint // any order; drawn by increasing size
}

// SizePoint is the metric at one message size.
type SizePoint struct {
	Bytes int64 // > 0: the axis is logarithmic
	Value float64
}

// KeySeries is one key's value in each run it was measured in.
type KeySeries struct {
	// Key names it as the gate does: "allreduce float sum auto/auto/auto
	// 4 ranks 1M out-of-place".
	Key  string
	Unit string // "GB/s"
	// LowerIsBetter says a rise is a regression (a time); by default a
	// fall is (a bandwidth).
	LowerIsBetter bool
	Points        []RunPoint    // oldest first
	Changes       []ChangePoint // by increasing Index
}

// RunPoint is a key's value in one run.
type RunPoint struct {
	Commit string    // may be empty
	Time   time.Time // zero: unknown
	Value  float64
}

// ChangePoint is where a key's series steps: the points before Index and
// those from Index on have different medians. The change shown is
// After/Before - 1.
type ChangePoint struct {
	// Index is the first point after the change: 1 to len(Points)-1.
	Index int
	// Before and After are the medians of the segments either side
	// (up to the neighbouring change points).
	Before, After float64
	// PValue is the change's significance (a permutation test's); NaN
	// when the detector gave none.
	PValue float64
}

// GateTable is a gate's outcome: one row per key compared.
type GateTable struct {
	// Baseline and Candidate say what was compared ("ci/baseline/
	// embedded.jsonl", "run 12, 0a1b2c3"); either may be empty.
	Baseline, Candidate string
	Unit                string // of the medians: "GB/s"
	Pass                bool
	Rows                []GateRow // in the order given
}

// GateRow is one key of the gate.
type GateRow struct {
	Key                 string
	Baseline, Candidate float64 // medians, in the table's unit
	// Change is Candidate/Baseline - 1.
	Change float64
	// PValue is the test's (Mann-Whitney U for tune gate); NaN: no test.
	PValue float64
	// Verdict is the gate's word: regression, noisy, improvement or
	// unchanged (any other is shown as it is, uncoloured).
	Verdict string
}

// ErrBadPage wraps every error of a page that cannot be rendered.
var ErrBadPage = errors.New("report")

// check reports the first thing wrong with p, naming it and what is valid.
func (p *Page) check() error {
	if len(p.Curves) == 0 && len(p.Series) == 0 && p.Gate == nil {
		return fmt.Errorf("%w: nothing to report: the page has no curves, no series and no gate table", ErrBadPage)
	}
	for i, c := range p.Curves {
		if err := c.check(); err != nil {
			return fmt.Errorf("%w: curve %d (%q): %v", ErrBadPage, i+1, c.Title, err)
		}
	}
	seen := make(map[string]bool, len(p.Series))
	for i, s := range p.Series {
		if seen[s.Key] {
			return fmt.Errorf("%w: series %d: key %q appears twice (one series per key)", ErrBadPage, i+1, s.Key)
		}
		seen[s.Key] = true
		if err := s.check(); err != nil {
			return fmt.Errorf("%w: series %d (%q): %v", ErrBadPage, i+1, s.Key, err)
		}
	}
	if p.Gate != nil {
		for i, r := range p.Gate.Rows {
			if strings.TrimSpace(r.Key) == "" {
				return fmt.Errorf("%w: gate row %d has no key", ErrBadPage, i+1)
			}
		}
	}
	return nil
}

func (c Curve) check() error {
	if len(c.Series) == 0 {
		return errors.New("no series: a curve needs at least one")
	}
	for _, s := range c.Series {
		if len(s.Points) == 0 {
			return fmt.Errorf("series %q has no points", s.Name)
		}
		for _, pt := range s.Points {
			if pt.Bytes <= 0 {
				return fmt.Errorf("series %q: size %d: want a positive number of bytes (the size axis is logarithmic)", s.Name, pt.Bytes)
			}
			if !finite(pt.Value) {
				return fmt.Errorf("series %q at %d bytes: value %v: want a finite number", s.Name, pt.Bytes, pt.Value)
			}
		}
	}
	return nil
}

func (s KeySeries) check() error {
	if strings.TrimSpace(s.Key) == "" {
		return errors.New("no key: every series names its key")
	}
	if len(s.Points) == 0 {
		return errors.New("no points: a series needs at least one run")
	}
	for i, pt := range s.Points {
		if !finite(pt.Value) {
			return fmt.Errorf("point %d: value %v: want a finite number", i, pt.Value)
		}
	}
	last := 0
	for _, c := range s.Changes {
		if c.Index <= last || c.Index >= len(s.Points) {
			return fmt.Errorf("change point at index %d: want increasing indices between 1 and %d (the first point after the change)", c.Index, len(s.Points)-1)
		}
		last = c.Index
		if !finite(c.Before) || !finite(c.After) {
			return fmt.Errorf("change point at index %d: medians %v and %v: want finite numbers", c.Index, c.Before, c.After)
		}
		if !math.IsNaN(c.PValue) && (c.PValue < 0 || c.PValue > 1) {
			return fmt.Errorf("change point at index %d: p-value %v: want 0 to 1, or NaN for none", c.Index, c.PValue)
		}
	}
	return nil
}

// Write renders p as one HTML page on w. A page with nothing in it, or
// with a value it cannot draw (a size of 0 bytes, a NaN, a change point
// outside its series), is an error wrapping ErrBadPage, and nothing is
// written.
func Write(w io.Writer, p Page) error {
	if err := p.check(); err != nil {
		return err
	}
	v, err := buildView(p)
	if err != nil {
		return err
	}
	// The page is made whole before any of it is written: an error
	// leaves w untouched, and a file gets one write.
	var buf bytes.Buffer
	if err := pageTemplate.Execute(&buf, pageData{V: v, ScriptHash: scriptHash}); err != nil {
		return err
	}
	_, err = buf.WriteTo(w)
	return err
}

// safeMeta is meta without the entries that look like a credential: a
// name results.SecretName flags, or a NAME=value inside the value (an
// environment list) whose NAME it flags. withheld counts those left out.
func safeMeta(meta []Meta) (kept []Meta, withheld int) {
	for _, m := range meta {
		if results.SecretName(m.Name) || secretInValue(m.Value) {
			withheld++
			continue
		}
		kept = append(kept, m)
	}
	return kept, withheld
}

// secretInValue finds a NAME=value whose name looks like a credential's
// among the value's words (separated by spaces, commas or semicolons).
func secretInValue(v string) bool {
	for _, f := range strings.FieldsFunc(v, func(r rune) bool { return r == ' ' || r == ',' || r == ';' || r == '\t' || r == '\n' }) {
		if name, _, ok := strings.Cut(f, "="); ok && results.SecretName(name) {
			return true
		}
	}
	return false
}

func finite(v float64) bool { return !math.IsNaN(v) && !math.IsInf(v, 0) }
