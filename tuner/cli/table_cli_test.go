package cli

import (
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/gccl/gccl/lib/tuning"
)

// sweeps returns the committed sweeps of one pass (allreduce on 2, 4 and 8
// ranks, forced configurations only).
func sweeps(t *testing.T, pass string) []string {
	t.Helper()
	fs, err := filepath.Glob("../../docs/data/tuning/" + pass + "_*.jsonl*")
	if err != nil || len(fs) == 0 {
		t.Fatalf("no %s sweeps: %v", pass, err)
	}
	return fs
}

func wantAll(t *testing.T, out string, want ...string) {
	t.Helper()
	for _, w := range want {
		if !strings.Contains(out, w) {
			t.Errorf("output lacks %q:\n%s", w, out)
		}
	}
}

// A table built from the first pass loads as a tuning table and as NCCL's
// tuner CSV, and validates on the second pass with both columns.
func TestTableThenValidate(t *testing.T) {
	dir := t.TempDir()
	out, csv := filepath.Join(dir, "table.json"), filepath.Join(dir, "nccl_tuner.conf")
	code, stdout, stderr := runCLI(append([]string{"table", "--output", out, "--nccl-csv", csv}, sweeps(t, "pass1")...)...)
	if code != 0 {
		t.Fatalf("table: exit %d: %s", code, stderr)
	}
	wantAll(t, stdout, "FROM BYTES", "RUNNER-UP", "inf", "rules from", "wrote "+out, "wrote "+csv)
	tab, err := tuning.LoadTable(out)
	if err != nil {
		t.Fatalf("the table does not load: %v", err)
	}
	if len(tab.Rules) == 0 || !strings.Contains(tab.Comment, "tune table") {
		t.Errorf("table of %d rules, comment %q", len(tab.Rules), tab.Comment)
	}
	f, err := os.Open(csv)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	nccl, err := tuning.ParseNCCLCSV(f, csv)
	if err != nil {
		t.Fatalf("the NCCL CSV does not load: %v", err)
	}
	if len(nccl.Rules) != len(tab.Rules) {
		t.Errorf("NCCL CSV has %d rules, the table %d", len(nccl.Rules), len(tab.Rules))
	}
	for _, r := range tab.Rules {
		if c, ok := nccl.Lookup(r.Coll, int(r.Ranks.Min), int(r.Hosts.Min), r.Bytes.Min); !ok || c != r.Choice {
			t.Errorf("NCCL CSV at %v %v bytes %d: %v %v, want %v", r.Ranks, r.Hosts, r.Bytes.Min, c, ok, r.Choice)
		}
	}

	code, stdout, stderr = runCLI(append([]string{"validate", "--table", out}, sweeps(t, "pass2")...)...)
	if code != 0 {
		t.Fatalf("validate: exit %d: %s", code, stderr)
	}
	wantAll(t, stdout, "TABLE GEOMEAN", "DEFAULT GEOMEAN", "TABLE UNPRICED", "DEFAULT MAX",
		"table  : geomean regret", "default: geomean regret")
	// Every one of pass 2's 72 points is priced or counted unpriced (the
	// model's OneShot picks were never measured in these older sweeps).
	m := regexp.MustCompile(`over (\d+) points, (\d+) unpriced`).FindStringSubmatch(stdout)
	if m == nil {
		t.Fatalf("no point counts in:\n%s", stdout)
	}
	priced, _ := strconv.Atoi(m[1])
	unpriced, _ := strconv.Atoi(m[2])
	if priced+unpriced != 72 || priced < 36 {
		t.Fatalf("%d points priced and %d unpriced: want 72 in all, most of them priced", priced, unpriced)
	}

	// The same files again: refused without --force, written with it.
	code, _, stderr = runCLI(append([]string{"table", "--output", out}, sweeps(t, "pass1")...)...)
	if code != 2 || !strings.Contains(stderr, out) || !strings.Contains(stderr, "--force") {
		t.Errorf("overwrite without --force: exit %d, %s", code, stderr)
	}
	code, _, stderr = runCLI(append([]string{"table", "--force", "--output", out, "--nccl-csv", csv}, sweeps(t, "pass1")...)...)
	if code != 0 {
		t.Errorf("overwrite with --force: exit %d, %s", code, stderr)
	}
}

// The models of `tune fit --output` can stand in for fitting.
func TestTableFromModels(t *testing.T) {
	dir := t.TempDir()
	models, out := filepath.Join(dir, "m.json"), filepath.Join(dir, "t.json")
	in := sweeps(t, "pass1")[:1]
	if code, _, stderr := runCLI(append([]string{"fit", "--output", models}, in...)...); code != 0 {
		t.Fatalf("fit: exit %d: %s", code, stderr)
	}
	code, stdout, stderr := runCLI(append([]string{"table", "--models", models, "--tie", "5%", "--output", out}, in...)...)
	if code != 0 {
		t.Fatalf("table --models: exit %d: %s", code, stderr)
	}
	wantAll(t, stdout, "12 models")
	if _, err := tuning.LoadTable(out); err != nil {
		t.Fatal(err)
	}
}

func TestTableValidateBadInput(t *testing.T) {
	dir := t.TempDir()
	junk := filepath.Join(dir, "junk.txt")
	if err := os.WriteFile(junk, []byte("not a result file\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	badTable := filepath.Join(dir, "bad.json")
	if err := os.WriteFile(badTable, []byte(`{"version": 1, "rules": [{"coll": "alltoall"}]}`), 0o644); err != nil {
		t.Fatal(err)
	}
	one := sweeps(t, "pass1")[0]
	for _, c := range []struct {
		name string
		args []string
		want string // in stderr
	}{
		{"table without files", []string{"table", "--output", filepath.Join(dir, "t.json")}, "no input files"},
		{"table of junk", []string{"table", junk}, junk},
		{"table of a missing file", []string{"table", filepath.Join(dir, "none.jsonl")}, "none.jsonl"},
		{"bad --tie", []string{"table", "--tie", "lots", one}, "--tie"},
		{"negative --tie", []string{"table", "--tie", "-1%", one}, "--tie"},
		{"missing models", []string{"table", "--models", filepath.Join(dir, "m.json"), one}, "m.json"},
		{"validate without --table", []string{"validate", one}, "--table"},
		{"validate without files", []string{"validate", "--table", badTable}, "no input files"},
		{"validate a bad table", []string{"validate", "--table", badTable, one}, "bad.json"},
		{"validate junk", []string{"validate", "--table", badTable, junk}, "bad.json"},
	} {
		t.Run(c.name, func(t *testing.T) {
			code, _, stderr := runCLI(c.args...)
			if code != 2 || !strings.Contains(stderr, c.want) {
				t.Errorf("exit %d, stderr %q; want 2 and %q", code, stderr, c.want)
			}
		})
	}
}
