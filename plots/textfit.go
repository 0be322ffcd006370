package plots

import (
	"image/color"
	"strings"

	"gonum.org/v1/plot/font"
	"gonum.org/v1/plot/text"
	"gonum.org/v1/plot/vg"
)

// ellipsis ends a line cut short.
const ellipsis = "…"

// fitText sets s in lines no wider than width: at the largest of sizes
// where it wraps into at most maxLines lines, else at the smallest size,
// wrapped, its last line and any word wider than width cut short with an
// ellipsis. A title never runs off the page, whatever the page's size.
func fitText(f font.Font, sizes []vg.Length, col color.Color, s string, width vg.Length, maxLines int) (text.Style, []string) {
	var sty text.Style
	var lines []string
	for _, size := range sizes {
		sty = textStyle(f, size, col)
		lines = wrap(sty, s, width)
		if len(lines) <= maxLines && fits(sty, lines, width) {
			return sty, lines
		}
	}
	if len(lines) > maxLines {
		lines = append(lines[:maxLines-1], strings.Join(lines[maxLines-1:], " "))
	}
	for i, l := range lines {
		lines[i] = elide(sty, l, width)
	}
	return sty, lines
}

// wrap breaks s into lines no wider than width where it can (a word
// wider than width gets a line of its own): as few lines as greedy
// filling makes, broken after a "; " where that needs no more lines, else
// as evenly as they go, so no line is left with a lone word.
func wrap(sty text.Style, s string, width vg.Length) []string {
	words := strings.Fields(s)
	lines := fill(sty, words, width)
	if len(lines) < 2 {
		return lines
	}
	if cl := fill(sty, clauses(s), width); len(cl) == len(lines) && fits(sty, cl, width) {
		return cl
	}
	// The narrowest width that still takes no more lines.
	lo, hi := vg.Length(0), width
	for range 16 {
		mid := (lo + hi) / 2
		if len(fill(sty, words, mid)) <= len(lines) {
			hi = mid
		} else {
			lo = mid
		}
	}
	return fill(sty, words, hi)
}

// fill packs items, joined by spaces, greedily into lines of width.
func fill(sty text.Style, items []string, width vg.Length) []string {
	var lines []string
	cur := ""
	for _, w := range items {
		switch {
		case cur == "":
			cur = w
		case sty.Width(cur+" "+w) <= width:
			cur += " " + w
		default:
			lines = append(lines, cur)
			cur = w
		}
	}
	if cur != "" {
		lines = append(lines, cur)
	}
	return lines
}

// clauses splits s after each "; ".
func clauses(s string) []string {
	parts := strings.SplitAfter(s, "; ")
	for i := range parts {
		parts[i] = strings.TrimSpace(parts[i])
	}
	return parts
}

func fits(sty text.Style, lines []string, width vg.Length) bool {
	for _, l := range lines {
		if sty.Width(l) > width {
			return false
		}
	}
	return true
}

// elide cuts s short, with an ellipsis, to fit width.
func elide(sty text.Style, s string, width vg.Length) string {
	if sty.Width(s) <= width {
		return s
	}
	r := []rune(s)
	for len(r) > 0 && sty.Width(string(r)+ellipsis) > width {
		r = r[:len(r)-1]
	}
	return strings.TrimRight(string(r), " ,;") + ellipsis
}
