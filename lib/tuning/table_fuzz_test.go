package tuning

import (
	"bytes"
	"errors"
	"os"
	"reflect"
	"testing"
)

// Fuzz targets of the tuning-table loaders. On any input: no panic; a
// refusal is a *TableError naming the file; an accepted table writes back
// to the same table (JSON) or to the same decisions (NCCL's CSV, which has
// no buffer size and splits overlaps). Seeds: f.Add, the committed tables
// of docs/data, and testdata/fuzz/FuzzXxx.

// maxDecisionRules bounds the tables whose decisions are compared point by
// point: the probes grow with the rules, and a split CSV can hold 65536.
const maxDecisionRules = 64

func addTableFiles(f *testing.F, paths ...string) {
	for _, p := range paths {
		b, err := os.ReadFile(p)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
}

// checkRefusal: a loader's error is positioned in the file it was given.
func checkRefusal(t *testing.T, err error) {
	var te *TableError
	if !errors.As(err, &te) || te.File != "f" {
		t.Fatalf("refusal is not a *TableError of file f: %#v", err)
	}
}

// checkWrites checks that an accepted table writes as JSON to itself, and
// as NCCL's CSV, when its ranges fit that format, to the same decisions.
func checkWrites(t *testing.T, tab *Table) {
	var js bytes.Buffer
	if err := tab.WriteJSON(&js); err != nil {
		t.Fatalf("WriteJSON of an accepted table: %v", err)
	}
	back, err := ParseTable(js.Bytes(), "rt.json")
	if err != nil {
		t.Fatalf("ParseTable of WriteJSON: %v\n%s", err, js.Bytes())
	}
	if !reflect.DeepEqual(back, tab) {
		t.Fatalf("JSON round trip:\n got %+v\nwant %+v", back, tab)
	}
	var csv bytes.Buffer
	if err := tab.WriteNCCLCSV(&csv); err != nil {
		var te *TableError
		if !errors.As(err, &te) || te.Rule == 0 {
			t.Fatalf("WriteNCCLCSV refused with %v, want a *TableError naming the rule", err)
		}
		return // a range NCCL's format cannot list
	}
	fromCSV, err := ParseNCCLCSV(bytes.NewReader(csv.Bytes()), "rt.csv")
	if err != nil {
		t.Fatalf("ParseNCCLCSV of WriteNCCLCSV: %v\n%s", err, csv.Bytes())
	}
	if len(tab.Rules) <= maxDecisionRules && len(fromCSV.Rules) <= maxDecisionRules {
		sameDecisions(t, tab, fromCSV, csv.String())
	}
}

func FuzzParseTable(f *testing.F) {
	addTableFiles(f, "../../docs/data/tune_epyc/table.json")
	var b bytes.Buffer
	if err := sampleTable().WriteJSON(&b); err != nil {
		f.Fatal(err)
	}
	f.Add(b.Bytes())
	f.Add([]byte(`{"version":1,"rules":[{"coll":"allreduce","bytes":[0,-1],"algo":"ring","proto":"ll"}]}`))
	f.Add([]byte(`{"version":1,"rules":[{"coll":"broadcast","ranks":[4,-1],"hosts":[2,-1],"bytes":[9223372036854775807,-1],"algo":"Ring","proto":"Simple","buffsize":4194304}]}`))
	f.Add([]byte(`{"version":2,"rules":[]}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		tab, err := ParseTable(data, "f")
		if err != nil {
			checkRefusal(t, err)
			return
		}
		checkWrites(t, tab)
	})
}

func FuzzParseNCCLCSV(f *testing.F) {
	addTableFiles(f, "../../docs/data/tune_epyc/nccl_tuner.conf")
	f.Add([]byte("allreduce,0,65535,tree,ll,2,1,-1\nallreduce,0,-1,ring,simple,-1,-1,-1,-1,-1\n"))
	f.Add([]byte("# comment\nallgather,100,18446744073709551615,ring,ll128,64,2,8\nallgather,0,200,ring,ll,1,-1,8\n"))
	f.Add([]byte("allreduce,5,4,ring,ll,1,1,1\nnvls,0,1,nvls,simple,1,1,1\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		tab, err := ParseNCCLCSV(bytes.NewReader(data), "f")
		if err != nil {
			checkRefusal(t, err)
			return
		}
		checkWrites(t, tab)
	})
}
