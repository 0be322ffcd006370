package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gccl/gccl/tuner"
)

func TestFitWritesALoadableFile(t *testing.T) {
	out := filepath.Join(t.TempDir(), "model.json")
	code, stdout, stderr := runCLI("fit", "--output", out, sweep)
	if code != exitOK {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	for _, w := range []string{"ALPHA US", "BETA GB/S", "BREAK", "R^2", "MAX ERR", "Ring/LL/1ch", "Tree/Simple/2ch",
		"12 fits (", "flagged (max relative error > 20%)", "wrote " + out} {
		if !strings.Contains(stdout, w) {
			t.Errorf("output lacks %q:\n%s", w, stdout)
		}
	}
	m, err := tuner.LoadModels(out)
	if err != nil {
		t.Fatalf("the written models do not load: %v", err)
	}
	if len(m.Fits) != 12 {
		t.Errorf("%d fits in the file, want 12", len(m.Fits))
	}
	k := tuner.Key{Shape: tuner.Shape{Coll: "allreduce", NRanks: 2, NHosts: 2}, Algo: "Ring", Proto: "Simple", NCh: 1}
	if f, ok := m.Lookup(k); !ok || f.Points != 12 || f.Predict(1<<20) <= 0 {
		t.Errorf("Lookup(%v) = %+v, %v", k, f, ok)
	}
	flagged := strings.Count(stdout, "FLAG")
	if want := countFlagged(m); flagged != want {
		t.Errorf("%d rows marked FLAG, %d fits flagged in the file", flagged, want)
	}

	// The file exists now: refused without --force, replaced with it.
	code, _, stderr = runCLI("fit", "--output", out, sweep)
	if code != exitBad || !strings.Contains(stderr, "already exists") {
		t.Errorf("second write: exit %d, %q", code, stderr)
	}
	if code, _, stderr = runCLI("fit", "--force", "--output", out, sweep); code != exitOK {
		t.Errorf("--force: exit %d, %q", code, stderr)
	}
}

func countFlagged(m *tuner.Models) int {
	n := 0
	for _, f := range m.Fits {
		if f.Flagged {
			n++
		}
	}
	return n
}

func TestFitTaggedNCCLLog(t *testing.T) {
	log := fixtures + "h200x2_all_reduce_perf.txt"
	code, stdout, stderr := runCLI("fit", log+"@proto=Simple,algo=Ring")
	if code != exitOK {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	if !strings.Contains(stdout, "Ring/Simple/auto-ch") || !strings.Contains(stdout, "1 fits (") {
		t.Errorf("output:\n%s", stdout)
	}
	if code, stdout, _ = runCLI("fit", log); code != exitOK || !strings.Contains(stdout, "│ auto ") {
		t.Errorf("untagged: exit %d, output:\n%s", code, stdout)
	}
}

func TestFitBadInput(t *testing.T) {
	dir := t.TempDir()
	write := func(name, content string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	rec := `{"schema":1,"tool":"gccl","timestamp":"2026-11-21T00:00:00Z","backend":"embedded","nranks":2,"collective":"allreduce","type":"float","op":"sum","root":-1,"algorithm":"Ring","protocol":"LL","channels":1,"placement":"out-of-place","size":8,"count":2,"iterations":1,"time_us":2,"algbw_gbps":0,"busbw_gbps":0,"wrong":0}` + "\n"
	oneSize := write("one.jsonl", rec)
	garbage := write("notes.txt", "these are not results\n")
	inPlace := write("inplace.jsonl", strings.Replace(rec, "out-of-place", "in-place", 1))
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"fit"}, "no input files"},
		{[]string{"fit", filepath.Join(dir, "missing.jsonl")}, "missing.jsonl"},
		{[]string{"fit", garbage}, "notes.txt"},
		{[]string{"fit", oneSize}, "fewer than 2 distinct sizes"},
		{[]string{"fit", inPlace}, "fewer than 2 distinct sizes"}, // in-place rows count as samples now
		{[]string{"fit", "--tag", "proto=XL", sweep}, "proto=XL"},
		{[]string{"fit", "--nope", sweep}, "--nope"},
		{[]string{"fit", "--output", filepath.Join(dir, "no", "such", "dir.json"), sweep}, "dir.json"},
	} {
		code, _, stderr := runCLI(c.args...)
		if code != exitBad || !strings.Contains(stderr, c.want) {
			t.Errorf("%v: exit %d, stderr %q; want exit %d mentioning %q", c.args, code, stderr, exitBad, c.want)
		}
	}
	if code, _, _ := runCLI("fit", "--help"); code != exitOK {
		t.Errorf("--help: exit %d", code)
	}
}
