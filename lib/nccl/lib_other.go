//go:build !(linux && (amd64 || arm64))

package nccl

import (
	"fmt"
	"runtime"
)

// LoadWith fails: purego calls C libraries without cgo on linux/amd64
// and linux/arm64 here.
func LoadWith(LoadOptions) (*Lib, error) {
	return nil, fmt.Errorf("the NCCL backend runs on linux/amd64 and linux/arm64, not %s/%s", runtime.GOOS, runtime.GOARCH)
}

// Lib is never loaded here.
type Lib struct{}
