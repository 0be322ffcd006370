// Package launch starts the processes of a job on this host: the
// built-in launcher behind `<coll>_perf --np N` and `tune sweep --np N`.
// It gives every process the variables lib/bootstrap detects (rank, size,
// a bootstrap root address and a job token), shows one table (rank 0's
// standard output), prefixes every other line with the rank that wrote it,
// stops the job when one process fails, times out or is interrupted, and
// never leaves a process behind.
package launch

import (
	"bufio"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	mrand "math/rand/v2"
	"net"
	"os"
	"os/exec"
	"os/signal"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/gccl/gccl/lib/bootstrap"
	"github.com/gccl/gccl/lib/cpuset"
)

// Options are a launch.
type Options struct {
	NP   int      // processes, 1..MaxNP
	Path string   // the program (usually os.Executable())
	Args []string // its arguments
	Env  []string // base environment (os.Environ())
	// ProcEnv, when set, adds variables for process rank (after Env).
	ProcEnv func(rank int) []string
	// Wrap, when set, is the command that runs process rank's program
	// (e.g. ip netns exec NS): the program and its arguments follow it.
	Wrap func(rank int) []string
	// RootHost is the address rank 0 serves the bootstrap root on; "" is
	// 127.0.0.1. Another address (rank 0 in another network namespace) gets
	// a random port: the launcher cannot probe that namespace for a free one.
	RootHost string
	Timeout  time.Duration // the whole job's wall-clock limit; 0: none
	// Grace is how long processes get after SIGTERM (a failure or the
	// timeout), or after a second interrupt, before SIGKILL; 0: 3 s.
	Grace time.Duration
	// InterruptWait is how long processes get after the first interrupt
	// (SIGINT or SIGTERM to the launcher, forwarded to them) to finish
	// what they are doing: a perf process finishes the size it measures
	// and writes its files. Then they get the signal again (stop at once)
	// and Grace. 0: DefaultInterruptWait, or Grace if longer.
	InterruptWait  time.Duration
	Stdout, Stderr io.Writer
	// Bind gives each process processors of its own: the launcher's own
	// processors split into NP consecutive blocks, process r bound to block
	// r (as mpirun --bind-to core). Nothing is bound when the processes
	// outnumber the processors.
	Bind bool
}

// MaxNP bounds the processes of one launch.
const MaxNP = 1024

// DefaultInterruptWait is Options.InterruptWait's default: the processes
// tell the launcher nothing of their progress, so the bound is generous
// (a 64 MiB size of 200 iterations on 4 processes of a 2-core machine,
// with its warm-up, takes about 40 s).
const DefaultInterruptWait = 60 * time.Second

// Exit codes of the launcher itself.
const (
	ExitTimeout = 124 // the job ran past Options.Timeout
	exitSignal  = 128 // + the signal's number
)

// Run starts the processes, waits for all of them and returns the job's
// exit code: the worst of those that ended on their own (a process killed
// by signal s counts 128+s), or the launcher's when it stopped the job
// (ExitTimeout, 128+signal for an interrupt, unless every process still
// exited 0: the signal came as they finished).
func Run(opt Options) (int, error) {
	sigs := make(chan os.Signal, 2)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	defer signal.Stop(sigs)
	return run(opt, sigs)
}

// proc is one launched process.
type proc struct {
	rank int
	cmd  *exec.Cmd
	code int    // exit code, 128+signal when killed
	how  string // "exited with code 3", "killed by signal 9"
	done bool
	// counts: the process ended on its own, before the launcher stopped
	// the job; its code is part of the job's.
	counts bool
}

func run(opt Options, sigs <-chan os.Signal) (int, error) {
	if opt.NP < 1 || opt.NP > MaxNP {
		return 0, fmt.Errorf("launch: %d processes: want 1 to %d", opt.NP, MaxNP)
	}
	if opt.Path == "" {
		return 0, errors.New("launch: no program to start")
	}
	if _, err := os.Stat(opt.Path); err != nil {
		return 0, fmt.Errorf("launch: program: %w", err)
	}
	if opt.Grace <= 0 {
		opt.Grace = 3 * time.Second
	}
	if opt.InterruptWait <= 0 {
		opt.InterruptWait = max(DefaultInterruptWait, opt.Grace)
	}
	if opt.Stdout == nil {
		opt.Stdout = io.Discard
	}
	if opt.Stderr == nil {
		opt.Stderr = io.Discard
	}
	notes, err := replacedVars(opt.Env)
	if err != nil {
		return 0, err
	}
	for _, n := range notes {
		fmt.Fprintf(opt.Stderr, "launch: %s\n", n)
	}
	env, err := jobEnv(opt.Env, opt.NP, opt.RootHost)
	if err != nil {
		return 0, err
	}
	var blocks [][]int
	if opt.Bind {
		blocks = CPUBlocks(cpuset.Affinity(), opt.NP)
	}
	errw := &lineWriter{w: opt.Stderr}
	procs := make([]*proc, 0, opt.NP)
	reaped := make(chan *proc, opt.NP)
	var relays sync.WaitGroup
	for r := range opt.NP {
		p := &proc{rank: r, cmd: exec.Command(opt.Path, opt.Args...)}
		if opt.Wrap != nil {
			if w := opt.Wrap(r); len(w) > 0 {
				p.cmd = exec.Command(w[0], append(append(w[1:len(w):len(w)], opt.Path), opt.Args...)...)
			}
		}
		p.cmd.Env = append(append([]string(nil), env...),
			bootstrap.EnvLaunchRank+"="+strconv.Itoa(r),
			bootstrap.EnvLaunchLocalRank+"="+strconv.Itoa(r))
		if opt.ProcEnv != nil {
			p.cmd.Env = append(p.cmd.Env, opt.ProcEnv(r)...)
		}
		// Its own process group: a terminal's Ctrl-C reaches the launcher
		// only, which forwards it once to every process. Pdeathsig: a
		// launcher killed with -9 takes its processes with it.
		p.cmd.SysProcAttr = sysProcAttr()
		// Pipes of our own (not StdoutPipe): Wait may then run as soon as
		// the process ends, while the relays drain what it wrote.
		outR, outW, err := os.Pipe()
		if err != nil {
			killAll(procs)
			return 0, fmt.Errorf("launch: %w", err)
		}
		errR, errW, err := os.Pipe()
		if err != nil {
			outR.Close()
			outW.Close()
			killAll(procs)
			return 0, fmt.Errorf("launch: %w", err)
		}
		p.cmd.Stdout, p.cmd.Stderr = outW, errW
		if blocks != nil {
			err = startBound(p.cmd, blocks[r])
		} else {
			err = p.cmd.Start()
		}
		outW.Close()
		errW.Close()
		if err != nil {
			outR.Close()
			errR.Close()
			killAll(procs)
			for range procs {
				<-reaped
			}
			return 0, fmt.Errorf("launch: starting rank %d: %w", r, err)
		}
		procs = append(procs, p)
		relays.Add(2)
		go func() {
			defer relays.Done()
			defer outR.Close()
			if r == 0 {
				_, _ = io.Copy(opt.Stdout, outR) // the one table
			} else {
				relayLines(errw, r, outR)
			}
		}()
		go func() {
			defer relays.Done()
			defer errR.Close()
			relayLines(errw, r, errR)
		}()
		go func() {
			_ = p.cmd.Wait()
			reaped <- p
		}()
	}

	var timeout <-chan time.Time
	if opt.Timeout > 0 {
		t := time.NewTimer(opt.Timeout)
		defer t.Stop()
		timeout = t.C
	}
	st := &stopper{procs: procs, errw: errw, grace: opt.Grace, wait: opt.InterruptWait}
	forced := 0 // the code the launcher's own decision imposes (timeout, signal)
	for left := opt.NP; left > 0; {
		select {
		case p := <-reaped:
			left--
			p.done = true
			p.code, p.how = status(p.cmd.ProcessState)
			// A process that ended after the launcher stopped the job ended
			// because of it: its code is not the job's.
			p.counts = st.step == running
			if st.expected(p) {
				break
			}
			if p.code != 0 {
				fmt.Fprintf(errw, "launch: rank %d (pid %d) %s\n", p.rank, p.cmd.Process.Pid, p.how)
			}
			switch {
			case p.code != 0 && st.step == running:
				st.terminate(fmt.Sprintf("rank %d %s", p.rank, p.how))
			case st.step == signalled && st.interrupted:
				// It did not finish the size: the others, in collectives
				// with it, cannot either. They stop at once.
				st.abandon(fmt.Sprintf("rank %d %s", p.rank, p.how), st.sig)
			}
		case s := <-sigs:
			if st.step == running {
				forced = exitSignal + int(s.(syscall.Signal))
			}
			st.interrupt(s.(syscall.Signal))
		case <-timeout:
			timeout = nil
			if st.step == running {
				forced = ExitTimeout
				st.terminate(fmt.Sprintf("the job ran past its %v timeout", opt.Timeout))
			}
		case <-st.timer():
			st.expired()
		}
	}
	st.stopTimer()
	relays.Wait()
	worst := forced
	if st.interrupted && st.allZero() {
		worst = 0 // the signal came as they finished: they did
	}
	for _, p := range procs {
		if p.counts {
			worst = max(worst, p.code)
		}
	}
	return worst, nil
}

// ErrInvalidEnv is a variable of the launcher's environment that no
// launch could use (a usage error: perf exits 6).
var ErrInvalidEnv = errors.New("invalid environment")

// replacedVars looks at the bootstrap variables the environment sets
// for another job, which the launcher replaces with its own job's root
// and token (jobEnv): never in silence. A GCCL_COMM_ID that is not a
// host:port is an error (as it is under any launcher); a valid one, and
// MASTER_ADDR/MASTER_PORT, get a note that they are ignored, as does
// GCCL_JOB_TOKEN (whose value, a secret, is not shown).
func replacedVars(env []string) (notes []string, err error) {
	get := func(k string) (string, bool) {
		v := ""
		for _, kv := range env {
			if name, val, _ := strings.Cut(kv, "="); name == k {
				v = val // the last one counts, as for exec
			}
		}
		return v, strings.TrimSpace(v) != ""
	}
	if v, ok := get(bootstrap.EnvCommID); ok {
		lookup := func(k string) (string, bool) {
			if k == bootstrap.EnvCommID {
				return v, true
			}
			return "", false
		}
		if _, err := bootstrap.Detect(lookup); err != nil {
			return nil, fmt.Errorf("launch: %w: %s; --np starts its own bootstrap root: unset %s",
				ErrInvalidEnv, strings.TrimPrefix(err.Error(), "bootstrap: "), bootstrap.EnvCommID)
		}
		notes = append(notes, fmt.Sprintf("--np starts its own bootstrap root; %s=%s is ignored", bootstrap.EnvCommID, v))
	}
	var torch []string
	for _, k := range []string{bootstrap.EnvMasterAddr, bootstrap.EnvMasterPort} {
		if v, ok := get(k); ok {
			torch = append(torch, k+"="+v)
		}
	}
	if len(torch) > 0 {
		notes = append(notes, fmt.Sprintf("--np starts its own bootstrap root; %s ignored", strings.Join(torch, " ")))
	}
	if _, ok := get(bootstrap.EnvJobToken); ok {
		notes = append(notes, fmt.Sprintf("--np makes a fresh job token; %s is ignored", bootstrap.EnvJobToken))
	}
	return notes, nil
}

// The steps of stopping a job.
const (
	running    = iota
	signalled  // SIGTERM sent (a failure, the timeout) or the first interrupt forwarded
	abandoning // the second interrupt forwarded: the processes stop at once
	killed     // SIGKILL sent
)

// stopper stops a job, step by step: a failure or the timeout sends
// SIGTERM and, after the grace, SIGKILL; an interrupt is forwarded and
// the processes get the time to finish what they do (wait), then the
// signal again (or the user's second one: they stop at once, cleaning
// up) and the grace, then SIGKILL. Only run's goroutine uses it.
type stopper struct {
	procs       []*proc
	errw        io.Writer
	grace, wait time.Duration

	step        int
	sig         syscall.Signal // the signal sent last
	interrupted bool           // the first signal was an interrupt (not a failure or the timeout)
	t           *time.Timer    // the current step's time; nil: none
}

// timer fires when the current step's time is up (never without one).
func (s *stopper) timer() <-chan time.Time {
	if s.t == nil {
		return nil
	}
	return s.t.C
}

func (s *stopper) after(d time.Duration) {
	s.stopTimer()
	s.t = time.NewTimer(d)
}

func (s *stopper) stopTimer() {
	if s.t != nil {
		s.t.Stop()
		s.t = nil
	}
}

// signal sends sig to every process still running and returns their ranks.
func (s *stopper) signal(sig syscall.Signal) string {
	s.sig = sig
	var alive []string
	for _, p := range s.procs {
		if !p.done {
			alive = append(alive, strconv.Itoa(p.rank))
			_ = p.cmd.Process.Signal(sig)
			// A stopped process (SIGSTOP, a debugger detached) acts on
			// the signal only once continued: it would otherwise sit out
			// the grace and be killed without a word.
			_ = p.cmd.Process.Signal(syscall.SIGCONT)
		}
	}
	if len(alive) == 0 {
		return ""
	}
	return "rank" + plural(len(alive)) + " " + strings.Join(alive, ", ")
}

// terminate is a failure or the timeout: SIGTERM now, SIGKILL after the grace.
func (s *stopper) terminate(why string) {
	s.step = signalled
	if ranks := s.signal(syscall.SIGTERM); ranks != "" {
		fmt.Fprintf(s.errw, "launch: stopping %s because %s\n", ranks, why)
	}
	s.after(s.grace)
}

// expected reports whether p ended as it should: with 0, or after an
// interrupt as the signal forwarded asks (it exited 128 + the signal: a
// perf process stopped in order).
func (s *stopper) expected(p *proc) bool {
	exited := p.cmd.ProcessState.Exited() // not killed by the signal
	return p.code == 0 || s.interrupted && exited && p.code == exitSignal+int(s.sig)
}

// allZero reports whether every process exited 0.
func (s *stopper) allZero() bool {
	for _, p := range s.procs {
		if p.code != 0 {
			return false
		}
	}
	return true
}

// interrupt is a signal to the launcher.
func (s *stopper) interrupt(sig syscall.Signal) {
	switch s.step {
	case running:
		s.step, s.interrupted = signalled, true
		ranks := s.signal(sig)
		fmt.Fprintf(s.errw, "launch: %s: forwarded to %s; waiting up to %v for them to finish the current size (Ctrl-C again to stop at once)\n",
			sigName(sig), ranks, s.wait)
		s.after(s.wait)
	case signalled:
		s.abandon(fmt.Sprintf("%s again", sigName(sig)), sig)
	default:
		fmt.Fprintf(s.errw, "launch: %s a third time: SIGKILL\n", sigName(sig))
		s.kill()
	}
}

// abandon sends sig again (to a perf process, a second signal: it stops
// at once, removing the files it had not written), SIGKILL after the grace.
func (s *stopper) abandon(why string, sig syscall.Signal) {
	s.step = abandoning
	if ranks := s.signal(sig); ranks != "" {
		fmt.Fprintf(s.errw, "launch: %s: sent %s to %s, to stop at once (SIGKILL in %v)\n", why, sigName(sig), ranks, s.grace)
	}
	s.after(s.grace)
}

// expired is the end of a step's time.
func (s *stopper) expired() {
	s.t = nil
	if s.step == signalled && s.interrupted {
		s.abandon(fmt.Sprintf("still running %v after %s", s.wait, sigName(s.sig)), s.sig)
		return
	}
	what := sigName(s.sig)
	if s.step == abandoning {
		what = "the second " + what
	}
	for _, p := range s.procs {
		if !p.done {
			fmt.Fprintf(s.errw, "launch: rank %d (pid %d) still running %v after %s: SIGKILL\n", p.rank, p.cmd.Process.Pid, s.grace, what)
		}
	}
	s.kill()
}

func (s *stopper) kill() {
	s.step = killed
	s.stopTimer()
	killAll(s.procs)
}

// sigName is the name a signal goes by on the command line ("SIGINT").
func sigName(s syscall.Signal) string {
	switch s {
	case syscall.SIGINT:
		return "SIGINT"
	case syscall.SIGTERM:
		return "SIGTERM"
	case syscall.SIGKILL:
		return "SIGKILL"
	}
	return s.String()
}

// jobEnv is the base environment without any launcher's variables, plus
// this job's root address (on rootHost, "" for 127.0.0.1) and token.
func jobEnv(base []string, np int, rootHost string) ([]string, error) {
	var port int
	if rootHost == "" {
		rootHost = "127.0.0.1"
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, fmt.Errorf("launch: finding a free port for the bootstrap root: %w", err)
		}
		port = l.Addr().(*net.TCPAddr).Port
		l.Close()
	} else {
		port = 20000 + mrand.IntN(40000)
	}
	var tok [32]byte
	if _, err := rand.Read(tok[:]); err != nil {
		return nil, fmt.Errorf("launch: job token: %w", err)
	}
	drop := map[string]bool{}
	for _, k := range bootstrap.LauncherVariables() {
		drop[k] = true
	}
	for _, k := range []string{bootstrap.EnvCommID, bootstrap.EnvMasterAddr, bootstrap.EnvMasterPort, bootstrap.EnvJobToken} {
		drop[k] = true
	}
	var env []string
	for _, kv := range base {
		k, _, _ := strings.Cut(kv, "=")
		if !drop[k] {
			env = append(env, kv)
		}
	}
	if g := sharedGOMAXPROCS(env, np, runtime.NumCPU()); g != "" {
		env = append(env, g)
	}
	return append(env,
		bootstrap.EnvLaunchSize+"="+strconv.Itoa(np),
		bootstrap.EnvCommID+"="+net.JoinHostPort(rootHost, strconv.Itoa(port)),
		bootstrap.EnvJobToken+"="+hex.EncodeToString(tok[:]),
		bootstrap.EnvLaunchJobID+"="+strconv.Itoa(os.Getpid())+"-"+hex.EncodeToString(tok[:4]),
	), nil
}

// sharedGOMAXPROCS is the GOMAXPROCS setting ("GOMAXPROCS=4") for each
// of np processes on cpus processors when the environment sets none:
//   - more processes than processors: 1. A second Go processor only lets
//     the runtime spin looking for work against the peers the ranks wait
//     for (the 2-core VM, 4 processes' 8 B allreduce: median 14.3 us with
//     it, 28.7 without; Open MPI 8.9);
//   - else the processes' share of the processors, but at least 2: a
//     runtime with all of the host's processors in each of many processes
//     spins its idle ones on its neighbours' cores (16-core Xeon, 8
//     processes unbound, 256 KiB allreduce 83-204 us with 2 against 498-849
//     with 16), while a second one beside a rank bound to one core lets
//     its channel goroutine and the runtime's work run without taking the
//     rank's turn (the Xeon, 16 bound processes, 2 MiB 890-1327 us with 2
//     against 927-2746 with 1; the VM, 2 bound processes' 8 B 0.355 against
//     0.415 us; docs/PERFORMANCE.md 12n).
//
// "" when nothing is to be set (one process, or GOMAXPROCS set).
func sharedGOMAXPROCS(env []string, np, cpus int) string {
	if np <= 1 {
		return ""
	}
	for _, kv := range env {
		if strings.HasPrefix(kv, "GOMAXPROCS=") {
			return ""
		}
	}
	if np > cpus {
		return "GOMAXPROCS=1"
	}
	return "GOMAXPROCS=" + strconv.Itoa(max(2, cpus/np))
}

// CPUBlocks splits cpus (the processors the launcher may use, in order)
// into np consecutive blocks as even as can be, block r for process r;
// nil when there are fewer processors than processes (or none known), so
// that nothing is bound.
func CPUBlocks(cpus []int, np int) [][]int {
	if np < 1 || len(cpus) < np {
		return nil
	}
	blocks := make([][]int, np)
	for r := range np {
		blocks[r] = cpus[r*len(cpus)/np : (r+1)*len(cpus)/np]
	}
	return blocks
}

// status is an ended process's exit code (128+signal when killed) and how
// it ended, in words.
func status(ps *os.ProcessState) (int, string) {
	if ws, ok := ps.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return exitSignal + int(ws.Signal()), fmt.Sprintf("killed by signal %d (%v)", int(ws.Signal()), ws.Signal())
	}
	code := ps.ExitCode()
	return code, fmt.Sprintf("exited with code %d", code)
}

func killAll(procs []*proc) {
	for _, p := range procs {
		if p != nil && !p.done && p.cmd.Process != nil {
			_ = p.cmd.Process.Kill()
		}
	}
}

func plural(n int) string {
	if n == 1 {
		return ""
	}
	return "s"
}

// lineWriter writes whole lines from several goroutines without
// interleaving them.
type lineWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lineWriter) Write(b []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(b)
}

// relayLines copies r's lines to w, each prefixed with the rank.
func relayLines(w io.Writer, rank int, r io.Reader) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	prefix := "[rank " + strconv.Itoa(rank) + "] "
	for sc.Scan() {
		fmt.Fprintf(w, "%s%s\n", prefix, sc.Text())
	}
	_, _ = io.Copy(io.Discard, r) // a line too long: drain, never block the process
}
