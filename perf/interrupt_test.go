package perf

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/gccl/gccl/internal/syncbuf"
	"github.com/gccl/gccl/lib/shm"
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
		if recordsWritten(filepath.Join(dir, "run.jsonl")) >= 2 {
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

// recordsWritten counts the lines a running perf has written to path's
// temporary file (the path itself appears only when the run ends).
func recordsWritten(path string) int {
	tmps, _ := filepath.Glob(results.TempPattern(path))
	n := 0
	for _, p := range tmps {
		if b, err := os.ReadFile(p); err == nil {
			n = max(n, bytes.Count(b, []byte("\n")))
		}
	}
	return n
}

// noTempFiles checks that no temporary result file is left in dir.
func noTempFiles(t *testing.T, dir string) {
	t.Helper()
	if left, _ := filepath.Glob(filepath.Join(dir, ".*.tmp-*")); len(left) > 0 {
		t.Errorf("temporary files left behind: %v", left)
	}
}

// lockedBuffer is a bytes.Buffer the child's output goroutine writes while
// the test reads it.
type lockedBuffer = syncbuf.Buffer

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

// Ctrl-C once: the run stops the point in progress (one thread drives
// every rank: it stops between two iterations and drops the point),
// writes every result file that holds a record, valid (the -J documents
// with the sizes measured; the second configuration's, never reached, is
// not written), says what it kept, and exits 130. Twice: it stops at once,
// removes the -J documents it had not written, and puts in place every
// whole record of the JSONL and CSV. No temporary file is left.
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
			for !strings.Contains(stderr.String(), "(send it again to stop at once)") && time.Now().Before(deadline) {
				time.Sleep(time.Millisecond)
			}
			cmd.Process.Signal(syscall.SIGINT)
		}
		code := waitExit(t, cmd)
		msg := stderr.String()
		if code != ExitInterrupted {
			t.Fatalf("twice=%v: exit %d, want %d: %s", twice, code, ExitInterrupted, msg)
		}
		noTempFiles(t, dir)
		n := checkLines(t, filepath.Join(dir, "run.jsonl"))
		if recs, err := results.ReadFile(filepath.Join(dir, "run.jsonl")); err != nil || len(recs) != n || n == 0 {
			t.Errorf("twice=%v: JSONL: %d lines, %d records, %v", twice, n, len(recs), err)
		}
		if recs, err := results.ReadFile(filepath.Join(dir, "run.csv")); err != nil || len(recs) != n {
			t.Errorf("twice=%v: CSV: %d records (JSONL %d), %v", twice, len(recs), n, err)
		}
		jsons, _ := filepath.Glob(filepath.Join(dir, "run.*.json"))
		if !strings.Contains(msg, "run.jsonl, "+filepath.Join(dir, "run.csv")+": valid and partial") {
			t.Errorf("twice=%v: the message does not say the JSONL and CSV are valid and partial:\n%s", twice, msg)
		}
		if twice {
			// The second signal stops the run at once: -J documents not yet
			// written are removed. The first one's stop is quick (the next
			// iteration), so the second can also come after it wrote them:
			// then they stay, valid, and the message says so.
			if len(jsons) == 0 && !strings.Contains(msg, "removed (not yet written)") {
				t.Errorf("stopped at once: the message does not say the -J documents were removed:\n%s", msg)
			}
			for _, j := range jsons {
				if b, err := os.ReadFile(j); err != nil || !json.Valid(b) || !strings.Contains(msg, "-J "+j+": valid and partial") {
					t.Errorf("stopped at once: -J document %s left, not valid or not named valid (%v); message:\n%s", j, err, msg)
				}
			}
			continue
		}
		// -N 0 never ends the first configuration (LL): its document has
		// the sizes measured; Simple's, never reached, is not written.
		ll, simple := filepath.Join(dir, "run.proto-LL.algo-auto.nch-auto.buff-default.json"), filepath.Join(dir, "run.proto-Simple.algo-auto.nch-auto.buff-default.json")
		if len(jsons) != 1 || jsons[0] != ll || !strings.Contains(msg, "-J "+ll+": valid and partial") || !strings.Contains(msg, "-J "+simple+": not written (no size finished)") {
			t.Fatalf("-J documents %v; message:\n%s", jsons, msg)
		}
		if !strings.Contains(msg, "in progress (") {
			t.Errorf("the message does not say the point in progress was dropped:\n%s", msg)
		}
		if recs, err := results.ReadFile(ll); err != nil || len(recs) != n {
			t.Errorf("%s: %d records (JSONL %d), %v", ll, len(recs), n, err)
		}
		if b, err := os.ReadFile(ll); err != nil || !json.Valid(b) {
			t.Errorf("%s: not valid JSON after the interrupt (%v)", ll, err)
		}
	}
}

// npTrial is one interrupted run of TestInterruptTrials: what became of
// its result files, and its exit.
type npTrial struct {
	code  int
	files map[string]string // "absent", or "N records"
	took  time.Duration     // from the first signal to the exit
}

// npChild is a perf run in a child process.
type npChild struct {
	cmd            *exec.Cmd
	stdout, stderr *lockedBuffer
	done           chan struct{} // closed once it exited and was reaped
}

// startNP starts the test binary as a perf run (TestPerfChild; with
// --np, a launcher) writing -J, --out and --csv into dir.
func startNP(t *testing.T, dir, shmDir string, args ...string) *npChild {
	t.Helper()
	args = append([]string{"-test.run=^TestPerfChild$", "--", AllReduce.Prog}, args...)
	args = append(args, "-J", filepath.Join(dir, "run.json"), "--out", filepath.Join(dir, "run.jsonl"), "--csv", filepath.Join(dir, "run.csv"))
	c := &npChild{cmd: exec.Command(os.Args[0], args...), stdout: new(lockedBuffer), stderr: new(lockedBuffer), done: make(chan struct{})}
	c.cmd.Env = append(os.Environ(), childEnv+"=1", shm.EnvDir+"="+shmDir, "GCCL_MIN_BW=", "NCCL_TESTS_MIN_BW=")
	c.cmd.Stdout, c.cmd.Stderr = c.stdout, c.stderr
	if err := c.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		c.cmd.Wait()
		close(c.done)
	}()
	return c
}

// waitText waits until buf holds s; false if the process ended first.
func (c *npChild) waitText(buf *lockedBuffer, s string) bool {
	deadline := time.After(childPatience)
	for !strings.Contains(buf.String(), s) {
		select {
		case <-c.done:
			return strings.Contains(buf.String(), s)
		case <-deadline:
			return false
		case <-time.After(2 * time.Millisecond):
		}
	}
	return true
}

// waitRows waits until the table shows n rows, or the process ended.
func (c *npChild) waitRows(n int) {
	for len(jobRows(c.stdout.String())) < n {
		select {
		case <-c.done:
			return
		case <-time.After(time.Millisecond):
		}
	}
}

// exit waits for the process and returns its exit code.
func (c *npChild) exit(t *testing.T) int {
	t.Helper()
	select {
	case <-c.done:
	case <-time.After(childPatience):
		c.cmd.Process.Kill()
		<-c.done
		t.Fatalf("the child did not stop within %v:\n%s", childPatience, c.stderr.String())
	}
	return c.cmd.ProcessState.ExitCode()
}

// resultFiles checks every result file in dir: absent, or valid and not
// empty (-J: JSON that encoding/json and the results reader take; JSONL:
// every line a JSON record; CSV: the results reader's); no temporary file
// beside them. It says what each holds.
func resultFiles(t *testing.T, dir string) map[string]string {
	t.Helper()
	noTempFiles(t, dir)
	got := map[string]string{}
	for _, name := range []string{"run.json", "run.jsonl", "run.csv"} {
		path := filepath.Join(dir, name)
		b, err := os.ReadFile(path)
		if errors.Is(err, os.ErrNotExist) {
			got[name] = "absent"
			continue
		}
		if err != nil || len(b) == 0 {
			t.Errorf("%s: empty or unreadable (%v)", name, err)
			continue
		}
		switch name {
		case "run.json":
			var doc map[string]any
			if err := json.Unmarshal(b, &doc); err != nil {
				t.Errorf("%s: not valid JSON: %v", name, err)
			}
		case "run.jsonl":
			checkLines(t, path)
		}
		recs, err := results.ReadFile(path)
		if err != nil || len(recs) == 0 {
			t.Errorf("%s: %d records: %v", name, len(recs), err)
		}
		got[name] = fmt.Sprintf("%d records", len(recs))
	}
	return got
}

// interruptNP runs one trial: a --np 4 run, signalled delay after its
// table showed rows rows (0: its header), and, twice, again once the
// launcher forwarded the first.
func interruptNP(t *testing.T, shmDir string, args []string, rows int, delay time.Duration, twice bool) npTrial {
	t.Helper()
	dir := t.TempDir()
	c := startNP(t, dir, shmDir, args...)
	if !c.waitText(c.stdout, "# Using devices") {
		c.cmd.Process.Kill()
		<-c.done
		t.Fatalf("no table header:\n%s%s", c.stdout.String(), c.stderr.String())
	}
	c.waitRows(rows)
	time.Sleep(delay)
	sent := time.Now()
	c.cmd.Process.Signal(syscall.SIGINT)
	if twice && c.waitText(c.stderr, "forwarded to") {
		time.Sleep(delay)
		c.cmd.Process.Signal(syscall.SIGINT)
	}
	code := c.exit(t)
	tr := npTrial{code: code, files: resultFiles(t, dir), took: time.Since(sent)}
	// A run that had finished when the signal came exits 0 (or 130, if
	// the launcher still ran) with every file whole; every other run is
	// stopped: 130.
	if code != ExitInterrupted && !(code == 0 && tr.files["run.json"] != "absent") {
		t.Errorf("after %d rows and %v, twice %v: exit %d, want %d\nstderr:\n%s", rows, delay, twice, code, ExitInterrupted, c.stderr.String())
	}
	return tr
}

// Ctrl-C under --np 4, once or twice, at moments spread over the run
// (after 0 to all of its rows, and a few milliseconds): every result file
// is valid or absent, never empty, no temporary file is left, and the run
// exits 130. GCCL_TEST_INTERRUPT_TRIALS sets the trials of each kind (8:
// the suite's time; issue 39's 20 and 20 at 64 MiB passed with
// GCCL_TEST_INTERRUPT_TRIALS=20 GCCL_TEST_INTERRUPT_ARGS="--np 4 -b 1K
// -e 64M -f 16 -n 20 -w 1 -c 0", 187 s on the 2-core VM), and
// GCCL_TEST_INTERRUPT_ARGS the run (the default is smaller, to keep the
// test short).
func TestInterruptTrialsNP(t *testing.T) {
	if testing.Short() {
		t.Skip("starts processes")
	}
	trials := 8
	if n, err := strconv.Atoi(os.Getenv("GCCL_TEST_INTERRUPT_TRIALS")); err == nil {
		trials = n
	}
	args := strings.Fields("--np 4 -b 1K -e 4M -f 16 -n 5 -w 1 -c 0")
	if a := os.Getenv("GCCL_TEST_INTERRUPT_ARGS"); a != "" {
		args = strings.Fields(a)
	}
	shmDir := t.TempDir()
	// The whole run, once: its rows set the moments of the signals.
	dir := t.TempDir()
	c := startNP(t, dir, shmDir, args...)
	if code := c.exit(t); code != 0 {
		t.Fatalf("uninterrupted run: exit %d\n%s", code, c.stderr.String())
	}
	if files := resultFiles(t, dir); files["run.json"] == "absent" || files["run.jsonl"] == "absent" || files["run.csv"] == "absent" {
		t.Fatalf("uninterrupted run: %v", files)
	}
	sizes := len(jobRows(c.stdout.String()))
	outcomes := map[string]int{}
	var slowest [2]time.Duration
	for i := range 2 * trials {
		twice := i%2 == 1
		rows, delay := (i/2)%(sizes+1), time.Duration(i*7%30)*time.Millisecond
		tr := interruptNP(t, shmDir, args, rows, delay, twice)
		k := 0
		if twice {
			k = 1
		}
		slowest[k] = max(slowest[k], tr.took)
		outcomes[fmt.Sprintf("twice=%v exit=%d json=%s jsonl=%s csv=%s", twice, tr.code, tr.files["run.json"], tr.files["run.jsonl"], tr.files["run.csv"])]++
	}
	keys := make([]string, 0, len(outcomes))
	for k := range outcomes {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		t.Logf("%2d x %s", outcomes[k], k)
	}
	t.Logf("slowest exit after the signal: once %v, twice %v", slowest[0].Round(time.Millisecond), slowest[1].Round(time.Millisecond))
	noSegmentsLeft(t, shmDir)
}

// One process of 4 ranks at 64 MiB: Ctrl-C stops the size in progress
// between two iterations (a point of 200 iterations is seconds long),
// drops it, keeps the sizes finished, and says so.
func TestInterruptOneProcess(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a process")
	}
	dir := t.TempDir()
	c := startNP(t, dir, t.TempDir(), "-g", "4", "-b", "1K", "-e", "64M", "-f", "65536", "-n", "200", "-w", "1", "-c", "0")
	deadline := time.After(childPatience)
	for recordsWritten(filepath.Join(dir, "run.jsonl")) < 2 { // the 1 KiB point
		select {
		case <-c.done:
			t.Fatalf("no record of the first size:\n%s%s", c.stdout.String(), c.stderr.String())
		case <-deadline:
			c.cmd.Process.Kill()
			<-c.done
			t.Fatalf("no record of the first size within %v:\n%s%s", childPatience, c.stdout.String(), c.stderr.String())
		case <-time.After(2 * time.Millisecond):
		}
	}
	c.cmd.Process.Signal(syscall.SIGINT)
	code := c.exit(t)
	msg := c.stderr.String()
	if code != ExitInterrupted || !strings.Contains(msg, "1 points measured; the size in progress (64M float) was stopped unfinished and dropped") {
		t.Fatalf("exit %d, want %d and the 64 MiB point dropped:\n%s", code, ExitInterrupted, msg)
	}
	files := resultFiles(t, dir)
	if files["run.json"] != "2 records" || files["run.jsonl"] != "2 records" || files["run.csv"] != "2 records" {
		t.Errorf("files %v, want the 1 KiB point's 2 records in each:\n%s", files, msg)
	}
}
