package launch

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/gccl/gccl/internal/syncbuf"
	"github.com/gccl/gccl/lib/bootstrap"
	"github.com/gccl/gccl/lib/cpuset"
)

// The launched program is this test binary again (TestHelperProcess),
// told what to do by helperEnv.
const helperEnv = "GCCL_LAUNCH_TEST"

func TestHelperProcess(t *testing.T) {
	what := os.Getenv(helperEnv)
	if what == "" {
		t.Skip("a process of the launcher's tests")
	}
	rank, _ := strconv.Atoi(os.Getenv(bootstrap.EnvLaunchRank))
	if dir := os.Getenv("GCCL_LAUNCH_TEST_DIR"); dir != "" {
		// Write, then rename: a rank killed mid-write leaves no pid file,
		// never an empty one (which read as pid 0: the process group).
		tmp := filepath.Join(dir, ".pid"+strconv.Itoa(rank))
		os.WriteFile(tmp, []byte(strconv.Itoa(os.Getpid())), 0o600)
		os.Rename(tmp, filepath.Join(dir, "pid"+strconv.Itoa(rank)))
	}
	switch what {
	case "env":
		fmt.Printf("out rank=%s size=%s local=%s root=%s token=%s job=%s mpi=%s\n",
			os.Getenv(bootstrap.EnvLaunchRank), os.Getenv(bootstrap.EnvLaunchSize), os.Getenv(bootstrap.EnvLaunchLocalRank),
			os.Getenv(bootstrap.EnvCommID), os.Getenv(bootstrap.EnvJobToken), os.Getenv(bootstrap.EnvLaunchJobID),
			os.Getenv("OMPI_COMM_WORLD_RANK"))
		fmt.Fprintf(os.Stderr, "err from %d\n", rank)
	case "affinity": // prints the processors it may run on and its GOMAXPROCS
		fmt.Fprintf(os.Stderr, "affinity rank=%d cpus=%v gomaxprocs=%d\n", rank, cpuset.Affinity(), runtime.GOMAXPROCS(0))
	case "wrapped": // prints what the wrapper set, and the root
		fmt.Printf("wrapped=%s root=%s\n", os.Getenv("GCCL_WRAPPED"), os.Getenv(bootstrap.EnvCommID))
	case "fail1":
		if rank == 1 {
			os.Exit(3)
		}
		time.Sleep(time.Minute)
	case "stubborn": // ignores SIGTERM; rank 0 fails
		signalIgnore(syscall.SIGTERM)
		if rank == 0 {
			time.Sleep(100 * time.Millisecond)
			os.Exit(1)
		}
		time.Sleep(time.Minute)
	case "sleep":
		time.Sleep(time.Minute)
	case "kill9":
		if rank == 1 {
			syscall.Kill(os.Getpid(), syscall.SIGKILL)
		}
		time.Sleep(time.Minute)
	case "sigint": // records the SIGINT it gets, then exits 130
		waitSignal(syscall.SIGINT)
		os.WriteFile(filepath.Join(os.Getenv("GCCL_LAUNCH_TEST_DIR"), "sigint"+strconv.Itoa(rank)), nil, 0o600)
		os.Exit(130)
	case "slowstop": // takes longer than the grace to stop after SIGINT, as perf finishing a size
		waitSignal(syscall.SIGINT)
		time.Sleep(time.Second)
		os.Exit(130)
	case "twice": // stops at the second SIGINT, recording each
		countSignals(rank, 2)
	case "die1": // rank 1 dies of the first SIGINT; the others stop at the second
		if rank == 1 {
			// It dies a little after the signal, so that the others have
			// read the first SIGINT when the launcher sends the second: a
			// Go process that gets two before reading the first sees one
			// (CI saw [1 0 1] when rank 1 died at once).
			waitSignal(syscall.SIGINT)
			time.Sleep(200 * time.Millisecond)
			signal.Reset(syscall.SIGINT)
			syscall.Kill(os.Getpid(), syscall.SIGINT)
			time.Sleep(time.Minute)
		}
		countSignals(rank, 2)
	case "finish": // ends well at SIGINT: its work was done
		waitSignal(syscall.SIGINT)
		os.Exit(0)
	case "deaf": // ignores SIGINT
		signalIgnore(syscall.SIGINT)
		time.Sleep(time.Minute)
	}
	os.Exit(0)
}

// countSignals records every SIGINT as a file "sig<k>.<rank>" and exits
// 130 at the last'th.
func countSignals(rank, last int) {
	c := make(chan os.Signal, last)
	signal.Notify(c, syscall.SIGINT)
	for k := 1; ; k++ {
		<-c
		os.WriteFile(filepath.Join(os.Getenv("GCCL_LAUNCH_TEST_DIR"), fmt.Sprintf("sig%d.%d", k, rank)), nil, 0o600)
		if k == last {
			os.Exit(130)
		}
	}
}

// sigintsGot is how many SIGINTs each of np ranks recorded (countSignals).
func sigintsGot(dir string, np int) []int {
	got := make([]int, np)
	for r := range np {
		for k := 1; ; k++ {
			if _, err := os.Stat(filepath.Join(dir, fmt.Sprintf("sig%d.%d", k, r))); err != nil {
				break
			}
			got[r] = k
		}
	}
	return got
}

// interruptWhenUp sends sig on sigs once np processes are up, then
// again, if twice, once the launcher said it forwarded the first.
func interruptWhenUp(dir string, np int, sigs chan<- os.Signal, errb *syncBuffer, twice bool) {
	for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		if n, _ := filepath.Glob(filepath.Join(dir, "pid*")); len(n) == np {
			break
		}
	}
	time.Sleep(200 * time.Millisecond) // their handlers are set
	sigs <- syscall.SIGINT
	if !twice {
		return
	}
	for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline) && !strings.Contains(errb.String(), "forwarded to"); {
		time.Sleep(10 * time.Millisecond)
	}
	time.Sleep(100 * time.Millisecond)
	sigs <- syscall.SIGINT
}

// syncBuffer is a bytes.Buffer the launcher writes while a test reads it.
type syncBuffer = syncbuf.Buffer

// interruptRun launches np processes doing what, interrupts them (once,
// or twice), and returns the job's code and the launcher's stderr.
func interruptRun(t *testing.T, np int, what string, twice bool, set func(*Options)) (int, string, string) {
	t.Helper()
	dir := t.TempDir()
	o, _, _ := opts(t, np, what, dir)
	errb := &syncBuffer{}
	o.Stderr = errb
	if set != nil {
		set(&o)
	}
	sigs := make(chan os.Signal, 2)
	go interruptWhenUp(dir, np, sigs, errb, twice)
	code, err := run(o, sigs)
	if err != nil {
		t.Fatal(err)
	}
	gone(t, dir, np)
	return code, errb.String(), dir
}

func opts(t *testing.T, np int, what string, dir string) (Options, *bytes.Buffer, *bytes.Buffer) {
	t.Helper()
	var out, errb bytes.Buffer
	env := append(os.Environ(), helperEnv+"="+what, "GCCL_LAUNCH_TEST_DIR="+dir, "OMPI_COMM_WORLD_RANK=7")
	return Options{NP: np, Path: os.Args[0], Args: []string{"-test.run=^TestHelperProcess$"}, Env: env,
		Stdout: &out, Stderr: &errb, Grace: 300 * time.Millisecond}, &out, &errb
}

// gone checks that every process the helpers recorded has been reaped.
func gone(t *testing.T, dir string, np int) {
	t.Helper()
	for r := range np {
		b, err := os.ReadFile(filepath.Join(dir, "pid"+strconv.Itoa(r)))
		if err != nil {
			continue // it never got that far
		}
		pid, err := strconv.Atoi(string(b))
		if err != nil || pid <= 0 {
			t.Errorf("rank %d wrote pid %q", r, b)
			continue
		}
		if err := syscall.Kill(pid, 0); err != syscall.ESRCH {
			t.Errorf("rank %d (pid %d) is still there: %v", r, pid, err)
		}
	}
}

func TestEnvAndOutput(t *testing.T) {
	for _, np := range []int{1, 3} {
		dir := t.TempDir()
		o, out, errb := opts(t, np, "env", dir)
		code, err := Run(o)
		if err != nil || code != 0 {
			t.Fatalf("np %d: code %d err %v\n%s", np, code, err, errb)
		}
		lines := strings.Split(strings.TrimSpace(out.String()), "\n")
		if len(lines) != 1 || !strings.HasPrefix(lines[0], "out rank=0 size="+strconv.Itoa(np)+" local=0 root=127.0.0.1:") {
			t.Fatalf("np %d: stdout is not rank 0's line alone:\n%s", np, out)
		}
		if strings.Contains(lines[0], "mpi=7") || strings.Contains(lines[0], "token= ") {
			t.Fatalf("an outer launcher's variable leaked, or no token: %s", lines[0])
		}
		rest := lines[0][strings.Index(lines[0], "root="):]
		for r := range np {
			if !strings.Contains(errb.String(), fmt.Sprintf("[rank %d] err from %d\n", r, r)) {
				t.Errorf("np %d: no prefixed stderr line of rank %d:\n%s", np, r, errb)
			}
			if r > 0 && !strings.Contains(errb.String(), fmt.Sprintf("[rank %d] out rank=%d size=%d local=%d %s", r, r, np, r, rest)) {
				t.Errorf("np %d: rank %d's stdout is not prefixed on stderr with the same root and token:\n%s", np, r, errb)
			}
		}
		gone(t, dir, np)
	}
}

// Wrap runs each process's program under a command of its own (here env,
// setting a variable per rank); RootHost moves the bootstrap root.
func TestWrapAndRootHost(t *testing.T) {
	dir := t.TempDir()
	o, out, errb := opts(t, 2, "wrapped", dir)
	o.Wrap = func(r int) []string { return []string{"/usr/bin/env", "GCCL_WRAPPED=w" + strconv.Itoa(r)} }
	o.RootHost = "198.18.7.1"
	code, err := Run(o)
	if err != nil || code != 0 {
		t.Fatalf("code %d err %v\n%s", code, err, errb)
	}
	if !strings.HasPrefix(out.String(), "wrapped=w0 root=198.18.7.1:") || !strings.Contains(errb.String(), "[rank 1] wrapped=w1 root=198.18.7.1:") {
		t.Errorf("the wrapper or the root's host did not reach the processes:\n%s\n%s", out, errb)
	}
	gone(t, dir, 2)
}

func TestOneFailsOthersStopped(t *testing.T) {
	dir := t.TempDir()
	o, _, errb := opts(t, 4, "fail1", dir)
	start := time.Now()
	code, err := Run(o)
	if err != nil || code != 3 {
		t.Fatalf("code %d err %v, want 3\n%s", code, err, errb)
	}
	if d := time.Since(start); d > 20*time.Second {
		t.Fatalf("took %v: survivors were not stopped", d)
	}
	for _, want := range []string{"rank 1 (pid", "exited with code 3", "stopping ranks 0, 2, 3 because rank 1 exited with code 3"} {
		if !strings.Contains(errb.String(), want) {
			t.Errorf("stderr lacks %q:\n%s", want, errb)
		}
	}
	gone(t, dir, 4)
}

func TestStubbornGetsKilled(t *testing.T) {
	dir := t.TempDir()
	o, _, errb := opts(t, 2, "stubborn", dir)
	code, err := Run(o)
	if err != nil || code != 1 {
		t.Fatalf("code %d err %v, want rank 0's 1 (the stubborn one's SIGKILL is the launcher's doing)\n%s", code, err, errb)
	}
	if !strings.Contains(errb.String(), "SIGKILL") {
		t.Errorf("no SIGKILL message:\n%s", errb)
	}
	gone(t, dir, 2)
}

func TestTimeout(t *testing.T) {
	dir := t.TempDir()
	o, _, errb := opts(t, 2, "sleep", dir)
	o.Timeout = 300 * time.Millisecond
	code, err := Run(o)
	if err != nil || code < ExitTimeout {
		t.Fatalf("code %d err %v, want at least %d\n%s", code, err, ExitTimeout, errb)
	}
	if !strings.Contains(errb.String(), "timeout") {
		t.Errorf("no timeout message:\n%s", errb)
	}
	gone(t, dir, 2)
}

func TestKilledBySignal(t *testing.T) {
	dir := t.TempDir()
	o, _, errb := opts(t, 3, "kill9", dir)
	code, err := Run(o)
	if err != nil || code != 137 {
		t.Fatalf("code %d err %v, want 137\n%s", code, err, errb)
	}
	if !strings.Contains(errb.String(), "rank 1 (pid") || !strings.Contains(errb.String(), "killed by signal 9") {
		t.Errorf("stderr does not say rank 1 was killed by signal 9:\n%s", errb)
	}
	gone(t, dir, 3)
}

func TestSignalForwarded(t *testing.T) {
	dir := t.TempDir()
	o, _, errb := opts(t, 3, "sigint", dir)
	sigs := make(chan os.Signal, 1)
	go func() {
		// Once every process is up (wrote its pid), interrupt.
		for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
			n, _ := filepath.Glob(filepath.Join(dir, "pid*"))
			if len(n) == 3 {
				break
			}
		}
		time.Sleep(100 * time.Millisecond)
		sigs <- syscall.SIGINT
	}()
	code, err := run(o, sigs)
	if err != nil || code != 130 {
		t.Fatalf("code %d err %v, want 130\n%s", code, err, errb)
	}
	for r := range 3 {
		if _, err := os.Stat(filepath.Join(dir, "sigint"+strconv.Itoa(r))); err != nil {
			t.Errorf("rank %d did not get SIGINT", r)
		}
	}
	gone(t, dir, 3)
}

// An interrupt is forwarded and the processes get InterruptWait, not the
// grace, to finish: nothing is killed, the job's code is the signal's,
// and the launcher says what it waits for, naming the signal.
func TestInterruptWaitsForTheSize(t *testing.T) {
	code, msg, _ := interruptRun(t, 3, "slowstop", false, nil) // each takes 1 s; the grace is 300 ms
	if code != 130 {
		t.Fatalf("code %d, want 130\n%s", code, msg)
	}
	for _, want := range []string{"launch: SIGINT: forwarded to ranks 0, 1, 2; waiting up to 1m0s for them to finish the current size (Ctrl-C again to stop at once)"} {
		if !strings.Contains(msg, want) {
			t.Errorf("stderr lacks %q:\n%s", want, msg)
		}
	}
	if strings.Contains(msg, "SIGKILL") || strings.Contains(msg, "SIGTERM") || strings.Contains(msg, "exited with code 130") {
		t.Errorf("a process stopping in order was killed, sent SIGTERM or reported:\n%s", msg)
	}
}

// Processes that all exit 0 after the interrupt finished: the job's code
// is 0, not the signal's.
func TestInterruptAsTheyFinish(t *testing.T) {
	if code, msg, _ := interruptRun(t, 2, "finish", false, nil); code != 0 {
		t.Errorf("code %d, want 0\n%s", code, msg)
	}
}

// A second interrupt is forwarded too (the processes stop at once); when
// the wait runs out the launcher sends the signal again itself; either
// way nothing is killed that stops.
func TestSecondInterruptForwarded(t *testing.T) {
	for _, c := range []struct {
		name  string
		twice bool
		set   func(*Options)
		want  string
	}{
		{"second Ctrl-C", true, nil, "launch: SIGINT again: sent SIGINT to ranks 0, 1, 2, to stop at once (SIGKILL in 300ms)"},
		{"wait ran out", false, func(o *Options) { o.InterruptWait = 500 * time.Millisecond },
			"launch: still running 500ms after SIGINT: sent SIGINT to ranks 0, 1, 2, to stop at once (SIGKILL in 300ms)"},
	} {
		code, msg, dir := interruptRun(t, 3, "twice", c.twice, c.set)
		if code != 130 || !strings.Contains(msg, c.want) || strings.Contains(msg, "SIGKILL:") {
			t.Errorf("%s: code %d, want 130 and %q, no SIGKILL:\n%s", c.name, code, c.want, msg)
		}
		if got := sigintsGot(dir, 3); fmt.Sprint(got) != "[2 2 2]" {
			t.Errorf("%s: SIGINTs per rank %v, want 2 each", c.name, got)
		}
	}
}

// A process that ignores interrupts is killed once the wait and the grace
// after the second signal are over, and the message names that signal.
func TestDeafToInterruptsGetsKilled(t *testing.T) {
	code, msg, _ := interruptRun(t, 2, "deaf", false, func(o *Options) { o.InterruptWait = 300 * time.Millisecond })
	if code != 130 || !strings.Contains(msg, "still running 300ms after the second SIGINT: SIGKILL") {
		t.Errorf("code %d, want 130 and the SIGKILL named after the second SIGINT:\n%s", code, msg)
	}
}

// A process that died of the interrupt (it did not finish the size) makes
// the launcher stop the others at once, not after the long wait.
func TestInterruptDeathStopsTheOthers(t *testing.T) {
	start := time.Now()
	code, msg, dir := interruptRun(t, 3, "die1", false, nil) // waits up to a minute otherwise
	if code != 130 || !strings.Contains(msg, "launch: rank 1 ") || !strings.Contains(msg, "killed by signal 2") ||
		!strings.Contains(msg, "to stop at once") {
		t.Errorf("code %d, want 130, rank 1's death and the others stopped at once:\n%s", code, msg)
	}
	if got := sigintsGot(dir, 3); got[0] != 2 || got[2] != 2 {
		t.Errorf("SIGINTs per rank %v: ranks 0 and 2 did not get the second", got)
	}
	if d := time.Since(start); d > 30*time.Second {
		t.Errorf("took %v: the launcher waited out the interrupt", d)
	}
}

func TestBadOptions(t *testing.T) {
	for _, o := range []Options{{NP: 0, Path: os.Args[0]}, {NP: MaxNP + 1, Path: os.Args[0]}, {NP: 1}, {NP: 1, Path: "/no/such/program"}} {
		if _, err := Run(o); err == nil {
			t.Errorf("%+v accepted", o)
		}
	}
}

// The bootstrap variables of another job are never replaced in silence:
// a GCCL_COMM_ID no launch could use is an error (ErrInvalidEnv), a valid
// one and torchrun's are noted as ignored, and so is a job token, without
// its value.
func TestReplacedVars(t *testing.T) {
	for _, c := range []struct {
		env   []string
		notes []string
		err   string
	}{
		{env: []string{"PATH=/bin", "GCCL_COMM_ID=", "GCCL_JOB_TOKEN=  "}}, // empty: unset, as bootstrap.Detect reads them
		{env: []string{"GCCL_COMM_ID=10.0.0.1:29500"}, notes: []string{"--np starts its own bootstrap root; GCCL_COMM_ID=10.0.0.1:29500 is ignored"}},
		{env: []string{"GCCL_COMM_ID=[::1]:29500", "GCCL_JOB_TOKEN=s3cret"}, notes: []string{
			"--np starts its own bootstrap root; GCCL_COMM_ID=[::1]:29500 is ignored",
			"--np makes a fresh job token; GCCL_JOB_TOKEN is ignored"}},
		{env: []string{"MASTER_PORT=29500"}, notes: []string{"--np starts its own bootstrap root; MASTER_PORT=29500 ignored"}},
		{env: []string{"MASTER_ADDR=h", "MASTER_PORT=1"}, notes: []string{"--np starts its own bootstrap root; MASTER_ADDR=h MASTER_PORT=1 ignored"}},
		{env: []string{"GCCL_COMM_ID=garbage"},
			err: `launch: invalid environment: invalid GCCL_COMM_ID="garbage": address garbage: missing port in address (want host:port, e.g. 10.0.0.1:29500 or [::1]:29500); --np starts its own bootstrap root: unset GCCL_COMM_ID`},
		{env: []string{"GCCL_COMM_ID=host:99999"}, err: `invalid GCCL_COMM_ID="host:99999": port "99999": want 1 to 65535`},
		{env: []string{"GCCL_COMM_ID=:29500"}, err: `invalid GCCL_COMM_ID=":29500": no host`},
		// The last of several settings is the one a process would see.
		{env: []string{"GCCL_COMM_ID=garbage", "GCCL_COMM_ID=h:1"}, notes: []string{"--np starts its own bootstrap root; GCCL_COMM_ID=h:1 is ignored"}},
	} {
		notes, err := replacedVars(c.env)
		switch {
		case c.err == "" && err != nil:
			t.Errorf("%v: %v", c.env, err)
		case c.err != "" && (err == nil || !strings.Contains(err.Error(), c.err) || !errors.Is(err, ErrInvalidEnv)):
			t.Errorf("%v: error %v, want ErrInvalidEnv containing %q", c.env, err, c.err)
		case strings.Join(notes, "\n") != strings.Join(c.notes, "\n"):
			t.Errorf("%v: notes %q, want %q", c.env, notes, c.notes)
		}
	}
}

// Run with an unusable GCCL_COMM_ID starts nothing; with a valid one it
// says it is ignored, and its processes get the launcher's own root.
func TestRunReplacesCommID(t *testing.T) {
	dir := t.TempDir()
	o, out, errb := opts(t, 2, "env", dir)
	o.Env = append(o.Env, "GCCL_COMM_ID=garbage")
	if code, err := Run(o); !errors.Is(err, ErrInvalidEnv) || code != 0 {
		t.Fatalf("code %d, err %v: want ErrInvalidEnv", code, err)
	}
	if ents, _ := os.ReadDir(dir); len(ents) > 0 || out.Len()+errb.Len() > 0 {
		t.Fatalf("processes started (%d pid files), or output:\n%s%s", len(ents), out, errb)
	}
	o, out, errb = opts(t, 2, "env", dir)
	o.Env = append(o.Env, "GCCL_COMM_ID=192.0.2.1:29500")
	if code, err := Run(o); err != nil || code != 0 {
		t.Fatalf("code %d err %v\n%s", code, err, errb)
	}
	if !strings.HasPrefix(errb.String(), "launch: --np starts its own bootstrap root; GCCL_COMM_ID=192.0.2.1:29500 is ignored\n") {
		t.Errorf("no note first on stderr:\n%s", errb)
	}
	if !strings.Contains(out.String(), " root=127.0.0.1:") {
		t.Errorf("rank 0 did not get the launcher's root:\n%s", out)
	}
	gone(t, dir, 2)
}

// Each of several processes gets its share of the processors as
// GOMAXPROCS, at least 2, or 1 when they outnumber the processors, unless
// the environment sets GOMAXPROCS itself; a process alone gets nothing.
func TestSharedGOMAXPROCS(t *testing.T) {
	for _, c := range []struct {
		env      []string
		np, cpus int
		want     string
	}{
		{nil, 4, 2, "GOMAXPROCS=1"},
		{[]string{"HOME=/root"}, 3, 2, "GOMAXPROCS=1"},
		{nil, 2, 2, "GOMAXPROCS=2"},
		{nil, 16, 16, "GOMAXPROCS=2"},
		{nil, 8, 16, "GOMAXPROCS=2"},
		{nil, 17, 16, "GOMAXPROCS=1"},
		{nil, 2, 16, "GOMAXPROCS=8"},
		{nil, 3, 16, "GOMAXPROCS=5"},
		{nil, 1, 16, ""},
		{[]string{"GOMAXPROCS=2"}, 4, 2, ""},
	} {
		if got := sharedGOMAXPROCS(c.env, c.np, c.cpus); got != c.want {
			t.Errorf("%d processes on %d cpus, env %v: %q, want %q", c.np, c.cpus, c.env, got, c.want)
		}
	}
}

// Bind starts each process on its block of the launcher's processors, from
// its first instruction (a Go runtime told no GOMAXPROCS sizes itself by
// it), and leaves
// the launcher's own affinity as it was; without Bind each process may run
// anywhere the launcher may.
func TestBindGivesEachProcessItsBlock(t *testing.T) {
	mine := cpuset.Affinity()
	if len(mine) < 2 {
		t.Skipf("binding needs 2 processors to tell blocks apart; this process may run on %v", mine)
	}
	np := 2
	blocks := CPUBlocks(mine, np)
	for _, bind := range []bool{true, false} {
		o, _, errb := opts(t, np, "affinity", t.TempDir())
		o.Bind = bind
		o.Env = append(o.Env, "GOMAXPROCS=") // empty: the runtime's own choice
		if code, err := Run(o); err != nil || code != 0 {
			t.Fatalf("bind %v: code %d err %v\n%s", bind, code, err, errb)
		}
		for r := range np {
			want := mine
			if bind {
				want = blocks[r]
			}
			line := fmt.Sprintf("affinity rank=%d cpus=%v gomaxprocs=%d", r, want, len(want))
			if !strings.Contains(errb.String(), line) {
				t.Errorf("bind %v: want %q in:\n%s", bind, line, errb)
			}
		}
		if got := cpuset.Affinity(); fmt.Sprint(got) != fmt.Sprint(mine) {
			t.Fatalf("bind %v: the launcher's affinity changed: %v, was %v", bind, got, mine)
		}
	}
}

// The processors split into consecutive blocks as even as can be, every
// processor in exactly one; none when the processes outnumber them.
func TestCPUBlocks(t *testing.T) {
	for _, c := range []struct {
		cpus []int
		np   int
		want [][]int
	}{
		{[]int{0, 1}, 2, [][]int{{0}, {1}}},
		{[]int{0, 1, 2, 3}, 2, [][]int{{0, 1}, {2, 3}}},
		{[]int{0, 1, 2, 3, 4}, 2, [][]int{{0, 1}, {2, 3, 4}}},
		{[]int{4, 5, 9}, 3, [][]int{{4}, {5}, {9}}},
		{[]int{0, 1, 2, 3, 4, 5, 6}, 3, [][]int{{0, 1}, {2, 3}, {4, 5, 6}}},
		{[]int{0, 1}, 4, nil},
		{nil, 1, nil},
	} {
		got := CPUBlocks(c.cpus, c.np)
		if fmt.Sprint(got) != fmt.Sprint(c.want) {
			t.Errorf("CPUBlocks(%v, %d) = %v, want %v", c.cpus, c.np, got, c.want)
		}
	}
	// Exhaustively: every processor once, in order, sizes differing by at most one.
	for n := 1; n <= 40; n++ {
		cpus := make([]int, n)
		for i := range cpus {
			cpus[i] = 100 + i
		}
		for np := 1; np <= n; np++ {
			var flat []int
			lo, hi := n, 0
			for _, b := range CPUBlocks(cpus, np) {
				flat = append(flat, b...)
				lo, hi = min(lo, len(b)), max(hi, len(b))
			}
			if fmt.Sprint(flat) != fmt.Sprint(cpus) || hi-lo > 1 || lo < 1 {
				t.Fatalf("CPUBlocks(%d cpus, %d): blocks %v", n, np, CPUBlocks(cpus, np))
			}
		}
	}
}
