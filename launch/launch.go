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
	// Grace is how long processes get after SIGTERM (a failure, the
	// timeout or an interrupt) before SIGKILL; 0: 3 s.
	Grace          time.Duration
	Stdout, Stderr io.Writer
	// Bind gives each process processors of its own: the launcher's own
	// processors split into NP consecutive blocks, process r bound to block
	// r (as mpirun --bind-to core). Nothing is bound when the processes
	// outnumber the processors.
	Bind bool
}

// MaxNP bounds the processes of one launch.
const MaxNP = 1024

// Exit codes of the launcher itself.
const (
	ExitTimeout = 124 // the job ran past Options.Timeout
	exitSignal  = 128 // + the signal's number
)

// Run starts the processes, waits for all of them and returns the job's
// exit code: the worst of those that ended on their own (a process killed
// by signal s counts 128+s), or the launcher's when it stopped the job
// (ExitTimeout, 128+signal for an interrupt).
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
	var (
		stopping bool
		kill     <-chan time.Time
		forced   int // the code the launcher's own decision imposes (timeout, signal)
		left     = opt.NP
	)
	stop := func(sig syscall.Signal, why string) {
		if stopping {
			return
		}
		stopping = true
		var alive []string
		for _, p := range procs {
			if !p.done {
				alive = append(alive, strconv.Itoa(p.rank))
				_ = p.cmd.Process.Signal(sig)
			}
		}
		if len(alive) > 0 {
			fmt.Fprintf(errw, "launch: stopping rank%s %s because %s\n", plural(len(alive)), strings.Join(alive, ", "), why)
		}
		t := time.NewTimer(opt.Grace)
		kill = t.C
	}
	for left > 0 {
		select {
		case p := <-reaped:
			left--
			p.done = true
			p.code, p.how = status(p.cmd.ProcessState)
			// A process that ended after the launcher stopped the job ended
			// because of it: its code is not the job's.
			p.counts = !stopping
			if p.code != 0 {
				fmt.Fprintf(errw, "launch: rank %d (pid %d) %s\n", p.rank, p.cmd.Process.Pid, p.how)
				stop(syscall.SIGTERM, fmt.Sprintf("rank %d %s", p.rank, p.how))
			}
		case s := <-sigs:
			sig := s.(syscall.Signal)
			if stopping {
				// A second signal: no more grace.
				killAll(procs)
				continue
			}
			forced = exitSignal + int(sig)
			stop(sig, "the launcher got "+s.String())
		case <-timeout:
			forced = ExitTimeout
			stop(syscall.SIGTERM, fmt.Sprintf("the job ran past its %v timeout", opt.Timeout))
		case <-kill:
			for _, p := range procs {
				if !p.done {
					fmt.Fprintf(errw, "launch: rank %d (pid %d) still running %v after SIGTERM: SIGKILL\n", p.rank, p.cmd.Process.Pid, opt.Grace)
				}
			}
			killAll(procs)
			kill = nil
		}
	}
	relays.Wait()
	worst := forced
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
