//go:build !linux

package shm

import (
	"fmt"
	"runtime"
	"time"
)

func Attach(dir, name string, size int, timeout time.Duration, stop func() bool) (*Segment, error) {
	return nil, fmt.Errorf("shm: shared-memory segments are implemented for Linux only, not %s", runtime.GOOS)
}
