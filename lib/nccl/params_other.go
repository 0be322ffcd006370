//go:build !(linux && (amd64 || arm64))

package nccl

import (
	"fmt"
	"runtime"
)

func errNoParams() error {
	return fmt.Errorf("NCCL's parameters: the NCCL backend runs on linux/amd64 and linux/arm64, not %s/%s", runtime.GOOS, runtime.GOARCH)
}

// SetParam fails here: there is no NCCL to read it.
func SetParam(name, value string) error { return errNoParams() }

// UnsetParam fails here.
func UnsetParam(name string) error { return errNoParams() }

// LookupParam fails here.
func LookupParam(name string) (string, bool, error) { return "", false, errNoParams() }

// PutParam fails here.
func PutParam(name, value string, set bool) error { return errNoParams() }
