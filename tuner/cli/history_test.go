package cli

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// tune history end to end on the project's result files: add (our JSONL,
// an nccl-tests text log, a -J JSON file; the same run twice kept once),
// list, export to a file and to standard output, import into a new
// history (everything added), again (nothing added), and the two
// histories export the same.
func TestHistoryEndToEnd(t *testing.T) {
	dir := t.TempDir()
	db := filepath.Join(dir, "history.db")
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--commit", "c1", "--branch", "main", gateRuns}, "added run 1 to " + db + ": commit c1, 2026-11-21T23:26:18Z, machine vm, 35 records, 7 keys"},
		{[]string{"--commit", "c2", "--time", "2027-01-02T03:04:05+01:00", "--machine", "h200", gateNCCL + "@proto=LL"}, "added run 2 to " + db + ": commit c2, 2027-01-02T02:04:05Z, machine h200, 28 records"},
		{[]string{"--commit", "c3", "--time", "2027-02-01T00:00:00Z", ncclJSON}, "added run 3"},
		{[]string{"--commit", "c1", "--branch", "main", gateRuns}, "already holds this run (run 1): nothing added"},
	} {
		code, stdout, stderr := runCLI(append([]string{"history", "add", "--db", db}, c.args...)...)
		if code != exitOK || !strings.Contains(stdout, c.want) {
			t.Fatalf("history add %v: exit %d, %q %q; want %q", c.args, code, stdout, stderr, c.want)
		}
	}

	code, stdout, stderr := runCLI("history", "list", "--db", db)
	if code != exitOK {
		t.Fatalf("history list: exit %d: %s", code, stderr)
	}
	lines := strings.Split(stdout, "\n")
	for i, want := range [][]string{{"c1", "main", "2026-11-21T23:26:18Z", "vm", "gccl 0.1.0", "35"}, {"c2", "h200", "28"}, {"c3"}} {
		row := ""
		for _, l := range lines {
			if strings.Contains(l, " "+want[0]+" ") {
				row = l
			}
		}
		for _, w := range want {
			if !strings.Contains(row, w) {
				t.Errorf("history list: run %d's row %q lacks %q\n%s", i+1, row, w, stdout)
			}
		}
	}
	if !strings.Contains(stdout, "3 runs") {
		t.Errorf("history list does not count 3 runs:\n%s", stdout)
	}
	if code, stdout, _ = runCLI("history", "list", "--db", db, "--branch", "main"); code != exitOK || !strings.Contains(stdout, "1 run\n") {
		t.Errorf("history list --branch main: exit %d\n%s", code, stdout)
	}

	exported := filepath.Join(dir, "history.jsonl")
	if code, stdout, stderr = runCLI("history", "export", "--db", db, "--output", exported); code != exitOK || !strings.Contains(stdout, "wrote "+exported+": 3 runs") {
		t.Fatalf("history export: exit %d, %q %q", code, stdout, stderr)
	}
	file, err := os.ReadFile(exported)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Count(string(file), "\n") != 3 {
		t.Errorf("the export has %d lines, want 3", strings.Count(string(file), "\n"))
	}
	if code, stdout, _ = runCLI("history", "export", "--db", db); code != exitOK || stdout != string(file) {
		t.Errorf("history export to standard output: exit %d, %d bytes; the file has %d", code, len(stdout), len(file))
	}

	other := filepath.Join(dir, "other.db")
	if code, stdout, stderr = runCLI("history", "import", "--db", other, exported); code != exitOK || !strings.Contains(stdout, "3 runs added, 0 already") {
		t.Fatalf("history import: exit %d, %q %q", code, stdout, stderr)
	}
	if code, stdout, _ = runCLI("history", "import", "--db", other, exported); code != exitOK || !strings.Contains(stdout, "0 runs added, 3 already") {
		t.Errorf("history import again: exit %d, %q", code, stdout)
	}
	if code, stdout, _ = runCLI("history", "export", "--db", other); code != exitOK || stdout != string(file) {
		t.Errorf("the imported history exports differently (exit %d)", code)
	}
}

// Bad input: exit 2 and a message naming the problem and what is valid.
func TestHistoryBadInput(t *testing.T) {
	dir := t.TempDir()
	db := filepath.Join(dir, "h.db")
	if code, _, stderr := runCLI("history", "add", "--db", db, "--commit", "c1", gateRuns); code != exitOK {
		t.Fatalf("history add: %s", stderr)
	}
	text := filepath.Join(dir, "notes.txt")
	wrong := filepath.Join(dir, "wrong.jsonl")
	fixture, err := os.ReadFile(gateRuns)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(text, []byte("some notes\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(wrong, []byte(strings.Replace(string(fixture), `"wrong":0`, `"wrong":3`, 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	exported := filepath.Join(dir, "e.jsonl")
	if code, _, stderr := runCLI("history", "export", "--db", db, "--output", exported); code != exitOK {
		t.Fatalf("history export: %s", stderr)
	}
	for _, c := range []struct {
		args []string
		says string
	}{
		{[]string{"history"}, "no command"},
		{[]string{"history", "prune"}, `unknown command "prune"`},
		{[]string{"history", "add", "--commit", "c", gateRuns}, "--db FILE is required"},
		{[]string{"history", "add", "--db", db, gateRuns}, "--commit SHA is required"},
		{[]string{"history", "add", "--db", db, "--commit", "c"}, "no result files"},
		{[]string{"history", "add", "--db", db, "--commit", "c", "--time", "2026-03-01 12:00", gateRuns}, "want RFC 3339"},
		{[]string{"history", "add", "--db", db, "--commit", "c", filepath.Join(dir, "missing.jsonl")}, "missing.jsonl"},
		{[]string{"history", "add", "--db", db, "--commit", "c", wrong}, "3 wrong elements"},
		{[]string{"history", "add", "--db", text, "--commit", "c", gateRuns}, "not a gccl history database"},
		{[]string{"history", "list"}, "--db FILE is required"},
		{[]string{"history", "list", "--db", filepath.Join(dir, "none.db")}, "no history database"},
		{[]string{"history", "list", "--db", db, "extra"}, `unexpected argument "extra"`},
		{[]string{"history", "export", "--db", db, "--output", exported}, "exists"},
		{[]string{"history", "export", "--db", db, "-o", "x"}, "-o is not a tune flag"},
		{[]string{"history", "import", "--db", db}, "no files to import"},
		{[]string{"history", "import", "--db", db, gateRuns}, gateRuns + ":1: not a history export line"},
	} {
		code, _, stderr := runCLI(c.args...)
		if code != exitBad || !strings.Contains(stderr, c.says) {
			t.Errorf("tune %s: exit %d, %q; want exit 2 saying %q", strings.Join(c.args, " "), code, stderr, c.says)
		}
	}
	if b, _ := os.ReadFile(text); string(b) != "some notes\n" {
		t.Errorf("a refused --db file was changed: %q", b)
	}
	if code, stdout, _ := runCLI("history", "list", "--db", db); code != exitOK || !strings.Contains(stdout, "1 run\n") {
		t.Errorf("refused commands changed the history:\n%s", stdout)
	}
}

// tuneLine is a tune command of a CI file, continued lines joined.
var tuneLine = regexp.MustCompile(`bin/tune ((?:[^\n]*\\\n)*[^\n]*)`)

// The CI files run tune history (and tune report) with flags the
// commands take: every --flag of such a line is in the command's --help.
func TestHistoryInCIFiles(t *testing.T) {
	checked := 0
	for _, f := range []string{"../../ci/github-actions.yml", "../../ci/gitlab-ci.yml"} {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		adds := 0
		for _, m := range tuneLine.FindAllStringSubmatch(string(b), -1) {
			words := strings.Fields(strings.ReplaceAll(m[1], "\\\n", " "))
			cmd := words[:1:1]
			if cmd[0] == "history" {
				cmd = words[:2:2]
			}
			code, stdout, stderr := runCLI(append(cmd, "--help")...) // cmd's capacity ends: words stay
			if code != exitOK {
				if cmd[0] == "report" { // wired by its own change
					t.Logf("%s: tune report is not built yet; its flags are not checked", f)
					continue
				}
				t.Errorf("%s: tune %s --help: exit %d %s", f, strings.Join(cmd, " "), code, stderr)
				continue
			}
			for _, w := range words {
				if strings.HasPrefix(w, "--") && !strings.Contains(stdout+stderr, "  "+w+" ") {
					t.Errorf("%s: tune %s has no flag %s", f, strings.Join(cmd, " "), w)
				}
			}
			if strings.Join(cmd, " ") == "history add" {
				adds++
			}
			checked++
		}
		if adds != 1 {
			t.Errorf("%s runs tune history add %d times, want once (after the gate)", f, adds)
		}
	}
	if checked < 4 {
		t.Errorf("checked %d tune commands in the CI files, want at least 4", checked)
	}
}
