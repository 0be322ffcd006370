//go:build unix && !linux

package transport

import "syscall"

// rawRead and rawWrite: see rawio_linux.go; elsewhere the ordinary calls.
func rawRead(fd int, p []byte) (int, error)  { return syscall.Read(fd, p) }
func rawWrite(fd int, p []byte) (int, error) { return syscall.Write(fd, p) }
