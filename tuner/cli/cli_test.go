package cli

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gccl/gccl/lib/nccl/tunerplugin"
	"github.com/gccl/gccl/lib/tuning"
)

const sweep = "../../docs/data/tuning/pass2_n2_per1.jsonl.gz"

func runCLI(args ...string) (code int, stdout, stderr string) {
	var o, e bytes.Buffer
	code = Run(args, &o, &e)
	return code, o.String(), e.String()
}

func TestConstantsWritesALoadableFile(t *testing.T) {
	out := filepath.Join(t.TempDir(), "c.json")
	code, stdout, stderr := runCLI("constants", "--output", out, sweep)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	for _, w := range []string{"points", "fitted: median relative error", "wrote " + out} {
		if !strings.Contains(stdout, w) {
			t.Errorf("output lacks %q:\n%s", w, stdout)
		}
	}
	c, err := tuning.LoadConstants(out)
	if err != nil {
		t.Fatalf("the written constants do not load: %v", err)
	}
	if !strings.Contains(c.Method, "tune constants") || !strings.Contains(c.Machine, "2 cores") {
		t.Errorf("machine %q / method %q do not say where and how", c.Machine, c.Method)
	}
}

func TestChoicesReportsRegretAndSwitches(t *testing.T) {
	code, stdout, stderr := runCLI("choices", sweep)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	for _, w := range []string{"FASTEST MEASURED", "MODEL PICKS", "geomean regret", "median relative error", "8-"} {
		if !strings.Contains(stdout, w) {
			t.Errorf("output lacks %q:\n%s", w, stdout)
		}
	}
}

func TestBadInput(t *testing.T) {
	dir := t.TempDir()
	auto := filepath.Join(dir, "auto.jsonl")
	// One record of an automatic configuration: nothing to fit.
	rec := `{"schema":1,"tool":"gccl","timestamp":"2026-11-21T00:00:00Z","backend":"embedded","nranks":2,"collective":"allreduce","type":"float","op":"sum","root":-1,"algorithm":"auto","protocol":"auto","channels":0,"placement":"out-of-place","size":8,"count":2,"iterations":1,"time_us":2,"algbw_gbps":0,"busbw_gbps":0,"wrong":0}` + "\n"
	if err := os.WriteFile(auto, []byte(rec), 0o644); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		args []string
		want string
	}{
		{[]string{"frobnicate"}, `unknown command "frobnicate"`},
		{[]string{"constants"}, "no input files"},
		{[]string{"constants", filepath.Join(dir, "missing.jsonl")}, "missing.jsonl"},
		{[]string{"constants", auto}, "forced configuration"},
		{[]string{"choices", auto}, "forced configuration"},
		{[]string{"choices", "--model", filepath.Join(dir, "none.json"), sweep}, "none.json"},
	}
	for _, c := range cases {
		code, _, stderr := runCLI(c.args...)
		if code != exitBad || !strings.Contains(stderr, c.want) {
			t.Errorf("%v: exit %d, stderr %q; want exit %d mentioning %q", c.args, code, stderr, exitBad, c.want)
		}
	}
}

// tune plugin builds a shared object (where a C compiler is) and refuses
// stray arguments; --source prints the C it builds.
func TestPluginBuilds(t *testing.T) {
	if code, _, stderr := runCLI("plugin", "extra"); code != exitBad || !strings.Contains(stderr, "unexpected arguments") {
		t.Errorf("stray argument: exit %d, %s", code, stderr)
	}
	if code, stdout, _ := runCLI("plugin", "--source"); code != exitOK || !strings.Contains(stdout, "ncclTunerPlugin_v5") {
		t.Errorf("--source: exit %d, no plugin table in %d bytes", code, len(stdout))
	}
	// A directory, or a path whose directory is missing, is refused before
	// anything is built; nothing is made or left beside it.
	dir := t.TempDir()
	missing := filepath.Join(dir, "no", "d", "x.so")
	for _, c := range []struct{ out, want string }{
		{dir, "cannot write " + dir + ": it is a directory"},
		{missing, "cannot write " + missing + ": directory " + filepath.Dir(missing) + " does not exist"},
	} {
		if code, _, stderr := runCLI("plugin", "--output", c.out); code != exitBad || !strings.Contains(stderr, c.want) {
			t.Errorf("--output %s: exit %d, %q; want %q", c.out, code, stderr, c.want)
		}
	}
	if left, _ := os.ReadDir(dir); len(left) != 0 {
		t.Errorf("left beside the refused outputs: %v", left)
	}
	if _, err := os.Stat(dir + ".new"); err == nil {
		t.Errorf("%s.new left behind", dir)
	}
	if _, err := tunerplugin.CompilerFromEnv(); err != nil {
		t.Skipf("skipping the build: %v", err)
	}
	out := filepath.Join(t.TempDir(), "p.so")
	code, stdout, stderr := runCLI("plugin", "--output", out)
	if code != exitOK || !strings.Contains(stdout, "wrote "+out) {
		t.Fatalf("exit %d: %s%s", code, stdout, stderr)
	}
	if b, err := os.ReadFile(out); err != nil || !bytes.HasPrefix(b, []byte("\x7fELF")) {
		t.Errorf("%s is not a shared object (%v)", out, err)
	}
	if st, err := os.Stat(out); err != nil || st.Mode().Perm()&0o100 == 0 {
		t.Errorf("%s is not executable (%v)", out, err)
	}
	if left, _ := filepath.Glob(filepath.Join(filepath.Dir(out), ".*")); len(left) != 0 {
		t.Errorf("left beside %s: %v", out, left)
	}
}
