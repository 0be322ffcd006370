//go:build unix

package bootstrap

import "syscall"

// raiseFileLimit raises this process's soft limit on open files to its
// hard limit and returns the limit in force.
func raiseFileLimit() int {
	var rl syscall.Rlimit
	if syscall.Getrlimit(syscall.RLIMIT_NOFILE, &rl) != nil {
		return 1024
	}
	if rl.Cur < rl.Max {
		want := rl
		want.Cur = min(rl.Max, 1<<20)
		if syscall.Setrlimit(syscall.RLIMIT_NOFILE, &want) == nil {
			rl = want
		}
	}
	return int(min(rl.Cur, 1<<20))
}
