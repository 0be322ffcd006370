// launch.go: starting a job's processes and waiting for them (Run), and
// relaying their output. Stopping is in stop.go, the job's environment in
// env.go.

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
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"strconv"
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
