package shm_test

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gccl/gccl/lib/shm"
)

func fill(b byte) func([]byte) {
	return func(d []byte) {
		for i := range d {
			d[i] = b
		}
	}
}

// TestOpenTwoEndsThenUnlinked: the first Open creates and initialises, the
// second attaches and sees the data, and the name is gone once both ends
// have marked the segment mapped, while both mappings still share memory.
func TestOpenTwoEndsThenUnlinked(t *testing.T) {
	dir := t.TempDir()
	a, err := shm.Open(dir, "seg", 8192, fill(7), time.Second, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	b, err := shm.Open(dir, "seg", 8192, fill(9), time.Second, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	if !a.Created || b.Created {
		t.Fatalf("Created: first %v second %v, want true false", a.Created, b.Created)
	}
	if !bytes.Equal(b.Data(), bytes.Repeat([]byte{7}, 8192)) {
		t.Fatal("the second end does not see the creator's initialisation")
	}
	a.MarkMapped(2)
	if _, err := os.Stat(filepath.Join(dir, "seg")); err != nil {
		t.Fatalf("unlinked after one of two ends: %v", err)
	}
	b.MarkMapped(2)
	if _, err := os.Stat(filepath.Join(dir, "seg")); !os.IsNotExist(err) {
		t.Fatalf("still there after both ends mapped it: %v", err)
	}
	a.Data()[100] = 42
	if b.Data()[100] != 42 {
		t.Fatal("the two mappings do not share memory")
	}
}

func TestOpenSizeMismatchAndTimeout(t *testing.T) {
	dir := t.TempDir()
	a, err := shm.Open(dir, "seg", 4096, nil, time.Second, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	if _, err := shm.Open(dir, "seg", 8192, nil, 50*time.Millisecond, nil); err == nil || !strings.Contains(err.Error(), "4096") {
		t.Fatalf("want a size mismatch naming 4096, got %v", err)
	}
	// A creator that died before sizing its segment: the opener gives up.
	if err := os.WriteFile(filepath.Join(dir, "dead"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	_, err = shm.Open(dir, "dead", 4096, nil, 100*time.Millisecond, nil)
	if err == nil || !strings.Contains(err.Error(), "dead") {
		t.Fatalf("want an error naming the segment, got %v", err)
	}
	if d := time.Since(start); d > 2*time.Second {
		t.Fatalf("gave up after %v, want about the 100 ms timeout", d)
	}
	var stop atomic.Bool
	stop.Store(true)
	start = time.Now()
	if _, err := shm.Open(dir, "dead", 4096, nil, time.Hour, stop.Load); err == nil || time.Since(start) > time.Second {
		t.Fatalf("stop did not end the wait: %v after %v", err, time.Since(start))
	}
	if _, err := shm.Open(dir, "x", 0, nil, time.Second, nil); err == nil {
		t.Fatal("size 0 accepted")
	}
	if _, err := shm.Open(filepath.Join(dir, "missing"), "x", 64, nil, time.Second, nil); err == nil || !strings.Contains(err.Error(), shm.EnvDir) {
		t.Fatalf("want an error naming %s, got %v", shm.EnvDir, err)
	}
}

func TestRemovePrefix(t *testing.T) {
	dir := t.TempDir()
	for _, n := range []string{"gccl-job1-a", "gccl-job1-b", "gccl-job2-a"} {
		if err := os.WriteFile(filepath.Join(dir, n), nil, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	if n := shm.RemovePrefix(dir, "gccl-job1-"); n != 2 {
		t.Fatalf("removed %d, want 2", n)
	}
	left, _ := os.ReadDir(dir)
	if len(left) != 1 || left[0].Name() != "gccl-job2-a" {
		t.Fatalf("left %v", left)
	}
}

func TestFutexWakesWaiter(t *testing.T) {
	s, err := shm.Open(t.TempDir(), "f", 4096, nil, time.Second, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	w := s.Word(0)
	done := make(chan struct{})
	go func() {
		for w.Load() == 0 {
			shm.FutexWait(w, 0, 10*time.Second)
		}
		close(done)
	}()
	time.Sleep(20 * time.Millisecond)
	w.Store(1)
	shm.FutexWake(w, 1)
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("the futex waiter was not woken")
	}
	start := time.Now()
	shm.FutexWait(w, 1, 30*time.Millisecond) // nobody wakes it: the timeout ends it
	if d := time.Since(start); d < 20*time.Millisecond || d > 3*time.Second {
		t.Fatalf("a timed futex wait took %v, want about 30 ms", d)
	}
}

// TestCrossProcess: a child process (this test binary, re-executed)
// attaches to the parent's segment, checks what the parent wrote, answers
// through a word and a futex wake; the name is gone once both mapped it.
func TestCrossProcess(t *testing.T) {
	if os.Getenv("SHM_TEST_CHILD") != "" {
		return
	}
	dir := t.TempDir()
	s, err := shm.Open(dir, "x", 4096, fill(5), time.Second, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	s.MarkMapped(2)
	cmd := exec.Command(os.Args[0], "-test.run=^TestHelperChild$")
	cmd.Env = append(os.Environ(), "SHM_TEST_CHILD=1", "SHM_TEST_DIR="+dir)
	out := new(bytes.Buffer)
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	w := s.Word(64)
	deadline := time.Now().Add(10 * time.Second)
	for w.Load() != 1 && time.Now().Before(deadline) {
		shm.FutexWait(w, 0, time.Second)
	}
	if err := cmd.Wait(); err != nil || w.Load() != 1 {
		t.Fatalf("child: %v, word %d; output:\n%s", err, w.Load(), out)
	}
	if _, err := os.Stat(filepath.Join(dir, "x")); !os.IsNotExist(err) {
		t.Fatalf("the segment's name outlived both ends mapping it: %v", err)
	}
}

func TestHelperChild(t *testing.T) {
	dir := os.Getenv("SHM_TEST_DIR")
	if os.Getenv("SHM_TEST_CHILD") == "" || dir == "" {
		t.Skip("helper for TestCrossProcess")
	}
	s, err := shm.Open(dir, "x", 4096, nil, 5*time.Second, nil)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	s.MarkMapped(2)
	if s.Created || s.Data()[0] != 5 || s.Data()[4095] != 5 {
		fmt.Fprintln(os.Stderr, "child: not the parent's data")
		os.Exit(3)
	}
	s.Word(64).Store(1)
	shm.FutexWake(s.Word(64), 1)
	s.Close()
}
