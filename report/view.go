package report

import (
	"cmp"
	"fmt"
	"html/template"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"
)

// view is what the template shows: every text already formatted, every
// chart drawn.
type view struct {
	Title     string
	Generated string
	Meta      []Meta
	Withheld  int // metadata entries left out as credential-like
	Summary   string
	Gate      *gateView
	Changes   []changeRow
	Charts    []chartView
	ChartNote string
	Curves    []curveView
	Keys      []keyRow
}

// num is a sortable cell: its text and the number it sorts by.
type num struct {
	Text string
	Sort string // "" sorts first
}

type gateView struct {
	Baseline, Candidate, Unit string
	Pass                      bool
	Counts                    string
	Rows                      []gateRowView
}

type gateRowView struct {
	Key                   string
	Base, Cand, Change, P num
	Verdict, VerdictClass string
}

type changeRow struct {
	Key, Anchor              string
	Runs, Commits, When      string
	Before, After, Change, P num
	Class                    string // worse or better
	RunSort                  string
	size                     float64 // |change|, to order the table
}

type chartView struct {
	Key, Anchor, Caption string
	SVG                  template.HTML
}

type curveView struct {
	Title  string
	SVG    template.HTML
	Legend []legendItem
}

type legendItem struct{ Name, Class string }

type keyRow struct {
	Key, Anchor                   string
	Runs, Latest, Median, Largest num
	NChanges                      int
	Spark                         template.HTML
}

// buildView formats p and draws its charts.
func buildView(p Page) (*view, error) {
	v := &view{Title: p.Title}
	if v.Title == "" {
		v.Title = DefaultTitle
	}
	if !p.Generated.IsZero() {
		v.Generated = p.Generated.UTC().Format(time.RFC3339)
	}
	v.Meta, v.Withheld = safeMeta(p.Meta)
	if p.Gate != nil {
		v.Gate = gateOf(*p.Gate)
	}
	for i, c := range p.Curves {
		svg, err := curveSVG(c)
		if err != nil {
			return nil, fmt.Errorf("curve %d (%q): %w", i+1, c.Title, err)
		}
		cv := curveView{Title: c.Title, SVG: svg}
		for k, s := range c.Series {
			cv.Legend = append(cv.Legend, legendItem{s.Name, fmt.Sprintf("c%d d%d", k%len(palette), k/len(palette)%len(dashes))})
		}
		v.Curves = append(v.Curves, cv)
	}
	n := p.Charts
	if n == 0 {
		n = DefaultCharts
	}
	full := map[int]bool{}
	for _, i := range drawn(p.Series, max(n, 0)) {
		s := p.Series[i]
		svg, err := seriesSVG(s)
		if err != nil {
			return nil, fmt.Errorf("series %q: %w", s.Key, err)
		}
		full[i] = true
		v.Charts = append(v.Charts, chartView{Key: s.Key, Anchor: anchor(i), SVG: svg, Caption: chartCaption(s)})
	}
	v.ChartNote = chartNote(p.Series, len(v.Charts))
	for i, s := range p.Series {
		spark, err := sparkSVG(s)
		if err != nil {
			return nil, fmt.Errorf("series %q: %w", s.Key, err)
		}
		row := keyRow{Key: s.Key, Spark: spark, NChanges: len(s.Changes),
			Runs: intNum(len(s.Points)), Latest: value(s.Points[len(s.Points)-1].Value), Median: value(seriesMedian(s))}
		if full[i] {
			row.Anchor = anchor(i)
		}
		if len(s.Changes) > 0 {
			row.Largest = change(s.largest().change())
		}
		v.Keys = append(v.Keys, row)
		for _, c := range s.Changes {
			v.Changes = append(v.Changes, changeRowOf(s, c, row.Anchor))
		}
	}
	// Regressions first, the largest first; then improvements.
	slices.SortStableFunc(v.Changes, func(a, b changeRow) int {
		if a.Class != b.Class {
			return cmp.Compare(b.Class, a.Class) // "worse" before "better"
		}
		return cmp.Compare(b.size, a.size)
	})
	v.Summary = summary(p, v)
	return v, nil
}

func anchor(i int) string { return "key" + strconv.Itoa(i+1) }

func seriesMedian(s KeySeries) float64 {
	xs := make([]float64, len(s.Points))
	for i, p := range s.Points {
		xs[i] = p.Value
	}
	return median(xs)
}

func chartCaption(s KeySeries) string {
	unit := ""
	if s.Unit != "" {
		unit = " (" + s.Unit + ")"
	}
	switch len(s.Changes) {
	case 0:
		return fmt.Sprintf("%d runs%s; no change point; newest run %s from the median of the ones before", len(s.Points), unit, pct(s.movement()))
	case 1:
		return fmt.Sprintf("%d runs%s; 1 change point (dashed; grey: the medians either side)", len(s.Points), unit)
	}
	return fmt.Sprintf("%d runs%s; %d change points (dashed; grey: the medians between them)", len(s.Points), unit, len(s.Changes))
}

func chartNote(series []KeySeries, drawnN int) string {
	withChanges := 0
	for _, s := range series {
		if len(s.Changes) > 0 {
			withChanges++
		}
	}
	return fmt.Sprintf("%d of %d keys drawn in full: those with change points first (%d keys have some), by their largest change; then those whose newest run moved most from the median of the runs before it. Every key has a sparkline in the table of keys below.",
		drawnN, len(series), withChanges)
}

func changeRowOf(s KeySeries, c ChangePoint, anchor string) changeRow {
	before, after := s.Points[c.Index-1], s.Points[c.Index]
	r := changeRow{Key: s.Key, Anchor: anchor,
		Runs:    fmt.Sprintf("%d → %d", c.Index, c.Index+1),
		RunSort: strconv.Itoa(c.Index),
		Commits: commitRange(before.Commit, after.Commit),
		Before:  value(c.Before), After: value(c.After), Change: change(c.change()), P: pvalue(c.PValue),
		Class: "better", size: c.stepSize()}
	if !after.Time.IsZero() {
		r.When = after.Time.UTC().Format("2006-01-02 15:04")
	}
	if c.regression(s.LowerIsBetter) {
		r.Class = "worse"
	}
	return r
}

func commitRange(a, b string) string {
	a, b = short(a), short(b)
	switch {
	case a == "" && b == "":
		return ""
	case a == "":
		a = "?"
	case b == "":
		b = "?"
	}
	return a + " → " + b
}

// short cuts a commit hash (hexadecimal, longer than 12 digits) to 10;
// any other name stays whole.
func short(c string) string {
	if len(c) <= 12 || strings.Trim(strings.ToLower(c), "0123456789abcdef") != "" {
		return c
	}
	return c[:10]
}

var verdictClass = map[string]string{"regression": "worse", "improvement": "better", "noisy": "noisy", "unchanged": ""}

func gateOf(g GateTable) *gateView {
	v := &gateView{Baseline: g.Baseline, Candidate: g.Candidate, Unit: g.Unit, Pass: g.Pass}
	counts := map[string]int{}
	var order []string
	for _, r := range g.Rows {
		if counts[r.Verdict] == 0 {
			order = append(order, r.Verdict)
		}
		counts[r.Verdict]++
		v.Rows = append(v.Rows, gateRowView{Key: r.Key, Base: value(r.Baseline), Cand: value(r.Candidate),
			Change: change(r.Change), P: pvalue(r.PValue), Verdict: r.Verdict, VerdictClass: verdictClass[r.Verdict]})
	}
	for i, o := range order {
		if i > 0 {
			v.Counts += ", "
		}
		name := o
		if name == "" {
			name = "no verdict"
		}
		v.Counts += fmt.Sprintf("%s %d", name, counts[o])
	}
	return v
}

func summary(p Page, v *view) string {
	runs, worse, better := 0, 0, 0
	for _, s := range p.Series {
		runs = max(runs, len(s.Points))
		for _, c := range s.Changes {
			if c.regression(s.LowerIsBetter) {
				worse++
			} else {
				better++
			}
		}
	}
	var parts []string
	if len(p.Series) > 0 {
		s := plural(len(p.Series), "key", "keys") + " over " + plural(runs, "run", "up to %d runs") + "; "
		if worse+better == 0 {
			s += "no change points"
		} else {
			s += fmt.Sprintf("%s: %s, %s", plural(worse+better, "change point", "change points"),
				plural(worse, "regression", "regressions"), plural(better, "improvement", "improvements"))
		}
		parts = append(parts, s+".")
	}
	if len(p.Curves) > 0 {
		parts = append(parts, plural(len(p.Curves), "curve chart", "curve charts")+".")
	}
	if v.Gate != nil {
		word := "pass"
		if !v.Gate.Pass {
			word = "FAIL"
		}
		parts = append(parts, fmt.Sprintf("Gate: %s (%s).", word, v.Gate.Counts))
	}
	return strings.Join(parts, " ")
}

// plural is "1 key" or "3 keys"; many may hold the %d itself.
func plural(n int, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	if strings.Contains(many, "%d") {
		return fmt.Sprintf(many, n)
	}
	return fmt.Sprintf("%d %s", n, many)
}

// Cells. value is a metric with 4 significant digits; change a
// relative change as a signed percentage; pvalue a p-value.

func value(x float64) num {
	if !finite(x) {
		return num{"–", ""}
	}
	return num{strconv.FormatFloat(x, 'g', 4, 64), sortKey(x)}
}

func intNum(n int) num { return num{strconv.Itoa(n), strconv.Itoa(n)} }

func change(f float64) num {
	if !finite(f) {
		return num{"n/a", ""}
	}
	return num{pct(f), sortKey(f)}
}

func pvalue(p float64) num {
	if math.IsNaN(p) {
		return num{"–", ""}
	}
	return num{strconv.FormatFloat(p, 'g', 3, 64), sortKey(p)}
}

func sortKey(x float64) string { return strconv.FormatFloat(x, 'g', -1, 64) }

// pct is a relative change as a signed percentage: "-5.2%".
func pct(f float64) string {
	if !finite(f) {
		return "n/a"
	}
	return fmt.Sprintf("%+.1f%%", 100*f)
}
