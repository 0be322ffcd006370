package perf

import (
	"bufio"
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/gccl/gccl/results"
)

// The child of TestInterrupt: a perf run that never ends by itself (-N 0),
// until a signal stops it.
func TestInterruptChild(t *testing.T) {
	dir := os.Getenv("GCCL_TEST_INTERRUPT_DIR")
	if dir == "" {
		t.Skip("the child process of TestInterrupt")
	}
	// Points of 300000 iterations: 0.3 s and more on a quiet machine, so
	// the signals land inside a point (see startChild), and on a CI machine
	// whose other packages' tests starve the child's ranks into parking
	// (over 2 minutes for a million once) a first record within a minute.
	os.Exit(Main(AllReduce, []string{"-g", "2", "-b", "1K", "-e", "4K", "-f", "2", "-n", "300000", "-w", "1", "-N", "0",
		"--proto", "LL,Simple", "--out", filepath.Join(dir, "run.jsonl"), "--csv", filepath.Join(dir, "run.csv"),
		"-J", filepath.Join(dir, "run.json")}, os.Stdout, os.Stderr))
}

// childPatience bounds each wait on the child: for its first record (a
// point of a million iterations took 12-18 s on the quiet 2-core VM, over
// 30 s while CI ran other packages beside it, and once over 2 minutes: the
// points are 300000 iterations now), for its exit after a signal (it
// finishes the point it is in), for it to take a signal.
const childPatience = 2 * time.Minute

// startChild runs TestInterruptChild in a new process and waits until it
// has written a record.
func startChild(t *testing.T, dir string) (*exec.Cmd, *lockedBuffer) {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^TestInterruptChild$", "-test.v")
	cmd.Env = append(os.Environ(), "GCCL_TEST_INTERRUPT_DIR="+dir, "GCCL_MIN_BW=", "NCCL_TESTS_MIN_BW=")
	stderr := new(lockedBuffer)
	cmd.Stderr = stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(childPatience)
	for {
		if b, err := os.ReadFile(filepath.Join(dir, "run.jsonl")); err == nil && bytes.Count(b, []byte("\n")) >= 2 {
			// A record is written as a point ends, just before the engine
			// looks for a signal: signal inside the next point (300000
			// iterations, 0.3 s and more even on the one-shot's fast path;
			// 100000 took ~50 ms and a loaded CI machine let the point end
			// between the two signals), not at that boundary, or a second
			// signal can come after the run already stopped.
			time.Sleep(10 * time.Millisecond)
			return cmd, stderr
		}
		if err := cmd.Process.Signal(syscall.Signal(0)); err != nil || time.Now().After(deadline) {
			cmd.Process.Kill()
			t.Fatalf("the child wrote no record (exited, or %v passed): %s", childPatience, stderr.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// lockedBuffer is a bytes.Buffer the child's output goroutine writes while
// the test reads it.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// waitExit waits for the child and returns its exit code.
func waitExit(t *testing.T, cmd *exec.Cmd) int {
	t.Helper()
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case <-done:
	case <-time.After(childPatience):
		cmd.Process.Kill()
		t.Fatalf("the child did not stop within %v of the signal", childPatience)
	}
	return cmd.ProcessState.ExitCode()
}

// checkLines checks that every line of a JSONL file is a whole record.
func checkLines(t *testing.T, path string) int {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	n := 0
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		if !json.Valid(sc.Bytes()) {
			t.Errorf("%s line %d is not a whole record: %q", path, n+1, sc.Text())
		}
		n++
	}
	return n
}

// Ctrl-C once: the run finishes the size it is measuring, writes every
// result file valid (the -J documents with the sizes measured), says what it
// kept, and exits 130. Twice: it stops at once, removes the -J documents
// it had not written, and keeps every whole record of the JSONL and CSV.
func TestInterrupt(t *testing.T) {
	if testing.Short() {
		t.Skip("starts processes")
	}
	for _, twice := range []bool{false, true} {
		dir := t.TempDir()
		cmd, stderr := startChild(t, dir)
		cmd.Process.Signal(syscall.SIGINT)
		if twice {
			// The second signal only once the first was taken: two
			// SIGINTs sent before the child runs again merge into one
			// pending signal (a loaded CI machine did that at 5 ms apart).
			deadline := time.Now().Add(childPatience)
			for !strings.Contains(stderr.String(), "stopping after the current size") && time.Now().Before(deadline) {
				time.Sleep(time.Millisecond)
			}
			cmd.Process.Signal(syscall.SIGINT)
		}
		code := waitExit(t, cmd)
		msg := stderr.String()
		if code != ExitInterrupted {
			t.Fatalf("twice=%v: exit %d, want %d: %s", twice, code, ExitInterrupted, msg)
		}
		n := checkLines(t, filepath.Join(dir, "run.jsonl"))
		if recs, err := results.ReadFile(filepath.Join(dir, "run.jsonl")); err != nil || len(recs) != n || n == 0 {
			t.Errorf("twice=%v: JSONL: %d lines, %d records, %v", twice, n, len(recs), err)
		}
		if recs, err := results.ReadFile(filepath.Join(dir, "run.csv")); err != nil || len(recs) < n-1 {
			t.Errorf("twice=%v: CSV: %d records (JSONL %d), %v", twice, len(recs), n, err)
		}
		jsons, _ := filepath.Glob(filepath.Join(dir, "run.*.json"))
		if !strings.Contains(msg, "run.jsonl, "+filepath.Join(dir, "run.csv")+": valid and partial") {
			t.Errorf("twice=%v: the message does not say the JSONL and CSV are valid and partial:\n%s", twice, msg)
		}
		if twice {
			if len(jsons) != 0 || !strings.Contains(msg, "removed (not yet written)") {
				t.Errorf("stopped at once: -J documents %v left, message:\n%s", jsons, msg)
			}
			continue
		}
		if len(jsons) != 2 || !strings.Contains(msg, "-J "+jsons[0]) {
			t.Fatalf("-J documents %v; message:\n%s", jsons, msg)
		}
		for _, p := range jsons {
			if b, err := os.ReadFile(p); err != nil || !json.Valid(b) {
				t.Errorf("%s: not valid JSON after the interrupt (%v)", p, err)
			}
		}
	}
}
