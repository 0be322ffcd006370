package perf

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/gccl/gccl/results"
)

// -J with several configurations writes one valid nccl-tests document per
// configuration, each labelled, with every size of its sweep.
func TestJSONPerConfiguration(t *testing.T) {
	cleanChoiceEnv(t)
	cleanBwEnv(t)
	dir := t.TempDir()
	path := filepath.Join(dir, "run.json")
	res := runPerf(t, AllReduce, args(tiny, []string{"-g", "2", "--proto", "LL,Simple", "--nchannels", "1,2", "-J", path})...)
	if res.code != exitOK {
		t.Fatalf("exit %d: %s", res.code, res.stderr)
	}
	if _, err := os.Stat(path); err == nil {
		t.Errorf("%s written: several configurations must not share one document", path)
	}
	wantSizes := len(dataRows(res.stdout)) / 4
	for _, c := range []struct {
		tag, proto string
		nch        int
	}{
		{"proto-LL.algo-auto.nch-1.buff-default", "LL", 1}, {"proto-LL.algo-auto.nch-2.buff-default", "LL", 2},
		{"proto-Simple.algo-auto.nch-1.buff-default", "Simple", 1}, {"proto-Simple.algo-auto.nch-2.buff-default", "Simple", 2},
	} {
		p := filepath.Join(dir, "run."+c.tag+".json")
		data, err := os.ReadFile(p)
		if err != nil {
			t.Fatalf("configuration %s: %v", c.tag, err)
		}
		if !json.Valid(data) {
			t.Errorf("%s is not valid JSON", p)
		}
		recs, err := results.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		if len(recs) != 2*wantSizes {
			t.Errorf("%s: %d records, want %d (every size, both placements)", p, len(recs), 2*wantSizes)
		}
		for _, r := range recs {
			if r.Protocol != c.proto || r.Channels != c.nch || r.Algorithm != "auto" {
				t.Errorf("%s: record labelled %s/%s/%d, want auto/%s/%d", p, r.Algorithm, r.Protocol, r.Channels, c.proto, c.nch)
			}
		}
	}
}

// One configuration writes exactly the path given, labelled.
func TestJSONOneConfiguration(t *testing.T) {
	cleanChoiceEnv(t)
	cleanBwEnv(t)
	path := filepath.Join(t.TempDir(), "run.json")
	if res := runPerf(t, AllReduce, args(tiny, []string{"-g", "2", "--proto", "LL128", "-J", path})...); res.code != exitOK {
		t.Fatalf("exit %d: %s", res.code, res.stderr)
	}
	recs, err := results.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range recs {
		if r.Protocol != "LL128" {
			t.Errorf("record labelled %q, want LL128", r.Protocol)
		}
	}
}
