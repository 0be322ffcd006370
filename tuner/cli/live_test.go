package cli

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/gccl/gccl/lib/tuning"
)

// tune validate --live runs each rule live beside the stack's own choice
// in child processes (this test binary standing in for tune), judges it,
// and writes the rules that paid: the run under the table ran the rule's
// choice, the default did not have to.
func TestValidateLive(t *testing.T) {
	childIsThisBinary(t)
	dir := t.TempDir()
	tab := filepath.Join(dir, "table.json")
	os.WriteFile(tab, []byte(`{"version": 1, "comment": "test", "rules": [
  {"coll":"allreduce","ranks":[2,2],"hosts":[1,1],"bytes":[8,8192],"algo":"Ring","proto":"Simple","channels":1},
  {"coll":"allgather","ranks":[2,2],"hosts":[1,1],"bytes":[65536,-1],"algo":"Ring","proto":"LL","channels":1}
]}`), 0o644)
	kept := filepath.Join(dir, "kept.json")
	code, stdout, stderr := runCLI("validate", "--live", "--table", tab, "--passes", "2", "--sizes-per-rule", "2", "-n", "3", "-w", "1",
		"--max-bytes", "1M", "--points", "--output", kept)
	if code != 0 {
		t.Fatalf("exit %d:\n%s\n%s", code, stdout, stderr)
	}
	if !strings.Contains(stdout, "8 runs of 2 passes") {
		t.Errorf("want 2 shapes x 2 passes x 2 variants:\n%s", stdout)
	}
	verdict := regexp.MustCompile(`(?m)^rule (\d): (pays|unpaid|slower|unmeasured): `)
	got := verdict.FindAllStringSubmatch(stdout, -1)
	if len(got) != 2 {
		t.Fatalf("want a verdict for each of the 2 rules:\n%s", stdout)
	}
	// Every point measured both ways; under the table rule 1's sizes ran
	// Ring/Simple, rule 2's Ring/LL.
	point := regexp.MustCompile(`(?m)^ +(\d) +(\d+) +([\d.]+) +([\d.]+) +\S+ +\S+%  (\S+) +(\S+)$`)
	points := point.FindAllStringSubmatch(stdout, -1)
	if len(points) != 4 {
		t.Fatalf("want 2 points per rule, measured:\n%s", stdout)
	}
	for _, p := range points {
		want := map[string]string{"1": "Ring/Simple", "2": "Ring/LL"}[p[1]]
		if p[6] != want {
			t.Errorf("rule %s at %s B ran %s under the table, want %s", p[1], p[2], p[6], want)
		}
	}
	k, err := tuning.LoadTable(kept)
	if err != nil {
		t.Fatal(err)
	}
	var pays []string
	for _, g := range got {
		if g[2] == "pays" {
			pays = append(pays, g[1])
		}
	}
	if len(k.Rules) != len(pays) || !strings.Contains(stdout, "wrote "+kept) {
		t.Errorf("kept %d rules, %d paid:\n%s", len(k.Rules), len(pays), stdout)
	}
}

func TestValidateLiveBadInput(t *testing.T) {
	dir := t.TempDir()
	tab := filepath.Join(dir, "t.json")
	os.WriteFile(tab, []byte(`{"version": 1, "rules": [{"coll":"allreduce","ranks":[2,8],"hosts":[1,1],"bytes":[8,64],"algo":"Ring","proto":"LL","channels":1}]}`), 0o644)
	empty := filepath.Join(dir, "e.json")
	os.WriteFile(empty, []byte(`{"version": 1, "rules": []}`), 0o644)
	for _, c := range []struct {
		name string
		args []string
		want string
	}{
		{"no table", []string{"validate", "--live"}, "--table"},
		{"backend", []string{"validate", "--live", "--table", tab, "--backend", "mpi"}, `unknown --backend "mpi": valid backends are: embedded`},
		{"passes", []string{"validate", "--live", "--table", tab, "--passes", "0"}, "--passes 0"},
		{"noise", []string{"validate", "--live", "--table", tab, "--noise", "x"}, "--noise"},
		{"hosts without np", []string{"validate", "--live", "--table", tab, "--hosts", "2"}, "--hosts 2 with --np 0"},
		{"a live flag without --live", []string{"validate", "--table", tab, "--passes", "2", tab}, "--passes is a flag of --live"},
		{"a range of rank counts", []string{"validate", "--live", "--table", tab}, "give --ranks"},
		{"no rule for the ranks", []string{"validate", "--live", "--table", tab, "--ranks", "16"}, "no rule of the table is for 16 ranks"},
		{"no rules", []string{"validate", "--live", "--table", empty}, "no rules"},
	} {
		code, _, stderr := runCLI(c.args...)
		if code == 0 || !strings.Contains(stderr, c.want) {
			t.Errorf("%s: exit %d, stderr %q; want an error with %q", c.name, code, stderr, c.want)
		}
	}
	t.Setenv("GCCL_PROTO", "LL")
	if code, _, stderr := runCLI("validate", "--live", "--table", tab, "--ranks", "2"); code == 0 || !strings.Contains(stderr, "GCCL_PROTO=LL") {
		t.Errorf("GCCL_PROTO set: exit %d, %q", code, stderr)
	}
}
