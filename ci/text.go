package ci

import (
	"fmt"
	"io"
	"strings"

	"github.com/jedib0t/go-pretty/v6/table"
)

// WriteText writes the report for a terminal: the outcome, a table of the
// keys that changed (regressions first, then those beyond the threshold but
// not significant, then improvements; with all, the unchanged ones last),
// the count of unchanged keys, the keys on one side only, and the notes.
func WriteText(w io.Writer, r *Report, all bool) error {
	var b strings.Builder
	fmt.Fprintf(&b, "perf gate: %s\n%s\n", settings(r.Options), summaryLine(r))
	if changed := len(r.Comparisons) - r.Count(Unchanged); changed > 0 || (all && len(r.Comparisons) > 0) {
		t := table.NewWriter()
		t.SetOutputMirror(&b)
		t.SetStyle(table.StyleLight)
		t.AppendHeader(table.Row{"verdict", "what", "size", "baseline", "candidate", "change", "limit", "95% CI", "p", "samples"})
		for _, c := range r.Comparisons {
			if c.Verdict == Unchanged && !all {
				continue
			}
			t.AppendRow(table.Row{c.Verdict.String(), c.Key.Group(), c.Key.Point(), num(c.Base.Center), num(c.Cand.Center),
				change(c.Delta()), limit(c, r.Options.Metric), interval(c), pValue(c), samples(c)})
		}
		t.Render()
	}
	for _, c := range r.Comparisons {
		for _, n := range c.Notes {
			if c.Verdict != Unchanged {
				fmt.Fprintf(&b, "  %s: %s\n", c.Key, n)
			}
		}
	}
	fmt.Fprintf(&b, "%s unchanged (within the threshold, or not significant)\n", plural(r.Count(Unchanged), "key"))
	missing := func(what string, keys []Key) {
		if len(keys) == 0 {
			return
		}
		fail := ""
		if r.Options.RequireAll {
			fail = " (fails: --require-all)"
		}
		fmt.Fprintf(&b, "only in the %s%s:\n", what, fail)
		for _, k := range keys {
			fmt.Fprintf(&b, "  %s\n", k)
		}
	}
	missing("baseline", r.OnlyBaseline)
	missing("candidate", r.OnlyCandidate)
	for _, n := range r.Notes {
		fmt.Fprintf(&b, "note: %s\n", n)
	}
	fmt.Fprintln(&b, verdictLine(r))
	_, err := io.WriteString(w, b.String())
	return err
}
