package perf

import (
	"bufio"
	"bytes"
	"fmt"
	"strconv"
	"strings"
	"testing"
)

// The nccl-tests logs in testdata/nccl-tests are copies of the real runs in
// testdata/nccl-tests (nccl-tests 2.19.6 on 2x H200).
var ncclFixtures = []string{
	"nccl-tests/h200x2_all_reduce_perf.txt",
	"nccl-tests/h200x2_all_reduce_simple.txt",
	"nccl-tests/h200x2_sendrecv_perf.txt",
}

// parsedRow is one nccl-tests data row, parsed back to numbers.
type parsedRow struct {
	size, count int64
	typ, op     string
	root        int
	place       [2]placementCols
}

// parseNCCLRow parses a standard 13-column data row.
func parseNCCLRow(t *testing.T, line string) parsedRow {
	t.Helper()
	f := strings.Fields(line)
	if len(f) != 13 {
		t.Fatalf("row has %d fields, want 13: %q", len(f), line)
	}
	var r parsedRow
	var err error
	num := func(s string) float64 {
		v, e := strconv.ParseFloat(s, 64)
		if e != nil {
			err = e
		}
		return v
	}
	integer := func(s string) int64 {
		v, e := strconv.ParseInt(s, 10, 64)
		if e != nil {
			err = e
		}
		return v
	}
	r.size, r.count, r.typ, r.op, r.root = integer(f[0]), integer(f[1]), f[2], f[3], int(integer(f[4]))
	for p := 0; p < 2; p++ {
		c := f[5+4*p:]
		pc := placementCols{timeUs: num(c[0]), algBw: num(c[1]), busBw: num(c[2]), wrong: -1}
		if c[3] != "N/A" {
			pc.wrong = integer(c[3])
		}
		r.place[p] = pc
	}
	if err != nil {
		t.Fatalf("parsing %q: %v", line, err)
	}
	return r
}

func (r parsedRow) format() string {
	return rowPreamble(r.size, r.count, r.typ, r.op, r.root) + r.place[0].format(false) + r.place[1].format(false)
}

// TestFixtureRowsRebuild rebuilds every data row of the real nccl-tests logs
// from its parsed numbers: the string must be the fixture line, byte for
// byte, which pins every column width and number format.
func TestFixtureRowsRebuild(t *testing.T) {
	for _, name := range ncclFixtures {
		t.Run(name, func(t *testing.T) {
			rows := dataRows(readFixture(t, name))
			n := 0
			for _, line := range rows {
				if strings.HasPrefix(line, "rc=") {
					continue
				}
				n++
				if got := parseNCCLRow(t, line).format(); got != line {
					t.Errorf("rebuilt row differs:\n got %q\nwant %q", got, line)
				}
			}
			if n < 14 {
				t.Fatalf("only %d data rows in %s", n, name)
			}
		})
	}
}

// TestRowColumns pins the row layout field by field, on values that reach
// every branch: wide sizes, negative root, N/A, large #wrong.
func TestRowColumns(t *testing.T) {
	tests := []struct {
		name string
		got  string
		want string
	}{
		{"preamble", rowPreamble(8, 2, "float", "sum", -1),
			"           8             2     float     sum      -1"},
		{"preamble wide", rowPreamble(1073741824, 268435456, "bfloat16", "mulsum", 7),
			"  1073741824     268435456  bfloat16  mulsum       7"},
		{"checked", placementCols{timeUs: 14.15, algBw: 0, busBw: 0, wrong: 0}.format(false),
			"    14.15    0.00    0.00       0"},
		{"unchecked", placementCols{timeUs: 14.01, algBw: 0, busBw: 0, wrong: -1}.format(false),
			"    14.01    0.00    0.00    N/A"},
		{"large", placementCols{timeUs: 3282.98, algBw: 327.06, busBw: 327.06, wrong: 123456}.format(false),
			"  3282.98  327.06  327.06  123456"},
		{"huge time", placementCols{timeUs: 12345678, algBw: 1234.567, busBw: 12345.6, wrong: 1}.format(false),
			"  1.2e+07  1234.6   12346       1"},
		// nccl-tests prints #wrong with C's "%6g": six significant digits.
		{"wrong 1e6+", placementCols{timeUs: 1, algBw: 1, busBw: 1, wrong: 1234567}.format(false),
			"     1.00    1.00    1.00  1.23457e+06"},
		{"bitdiff", placementCols{timeUs: 1, algBw: 1, busBw: 1, wrong: 0, bitdiff: 12}.format(true),
			"     1.00    1.00    1.00       0        12"},
		{"per-iter", placementCols{timeUs: 20.5, algBw: 0.05, busBw: 0.04, wrong: 0,
			iter: &iterStats{minUs: 19.8, maxUs: 22.1, p99Us: 22, cvPct: 2.5}}.format(false),
			"    20.50    0.05    0.04       0    19.80    22.10    22.00     2.50"},
	}
	for _, tc := range tests {
		if tc.got != tc.want {
			t.Errorf("%s:\n got %q\nwant %q", tc.name, tc.got, tc.want)
		}
	}
}

// TestFixtureHeader: the table header is the fixture's, byte for byte.
func TestFixtureHeader(t *testing.T) {
	want := headerLines(false, false, false, false)
	if len(want) != 4 || want[0] != "#" {
		t.Fatalf("resultHeader: want \"#\" and three lines, got %q", want)
	}
	for _, name := range ncclFixtures {
		if got := lines(readFixture(t, name)); !containsSeq(got, want) {
			t.Errorf("%s does not contain the header\n%s", name, strings.Join(want, "\n"))
		}
	}
}

// TestHeaderVariants checks the optional header columns line up with the
// row columns they name: every label ends where its column ends.
func TestHeaderVariants(t *testing.T) {
	it := &iterStats{minUs: 1, maxUs: 2, p99Us: 2, cvPct: 3}
	for _, tc := range []struct {
		name                   string
		cpu, ts, perIter, bitw bool
		labels                 []string
	}{
		{"plain", false, false, false, false, []string{"size", "count", "type", "redop", "root", "time", "algbw", "busbw", "#wrong", "time", "algbw", "busbw", "#wrong"}},
		{"cputime", true, false, false, false, []string{"size", "count", "type", "redop", "root", "cputime", "algbw", "busbw", "#wrong", "cputime", "algbw", "busbw", "#wrong"}},
		{"bitwise", false, false, false, true, []string{"size", "count", "type", "redop", "root", "time", "algbw", "busbw", "#wrong", "#bitdiff", "time", "algbw", "busbw", "#wrong", "#bitdiff"}},
		{"per-iter", false, false, true, false, []string{"size", "count", "type", "redop", "root", "time", "algbw", "busbw", "#wrong", "i_min", "i_max", "i_p99", "i_cv%", "time", "algbw", "busbw", "#wrong", "i_min", "i_max", "i_p99", "i_cv%"}},
		{"both", false, false, true, true, []string{"size", "count", "type", "redop", "root", "time", "algbw", "busbw", "#wrong", "#bitdiff", "i_min", "i_max", "i_p99", "i_cv%", "time", "algbw", "busbw", "#wrong", "#bitdiff", "i_min", "i_max", "i_p99", "i_cv%"}},
		{"timestamps", false, true, false, false, []string{"size", "count", "type", "redop", "root", "time", "algbw", "busbw", "#wrong", "time", "algbw", "busbw", "#wrong", "timestamp"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := headerLines(tc.cpu, tc.ts, tc.perIter, tc.bitw)
			if len(h) != 4 {
				t.Fatalf("header has %d lines", len(h))
			}
			names := strings.Fields(strings.TrimPrefix(h[2], "#"))
			if strings.Join(names, " ") != strings.Join(tc.labels, " ") {
				t.Fatalf("labels %q, want %q", names, tc.labels)
			}
			var iter *iterStats
			if tc.perIter {
				iter = it
			}
			pc := placementCols{timeUs: 1, algBw: 1, busBw: 1, wrong: 0, iter: iter}
			row := rowPreamble(1, 1, "float", "sum", -1) + pc.format(tc.bitw) + pc.format(tc.bitw)
			if tc.ts {
				row += fmt.Sprintf("%21s", "2026-01-02 03:04:05")
			}
			// Every column of the row ends where its label ends.
			ends := fieldEnds(row)
			labelEnds := fieldEnds(" " + h[2][1:]) // the '#' takes the place of a space
			if len(ends) != len(labelEnds) {
				t.Fatalf("row has %d columns, header %d\nrow    %q\nheader %q", len(ends), len(labelEnds), row, h[2])
			}
			if tc.ts {
				// nccl-tests prints the label with " %19s" but the value with
				// "%21s": the value ends one column after its label. Keep that.
				labelEnds[len(labelEnds)-1]++
			}
			for i := range ends {
				if ends[i] != labelEnds[i] {
					t.Errorf("column %d (%s) ends at %d, its label at %d\nrow    %q\nheader %q", i, tc.labels[min(i, len(tc.labels)-1)], ends[i], labelEnds[i], row, h[2])
				}
			}
		})
	}
}

// fieldEnds returns the end offsets of the whitespace-separated fields of
// s, treating "YYYY-MM-DD hh:mm:ss" as one field.
func fieldEnds(s string) []int {
	var ends []int
	in := false
	for i := 0; i < len(s); i++ {
		space := s[i] == ' '
		if space && in && i+1 < len(s) && i >= 10 && s[i-3] == '-' && s[i-6] == '-' && s[i+1] >= '0' && s[i+1] <= '9' && i+3 < len(s) && s[i+3] == ':' {
			continue // the space inside a timestamp
		}
		if !space {
			in = true
		} else if in {
			ends = append(ends, i)
			in = false
		}
	}
	if in {
		ends = append(ends, len(s))
	}
	return ends
}

// TestFloatStrGolden compares floatStr and the #wrong/#bitdiff formats with
// what C prints for nccl-tests' getFloatStr and "%6g"/"%8g", on curated
// boundary values and 2000 pseudo-random values (testdata/floatstr_golden.c
// generates the file with gcc and glibc).
func TestFloatStrGolden(t *testing.T) {
	sc := bufio.NewScanner(bytes.NewReader([]byte(readFixture(t, "floatstr_golden.txt"))))
	n := 0
	for sc.Scan() {
		line := sc.Text()
		kind, rest, _ := strings.Cut(line, " ")
		val, rest, _ := strings.Cut(rest, " ")
		width, want, _ := strings.Cut(rest, " ")
		want = strings.TrimSuffix(strings.TrimPrefix(want, "|"), "|")
		v, err := strconv.ParseFloat(val, 64)
		if err != nil {
			t.Fatalf("bad golden line %q: %v", line, err)
		}
		w, _ := strconv.Atoi(width)
		var got string
		switch kind {
		case "f":
			got = floatStr(v, w)
		case "g":
			// "%6g" is the #wrong cell, "%8g" the #bitdiff cell.
			const prefix = "     1.00    1.00    1.00  "
			pc := placementCols{timeUs: 1, algBw: 1, busBw: 1, wrong: int64(v)}
			bitwise := w == 8
			if bitwise {
				pc.wrong, pc.bitdiff = 0, int64(v)
				want = "     0  " + want
			}
			got = strings.TrimPrefix(pc.format(bitwise), prefix)
		default:
			t.Fatalf("bad golden line %q", line)
		}
		if got != want {
			t.Errorf("%s %v width %d: got %q, nccl-tests prints %q", kind, v, w, got, want)
		}
		n++
	}
	if n < 4000 {
		t.Fatalf("only %d golden values", n)
	}
}

// TestFooter checks nccl-tests' summary lines: "%d OK|FAILED", the average
// with %g (six significant digits) and the bandwidth floor at 90%.
func TestFooter(t *testing.T) {
	cases := []struct {
		name     string
		floor    string // GCCL_MIN_BW; "" unset
		avg      float64
		wrong    int64
		wantCode int
		want     []string
	}{
		{"fixture", "", 79.6535, 0, exitOK, []string{"# Out of bounds values : 0 OK", "# Avg bus bandwidth    : 79.6535 "}},
		{"six digits", "", 85.3260349, 0, exitOK, []string{"# Out of bounds values : 0 OK", "# Avg bus bandwidth    : 85.326 "}},
		{"small", "", 0.0401449999, 0, exitOK, []string{"# Avg bus bandwidth    : 0.040145 "}},
		{"exponent", "", 1234567.8, 0, exitOK, []string{"# Avg bus bandwidth    : 1.23457e+06 "}},
		{"tiny", "", 0.0000123, 0, exitOK, []string{"# Avg bus bandwidth    : 1.23e-05 "}},
		{"wrong", "", 1, 3, exitDataError, []string{"# Out of bounds values : 3 FAILED"}},
		{"floor ok", "100", 91, 0, exitOK, []string{"# Avg bus bandwidth    : 91 OK"}},
		{"floor exact 90%", "100", 90, 0, exitOK, []string{"# Avg bus bandwidth    : 90 OK"}},
		{"floor failed", "100", 89.9, 0, exitDataError, []string{"# Out of bounds values : 0 OK", "# Avg bus bandwidth    : 89.9 FAILED"}},
		{"floor zero", "0", 0, 0, exitOK, []string{"# Avg bus bandwidth    : 0 OK"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			cleanBwEnv(t)
			if tc.floor != "" {
				t.Setenv("GCCL_MIN_BW", tc.floor)
			}
			var out bytes.Buffer
			e := &engine{t: AllReduce, out: &out, bwSum: tc.avg * 4, bwCount: 4, wrong: tc.wrong}
			code := e.printFooter()
			if code != tc.wantCode {
				t.Errorf("exit code %d, want %d", code, tc.wantCode)
			}
			got := lines(out.String())
			for _, w := range tc.want {
				if !hasLine(out.String(), w) {
					t.Errorf("footer lacks %q:\n%s", w, out.String())
				}
			}
			tail := []string{"#", "# Collective test concluded: all_reduce_perf", "#", ""}
			if len(got) != 6 || strings.Join(got[2:], "\n") != strings.Join(tail, "\n") {
				t.Errorf("footer tail:\n%q\nwant the two summary lines then %q", got, tail)
			}
		})
	}
	// The whole footer of the real log, byte for byte.
	t.Run("fixture bytes", func(t *testing.T) {
		cleanBwEnv(t)
		var out bytes.Buffer
		e := &engine{t: AllReduce, out: &out, bwSum: 79.6535, bwCount: 1}
		e.printFooter()
		fx := readFixture(t, "nccl-tests/h200x2_all_reduce_perf.txt")
		i := strings.Index(fx, "# Out of bounds values")
		j := strings.Index(fx, "rc=")
		if i < 0 || j < 0 || fx[i:j] != out.String() {
			t.Errorf("footer:\n%q\nfixture:\n%q", out.String(), fx[i:max(i, j)])
		}
	})
}
