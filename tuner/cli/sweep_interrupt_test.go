package cli

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/gccl/gccl/perf"
	"github.com/gccl/gccl/results"
)

// interruptSweep is the sweep TestSweepInterrupt stops and resumes.
func interruptSweep(out string) []string {
	return []string{"sweep", "--ranks", "2", "--proto", "LL", "--algo", "Ring", "--auto=false", "-b", "8", "-e", "64K", "-f", "2",
		"-n", "20000", "--precision", "0.1%", "--max-time", "150ms", "--out", out}
}

// The child of TestSweepInterrupt.
func TestSweepInterruptChild(t *testing.T) {
	out := os.Getenv("GCCL_TEST_SWEEP_OUT")
	if out == "" {
		t.Skip("the child process of TestSweepInterrupt")
	}
	os.Exit(Run(interruptSweep(out), os.Stdout, os.Stderr))
}

// Ctrl-C in tune sweep: the run in progress finishes its size, every
// finished point lands in --out as whole records, no part file is left,
// the sweep says so and exits 130; the same command then resumes.
func TestSweepInterrupt(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a process")
	}
	unsetChoiceEnv(t)
	dir := t.TempDir()
	out := filepath.Join(dir, "sweep.jsonl")
	part := filepath.Join(dir, ".sweep.jsonl.part")
	cmd := exec.Command(os.Args[0], "-test.run=^TestSweepInterruptChild$")
	cmd.Env = append(os.Environ(), "GCCL_TEST_SWEEP_OUT="+out)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(60 * time.Second)
	for {
		// perf writes the part file under a temporary name until its run ends.
		tmps, _ := filepath.Glob(results.TempPattern(part))
		if len(tmps) > 0 {
			if b, err := os.ReadFile(tmps[0]); err == nil && bytes.Count(b, []byte("\n")) >= 2 {
				break
			}
		}
		if err := cmd.Process.Signal(syscall.Signal(0)); err != nil || time.Now().After(deadline) {
			cmd.Process.Kill()
			t.Fatalf("the sweep measured nothing (exited, or 60 s passed): %s", stderr.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
	cmd.Process.Signal(syscall.SIGINT)
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		cmd.Process.Kill()
		t.Fatal("the sweep did not stop within 30 s of Ctrl-C")
	}
	msg := stderr.String()
	if code := cmd.ProcessState.ExitCode(); code != perf.ExitInterrupted || !strings.Contains(msg, "run the same command again to resume") || !strings.Contains(msg, out) {
		t.Fatalf("exit %d, stderr:\n%s", code, msg)
	}
	if _, err := os.Stat(part); err == nil {
		t.Errorf("%s left behind", part)
	}
	if tmps, _ := filepath.Glob(filepath.Join(dir, ".*.tmp-*")); len(tmps) > 0 {
		t.Errorf("temporary files left behind: %v", tmps)
	}
	data, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	kept := 0
	for _, line := range strings.SplitAfter(string(data), "\n") {
		if line == "" {
			continue
		}
		if !strings.HasSuffix(line, "\n") || !json.Valid([]byte(line)) {
			t.Errorf("not a whole record: %q", line)
		}
		kept++
	}
	if kept == 0 {
		t.Fatalf("nothing kept in %s:\n%s", out, msg)
	}

	code, stdout, stderr2 := runCLI(interruptSweep(out)...)
	if code != exitOK || !strings.Contains(stdout, "already in") {
		t.Fatalf("resume: exit %d\n%s%s", code, stdout, stderr2)
	}
	recs, err := results.ReadFile(out)
	if err != nil || len(recs) != 14 {
		t.Errorf("after the resume: %d records (%v), want one per size (14)", len(recs), err)
	}
}
