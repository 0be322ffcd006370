package results

import (
	"bytes"
	"compress/gzip"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

func TestDetect(t *testing.T) {
	var jsonl, csvBuf, ncclJSON bytes.Buffer
	jw, cw := NewJSONLWriter(&jsonl), NewCSVWriter(&csvBuf)
	for _, r := range sampleRecords() {
		jw.Write(r)
		cw.Write(r)
	}
	jw.Flush()
	cw.Flush()
	WriteNCCLJSON(&ncclJSON, sampleRecords(), nil)
	fixture, err := os.ReadFile("testdata/h200x2_sendrecv_perf.txt")
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name    string
		content string
		want    Format
		errIs   error
	}{
		{"jsonl", jsonl.String(), FormatJSONL, nil},
		{"jsonl with leading blank lines", "\n\n" + jsonl.String(), FormatJSONL, nil},
		{"csv", csvBuf.String(), FormatCSV, nil},
		{"csv, reordered subset", "size,collective,busbw_gbps\n8,allreduce,1\n", FormatCSV, nil},
		{"csv with a BOM", "\ufeffsize,collective,time_us\n8,allreduce,1\n", FormatCSV, nil},
		{"nccl-tests json", ncclJSON.String(), FormatNCCLJSON, nil},
		{"nccl-tests json, pretty", "{\n  \"version\": 3,\n  \"results\": []\n}\n", FormatNCCLJSON, nil},
		{"nccl-tests json, truncated", `{"version":3,"start_time":"2025-`, FormatNCCLJSON, nil},
		{"nccl-tests text", string(fixture), FormatNCCLText, nil},
		{"nccl-tests text, data rows only", "    8    2  float  sum  -1  14.15  0.00  0.00  0  12.45  0.00  0.00  0\n", FormatNCCLText, nil},
		{"empty", "", FormatUnknown, ErrEmpty},
		{"white space", " \n\t\n", FormatUnknown, ErrEmpty},
		{"garbage", "hello, world\nthis is not a result file\n", FormatUnknown, ErrUnknownFormat},
		{"binary", "\x00\x01\x02\xff", FormatUnknown, ErrUnknownFormat},
		{"foreign json", `{"foo":1}`, FormatUnknown, ErrUnknownFormat},
		{"go bench output", "BenchmarkAllReduce/ranks=2-2  100  1926 ns/op\n", FormatGoBench, nil},
		{"go test without benchmarks", "PASS\nok  \tgithub.com/gccl/gccl/ci\t0.1s\n", FormatUnknown, ErrUnknownFormat},
		{"other benchmark table", "# allreduce nranks=2\n   8   2000   0.57   0.56   0.014   0.014   0.014\n", FormatUnknown, ErrUnknownFormat},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Detect("in.dat", []byte(tt.content))
			if got != tt.want {
				t.Errorf("Detect = %v, want %v", got, tt.want)
			}
			if tt.errIs == nil {
				if err != nil {
					t.Errorf("unexpected error: %v", err)
				}
				return
			}
			if !errors.Is(err, tt.errIs) {
				t.Errorf("error %v, want %v", err, tt.errIs)
			}
			wantErr(t, err, "in.dat")
			// Read says the same, naming the file.
			if _, err := Read("in.dat", strings.NewReader(tt.content)); !errors.Is(err, tt.errIs) {
				t.Errorf("Read error %v, want %v", err, tt.errIs)
			}
		})
	}
}

func TestReadFileDetectsByContentNotName(t *testing.T) {
	dir := t.TempDir()
	var buf bytes.Buffer
	w := NewCSVWriter(&buf)
	want := sampleRecords()
	for _, r := range want {
		w.Write(r)
	}
	w.Flush()
	path := filepath.Join(dir, "results.json") // misleading extension
	if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	got, err := ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("ReadFile: got %d records, differing from the %d written", len(got), len(want))
	}
	if _, err := ReadFile(filepath.Join(dir, "missing.jsonl")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("missing file: %v", err)
	}
}

func TestJSONLErrors(t *testing.T) {
	var buf bytes.Buffer
	w := NewJSONLWriter(&buf)
	w.Write(rec("allreduce", 8, OutOfPlace))
	w.Write(rec("allreduce", 8, InPlace))
	w.Flush()
	good := strings.Split(strings.TrimSpace(buf.String()), "\n")
	tests := []struct {
		name    string
		text    string
		n       int
		line    int
		errIs   error
		errText string
	}{
		{"malformed middle line", good[0] + "\n{\"schema\":1,\"size\":\n" + good[1] + "\n", 2, 2, nil, "malformed"},
		{"truncated last line", good[0] + "\n" + good[1][:50], 1, 2, nil, "truncated"},
		{"no schema", good[0] + "\n{\"collective\":\"allreduce\"}\n", 1, 2, nil, `no "schema"`},
		{"wrong type", good[0] + "\n{\"schema\":1,\"size\":\"big\"}\n", 1, 2, nil, "size"},
		{"schema too new", good[0] + "\n{\"schema\":99,\"size\":8}\n" + good[1] + "\n", 1, 2, ErrSchemaTooNew, "this build reads schema version 1"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			recs, err := Read("r.jsonl", strings.NewReader(tt.text))
			if len(recs) != tt.n {
				t.Errorf("got %d records, want %d", len(recs), tt.n)
			}
			wantErr(t, err, tt.errText)
			wantSyntax(t, err, "r.jsonl", tt.line)
			if tt.errIs != nil && !errors.Is(err, tt.errIs) {
				t.Errorf("error %v, want %v", err, tt.errIs)
			}
		})
	}
}

func TestCSVReader(t *testing.T) {
	tests := []struct {
		name    string
		text    string
		want    []Record
		line    int // of the expected error; 0: none
		errIs   error
		errText string
	}{
		{
			name: "header-driven: reordered, unknown columns ignored, missing ones zero",
			text: "busbw_gbps,extra,size,collective,wrong,env,iter_times_us\n1.5,x,8,allreduce,-1,NCCL_PROTO=LL;PATH=/bin,1;2.5\n",
			want: []Record{{Schema: SchemaVersion, BusBw: 1.5, Size: 8, Collective: "allreduce", Wrong: -1,
				Env: map[string]string{"NCCL_PROTO": "LL"}, IterTimesUs: []float64{1, 2.5}}},
		},
		{name: "missing collective", text: "size,time_us\n8,1\n", line: 1, errText: `column "collective"`},
		{name: "missing time and busbw", text: "collective,size\nallreduce,8\n", line: 1, errText: `"time_us" or "busbw_gbps"`},
		{
			name: "bad cell names line and column",
			text: "collective,size,time_us\nallreduce,8,1\nallreduce,eight,1\nallreduce,16,2\n",
			want: []Record{{Schema: SchemaVersion, Collective: "allreduce", Size: 8, TimeUs: 1},
				{Schema: SchemaVersion, Collective: "allreduce", Size: 16, TimeUs: 2}},
			line: 3, errText: `r.csv:3:11: column "size": invalid integer "eight"`,
		},
		{
			name: "truncated row",
			text: "collective,size,time_us\nallreduce,8,1\nallreduce,16",
			want: []Record{{Schema: SchemaVersion, Collective: "allreduce", Size: 8, TimeUs: 1}},
			line: 3, errText: "2 fields, header has 3",
		},
		{
			name: "schema too new",
			text: "schema,collective,size,time_us\n1,allreduce,8,1\n2,allreduce,16,1\n",
			want: []Record{{Schema: SchemaVersion, Collective: "allreduce", Size: 8, TimeUs: 1}},
			line: 3, errIs: ErrSchemaTooNew, errText: "this build reads schema version 1",
		},
		{name: "header only", text: "collective,size,time_us\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got []Record
			rd := NewCSVReader("r.csv", strings.NewReader(tt.text))
			for rd.Scan() {
				got = append(got, rd.Record())
			}
			err := rd.Err()
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("got %+v\nwant %+v", got, tt.want)
			}
			if tt.line == 0 {
				if err != nil {
					t.Fatalf("unexpected error: %v", err)
				}
				return
			}
			wantErr(t, err, tt.errText)
			wantSyntax(t, err, "r.csv", tt.line)
			if tt.errIs != nil && !errors.Is(err, tt.errIs) {
				t.Errorf("error %v, want %v", err, tt.errIs)
			}
		})
	}
}

func TestCSVColumnsCoverRecord(t *testing.T) {
	cols := CSVColumns()
	if n := recordType.NumField(); len(cols) != n {
		t.Errorf("%d CSV columns for %d Record fields", len(cols), n)
	}
	// Every field survives a CSV round trip with a non-zero value.
	r := rec("allreduce", 8, InPlace)
	v := reflect.ValueOf(r)
	for i := 0; i < v.NumField(); i++ {
		if v.Field(i).IsZero() && recordType.Field(i).Name != "Source" && recordType.Field(i).Name != "Wrong" {
			t.Errorf("test record leaves %s zero", recordType.Field(i).Name)
		}
	}
}

func TestEnvCell(t *testing.T) {
	tests := []struct {
		env  map[string]string
		cell string
	}{
		{nil, ""},
		{map[string]string{"NCCL_PROTO": "LL", "GCCL_ALGO": "Ring"}, "GCCL_ALGO=Ring;NCCL_PROTO=LL"},
		{map[string]string{"NCCL_X": `a;b\c`, "NCCL_Y": "k=v"}, `NCCL_X=a\;b\\c;NCCL_Y=k=v`},
		{map[string]string{"NCCL_EMPTY": ""}, "NCCL_EMPTY="},
	}
	for _, tt := range tests {
		if got := formatEnvCell(tt.env); got != tt.cell {
			t.Errorf("formatEnvCell(%v) = %q, want %q", tt.env, got, tt.cell)
		}
		back, err := parseEnvCell(tt.cell)
		if err != nil || !reflect.DeepEqual(back, tt.env) {
			t.Errorf("parseEnvCell(%q) = %v, %v; want %v", tt.cell, back, err, tt.env)
		}
	}
	if _, err := parseEnvCell("NCCL_PROTO"); err == nil {
		t.Error("parseEnvCell without '=': no error")
	}
}

// A gzip-compressed file reads as its content; a broken gzip stream is an
// error naming the file.
func TestReadFileGzip(t *testing.T) {
	dir := t.TempDir()
	var plain bytes.Buffer
	w := NewJSONLWriter(&plain)
	want := sampleRecords()
	for _, r := range want {
		w.Write(r)
	}
	w.Flush()
	var z bytes.Buffer
	zw := gzip.NewWriter(&z)
	zw.Write(plain.Bytes())
	zw.Close()
	path := filepath.Join(dir, "sweep.jsonl.gz")
	if err := os.WriteFile(path, z.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	got, err := ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("ReadFile of gzip: got %d records, differing from the %d written", len(got), len(want))
	}
	broken := filepath.Join(dir, "broken.gz")
	if err := os.WriteFile(broken, z.Bytes()[:len(z.Bytes())/2], 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := ReadFile(broken); err == nil || !strings.Contains(err.Error(), "broken.gz: gzip") {
		t.Errorf("truncated gzip: %v, want an error naming the file", err)
	}
}
