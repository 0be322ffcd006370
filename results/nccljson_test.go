package results

import (
	"bytes"
	"encoding/json"
	"errors"
	"math"
	"reflect"
	"strings"
	"testing"
	"time"
)

func TestNCCLJSONReadNCCLTestsDocument(t *testing.T) {
	recs, err := ReadFile("testdata/nccltests_v3_all_reduce.json")
	if err != nil {
		t.Fatal(err)
	}
	if len(recs) != 4 {
		t.Fatalf("got %d records, want 4", len(recs))
	}
	r := recs[0]
	wantEnv := map[string]string{"NCCL_PROTO": "Simple", "NCCL_MIN_NCHANNELS": "4", "NCCL_MAX_NCHANNELS": "4", "NCCL_DEBUG": "WARN"}
	if !reflect.DeepEqual(r.Env, wantEnv) {
		t.Errorf("env %v, want %v", r.Env, wantEnv)
	}
	start := time.Date(2025, 6, 1, 10, 20, 30, 0, time.Local)
	if r.Collective != "allreduce" || r.Op != "sum" || r.Root != -1 || r.NRanks != 2 || r.NProcs != 1 ||
		r.Host != "vm" || !r.Timestamp.Equal(start) || r.Iterations != 20 || r.AggIters != 1 {
		t.Errorf("header fields: %+v", r)
	}
	// The env is a whole environment: unset NCCL_ALGO means auto.
	if r.Protocol != "Simple" || r.Algorithm != "auto" || r.Channels != 4 {
		t.Errorf("config from env: algo %q proto %q channels %d", r.Algorithm, r.Protocol, r.Channels)
	}
	if r.Size != 8 || r.Count != 2 || r.TimeUs != 14.15 || r.BusBw != 0.000565 || r.Wrong != 0 || r.Placement != OutOfPlace {
		t.Errorf("first row: %+v", r)
	}
	if l := recs[3]; l.Size != 134217728 || l.TimeUs != 470.73 || l.BusBw != 285.123 || l.Placement != InPlace {
		t.Errorf("last row: %+v", l)
	}
}

func TestNCCLJSONEnvFiltering(t *testing.T) {
	doc := `{"version":3,"args":["all_reduce_perf"],"env":["PATH=/usr/bin","HOME=/root","SECRET_TOKEN=hunter2","NCCL_PROTO=LL"],` +
		`"config":{"nthreads":1,"ngpus":2},"results":[{"size":8,"count":2,"type":"float","redop":"sum","root":"    -1",` +
		`"out_of_place":{"time":1,"alg_bw":0,"bus_bw":0,"nwrong":0},"in_place":{"time":1,"alg_bw":0,"bus_bw":0,"nwrong":0}}]}`
	recs, err := Read("env.json", strings.NewReader(doc))
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range recs {
		if want := map[string]string{"NCCL_PROTO": "LL"}; !reflect.DeepEqual(r.Env, want) {
			t.Errorf("env %v, want %v", r.Env, want)
		}
	}
	// The writer filters too, whatever the caller hands it.
	var buf bytes.Buffer
	w, err := NewNCCLJSONWriter(&buf, NCCLHeader{Env: map[string]string{"PATH": "/bin", "SECRET_TOKEN": "x", "GCCL_PROTO": "LL"}})
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Close(NCCLFooter{}); err != nil {
		t.Fatal(err)
	}
	if s := buf.String(); strings.Contains(s, "SECRET") || strings.Contains(s, "PATH") || !strings.Contains(s, `"env":["GCCL_PROTO=LL"]`) {
		t.Errorf("writer env: %s", s)
	}
	// So do JSONL and CSV writers.
	for _, write := range []func(*bytes.Buffer, Record){
		func(b *bytes.Buffer, r Record) { w := NewJSONLWriter(b); w.Write(r); w.Flush() },
		func(b *bytes.Buffer, r Record) { w := NewCSVWriter(b); w.Write(r); w.Flush() },
	} {
		buf.Reset()
		write(&buf, Record{Collective: "allreduce", Env: map[string]string{"SECRET_TOKEN": "x", "NCCL_ALGO": "Ring"}})
		if s := buf.String(); strings.Contains(s, "SECRET") || !strings.Contains(s, "NCCL_ALGO") {
			t.Errorf("record writer env: %s", s)
		}
	}
}

func TestNCCLJSONWriterLayout(t *testing.T) {
	var buf bytes.Buffer
	yes := true
	hdr := NCCLHeader{
		StartTime: time.Date(2025, 6, 1, 10, 20, 30, 0, time.Local),
		Args:      []string{"gccl-tests", "-b", "8"},
		Config: NCCLConfig{NThreads: 1, NGPUs: 2, MinBytes: 8, MaxBytes: 8, StepFactor: 2, Iterations: 20, AggIters: 1,
			Validation: 1, PerIterTiming: true,
			Devices: []NCCLDevice{{Rank: 0, Pid: 7, Hostname: "box", DeviceHex: "0000:00:00", DeviceInfo: "cpu"}}},
	}
	w, err := NewNCCLJSONWriter(&buf, hdr)
	if err != nil {
		t.Fatal(err)
	}
	key := NCCLRowKey{Size: 8, Count: 2, Type: "float", RedOp: "sum", Root: -1, ActualIters: 20, ExperimentName: "AllReduce"}
	if err := w.AddRow(key, nil, &NCCLRowResult{TimeUs: math.NaN(), Wrong: -1, PerIter: &NCCLPerIter{MinUs: 1, TimesUs: []float64{1, 2}}}); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(NCCLFooter{OutOfBounds: 0, AvgBusBw: 1.5, AvgBusBwOK: &yes, EndTime: hdr.StartTime}); err != nil {
		t.Fatal(err)
	}
	if err := w.AddRow(key, nil, nil); err == nil {
		t.Error("AddRow after Close: no error")
	}
	var doc map[string]any
	if err := json.Unmarshal(buf.Bytes(), &doc); err != nil {
		t.Fatalf("not JSON: %v\n%s", err, buf.String())
	}
	cfg := doc["config"].(map[string]any)
	for _, k := range []string{"blocking_collectives", "per_iter_timing", "parallel_init"} {
		if _, ok := cfg[k].(bool); !ok {
			t.Errorf("config.%s = %#v, want a JSON boolean", k, cfg[k])
		}
	}
	if cfg["step_factor"] != 2.0 || cfg["step_bytes"] != nil {
		t.Errorf("step: factor %v bytes %v", cfg["step_factor"], cfg["step_bytes"])
	}
	if doc["version"] != 3.0 || doc["start_time"] != "2025-06-01 10:20:30" || doc["nccl_version"] != 0.0 {
		t.Errorf("header: %v %v %v", doc["version"], doc["start_time"], doc["nccl_version"])
	}
	row := doc["results"].([]any)[0].(map[string]any)
	if row["root"] != "    -1" || row["out_of_place"] != nil {
		t.Errorf("row: root %q out_of_place %v", row["root"], row["out_of_place"])
	}
	in := row["in_place"].(map[string]any)
	if v, ok := in["nwrong"]; !ok || v != nil {
		t.Errorf("in_place.nwrong = %v (present %v), want null", v, ok)
	}
	if in["time"] != "nan" {
		t.Errorf("NaN time written as %v", in["time"])
	}
	if _, ok := doc["out_of_bounds"].(map[string]any)["okay"].(bool); !ok {
		t.Error("out_of_bounds.okay is not a boolean")
	}
	if doc["average_bus_bandwidth"].(map[string]any)["okay"] != true || doc["end_time"] != "2025-06-01 10:20:30" {
		t.Errorf("footer: %v %v", doc["average_bus_bandwidth"], doc["end_time"])
	}
	// Read back: a null placement yields no record; the per-iteration report survives.
	recs, err := Read("w.json", bytes.NewReader(buf.Bytes()))
	if err != nil {
		t.Fatal(err)
	}
	if len(recs) != 1 || recs[0].Placement != InPlace || !math.IsNaN(recs[0].TimeUs) || recs[0].Wrong != -1 ||
		recs[0].MinUs != 1 || !reflect.DeepEqual(recs[0].IterTimesUs, []float64{1, 2}) || recs[0].Collective != "allreduce" {
		t.Errorf("read back: %+v", recs)
	}
}

func TestNCCLJSONReadVariants(t *testing.T) {
	const row = `{"size":8,"count":2,"type":"float","redop":"sum","root":"    -1","out_of_place":{"time":1.5,"alg_bw":0.1,"bus_bw":0.1,"nwrong":0.000000},"in_place":{"cpu_time":2.5,"alg_bw":"nan","bus_bw":0.2,"nwrong":null},"actual_iterations":20,"experiment_name":""}`
	head := func(version, prog string) string {
		return `{"version":` + version + `,"start_time":"2025-06-01 10:20:30","args":["` + prog + `"],"env":[],"nccl_version":22809,` +
			`"config":{"nthreads":1,"ngpus":2,"iterations":20,"aggregated_iterations":1,"blocking_collectives":"false","devices":[{"rank":0,"hostname":"a"},{"rank":2,"hostname":"b"}]},"results":[`
	}
	tests := []struct {
		name, file, doc string
		n               int
		errIs           error
		errText         string
		check           func(t *testing.T, recs []Record)
	}{
		{
			name: "version 2, cpu_time, nan, null nwrong, two processes", doc: head("2", "/opt/nccl-tests/build/broadcast_perf_mpi") + row + `]}`, n: 2,
			check: func(t *testing.T, recs []Record) {
				o, i := recs[0], recs[1]
				if o.Collective != "broadcast" || o.Op != "none" || o.NRanks != 4 || o.NProcs != 2 || o.NHosts != 2 || o.Wrong != 0 {
					t.Errorf("out-of-place %+v", o)
				}
				if i.TimeUs != 2.5 || !math.IsNaN(i.AlgBw) || i.Wrong != -1 || i.Algorithm != "" {
					t.Errorf("in-place %+v", i)
				}
			},
		},
		{
			name: "experiment_name wins", doc: head("3", "replay") + strings.Replace(row, `"experiment_name":""`, `"experiment_name":"ReduceScatter"`, 1) + `]}`, n: 2,
			check: func(t *testing.T, recs []Record) {
				if recs[0].Collective != "reducescatter" {
					t.Errorf("collective %q", recs[0].Collective)
				}
			},
		},
		{
			name: "truncated document keeps complete rows", doc: head("3", "all_reduce_perf") + row + `,` + row[:40], n: 2,
			errText: "truncated",
		},
		{name: "version too new", doc: head("4", "all_reduce_perf") + row + `]}`, errText: "this build reads versions 1 to 3"},
		{name: "collective unknown", doc: head("3", "my_bench") + row + `]}`, errText: "cannot tell which collective"},
		{
			name: "bad row is skipped", doc: head("3", "all_reduce_perf") + `{"size":"big"},` + row + `]}`, n: 2,
			errText: "result row",
		},
		{name: "no results", doc: head("3", "all_reduce_perf") + `]}`, errIs: ErrNoResults},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			file := "doc.json"
			recs, err := Read(file, strings.NewReader(tt.doc))
			if len(recs) != tt.n {
				t.Errorf("got %d records, want %d (err %v)", len(recs), tt.n, err)
			}
			switch {
			case tt.errText == "" && tt.errIs == nil && err != nil:
				t.Fatalf("unexpected error: %v", err)
			case tt.errText != "":
				wantErr(t, err, file+":1:", tt.errText)
			case tt.errIs != nil && !errors.Is(err, tt.errIs):
				t.Errorf("error %v, want %v", err, tt.errIs)
			}
			if tt.check != nil && len(recs) == tt.n {
				tt.check(t, recs)
			}
		})
	}
}

func TestSweepStep(t *testing.T) {
	tests := []struct {
		sizes         []int64
		factor, bytes int64
	}{
		{[]int64{8, 32, 128, 512}, 4, 0},
		{[]int64{1024, 2048, 3072}, 0, 1024},
		{[]int64{8, 16}, 2, 0},
		{[]int64{8}, 0, 0},
		{[]int64{8, 24, 100}, 0, 0},
		{[]int64{512, 128, 8, 32, 32}, 4, 0},
	}
	for _, tt := range tests {
		if f, b := sweepStep(tt.sizes); f != tt.factor || b != tt.bytes {
			t.Errorf("sweepStep(%v) = %d, %d; want %d, %d", tt.sizes, f, b, tt.factor, tt.bytes)
		}
	}
}

func TestNCCLDocument(t *testing.T) {
	recs := sampleRecords()
	recs[0].Wrong = 3
	hdr, rows, foot := NCCLDocument(recs, []string{"gccl"})
	if len(rows) != 4 {
		t.Fatalf("got %d rows, want 4", len(rows))
	}
	for i, r := range rows {
		if r.Out == nil || r.In == nil {
			t.Errorf("row %d lacks a placement", i)
		}
	}
	if rows[0].Key.ExperimentName != "AllReduce" || rows[2].Key.ExperimentName != "SendRecv" || rows[2].Key.RedOp != "none" {
		t.Errorf("row keys %+v %+v", rows[0].Key, rows[2].Key)
	}
	if rows[2].In.Wrong != -1 || rows[0].Out.Wrong != 3 || foot.OutOfBounds != 3 || !foot.EndTime.IsZero() {
		t.Errorf("wrong counts: %d %d oob %d", rows[2].In.Wrong, rows[0].Out.Wrong, foot.OutOfBounds)
	}
	var sum float64
	for _, r := range recs {
		sum += r.BusBw
	}
	if foot.AvgBusBw != sum/float64(len(recs)) || foot.AvgBusBwOK != nil {
		t.Errorf("average busBw %g, want %g", foot.AvgBusBw, sum/float64(len(recs)))
	}
	c := hdr.Config
	if c.NGPUs != 2 || len(c.Devices) != 2 || c.Devices[1].Rank != 2 || c.MinBytes != 1024 || c.MaxBytes != 4096 ||
		c.StepFactor != 4 || c.Validation != 1 || !c.PerIterTiming || !hdr.StartTime.Equal(recs[0].Timestamp) {
		t.Errorf("header %+v", hdr)
	}
	// Per-iteration statistics: the record's own, the rest from the times.
	p := rows[0].Out.PerIter
	if p == nil || p.MinUs != 11.5 || p.P50Us != 12.25 || p.AvgUs == 0 || p.StdevUs == 0 || len(p.TimesUs) != 4 {
		t.Errorf("per-iteration %+v", p)
	}
	// No records: a valid document without results, which reads as ErrNoResults.
	var buf bytes.Buffer
	if err := WriteNCCLJSON(&buf, nil, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := Read("empty.json", &buf); !errors.Is(err, ErrNoResults) {
		t.Errorf("reading an empty document: %v", err)
	}
}

// Repeated runs of one row (-N cycles) are rows of their own, as nccl-tests
// prints them, not the last run over the others.
func TestNCCLDocumentKeepsRepeats(t *testing.T) {
	var recs []Record
	for cycle := range 3 {
		for _, p := range []string{OutOfPlace, InPlace} {
			r := rec("allreduce", 1024, p)
			r.TimeUs = float64(10 + cycle)
			recs = append(recs, r)
		}
	}
	_, rows, _ := NCCLDocument(recs, nil)
	if len(rows) != 3 {
		t.Fatalf("%d rows, want 3 (one per cycle)", len(rows))
	}
	for i, r := range rows {
		if r.Out == nil || r.In == nil || r.Out.TimeUs != float64(10+i) || r.In.TimeUs != float64(10+i) {
			t.Errorf("row %d: %+v %+v, want both placements of cycle %d", i, r.Out, r.In, i)
		}
	}
}
