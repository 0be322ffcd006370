//go:build linux

package shm

import (
	"path/filepath"
	"time"
)

// Attach maps the existing segment name in dir, of size bytes of data,
// without ever creating it: for a segment whose maker handed its name
// over (a window's memory), where a missing name is an error, not a
// segment to make. It waits up to timeout for the maker to finish
// initialising it, giving up early when stop returns true.
func Attach(dir, name string, size int, timeout time.Duration, stop func() bool) (*Segment, error) {
	return attach(filepath.Join(dir, name), HeaderBytes+size, size, timeout, stop)
}
