//go:build linux && (amd64 || arm64)

package perf

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Each sweep axis becomes the variable NCCL reads when a communicator is
// created; auto clears it.
func TestNCCLEnvOfConfig(t *testing.T) {
	cases := []struct {
		rc   RunConfig
		want map[string]string
	}{
		{RunConfig{}, map[string]string{"NCCL_PROTO": "", "NCCL_ALGO": "", "NCCL_BUFFSIZE": ""}},
		{RunConfig{Proto: "LL128", Algo: "Tree", BuffSize: 1 << 20, NChannels: 4},
			map[string]string{"NCCL_PROTO": "LL128", "NCCL_ALGO": "Tree", "NCCL_BUFFSIZE": "1048576"}},
		{RunConfig{Proto: "Simple"}, map[string]string{"NCCL_PROTO": "Simple", "NCCL_ALGO": "", "NCCL_BUFFSIZE": ""}},
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

// --tuning-file's plugin: NCCL_TUNER_PLUGIN first, else the example
// plugin beside libnccl, else an error that says how to get one.
func TestTunerPlugin(t *testing.T) {
	dir := t.TempDir()
	nccl := filepath.Join(dir, "libnccl.so.2")
	none := func(string) (string, bool) { return "", false }
	if _, err := tunerPlugin(none, nccl); err == nil || !strings.Contains(err.Error(), "NCCL_TUNER_PLUGIN") ||
		!strings.Contains(err.Error(), filepath.Join(dir, "libnccl-tuner-example.so")) {
		t.Errorf("no plugin: err %v", err)
	}
	beside := filepath.Join(dir, "libnccl-tuner-example.so")
	if err := os.WriteFile(beside, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if p, err := tunerPlugin(none, nccl); err != nil || p != beside {
		t.Errorf("beside libnccl: %q, %v; want %q", p, err, beside)
	}
	env := func(k string) (string, bool) { return " /opt/my-tuner.so ", k == "NCCL_TUNER_PLUGIN" }
	if p, err := tunerPlugin(env, nccl); err != nil || p != "/opt/my-tuner.so" {
		t.Errorf("NCCL_TUNER_PLUGIN: %q, %v", p, err)
	}
}
