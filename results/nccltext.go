package results

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
)

// An NCCLTextReader reads the text that nccl-tests prints (all_reduce_perf
// and friends, any version that prints the standard table) and yields two
// Records per data row: out-of-place, then in-place. It reads:
//
//	# nccl-tests version 2.19.6 ...               -> Tool "nccl-tests 2.19.6"
//	# Collective test starting: all_reduce_perf   -> Collective "allreduce"
//	# nThread 1 nGpus 2 ... iters: 20 agg iters: 1 -> Iterations, AggIters
//	#  Rank  0 Group  0 Pid 1418 on vm device 0 ... -> NRanks, NProcs, NHosts, Host
//	#       size  count  type  redop  root  time ... -> the column layout
//	           8      2 float    sum    -1 14.15 ... -> the data
//
// The column-name header decides which columns each placement has, so the
// variants with #bitdiff or per-iteration columns (i_min i_max i_p99 i_cv%)
// parse; "cputime" counts as time. "#wrong" may be N/A (Wrong -1). NRanks is
// the number of Rank lines (one per rank over all processes), at least
// nThread x nGpus. Records carry Backend "nccl-tests" and Source "file:line".
//
// Lines that are not nccl-tests' (NCCL INFO output, shell noise such as
// "rc=0") are ignored; a line that starts like a data row (an integer) but
// does not parse is skipped and reported as a *SyntaxError. Several tests
// concatenated in one log are read one after the other. When no "Collective
// test starting" line names the test (old versions), the file name is
// tried ("..._all_reduce_perf.txt"); failing that, reading stops.
type NCCLTextReader struct {
	name    string
	r       *bufio.Reader
	line    int
	st      textState
	rows    int // data rows read in the whole input
	pending []Record
	rec     Record
	errs    errList
	done    bool
}

// textState is what the header lines of one test said.
type textState struct {
	tool      string
	testName  string // as printed, "all_reduce_perf"
	test      ncclTest
	testKnown bool

	nThreads, nGpus, iters, aggIters int

	ranks     int             // Rank lines since "Using devices"
	hosts     map[string]bool // hostnames of the Rank lines
	procs     map[string]bool // host/pid of the Rank lines
	firstHost string

	cols [2][]string // per placement: column names after the five key columns
}

// defaultTextColumns is the layout without -I, -C or bitwise checks.
var defaultTextColumns = []string{"time", "algbw", "busbw", "#wrong"}

func newTextState(tool string) textState {
	return textState{tool: tool, cols: [2][]string{defaultTextColumns, defaultTextColumns}}
}

// NewNCCLTextReader reads nccl-tests text output from r; name (a file name)
// positions errors and Sources.
func NewNCCLTextReader(name string, r io.Reader) *NCCLTextReader {
	return &NCCLTextReader{name: name, r: bufio.NewReader(r), st: newTextState("nccl-tests")}
}

// Scan advances to the next record; false at the end or on a fatal error.
func (rd *NCCLTextReader) Scan() bool {
	for len(rd.pending) == 0 {
		if rd.done {
			return false
		}
		s, err := rd.r.ReadString('\n')
		if err != nil {
			rd.done = true
			if !errors.Is(err, io.EOF) {
				rd.errs.fatal = fmt.Errorf("%s: %w", rd.name, err)
				return false
			}
			if s == "" {
				if rd.rows == 0 && rd.errs.fatal == nil && len(rd.errs.errs) == 0 {
					rd.errs.fatal = &SyntaxError{File: rd.name, Err: ErrNoResults,
						Msg: "nccl-tests output without a single result row (did the test run?)"}
				}
				return false
			}
		}
		rd.line++
		rd.parseLine(strings.TrimRight(s, "\r\n"))
		if rd.errs.fatal != nil {
			rd.done = true
			rd.pending = nil
			return false
		}
	}
	rd.rec, rd.pending = rd.pending[0], rd.pending[1:]
	return true
}

// Record returns the record read by the last successful Scan.
func (rd *NCCLTextReader) Record() Record { return rd.rec }

// Err returns the errors met so far (joined), or nil.
func (rd *NCCLTextReader) Err() error { return rd.errs.err() }

func (rd *NCCLTextReader) syntax(msg string, args ...any) *SyntaxError {
	return &SyntaxError{File: rd.name, Line: rd.line, Msg: fmt.Sprintf(msg, args...)}
}

func (rd *NCCLTextReader) parseLine(s string) {
	if body, ok := strings.CutPrefix(strings.TrimSpace(s), "#"); ok {
		rd.parseComment(strings.TrimSpace(body))
		return
	}
	f := strings.Fields(s)
	if len(f) == 0 || !isDigits(f[0]) {
		return // not nccl-tests' line
	}
	recs, err := rd.parseRow(f)
	if err != nil {
		rd.errs.add(err)
		return
	}
	if rd.errs.fatal != nil {
		return
	}
	rd.rows++
	rd.pending = append(rd.pending, recs...)
}

func (rd *NCCLTextReader) parseComment(body string) {
	f := strings.Fields(body)
	switch {
	case len(f) == 0:
	case strings.HasPrefix(body, "nccl-tests version"):
		tool := "nccl-tests"
		if len(f) > 2 {
			tool += " " + f[2]
		}
		rd.st = newTextState(tool)
	case strings.HasPrefix(body, "Collective test starting:"):
		name := strings.TrimSpace(strings.TrimPrefix(body, "Collective test starting:"))
		rd.st = newTextState(rd.st.tool)
		rd.st.testName = name
		rd.st.test, rd.st.testKnown = testOrUnknown(name, false)
	case f[0] == "nThread":
		rd.parseConfig(f)
	case body == "Using devices":
		rd.st.ranks, rd.st.hosts, rd.st.procs, rd.st.firstHost = 0, nil, nil, ""
	case f[0] == "Rank" && len(f) >= 8 && f[6] == "on":
		// Rank 0 Group 0 Pid 1418 on vm device 0 [0000:00:06] NVIDIA H200
		if rd.st.hosts == nil {
			rd.st.hosts, rd.st.procs = map[string]bool{}, map[string]bool{}
			rd.st.firstHost = f[7]
		}
		rd.st.ranks++
		rd.st.hosts[f[7]] = true
		rd.st.procs[f[7]+"/"+f[5]] = true
	case f[0] == "size" && len(f) > 5 && f[1] == "count":
		rd.parseColumns(f[5:])
	}
}

// parseConfig reads "nThread 1 nGpus 2 minBytes 8 maxBytes ... step: 4(factor)
// warmup iters: 5 iters: 20 agg iters: 1 validation: 1 graph: 0 unalign: 0".
func (rd *NCCLTextReader) parseConfig(f []string) {
	num := func(i int) int {
		if i >= len(f) {
			return 0
		}
		n, _ := strconv.Atoi(f[i])
		return n
	}
	for i, tok := range f {
		switch tok {
		case "nThread":
			rd.st.nThreads = num(i + 1)
		case "nGpus":
			rd.st.nGpus = num(i + 1)
		case "iters:":
			switch {
			case i > 0 && f[i-1] == "warmup":
			case i > 0 && f[i-1] == "agg":
				rd.st.aggIters = num(i + 1)
			default:
				rd.st.iters = num(i + 1)
			}
		}
	}
}

// parseColumns reads the column names after "size count type redop root":
// two groups, each starting with "time" (or "cputime"), then perhaps
// "timestamp".
func (rd *NCCLTextReader) parseColumns(names []string) {
	if n := len(names); n > 0 && names[n-1] == "timestamp" {
		names = names[:n-1]
	}
	var starts []int
	for i, n := range names {
		if n == "time" || n == "cputime" {
			starts = append(starts, i)
		}
	}
	if len(starts) != 2 || starts[0] != 0 {
		rd.errs.add(rd.syntax("unrecognized column header %q; assuming the standard columns", strings.Join(names, " ")))
		rd.st.cols = [2][]string{defaultTextColumns, defaultTextColumns}
		return
	}
	rd.st.cols = [2][]string{names[:starts[1]], names[starts[1]:]}
	for i := range rd.st.cols {
		if rd.st.cols[i][0] == "cputime" {
			c := append([]string{"time"}, rd.st.cols[i][1:]...)
			rd.st.cols[i] = c
		}
	}
}

func (rd *NCCLTextReader) parseRow(f []string) ([]Record, error) {
	st := &rd.st
	want := 5 + len(st.cols[0]) + len(st.cols[1])
	if len(f) < want {
		return nil, rd.syntax("data row has %d fields, want %d (truncated line?)", len(f), want)
	}
	if !st.testKnown {
		if t, ok := testInText(rd.name); ok {
			st.test, st.testKnown = t, true
		} else {
			rd.errs.fatal = rd.syntax("cannot tell which collective ran: no \"# Collective test starting\" line names it (%q), nor does the file name", st.testName)
			return nil, nil
		}
	}
	size, err1 := strconv.ParseInt(f[0], 10, 64)
	count, err2 := strconv.ParseInt(f[1], 10, 64)
	root, err3 := strconv.Atoi(f[4])
	if err := errors.Join(err1, err2, err3); err != nil {
		return nil, rd.syntax("bad size, count or root in data row: %v", err)
	}
	if count < 0 {
		return nil, rd.syntax("bad count %d in data row: want a number of elements, 0 or more", count)
	}
	base := Record{
		Schema:     SchemaVersion,
		Tool:       st.tool,
		Host:       st.firstHost,
		Backend:    "nccl-tests",
		Source:     fmt.Sprintf("%s:%d", rd.name, rd.line),
		NRanks:     max(st.ranks, st.nThreads*st.nGpus),
		NProcs:     len(st.procs),
		NHosts:     len(st.hosts),
		Collective: st.test.collective,
		Type:       f[2],
		Op:         normalizeOp(st.test, f[3]),
		Root:       root,
		Size:       size,
		Count:      count,
		Iterations: st.iters,
		AggIters:   st.aggIters,
	}
	recs := make([]Record, 2)
	pos := 5
	for i, placement := range []string{OutOfPlace, InPlace} {
		r := base
		r.Placement = placement
		for _, col := range st.cols[i] {
			cell := f[pos]
			pos++
			if err := setTextCell(&r, col, cell); err != nil {
				return nil, rd.syntax("%s column %q: %v", placement, col, err)
			}
		}
		recs[i] = r
	}
	return recs, nil
}

// setTextCell stores one placement cell; columns Record has no field for
// (#bitdiff, i_cv%) are checked for nothing and dropped.
func setTextCell(r *Record, col, cell string) error {
	var dst *float64
	switch col {
	case "time":
		dst = &r.TimeUs
	case "algbw":
		dst = &r.AlgBw
	case "busbw":
		dst = &r.BusBw
	case "i_min":
		dst = &r.MinUs
	case "i_max":
		dst = &r.MaxUs
	case "i_p99":
		dst = &r.P99Us
	case "#wrong":
		if cell == "N/A" {
			r.Wrong = -1
			return nil
		}
		w, err := strconv.ParseFloat(cell, 64) // printed with %g
		if err != nil || w < 0 {
			return fmt.Errorf("invalid count %q", cell)
		}
		r.Wrong = int64(w)
		return nil
	default:
		return nil
	}
	if cell == "N/A" {
		return nil
	}
	v, err := strconv.ParseFloat(cell, 64)
	if err != nil {
		return fmt.Errorf("invalid number %q", cell)
	}
	*dst = v
	return nil
}

func isDigits(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}
