//go:build linux && (amd64 || arm64)

package nccl

import (
	"errors"
	"fmt"
	"sync"
	"unsafe"

	"github.com/ebitengine/purego"
)

// NCCL takes its parameters (NCCL_PROTO, NCCL_ALGO, NCCL_BUFFSIZE,
// NCCL_TUNER_PLUGIN, NCCL_DEBUG_FILE, ...) from the C library's
// environment, when it reads each: at its first call, or when a
// communicator is created. It has no other way in. SetParam and
// UnsetParam write there, and only there: Go's view of the environment
// (os.Getenv) and what child processes inherit stay what the user set,
// so a caller can always put a parameter back to the user's value.
//
// libc's setenv is not safe beside a concurrent getenv; call these
// between communicator creations, as NCCL's own documentation asks of
// its variables.

var cenv struct {
	once     sync.Once
	err      error
	setenv   func(name, value string, overwrite int32) int32
	unsetenv func(name string) int32
	getenv   func(name string) *byte
}

func loadCEnv() error {
	cenv.once.Do(func() {
		var h uintptr
		var errs []error
		for _, name := range []string{"libc.so.6", "libc.so"} {
			var err error
			if h, err = purego.Dlopen(name, purego.RTLD_NOW|purego.RTLD_GLOBAL); err == nil {
				break
			}
			errs = append(errs, err)
		}
		if h == 0 {
			cenv.err = fmt.Errorf("loading the C library for NCCL's parameters: %w", errors.Join(errs...))
			return
		}
		purego.RegisterLibFunc(&cenv.setenv, h, "setenv")
		purego.RegisterLibFunc(&cenv.unsetenv, h, "unsetenv")
		purego.RegisterLibFunc(&cenv.getenv, h, "getenv")
	})
	return cenv.err
}

// SetParam sets NCCL parameter name to value in the C environment.
func SetParam(name, value string) error {
	if err := loadCEnv(); err != nil {
		return err
	}
	if cenv.setenv(name, value, 1) != 0 {
		return fmt.Errorf("setenv(%s): refused (a name must be non-empty, without '=')", name)
	}
	return nil
}

// UnsetParam removes NCCL parameter name from the C environment.
func UnsetParam(name string) error {
	if err := loadCEnv(); err != nil {
		return err
	}
	if cenv.unsetenv(name) != 0 {
		return fmt.Errorf("unsetenv(%s): refused (a name must be non-empty, without '=')", name)
	}
	return nil
}

// LookupParam reads NCCL parameter name as NCCL would: from the C
// environment.
func LookupParam(name string) (string, bool, error) {
	if err := loadCEnv(); err != nil {
		return "", false, err
	}
	p := cenv.getenv(name) // C memory: read it before the next setenv
	if p == nil {
		return "", false, nil
	}
	n := 0
	for *(*byte)(unsafe.Add(unsafe.Pointer(p), n)) != 0 {
		n++
	}
	return string(unsafe.Slice(p, n)), true, nil
}

// PutParam sets name to value when set is true, else removes it: the
// form a caller restoring the user's value (os.LookupEnv) has at hand.
func PutParam(name, value string, set bool) error {
	if set {
		return SetParam(name, value)
	}
	return UnsetParam(name)
}
