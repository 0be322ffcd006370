package cli

import (
	"debug/elf"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gccl/gccl/lib/nccl/cbuild"
	"github.com/gccl/gccl/lib/nccl/profplugin"
)

// tune profiler refuses stray arguments, prints its C with --source, and
// builds a shared object exporting every profiler interface version.
func TestProfilerBuilds(t *testing.T) {
	if code, _, stderr := runCLI("profiler", "extra"); code != exitBad || !strings.Contains(stderr, "unexpected arguments") {
		t.Errorf("stray argument: exit %d, %s", code, stderr)
	}
	if code, stdout, _ := runCLI("profiler", "--source"); code != exitOK || !strings.Contains(stdout, "ncclProfiler_v6") {
		t.Errorf("--source: exit %d, no interface table in %d bytes", code, len(stdout))
	}
	missing := filepath.Join(t.TempDir(), "no", "x.so")
	if code, _, stderr := runCLI("profiler", "--output", missing); code != exitBad || !strings.Contains(stderr, "cannot write "+missing) {
		t.Errorf("--output %s: exit %d, %q", missing, code, stderr)
	}
	if _, err := cbuild.FindCompiler("", "the profiler plugin"); err != nil {
		t.Skipf("skipping the build: %v", err)
	}
	out := filepath.Join(t.TempDir(), "p.so")
	if code, stdout, stderr := runCLI("profiler", "--output", out); code != exitOK || !strings.Contains(stdout, "wrote "+out) {
		t.Fatalf("exit %d: %s%s", code, stdout, stderr)
	}
	f, err := elf.Open(out)
	if err != nil {
		t.Fatalf("%s is not a shared object: %v", out, err)
	}
	defer f.Close()
	syms, err := f.DynamicSymbols()
	if err != nil {
		t.Fatal(err)
	}
	have := map[string]bool{}
	for _, s := range syms {
		if s.Section != elf.SHN_UNDEF {
			have[s.Name] = true
		}
	}
	for _, want := range profplugin.Interfaces {
		if !have[want] {
			t.Errorf("%s does not export %s", out, want)
		}
	}
}
