package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// fixtures holds real nccl-tests 2.19.6 logs from two H200s.
const fixtures = "../testdata/nccl-tests/"

func needFixture(t *testing.T, name string) string {
	t.Helper()
	p := fixtures + name
	if _, err := os.Stat(p); err != nil {
		t.Fatalf("fixture %s: %v", p, err)
	}
	return p
}

func TestReadRecordsTagsAnNCCLTestsLog(t *testing.T) {
	f := needFixture(t, "h200x2_all_reduce_simple.txt")
	recs, err := readRecords([]string{f + "@proto=Simple,algo=Ring"}, []string{"hosts=1"})
	if err != nil {
		t.Fatal(err)
	}
	if len(recs) == 0 {
		t.Fatal("no records")
	}
	for _, r := range recs {
		if r.Protocol != "Simple" || r.Algorithm != "Ring" || r.NRanks != 2 || r.Collective != "allreduce" {
			t.Fatalf("record %+v: want allreduce on 2 ranks tagged Ring/Simple", r)
		}
	}
	// Untagged, the log is NCCL's default.
	recs, err = readRecords([]string{f}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if a := recs[0].Algorithm; a != "" && a != "auto" {
		t.Fatalf("untagged algorithm %q, want auto", a)
	}
}

func TestReadRecordsErrors(t *testing.T) {
	f := needFixture(t, "h200x2_all_reduce_simple.txt")
	dir := t.TempDir()
	junk := filepath.Join(dir, "junk.txt")
	if err := os.WriteFile(junk, []byte("hello\nworld\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	// A file that says Simple cannot be tagged LL.
	forced := filepath.Join(dir, "forced.jsonl")
	rec := `{"schema":1,"tool":"gccl","timestamp":"2026-11-21T00:00:00Z","backend":"embedded","nranks":2,"collective":"allreduce","type":"float","op":"sum","root":-1,"algorithm":"Ring","protocol":"Simple","channels":2,"placement":"out-of-place","size":8,"count":2,"iterations":1,"time_us":2,"algbw_gbps":0,"busbw_gbps":0,"wrong":0}` + "\n"
	if err := os.WriteFile(forced, []byte(rec), 0o644); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		args, tags []string
		want       []string
	}{
		{[]string{f + "@proto=LL64"}, nil, []string{"proto=LL64", "LL, LL128, Simple"}},
		{[]string{f + "@colour=blue"}, nil, []string{`unknown tag "colour"`, "proto, algo"}},
		{[]string{f + "@proto"}, nil, nil}, // no '=': part of the file name, which does not exist
		{[]string{f}, []string{"channels=0"}, []string{"--tag", "channels=0", "positive integer"}},
		{[]string{f}, []string{"algo=NVLS"}, []string{"algo=NVLS", "Ring, Tree, OneShot, TwoShot, auto"}},
		{[]string{junk}, nil, []string{"junk.txt"}},
		{[]string{filepath.Join(dir, "missing.jsonl")}, nil, []string{"missing.jsonl"}},
		{[]string{forced + "@proto=LL"}, nil, []string{"forced.jsonl", "proto", "contradicts", "Simple"}},
	}
	for _, c := range cases {
		_, err := readRecords(c.args, c.tags)
		if err == nil {
			t.Errorf("%v %v: no error", c.args, c.tags)
			continue
		}
		for _, w := range c.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("%v %v: error %q lacks %q", c.args, c.tags, err, w)
			}
		}
	}
}
