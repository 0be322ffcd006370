package transport

import (
	"syscall"
	"unsafe"
)

// rawRead and rawWrite are read(2) and write(2) on a non-blocking socket
// without telling Go's scheduler about a system call: they never block,
// and a rank that polls its socket makes one on every turn of its spin,
// which as ordinary system calls let sysmon take the rank's processor
// away (and wake a thread for it) whenever one ran past its 20 us tick.
func rawRead(fd int, p []byte) (int, error)  { return rawIO(syscall.SYS_READ, fd, p) }
func rawWrite(fd int, p []byte) (int, error) { return rawIO(syscall.SYS_WRITE, fd, p) }

func rawIO(trap uintptr, fd int, p []byte) (int, error) {
	if len(p) == 0 {
		return 0, nil
	}
	n, _, e := syscall.RawSyscall(trap, uintptr(fd), uintptr(unsafe.Pointer(&p[0])), uintptr(len(p)))
	if e != 0 {
		return 0, e
	}
	return int(n), nil
}
