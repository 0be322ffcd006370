package ci

import (
	"fmt"
	"math"
	"strings"

	"github.com/gccl/gccl/results"
)

// Cell formatters shared by the terminal, Markdown and JUnit writers.

// num prints a metric value with four significant digits.
func num(v float64) string {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return "-"
	}
	return fmt.Sprintf("%.4g", v)
}

// change prints a relative change: "+4.2%".
func change(delta float64) string {
	if math.IsNaN(delta) || math.IsInf(delta, 0) {
		return "-"
	}
	return fmt.Sprintf("%+.1f%%", 100*delta)
}

// interval prints the ratio's interval as changes: "[-22.1%, -18.0%]".
func interval(c Comparison) string {
	if math.IsNaN(c.RatioLo) {
		return "-"
	}
	return fmt.Sprintf("[%s, %s]", change(c.RatioLo-1), change(c.RatioHi-1))
}

// pValue prints the p-value, "-" when no test ran.
func pValue(c Comparison) string {
	if !c.Tested {
		return "-"
	}
	return fmt.Sprintf("%.2g", c.P)
}

// samples prints the sample sizes: "5 vs 5 runs".
func samples(c Comparison) string {
	return fmt.Sprintf("%d vs %d %s", c.Base.N, c.Cand.N, c.Unit)
}

// limit prints the threshold in the worse direction: "-5%" for busbw, "+5%" for time.
func limit(c Comparison, m Metric) string {
	if m.HigherIsBetter() {
		return change(-c.Threshold)
	}
	return change(c.Threshold)
}

// summaryLine is the one-line outcome: "FAIL: 2 regressions, ...".
func summaryLine(r *Report) string {
	parts := []string{
		fmt.Sprintf("%d keys compared", len(r.Comparisons)),
		plural(r.Count(Regression), "regression"),
	}
	if n := r.Count(Noisy); n > 0 {
		parts = append(parts, fmt.Sprintf("%d beyond the threshold but not significant", n))
	}
	parts = append(parts, plural(r.Count(Improvement), "improvement"), fmt.Sprintf("%d unchanged", r.Count(Unchanged)))
	if n := len(r.OnlyBaseline); n > 0 {
		parts = append(parts, fmt.Sprintf("%d only in the baseline", n))
	}
	if n := len(r.OnlyCandidate); n > 0 {
		parts = append(parts, fmt.Sprintf("%d only in the candidate", n))
	}
	return strings.Join(parts, ", ")
}

// verdictLine says pass or fail and why.
func verdictLine(r *Report) string {
	switch {
	case r.Pass():
		return "PASS"
	case r.Count(Regression) > 0 && r.MissingFails():
		return fmt.Sprintf("FAIL: %s, and keys missing on one side (--require-all)", plural(r.Count(Regression), "regression"))
	case r.Count(Regression) > 0:
		return "FAIL: " + plural(r.Count(Regression), "regression")
	}
	return "FAIL: keys missing on one side (--require-all)"
}

// settings describes the options: "busbw (GB/s), threshold 5%".
func settings(o Options) string {
	s := fmt.Sprintf("%s (%s), threshold %s", o.Metric, Unit(o.Metric, o.Normalize), o.Thresholds)
	if o.Normalize != NormNone {
		s += ", normalized by " + o.Normalize.String()
	}
	if o.MinSize > 0 {
		s += ", sizes from " + results.SizeLabel(o.MinSize)
	}
	return s
}

func plural(n int, what string) string {
	if n == 1 {
		return "1 " + what
	}
	return fmt.Sprintf("%d %ss", n, what)
}
