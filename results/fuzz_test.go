package results

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"
	"testing"
	"time"

	"golang.org/x/perf/benchfmt"
)

// Fuzz targets of the readers. Every reader, on any input: no panic, and
// what it accepts the matching writer writes and the reader reads back the
// same. Seeds: f.Add below, the fixtures in testdata, and regressions in
// testdata/fuzz/FuzzXxx (go test runs them all; go test -fuzz FuzzXxx
// explores from them).

// scanAll drains a scanner.
func scanAll(sc Scanner) ([]Record, error) {
	var recs []Record
	for sc.Scan() {
		recs = append(recs, sc.Record())
	}
	return recs, sc.Err()
}

// addFiles adds the testdata files as seeds.
func addFiles(f *testing.F, names ...string) {
	for _, n := range names {
		b, err := os.ReadFile("testdata/" + n)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
}

// writeAll writes recs through one of our writers.
func writeAll(t *testing.T, recs []Record, newW func(io.Writer) interface {
	Write(Record) error
	Flush() error
}) []byte {
	t.Helper()
	var b bytes.Buffer
	w := newW(&b)
	for _, r := range recs {
		if err := w.Write(r); err != nil {
			t.Fatalf("writing a record the reader accepted: %v\n%+v", err, r)
		}
	}
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// roundTrip checks that what read accepted survives write then read: the
// second writing equals the first, so no field is lost or changed.
func roundTrip(t *testing.T, data []byte, read func([]byte) ([]Record, error), write func([]Record) []byte) {
	recs, _ := read(data)
	if len(recs) == 0 {
		return
	}
	first := write(recs)
	again, err := read(first)
	if err != nil {
		t.Fatalf("re-reading what the writer wrote: %v\n%s", err, first)
	}
	if len(again) != len(recs) {
		t.Fatalf("%d records read back, %d written\n%s", len(again), len(recs), first)
	}
	if second := write(again); !bytes.Equal(first, second) {
		t.Fatalf("not a round trip:\nfirst  %s\nsecond %s", first, second)
	}
}

func FuzzJSONL(f *testing.F) {
	f.Add([]byte(`{"schema":1,"collective":"allreduce","size":8,"time_us":1.5,"env":{"NCCL_X":"1","HOME":"/"}}` + "\n"))
	f.Add([]byte("{\"schema\":1}\n\n{bad\n{\"schema\":99}\n"))
	f.Add([]byte(`{"schema":1,"timestamp":"2025-06-01T10:20:30.5+02:00","iter_times_us":[],"env":{}}`))
	read := func(b []byte) ([]Record, error) { return scanAll(NewJSONLReader("f", bytes.NewReader(b))) }
	f.Fuzz(func(t *testing.T, data []byte) {
		roundTrip(t, data, read, func(recs []Record) []byte {
			return writeAll(t, recs, func(w io.Writer) interface {
				Write(Record) error
				Flush() error
			} {
				return NewJSONLWriter(w)
			})
		})
	})
}

func FuzzCSV(f *testing.F) {
	var b bytes.Buffer
	w := NewCSVWriter(&b)
	for _, r := range sampleRecords() {
		_ = w.Write(r)
	}
	_ = w.Flush()
	f.Add(b.Bytes())
	f.Add([]byte("collective,size,time_us,env,iter_times_us\nallreduce,8,1.5,\"NCCL_A=x\\;y;HOME=/\",1;2\n"))
	f.Add([]byte("size,collective\n8,allreduce\n\"unterminated\n"))
	f.Add([]byte("schema,collective,size,busbw_gbps\n2,x,1,NaN\n"))
	read := func(b []byte) ([]Record, error) { return scanAll(NewCSVReader("f", bytes.NewReader(b))) }
	f.Fuzz(func(t *testing.T, data []byte) {
		roundTrip(t, data, read, func(recs []Record) []byte {
			return writeAll(t, recs, func(w io.Writer) interface {
				Write(Record) error
				Flush() error
			} {
				return NewCSVWriter(w)
			})
		})
	})
}

func FuzzNCCLText(f *testing.F) {
	addFiles(f, "h200x2_all_reduce_perf.txt", "nccltests_periter_rs.txt", "h200x2_sendrecv_perf.txt")
	f.Add([]byte("# Collective test starting: all_gather_perf\n#  size count type redop root time algbw busbw #wrong time algbw busbw #wrong\n 8 2 float none -1 1 0.00 0.00 0 1 0.00 0.00 N/A\n"))
	f.Add([]byte("# nThread 1 nGpus 2\n 99999999999999999999 2 float sum -1 1 1 1 0 1 1 1 0\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		recs, _ := scanAll(NewNCCLTextReader("x_all_reduce_perf.txt", bytes.NewReader(data)))
		if len(recs)%2 != 0 {
			t.Fatalf("%d records: each row gives an out-of-place and an in-place one", len(recs))
		}
		for i, r := range recs {
			want := []string{OutOfPlace, InPlace}[i%2]
			if r.Placement != want || r.Size < 0 || r.Count < 0 || !strings.HasPrefix(r.Source, "x_all_reduce_perf.txt:") {
				t.Fatalf("record %d: placement %q (want %q), size %d, count %d, source %q", i, r.Placement, want, r.Size, r.Count, r.Source)
			}
		}
	})
}

func FuzzNCCLJSON(f *testing.F) {
	addFiles(f, "nccltests_v3_all_reduce.json")
	var b bytes.Buffer
	if err := WriteNCCLJSON(&b, sampleRecords(), []string{"gccl"}); err != nil {
		f.Fatal(err)
	}
	f.Add(b.Bytes())
	f.Add([]byte(`{"version":3,"config":{"nthreads":1,"ngpus":2},"results":[{"size":8,"count":2,"type":"float","redop":"sum","root":"-1","out_of_place":{"time":"nan","alg_bw":1,"bus_bw":1,"nwrong":"0"},"in_place":null}]}`))
	f.Add([]byte(`{"version":3,"results":[{"size":8`))
	read := func(b []byte) ([]Record, error) { return scanAll(NewNCCLJSONReader("f.json", bytes.NewReader(b))) }
	f.Fuzz(func(t *testing.T, data []byte) {
		recs, _ := read(data)
		if len(recs) == 0 {
			return
		}
		var doc bytes.Buffer
		if err := WriteNCCLJSON(&doc, recs, nil); err != nil {
			t.Fatalf("writing records the reader accepted: %v", err)
		}
		again, err := read(doc.Bytes())
		if err != nil || len(again) != len(recs) {
			t.Fatalf("read back %d of %d records, %v\n%s", len(again), len(recs), err, doc.Bytes())
		}
		// The writer keeps only GCCL_*/NCCL_* of the environment, so "auto"
		// (an unset NCCL_ALGO in a whole environment) reads back as
		// unknown, "": the same to the gate and the tuner. It fills what
		// every nccl-tests document has: a start time (now, when the
		// records have none), one device per process, aggregated
		// iterations of at least 1.
		known := func(r Record) Record {
			r = ncclCarried(r)
			r.NProcs, r.AggIters = max(r.NProcs, 1), max(r.AggIters, 1)
			if recs[0].Timestamp.IsZero() {
				r.Timestamp = time.Time{}
			}
			// Per-iteration statistics a row lacks the writer computes from
			// its times, as nccl-tests would have: with times (compared
			// exactly) the statistics are derived, so left out here.
			if len(r.IterTimesUs) > 0 {
				r.MinUs, r.MaxUs, r.MedianUs, r.P99Us = 0, 0, 0, 0
			}
			for _, f := range []*string{&r.Algorithm, &r.Protocol} {
				if *f == "auto" {
					*f = ""
				}
			}
			return r
		}
		// A row holds its out-of-place result before its in-place one,
		// whatever order the records came in: compare as sorted lists.
		// %v prints NaN as NaN, so a NaN time compares equal to itself.
		gs, ws := make([]string, len(recs)), make([]string, len(recs))
		for i := range recs {
			g, w := known(again[i]), known(recs[i])
			gs[i], ws[i] = fmt.Sprintf("%+v", g), fmt.Sprintf("%+v", w)
		}
		sort.Strings(gs)
		sort.Strings(ws)
		for i := range gs {
			if gs[i] != ws[i] {
				t.Fatalf("record %d (sorted):\n got %s\nwant %s\n%s", i, gs[i], ws[i], doc.Bytes())
			}
		}
	})
}

func FuzzGoBench(f *testing.F) {
	addFiles(f, "gobench_ccl.txt")
	f.Add([]byte("pkg: p\nBenchmarkA-2 100 12 ns/op 3 MB/s\nBenchmarkB 1 x ns/op\nUnit ns/op assume=exact\nBenchmark\n"))
	f.Add([]byte("BenchmarkA-2 100 -1e309 ns/op\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		recs, _ := scanAll(NewGoBenchReader("b.txt", bytes.NewReader(data)))
		if len(recs) == 0 {
			return
		}
		// What benchfmt writes back of the same results reads as the same
		// records: the mapping depends on the results, not the layout.
		var out bytes.Buffer
		br, bw := benchfmt.NewReader(bytes.NewReader(data), "b.txt"), benchfmt.NewWriter(&out)
		for br.Scan() {
			if res, ok := br.Result().(*benchfmt.Result); ok {
				if err := bw.Write(res); err != nil {
					t.Fatal(err)
				}
			}
		}
		again, err := scanAll(NewGoBenchReader("b.txt", &out))
		if err != nil || len(again) != len(recs) {
			t.Fatalf("read back %d of %d records, %v\n%s", len(again), len(recs), err, out.Bytes())
		}
		for i := range recs {
			a, b := recs[i], again[i]
			a.Source, b.Source = "", ""
			if g, w := fmt.Sprintf("%+v", b), fmt.Sprintf("%+v", a); g != w {
				t.Fatalf("record %d:\n got %s\nwant %s", i, g, w)
			}
		}
	})
}

// FuzzRead is the entry point every command uses: detection, gzip, and
// whichever reader the content picks.
func FuzzRead(f *testing.F) {
	addFiles(f, "h200x2_all_reduce_perf.txt", "nccltests_v3_all_reduce.json", "gobench_ccl.txt")
	f.Add([]byte{0x1f, 0x8b, 0x08, 0x00})
	f.Add([]byte("\ufeffcollective,size,time_us\nallreduce,8,1\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		_, _ = Read("f", bytes.NewReader(data))
	})
}
