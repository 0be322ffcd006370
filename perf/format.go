package perf

import (
	"fmt"
	"strings"
)

// floatStr is nccl-tests' getFloatStr: the value in width columns with two
// decimals, then one, then none, then in exponent form, whichever fits.
func floatStr(v float64, width int) string {
	for _, f := range []string{"%*.2f", "%*.1f", "%*.0f"} {
		if s := fmt.Sprintf(f, width, v); len(s) <= width {
			return s
		}
	}
	f := "%*.0e"
	if width >= 7 {
		f = "%*.1e"
	}
	s := fmt.Sprintf(f, width, v)
	if len(s) > width {
		s = s[:width] // nccl-tests' snprintf truncates the same way
	}
	return s
}

// rowPreamble is the first five columns of a result row.
func rowPreamble(size, count int64, typ, op string, root int) string {
	return fmt.Sprintf("%12d  %12d  %8s  %6s  %6s", size, count, typ, op, fmt.Sprintf("%6d", root))
}

// placementCols are one placement's columns: time, algbw, busbw, #wrong
// (N/A when unchecked), then the optional bitwise and per-iteration columns.
type placementCols struct {
	timeUs, algBw, busBw float64
	wrong                int64 // < 0: N/A
	bitdiff              int64 // printed when bitwise is on
	iter                 *iterStats
}

func (p placementCols) format(bitwise bool) string {
	var b strings.Builder
	if p.wrong < 0 {
		fmt.Fprintf(&b, "  %7s  %6s  %6s    N/A", floatStr(p.timeUs, 7), floatStr(p.algBw, 6), floatStr(p.busBw, 6))
	} else {
		fmt.Fprintf(&b, "  %7s  %6s  %6s  %6.6g", floatStr(p.timeUs, 7), floatStr(p.algBw, 6), floatStr(p.busBw, 6), float64(p.wrong))
	}
	if bitwise {
		fmt.Fprintf(&b, "  %8.6g", float64(p.bitdiff))
	}
	if p.iter != nil {
		fmt.Fprintf(&b, "  %7s  %7s  %7s  %7s", floatStr(p.iter.minUs, 7), floatStr(p.iter.maxUs, 7), floatStr(p.iter.p99Us, 7), floatStr(p.iter.cvPct, 7))
	}
	return b.String()
}

// resultHeader is the table header for the enabled column sets, as nccl-tests prints it.
func resultHeader(cputime, timestamps, perIter, bitwise bool) string {
	timeLbl := "time"
	if cputime {
		timeLbl = "cputime"
	}
	tsLbl, tsFmt, tsPad := "", "", 0
	if timestamps {
		tsLbl, tsFmt, tsPad = "timestamp", "%Y-%m-%d %H:%M:%S", 19
	}
	var b strings.Builder
	b.WriteString("#\n")
	e := []any{"", "", "", "", ""}
	switch {
	case perIter && bitwise:
		fmt.Fprintf(&b, "# %10s  %12s  %8s  %6s  %6s                   out-of-place (+ bitwise + per-iteration)                                      in-place (+ bitwise + per-iteration)\n", e...)
		fmt.Fprintf(&b, "# %10s  %12s  %8s  %6s  %6s  %7s  %6s  %6s  %6s  %8s  %7s  %7s  %7s  %7s  %7s  %6s  %6s  %6s  %8s  %7s  %7s  %7s  %7s %*s\n",
			"size", "count", "type", "redop", "root", timeLbl, "algbw", "busbw", "#wrong", "#bitdiff", "i_min", "i_max", "i_p99", "i_cv%",
			timeLbl, "algbw", "busbw", "#wrong", "#bitdiff", "i_min", "i_max", "i_p99", "i_cv%", tsPad, tsLbl)
		fmt.Fprintf(&b, "# %10s  %12s  %8s  %6s  %6s  %7s  %6s  %6s  %6s  %8s  %7s  %7s  %7s  %7s  %7s  %6s  %6s  %6s  %8s  %7s  %7s  %7s  %7s %*s\n",
			"(B)", "(elements)", "", "", "", "(us)", "(GB/s)", "(GB/s)", "", "", "(us)", "(us)", "(us)", "(%)",
			"(us)", "(GB/s)", "(GB/s)", "", "", "(us)", "(us)", "(us)", "(%)", tsPad, tsFmt)
	case perIter:
		fmt.Fprintf(&b, "# %10s  %12s  %8s  %6s  %6s              out-of-place (+ per-iteration)                                in-place (+ per-iteration)\n", e...)
		fmt.Fprintf(&b, "# %10s  %12s  %8s  %6s  %6s  %7s  %6s  %6s  %6s  %7s  %7s  %7s  %7s  %7s  %6s  %6s  %6s  %7s  %7s  %7s  %7s %*s\n",
			"size", "count", "type", "redop", "root", timeLbl, "algbw", "busbw", "#wrong", "i_min", "i_max", "i_p99", "i_cv%",
			timeLbl, "algbw", "busbw", "#wrong", "i_min", "i_max", "i_p99", "i_cv%", tsPad, tsLbl)
		fmt.Fprintf(&b, "# %10s  %12s  %8s  %6s  %6s  %7s  %6s  %6s  %6s  %7s  %7s  %7s  %7s  %7s  %6s  %6s  %6s  %7s  %7s  %7s  %7s %*s\n",
			"(B)", "(elements)", "", "", "", "(us)", "(GB/s)", "(GB/s)", "", "(us)", "(us)", "(us)", "(%)",
			"(us)", "(GB/s)", "(GB/s)", "", "(us)", "(us)", "(us)", "(%)", tsPad, tsFmt)
	case bitwise:
		fmt.Fprintf(&b, "# %10s  %12s  %8s  %6s  %6s               out-of-place + bitwise                           in-place + bitwise          \n", e...)
		fmt.Fprintf(&b, "# %10s  %12s  %8s  %6s  %6s  %7s  %6s  %6s  %6s  %8s  %7s  %6s  %6s  %6s  %8s %*s\n", "size", "count", "type", "redop", "root",
			timeLbl, "algbw", "busbw", "#wrong", "#bitdiff", timeLbl, "algbw", "busbw", "#wrong", "#bitdiff", tsPad, tsLbl)
		fmt.Fprintf(&b, "# %10s  %12s  %8s  %6s  %6s  %7s  %6s  %6s  %6s  %8s  %7s  %6s  %6s  %6s  %8s %*s\n", "(B)", "(elements)", "", "", "",
			"(us)", "(GB/s)", "(GB/s)", "", "", "(us)", "(GB/s)", "(GB/s)", "", "", tsPad, tsFmt)
	default:
		fmt.Fprintf(&b, "# %10s  %12s  %8s  %6s  %6s           out-of-place                       in-place          \n", e...)
		fmt.Fprintf(&b, "# %10s  %12s  %8s  %6s  %6s  %7s  %6s  %6s  %6s  %7s  %6s  %6s  %6s %*s\n", "size", "count", "type", "redop", "root",
			timeLbl, "algbw", "busbw", "#wrong", timeLbl, "algbw", "busbw", "#wrong", tsPad, tsLbl)
		fmt.Fprintf(&b, "# %10s  %12s  %8s  %6s  %6s  %7s  %6s  %6s  %6s  %7s  %6s  %6s  %6s %*s\n", "(B)", "(elements)", "", "", "",
			"(us)", "(GB/s)", "(GB/s)", "", "(us)", "(GB/s)", "(GB/s)", "", tsPad, tsFmt)
	}
	return b.String()
}

// opName is nccl-tests' name for a reduction ("mulsum" for PreMulSum).
func opName(t *Test, op string) string {
	if !t.Reduces {
		return "none"
	}
	if op == "premulsum" {
		return "mulsum"
	}
	return op
}
