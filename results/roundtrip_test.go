package results

import (
	"bytes"
	"reflect"
	"testing"
	"time"
)

func TestRoundTripJSONLAndCSV(t *testing.T) {
	tests := []struct {
		name  string
		write func(*bytes.Buffer, []Record) error
		read  func(name string, buf *bytes.Buffer) Scanner
	}{
		{
			name: "jsonl",
			write: func(b *bytes.Buffer, recs []Record) error {
				w := NewJSONLWriter(b)
				for _, r := range recs {
					if err := w.Write(r); err != nil {
						return err
					}
				}
				return w.Flush()
			},
			read: func(name string, b *bytes.Buffer) Scanner { return NewJSONLReader(name, b) },
		},
		{
			name: "csv",
			write: func(b *bytes.Buffer, recs []Record) error {
				w := NewCSVWriter(b)
				for _, r := range recs {
					if err := w.Write(r); err != nil {
						return err
					}
				}
				return w.Flush()
			},
			read: func(name string, b *bytes.Buffer) Scanner { return NewCSVReader(name, b) },
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in := sampleRecords()
			in = append(in, Record{Collective: "allreduce", Size: 8, Wrong: -1}) // sparse: zero fields survive
			var buf bytes.Buffer
			if err := tt.write(&buf, in); err != nil {
				t.Fatal(err)
			}
			text := buf.String()
			// Through the format-detecting entry point and the format's own reader.
			got, err := Read("x", bytes.NewBufferString(text))
			if err != nil {
				t.Fatal(err)
			}
			var own []Record
			sc := tt.read("x", bytes.NewBufferString(text))
			for sc.Scan() {
				own = append(own, sc.Record())
			}
			if err := sc.Err(); err != nil {
				t.Fatal(err)
			}
			in[len(in)-1].Schema = SchemaVersion // stamped by the writer
			for _, recs := range [][]Record{got, own} {
				if len(recs) != len(in) {
					t.Fatalf("got %d records, want %d", len(recs), len(in))
				}
				for i := range in {
					if !reflect.DeepEqual(recs[i], in[i]) {
						t.Errorf("record %d:\n got %+v\nwant %+v", i, recs[i], in[i])
					}
				}
			}
		})
	}
}

// ncclCarried keeps the fields an nccl-tests JSON document carries.
func ncclCarried(r Record) Record {
	return Record{
		Timestamp: r.Timestamp.Truncate(time.Second).UTC(),
		Host:      r.Host, NRanks: r.NRanks, NProcs: r.NProcs,
		Collective: r.Collective, Type: r.Type, Op: r.Op, Root: r.Root,
		Algorithm: r.Algorithm, Protocol: r.Protocol,
		Placement: r.Placement, Size: r.Size, Count: r.Count,
		Iterations: r.Iterations, AggIters: r.AggIters,
		TimeUs: r.TimeUs, MedianUs: r.MedianUs, MinUs: r.MinUs, MaxUs: r.MaxUs, P99Us: r.P99Us,
		AlgBw: r.AlgBw, BusBw: r.BusBw, Wrong: r.Wrong, IterTimesUs: r.IterTimesUs,
		Env: r.Env,
	}
}

func TestRoundTripNCCLJSON(t *testing.T) {
	in := sampleRecords()
	var buf bytes.Buffer
	if err := WriteNCCLJSON(&buf, in, []string{"gccl-tests", "-b", "1K", "-e", "4K"}); err != nil {
		t.Fatal(err)
	}
	got, err := Read("doc.json", bytes.NewReader(buf.Bytes()))
	if err != nil {
		t.Fatalf("%v\n%s", err, buf.String())
	}
	if len(got) != len(in) {
		t.Fatalf("got %d records, want %d", len(got), len(in))
	}
	for i := range in {
		g, w := ncclCarried(got[i]), ncclCarried(in[i])
		if !reflect.DeepEqual(g, w) {
			t.Errorf("record %d:\n got %+v\nwant %+v", i, g, w)
		}
		if got[i].Backend != "nccl-tests" || got[i].Schema != SchemaVersion || got[i].NHosts != 1 {
			t.Errorf("record %d: backend %q schema %d hosts %d", i, got[i].Backend, got[i].Schema, got[i].NHosts)
		}
	}
	// One row per line: record 0 (first row) sits on line 2, record 4 (third row) on line 4.
	if got[0].Source != "doc.json:2:1" || got[4].Source != "doc.json:4:1" {
		t.Errorf("sources %q %q", got[0].Source, got[4].Source)
	}
}
