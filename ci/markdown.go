package ci

import (
	"fmt"
	"io"
	"strings"
)

// WriteMarkdown writes the report as GitHub-flavoured Markdown, for a pull
// request comment or $GITHUB_STEP_SUMMARY: a heading with the outcome, a
// table of the keys that changed, and, folded, the unchanged keys, the keys
// on one side only and the notes.
func WriteMarkdown(w io.Writer, r *Report) error {
	var b strings.Builder
	icon := "✅"
	if !r.Pass() {
		icon = "❌"
	}
	fmt.Fprintf(&b, "### %s Performance gate: %s\n\n", icon, verdictLine(r))
	fmt.Fprintf(&b, "%s.  \n%s.\n\n", mdEscape(settings(r.Options)), summaryLine(r))

	header := "| | what | size | baseline | candidate | change | limit | 95% CI | p | samples |\n|---|---|---|--:|--:|--:|--:|---|--:|---|\n"
	row := func(c Comparison) {
		mark := map[Verdict]string{Regression: "🔴", Noisy: "🟡", Improvement: "🟢", Unchanged: ""}[c.Verdict]
		fmt.Fprintf(&b, "| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |\n", mark, mdEscape(c.Key.Group()), c.Key.Point(),
			num(c.Base.Center), num(c.Cand.Center), change(c.Delta()), limit(c, r.Options.Metric), interval(c), pValue(c), samples(c))
	}
	if changed := len(r.Comparisons) - r.Count(Unchanged); changed > 0 {
		b.WriteString(header)
		for _, c := range r.Comparisons {
			if c.Verdict != Unchanged {
				row(c)
			}
		}
		b.WriteString("\n🔴 regression (beyond the threshold and significant) · 🟡 beyond the threshold but not significant (passes) · 🟢 improvement\n\n")
		var notes []string
		for _, c := range r.Comparisons {
			for _, n := range c.Notes {
				if c.Verdict != Unchanged {
					notes = append(notes, fmt.Sprintf("- `%s`: %s", c.Key, mdEscape(n)))
				}
			}
		}
		if len(notes) > 0 {
			b.WriteString(strings.Join(notes, "\n") + "\n\n")
		}
	}
	if n := r.Count(Unchanged); n > 0 {
		fmt.Fprintf(&b, "<details><summary>%d unchanged</summary>\n\n%s", n, header)
		for _, c := range r.Comparisons {
			if c.Verdict == Unchanged {
				row(c)
			}
		}
		b.WriteString("\n</details>\n\n")
	}
	missing := func(what string, keys []Key) {
		if len(keys) == 0 {
			return
		}
		fail := ""
		if r.Options.RequireAll {
			fail = " — fails the gate (--require-all)"
		}
		fmt.Fprintf(&b, "<details><summary>%d only in the %s%s</summary>\n\n", len(keys), what, fail)
		for _, k := range keys {
			fmt.Fprintf(&b, "- `%s`\n", k)
		}
		b.WriteString("\n</details>\n\n")
	}
	missing("baseline", r.OnlyBaseline)
	missing("candidate", r.OnlyCandidate)
	var notes []string
	for _, n := range r.Notes {
		notes = append(notes, "> "+mdEscape(n))
	}
	if len(notes) > 0 {
		b.WriteString(strings.Join(notes, "\n>\n") + "\n")
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// mdEscape keeps text from breaking a table or turning into markup.
func mdEscape(s string) string {
	return strings.NewReplacer("|", `\|`, "*", `\*`, "_", `\_`, "<", "&lt;", ">", "&gt;").Replace(s)
}
