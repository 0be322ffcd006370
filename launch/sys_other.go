//go:build !linux

package launch

import (
	"os/exec"
	"syscall"
)

func sysProcAttr() *syscall.SysProcAttr { return &syscall.SysProcAttr{Setpgid: true} }

func startBound(cmd *exec.Cmd, cpus []int) error { return cmd.Start() }
