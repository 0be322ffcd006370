package results

import (
	"bytes"
	"errors"
	"math"
	"os"
	"strings"
	"testing"
)

// goBenchFile is real output of go test -bench -count 3 on lib/ccl: three
// benchmarks, each line three times, with custom metrics and B/op.
const goBenchFile = "testdata/gobench_ccl.txt"

func TestGoBenchDetectAndRead(t *testing.T) {
	data, err := os.ReadFile(goBenchFile)
	if err != nil {
		t.Fatal(err)
	}
	if f, err := Detect("b.txt", data); f != FormatGoBench || err != nil {
		t.Fatalf("Detect: %v, %v; want %v", f, err, FormatGoBench)
	}
	recs, err := Read("b.txt", bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	if len(recs) != 9 {
		t.Fatalf("%d records, want 9 (3 benchmarks x -count 3)", len(recs))
	}
	r := recs[0]
	want := Record{Schema: SchemaVersion, Tool: BackendGoBench, Backend: BackendGoBench, Source: "b.txt:5",
		CPU: "AMD EPYC", Collective: "github.com/gccl/gccl/lib/ccl.AllReduce/ranks=2/proto=LL/nch=1/size=8B-2",
		Root: -1, Iterations: 200, Wrong: -1, TimeUs: 3.020, AlgBw: 0.00265, BusBw: 0.002649, RefCopyGBps: 5.769}
	for _, f := range []struct {
		name      string
		got, want float64
	}{{"time", r.TimeUs, want.TimeUs}, {"algbw", r.AlgBw, want.AlgBw}, {"busbw", r.BusBw, want.BusBw}, {"ref", r.RefCopyGBps, want.RefCopyGBps}} {
		if math.Abs(f.got-f.want) > 1e-12 {
			t.Errorf("%s %v, want %v", f.name, f.got, f.want)
		}
	}
	r.TimeUs, r.AlgBw, r.BusBw, r.RefCopyGBps = want.TimeUs, want.AlgBw, want.BusBw, want.RefCopyGBps
	if !recordsEqual(r, want) {
		t.Errorf("record 0:\n got %+v\nwant %+v", r, want)
	}
	// A benchmark without MB/s has no bandwidth; its repeats are one name.
	last := recs[8]
	if last.Collective != "github.com/gccl/gccl/lib/ccl.CallOneRank-2" || last.BusBw != 0 || math.Abs(last.TimeUs-0.2302) > 1e-12 {
		t.Errorf("last record: %s time %v busbw %v", last.Collective, last.TimeUs, last.BusBw)
	}
}

func recordsEqual(a, b Record) bool {
	var x, y bytes.Buffer
	w1, w2 := NewJSONLWriter(&x), NewJSONLWriter(&y)
	_ = w1.Write(a)
	_ = w2.Write(b)
	_, _ = w1.Flush(), w2.Flush()
	return x.String() == y.String()
}

func TestGoBenchBadLinesAndNoResults(t *testing.T) {
	in := "goos: linux\nBenchmarkA-2 100 12 ns/op\nBenchmarkB-2 many 3 ns/op\nBenchmarkC-2 100 7 ns/op\nPASS\n"
	recs, err := Read("b.txt", strings.NewReader(in))
	if len(recs) != 2 || recs[1].Collective != "C-2" {
		t.Errorf("records %+v, want A-2 and C-2", recs)
	}
	wantSyntax(t, err, "b.txt", 3)
	wantErr(t, err, "iteration count")

	// Only a header and PASS: no format at all, and the reader says so too.
	none := "goos: linux\nPASS\nok  \tpkg\t0.1s\n"
	if _, err := Read("n.txt", strings.NewReader(none)); !errors.Is(err, ErrUnknownFormat) {
		t.Errorf("Read of output without results: %v, want ErrUnknownFormat", err)
	}
	sc := NewGoBenchReader("n.txt", strings.NewReader(none))
	for sc.Scan() {
		t.Error("a record from output without results")
	}
	if err := sc.Err(); !errors.Is(err, ErrNoResults) {
		t.Errorf("GoBenchReader without results: %v, want ErrNoResults", err)
	}
}
