package cli

import (
	"debug/elf"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gccl/gccl/lib/nccl/cbuild"
	"github.com/gccl/gccl/lib/nccl/profplugin"
	"github.com/gccl/gccl/lib/tef"
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

// tune profiler --merge joins the ranks' files, checked, and refuses a
// file that is not a trace.
func TestProfilerMerge(t *testing.T) {
	dir := t.TempDir()
	var paths []string
	for r := 0; r < 2; r++ {
		f := &tef.File{TraceEvents: []tef.Event{tef.Complete("AllReduce", tef.CatOp, r, tef.RankTrack, 1000, 500, nil),
			tef.Complete("send", tef.CatStep, r, tef.ProxyLane(0, 0), 1100, 100, nil)}}
		p := filepath.Join(dir, fmt.Sprintf("r%d.json", r))
		if err := tef.WriteFile(p, f); err != nil {
			t.Fatal(err)
		}
		paths = append(paths, p)
	}
	out := filepath.Join(dir, "all.json")
	code, stdout, stderr := runCLI(append([]string{"profiler", "--merge", out}, paths...)...)
	if code != exitOK || !strings.Contains(stdout, "2 ranks, 4 events (op 2, step 2)") {
		t.Fatalf("exit %d: %s%s", code, stdout, stderr)
	}
	if f, err := tef.ReadFile(out); err != nil || len(f.TraceEvents) != 4 {
		t.Errorf("merged: %v", err)
	}
	bad := filepath.Join(dir, "bad.json")
	os.WriteFile(bad, []byte("{}"), 0o644)
	if code, _, stderr := runCLI("profiler", "--merge", out, bad); code != exitBad || !strings.Contains(stderr, "no traceEvents") {
		t.Errorf("not a trace: exit %d, %q", code, stderr)
	}
	if code, _, stderr := runCLI("profiler", "--merge", out); code != exitBad || !strings.Contains(stderr, "no trace files") {
		t.Errorf("no files: exit %d, %q", code, stderr)
	}
}
