//go:build linux && (amd64 || arm64)

package perf

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gccl/gccl/lib/nccl"
)

// Each sweep axis becomes the variable NCCL reads when a communicator is
// created; auto clears it.
func TestNCCLEnvOfConfig(t *testing.T) {
	cases := []struct {
		rc   RunConfig
		want map[string]string
	}{
		{RunConfig{}, map[string]string{"NCCL_PROTO": "", "NCCL_ALGO": "", "NCCL_BUFFSIZE": ""}},
		{RunConfig{Proto: protoReq("LL128"), Algo: algoReq("Tree"), BuffSize: 1 << 20, NChannels: 4},
			map[string]string{"NCCL_PROTO": "LL128", "NCCL_ALGO": "Tree", "NCCL_BUFFSIZE": "1048576"}},
		{RunConfig{Proto: protoReq("Simple")}, map[string]string{"NCCL_PROTO": "Simple", "NCCL_ALGO": "", "NCCL_BUFFSIZE": ""}},
	}
	for _, c := range cases {
		got := ncclEnv(c.rc)
		if len(got) != len(c.want) {
			t.Errorf("%+v: %v, want %v", c.rc, got, c.want)
		}
		for k, v := range c.want {
			if got[k] != v {
				t.Errorf("%+v: %s=%q, want %q", c.rc, k, got[k], v)
			}
		}
	}
}

// --tuning-file's plugin: NCCL_TUNER_PLUGIN first, else gccl's own
// (built), else the example plugin beside libnccl, else an error that says
// how to get one.
func TestTunerPlugin(t *testing.T) {
	dir := t.TempDir()
	nccl := filepath.Join(dir, "libnccl.so.2")
	none := func(string) (string, bool) { return "", false }
	noCC := func() (string, error) { return "", errors.New("no C compiler") }
	built := func() (string, error) { return "/cache/libnccl-tuner-gccl.so", nil }
	if _, err := tunerPlugin(none, nccl, noCC); err == nil || !strings.Contains(err.Error(), "NCCL_TUNER_PLUGIN") ||
		!strings.Contains(err.Error(), "no C compiler") || !strings.Contains(err.Error(), filepath.Join(dir, "libnccl-tuner-example.so")) {
		t.Errorf("no plugin: err %v", err)
	}
	if p, err := tunerPlugin(none, nccl, built); err != nil || p != "/cache/libnccl-tuner-gccl.so" {
		t.Errorf("gccl's built: %q, %v", p, err)
	}
	beside := filepath.Join(dir, "libnccl-tuner-example.so")
	if err := os.WriteFile(beside, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if p, err := tunerPlugin(none, nccl, noCC); err != nil || p != beside {
		t.Errorf("beside libnccl: %q, %v; want %q", p, err, beside)
	}
	if p, err := tunerPlugin(none, nccl, built); err != nil || p != "/cache/libnccl-tuner-gccl.so" {
		t.Errorf("gccl's is preferred to the example: %q, %v", p, err)
	}
	env := func(k string) (string, bool) { return " /opt/my-tuner.so ", k == "NCCL_TUNER_PLUGIN" }
	if p, err := tunerPlugin(env, nccl, built); err != nil || p != "/opt/my-tuner.so" {
		t.Errorf("NCCL_TUNER_PLUGIN: %q, %v", p, err)
	}
}

// A thread's shared group depth sends only the outermost start and end
// to NCCL; a failed start leaves the depth as it was; an unbalanced end
// still reaches NCCL, which reports it; no shared group: every call goes.
func TestThreadGroupNesting(t *testing.T) {
	var starts, ends int
	var failStart bool
	start := func() error {
		if failStart {
			return errors.New("start failed")
		}
		starts++
		return nil
	}
	end := func() error { ends++; return nil }
	g := &threadGroup{}
	seq := []bool{true, true, false, true, false, false} // the runner's group around two ranks' own groups
	for _, open := range seq {
		var err error
		if open {
			err = g.start(start)
		} else {
			err = g.end(end)
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	if starts != 1 || ends != 1 || g.depth != 0 {
		t.Errorf("nested groups: %d starts, %d ends, depth %d; want 1, 1, 0", starts, ends, g.depth)
	}
	failStart = true
	if err := g.start(start); err == nil || g.depth != 0 {
		t.Errorf("failed start: err %v, depth %d; want an error and depth 0", err, g.depth)
	}
	failStart = false
	if err := g.end(end); err != nil || ends != 2 {
		t.Errorf("an end with no group open did not reach NCCL (ends %d)", ends)
	}
	var none *threadGroup
	for i := 0; i < 2; i++ {
		_ = none.start(start)
		_ = none.end(end)
	}
	if starts != 3 || ends != 4 {
		t.Errorf("no shared group: %d starts, %d ends; want 3, 4", starts, ends)
	}
}

// A run's forced NCCL parameters do not outlive it: tune sweep runs many
// in one process, and an "auto" run after a forced one must see the
// user's. They are written to the C environment, where NCCL reads them,
// and Go's environment (the user's) never changes.
func TestForcedParamsRestored(t *testing.T) {
	t.Setenv("NCCL_PROTO", "LL")
	t.Setenv("NCCL_ALGO", "") // restored after the test
	os.Unsetenv("NCCL_ALGO")
	be := &ncclBackend{params: map[string]bool{}}
	for k, v := range ncclEnv(RunConfig{Proto: protoReq("Simple"), Algo: algoReq("Tree")}) {
		if v != "" {
			if err := be.setParam(k, v); err != nil {
				t.Fatal(err)
			}
		}
	}
	if v, _, err := nccl.LookupParam("NCCL_PROTO"); err != nil || v != "Simple" {
		t.Fatalf("NCCL sees NCCL_PROTO %q (%v), want the forced Simple", v, err)
	}
	if v := os.Getenv("NCCL_PROTO"); v != "LL" {
		t.Fatalf("Go's NCCL_PROTO %q, want the user's LL untouched", v)
	}
	if err := be.restoreParams(); err != nil {
		t.Fatal(err)
	}
	if v, _, _ := nccl.LookupParam("NCCL_PROTO"); v != "LL" {
		t.Errorf("NCCL_PROTO %q after restore, want the user's LL", v)
	}
	if v, ok, _ := nccl.LookupParam("NCCL_ALGO"); ok {
		t.Errorf("NCCL_ALGO %q after restore, want unset", v)
	}
	if len(be.params) != 0 {
		t.Errorf("params left after restore: %v", be.params)
	}
}
