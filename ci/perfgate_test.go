package ci

import (
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// ci/perf-gate.sh copied out of the checkout, as a project that has only
// the gccl binaries would use it: binaries from --bin-dir or PATH, its own
// baseline, relative paths its own.
func TestPerfGateOutsideACheckout(t *testing.T) {
	if testing.Short() {
		t.Skip("builds two binaries and sweeps")
	}
	bash, err := exec.LookPath("bash")
	if err != nil {
		t.Skip("no bash")
	}
	dir := t.TempDir()
	bin := filepath.Join(dir, "bin")
	build := exec.Command(filepath.Join(runtime.GOROOT(), "bin", "go"), "build", "-o", bin+"/", "../cmd/tune", "../cmd/allreduce_perf")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	script, err := os.ReadFile("perf-gate.sh")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "perf-gate.sh"), script, 0o755); err != nil {
		t.Fatal(err)
	}
	log, err := filepath.Abs(realNCCL)
	if err != nil {
		t.Fatal(err)
	}
	sweep := []string{"--runs", "2", "--", "-t", "2", "-b", "8", "-e", "1K", "-f", "8", "-n", "3", "-w", "1", "-N", "1", "--out-of-place-only"}
	run := func(path string, args ...string) (int, string) {
		cmd := exec.Command(bash, append([]string{"perf-gate.sh"}, args...)...)
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "PATH="+path, "GITHUB_STEP_SUMMARY=")
		out, err := cmd.CombinedOutput()
		if ee, ok := err.(*exec.ExitError); ok {
			return ee.ExitCode(), string(out)
		} else if err != nil {
			t.Fatal(err)
		}
		return 0, string(out)
	}
	noTune := "/usr/bin:/bin"
	const verdict = -1 // a case's code: exit 0 or 1, a verdict either way
	for _, c := range []struct {
		name string
		path string
		args []string
		code int
		want []string
	}{
		{"help", noTune, []string{"--help"}, 0, []string{"--bin-dir DIR", "required elsewhere", "--normalize none"}},
		{"no baseline", noTune, []string{"--candidate", log}, 2, []string{"give --baseline FILE"}},
		{"no binaries", noTune, []string{"--baseline", "base.jsonl", "--update-baseline"}, 2, []string{"no tune on PATH", "--bin-dir"}},
		{"record a baseline", noTune, append([]string{"--bin-dir", "bin", "--baseline", "base.jsonl", "--update-baseline"}, sweep...), 0, []string{"new baseline base.jsonl"}},
		// a verdict either way (exit 0 or 1): at 8 B a 3-iteration sweep
		// beside CI's other packages can read 300x slower than its
		// baseline, which no threshold under 100% passes
		{"gate, binaries on PATH", bin + ":" + noTune, append([]string{"--baseline", "base.jsonl", "--out", "gate", "--threshold", "99%"}, sweep...), verdict, []string{"perf-gate: reports in gate/ (gate.md, junit.xml, gate.json)"}},
		{"a log has no copy bandwidth", noTune, []string{"--bin-dir", "bin", "--baseline", log, "--candidate", log}, 2, []string{"--normalize none"}},
		{"a log against a log", noTune, []string{"--bin-dir", "bin", "--baseline", log, "--candidate", log, "--normalize", "none", "--out", "logs"}, 0, []string{"PASS"}},
	} {
		code, out := run(c.path, c.args...)
		if c.code == verdict && (code == ExitPass || code == ExitRegression) {
			code = verdict
		}
		if code != c.code {
			t.Errorf("%s: exit %d, want %d\n%s", c.name, code, c.code, out)
			continue
		}
		for _, w := range c.want {
			if !strings.Contains(out, w) {
				t.Errorf("%s: output lacks %q\n%s", c.name, w, out)
			}
		}
	}
	for _, f := range []string{"base.jsonl", "gate/gate.md", "gate/junit.xml", "gate/gate.json", "logs/gate.md"} {
		if _, err := os.Stat(filepath.Join(dir, f)); err != nil {
			t.Errorf("not written: %v", err)
		}
	}
}
