package launch

import "syscall"

// sysProcAttr puts a process in its own group and kills it if the
// launcher dies.
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}
