package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gccl/gccl/lib/ccl"
)

// unsetChoiceEnv unsets ccl.ChoiceEnv for the test (restored after it),
// so the caller's shell cannot refuse a sweep.
func unsetChoiceEnv(t *testing.T) {
	t.Helper()
	for _, k := range ccl.ChoiceEnv {
		t.Setenv(k, "") // registers the restore
		os.Unsetenv(k)
	}
}

// A variable that would change the configurations a sweep measures, or its
// "auto" baseline, is refused before anything runs, naming it.
func TestSweepRefusesChoiceEnvironment(t *testing.T) {
	for _, k := range ccl.ChoiceEnv {
		t.Run(k, func(t *testing.T) {
			unsetChoiceEnv(t)
			t.Setenv(k, "4")
			out := filepath.Join(t.TempDir(), "s.jsonl")
			code, _, stderr := runCLI("sweep", "--ranks", "2", "--proto", "LL", "--algo", "Ring", "-b", "8", "-e", "8", "--out", out)
			if code != exitBad || !strings.Contains(stderr, k+"=4") || !strings.Contains(stderr, "unset it") {
				t.Errorf("exit %d, stderr %q; want exit %d naming %s=4", code, stderr, exitBad, k)
			}
			if _, err := os.Stat(out); err == nil {
				t.Errorf("%s written although the sweep was refused", out)
			}
		})
	}
}
