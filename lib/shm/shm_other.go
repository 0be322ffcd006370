//go:build !linux

// Package shm is memory shared between the processes of one host. It is
// implemented for Linux only; elsewhere Open fails with a clear error, and
// runs across processes are refused at initialisation.
package shm

import (
	"fmt"
	"runtime"
	"sync/atomic"
	"time"
)

const EnvDir = "GCCL_SHM_DIR"

const HeaderBytes = 4096

const DefaultDir = "/dev/shm"

type Segment struct {
	Path    string
	Created bool
}

func Open(dir, name string, size int, init func([]byte), timeout time.Duration, stop func() bool) (*Segment, error) {
	return nil, fmt.Errorf("shm: shared-memory segments are implemented for Linux only, not %s", runtime.GOOS)
}

func (s *Segment) Data() []byte                { return nil }
func (s *Segment) Word(off int) *atomic.Uint32 { return nil }
func (s *Segment) MarkMapped(ends uint32)      {}
func (s *Segment) Unlink()                     {}
func (s *Segment) Close()                      {}
func RemovePrefix(dir, prefix string) int      { return 0 }
func FutexWake(w *atomic.Uint32, n int)        {}
func FutexWait(w *atomic.Uint32, val uint32, timeout time.Duration) {
	if w.Load() == val {
		time.Sleep(min(timeout, time.Millisecond))
	}
}
func Yield() { runtime.Gosched() }
