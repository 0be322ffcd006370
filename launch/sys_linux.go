package launch

import (
	"os/exec"
	"runtime"
	"syscall"

	"golang.org/x/sys/unix"
)

// sysProcAttr puts a process in its own group and kills it if the
// launcher dies.
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}

// startBound starts cmd bound to cpus. The fork inherits the affinity of
// the thread that makes it, so the process is bound from its first
// instruction and every thread it starts keeps it (a Go runtime that no
// GOMAXPROCS overrides sizes itself by it): this thread takes cpus for the
// fork and its own affinity back after.
func startBound(cmd *exec.Cmd, cpus []int) error {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	var old, set unix.CPUSet
	if err := unix.SchedGetaffinity(0, &old); err != nil {
		return cmd.Start()
	}
	for _, c := range cpus {
		set.Set(c)
	}
	if err := unix.SchedSetaffinity(0, &set); err != nil {
		return cmd.Start()
	}
	err := cmd.Start()
	_ = unix.SchedSetaffinity(0, &old) // the mask it just had: cannot be refused
	return err
}
