// stop.go: stopping a job step by step: SIGTERM, the grace, SIGKILL, and
// the forwarding of interrupts.

package launch

import (
	"fmt"
	"io"
	"strconv"
	"strings"
	"syscall"
	"time"
)

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
