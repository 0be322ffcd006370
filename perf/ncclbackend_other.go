//go:build !(linux && (amd64 || arm64))

package perf

import (
	"fmt"
	"io"
	"runtime"
)

// ncclBackend does not exist here: purego reaches C libraries without cgo
// on linux/amd64 and linux/arm64.
type ncclBackend struct{ Embedded }

func newNCCLBackend(o *Options, j *job, nRanks int) (*ncclBackend, error) {
	return nil, fmt.Errorf("the NCCL backend runs on linux/amd64 and linux/arm64, not %s/%s", runtime.GOOS, runtime.GOARCH)
}

func (be *ncclBackend) Versions() (string, string, string) { return "", "", "" }

func (be *ncclBackend) Close() error { return nil }

// finishNCCLTrace has nothing to merge: no NCCL ran here.
func finishNCCLTrace(trace string, j *job, w io.Writer) error { return nil }
