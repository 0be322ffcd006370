//go:build linux && (amd64 || arm64)

package perf

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gccl/gccl/lib/nccl"
	"github.com/gccl/gccl/lib/nccl/profplugin"
	"github.com/gccl/gccl/lib/tef"
)

// traceNCCL puts the plugin and its output in NCCL's (C) environment, and
// Close's restoreParams takes them out again.
func TestTraceNCCLParams(t *testing.T) {
	if _, err := profplugin.CompileWith(""); err != nil {
		t.Skipf("skipping: %v", err)
	}
	t.Setenv(profplugin.EnvPlugin, "")
	t.Setenv("XDG_CACHE_HOME", t.TempDir()) // the plugin's build goes here, not in the user's cache
	trace := filepath.Join(t.TempDir(), "t.json")
	be := &ncclBackend{params: map[string]bool{}}
	if err := be.traceNCCL(trace); err != nil {
		t.Fatal(err)
	}
	so, _, err := nccl.LookupParam(profplugin.EnvPlugin)
	if err != nil || !strings.Contains(so, profplugin.FileName) {
		t.Errorf("%s=%q, %v; want gccl's plugin", profplugin.EnvPlugin, so, err)
	}
	if out, _, _ := nccl.LookupParam(profplugin.EnvOutput); !strings.HasPrefix(out, profplugin.RankDir(trace)+"/") {
		t.Errorf("%s=%q, want a pattern in %s", profplugin.EnvOutput, out, profplugin.RankDir(trace))
	}
	if err := be.restoreParams(); err != nil {
		t.Fatal(err)
	}
	if v, set, _ := nccl.LookupParam(profplugin.EnvOutput); set {
		t.Errorf("%s=%q left set after Close", profplugin.EnvOutput, v)
	}
	t.Setenv(profplugin.EnvMask, "kernels")
	if err := be.traceNCCL(trace); err == nil || !strings.Contains(err.Error(), "--trace-steps") || !strings.Contains(err.Error(), "kernels") {
		t.Errorf("a bad mask: %v", err)
	}
}

// mergeNCCLTrace merges what the ranks wrote, says so, and names a run
// that wrote nothing.
func TestMergeNCCLTrace(t *testing.T) {
	trace := filepath.Join(t.TempDir(), "t.json")
	var w bytes.Buffer
	if err := mergeNCCLTrace(trace, &w); err == nil || !strings.Contains(err.Error(), "no NCCL trace files") {
		t.Errorf("nothing written: %v", err)
	}
	if err := profplugin.ClearRanks(trace); err != nil {
		t.Fatal(err)
	}
	for r := 0; r < 2; r++ {
		f := &tef.File{TraceEvents: []tef.Event{tef.Complete("AllReduce", tef.CatOp, r, tef.RankTrack, 1000, 500, nil)},
			OtherData: map[string]any{"ts_base_ns": "0", "dropped": float64(r)}}
		if err := os.MkdirAll(profplugin.RankDir(trace), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := tef.WriteFile(filepath.Join(profplugin.RankDir(trace), fmt.Sprintf("r%d.json", r)), f); err != nil {
			t.Fatal(err)
		}
	}
	if err := mergeNCCLTrace(trace, &w); err != nil {
		t.Fatal(err)
	}
	if s := w.String(); !strings.Contains(s, "2 ranks, 2 events") || !strings.Contains(s, "rank 1: 1 event dropped") {
		t.Errorf("said %q", s)
	}
	if f, err := tef.ReadFile(trace); err != nil || len(f.TraceEvents) != 2 {
		t.Errorf("merged: %v", err)
	}
}
