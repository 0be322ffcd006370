package results

import (
	"bytes"
	"fmt"
	"io"

	"golang.org/x/perf/benchfmt"
)

// BackendGoBench is the Backend of records read from Go benchmark output.
const BackendGoBench = "go test -bench"

// A GoBenchReader reads the output of `go test -bench` (the Go benchmark
// format that benchstat reads, parsed with golang.org/x/perf/benchfmt) and
// yields one Record per result line, so the gate compares benchmarks as it
// compares collectives:
//
//	pkg: github.com/gccl/gccl/lib/ccl
//	cpu: Intel(R) Xeon(R) Processor @ 2.50GHz
//	BenchmarkCallOneRank-2   1000000   1052 ns/op   7.60 MB/s   0 B/op
//
// Collective is the benchmark's full name after "Benchmark", GOMAXPROCS
// suffix included, prefixed by the package ("github.com/gccl/gccl/lib/ccl.
// CallOneRank-2") so that two packages' benchmarks of one name stay apart.
// ns/op (any time per op) becomes TimeUs, MB/s (any bytes per second) AlgBw
// and BusBw in GB/s; the custom metrics busBW_GB/s and copy_GB/s (reported
// by lib/ccl's benchmarks) become BusBw and RefCopyGBps; other units (B/op,
// allocs/op, other custom metrics) are not carried. NRanks, Size and Placement are zero: a benchmark is no
// collective run. A line repeated (-count N) is N records of one key, which
// the gate takes as N runs. cpu: sets CPU. Backend is BackendGoBench, Source
// "file:line". A line that starts "Benchmark" but does not parse is skipped
// and reported as a *SyntaxError; other lines (PASS, ok, logs) are ignored.
type GoBenchReader struct {
	name string
	br   *benchfmt.Reader
	n    int // results read
	rec  Record
	errs errList
	done bool
}

// NewGoBenchReader reads Go benchmark output from r; name (a file name)
// positions errors and Sources.
func NewGoBenchReader(name string, r io.Reader) *GoBenchReader {
	return &GoBenchReader{name: name, br: benchfmt.NewReader(r, name)}
}

// Scan advances to the next record; false at the end or on a fatal error.
func (rd *GoBenchReader) Scan() bool {
	for !rd.done && rd.br.Scan() {
		switch res := rd.br.Result().(type) {
		case *benchfmt.SyntaxError:
			rd.errs.add(&SyntaxError{File: rd.name, Line: res.Line, Msg: res.Msg})
		case *benchfmt.Result:
			rd.n++
			rd.rec = goBenchRecord(res)
			return true
		}
	}
	rd.done = true
	if err := rd.br.Err(); err != nil && rd.errs.fatal == nil {
		rd.errs.fatal = err
	} else if rd.n == 0 && rd.errs.fatal == nil && len(rd.errs.errs) == 0 {
		rd.errs.fatal = &SyntaxError{File: rd.name, Err: ErrNoResults,
			Msg: "Go benchmark output without a single result line (did go test -bench run any benchmark?)"}
	}
	return false
}

// goBenchRecord converts one result; res is reused by the reader, so
// nothing of it is kept.
func goBenchRecord(res *benchfmt.Result) Record {
	file, line := res.Pos()
	name := res.Name.String()
	if pkg := res.GetConfig("pkg"); pkg != "" {
		name = pkg + "." + name
	}
	r := Record{
		Schema:     SchemaVersion,
		Tool:       BackendGoBench,
		Backend:    BackendGoBench,
		Source:     fmt.Sprintf("%s:%d", file, line),
		CPU:        res.GetConfig("cpu"),
		Collective: name,
		Root:       -1,
		Iterations: res.Iters,
		Wrong:      -1,
	}
	if s, ok := res.Value("sec/op"); ok {
		r.TimeUs = s * 1e6
	}
	if bps, ok := res.Value("B/s"); ok {
		r.AlgBw = bps / 1e9
		r.BusBw = r.AlgBw
	}
	// The metrics lib/ccl's benchmarks report besides: busBW by
	// nccl-tests' formula and the copy bandwidth that --normalize copy
	// divides by.
	if v, ok := res.Value("busBW_GB/s"); ok {
		r.BusBw = v
	}
	if v, ok := res.Value("copy_GB/s"); ok {
		r.RefCopyGBps = v
	}
	return r
}

// Record returns the record read by the last successful Scan.
func (rd *GoBenchReader) Record() Record { return rd.rec }

// Err returns the errors met so far (joined), or nil.
func (rd *GoBenchReader) Err() error { return rd.errs.err() }

// isGoBench reports whether data holds at least one Go benchmark result
// line ("BenchmarkName N value unit ...").
func isGoBench(data []byte) bool {
	if !bytes.Contains(data, []byte("Benchmark")) {
		return false
	}
	br := benchfmt.NewReader(bytes.NewReader(data), "")
	for br.Scan() {
		if _, ok := br.Result().(*benchfmt.Result); ok {
			return true
		}
	}
	return false
}
