package nccl

import (
	"fmt"
	"os"
	"strings"
)

// Environment variables LoadOptionsFromEnv reads, besides the libraries'
// paths (EnvCUDARTLibrary, EnvNCCLLibrary) and the Python environments'
// (VIRTUAL_ENV, CONDA_PREFIX, HOME).
const (
	// EnvCall picks the timed path's calls: "fast" (the default: the
	// trampoline where there is one) or "purego" (purego.SyscallN always,
	// to compare the two on a GPU). Sets LoadOptions.Purego.
	EnvCall = "GCCL_NCCL_CALL"
	// EnvInit set to "byvalue" sets LoadOptions.InitByValue.
	EnvInit = "GCCL_NCCL_INIT"
)

// LoadOptions are what LoadWith needs to find and call the libraries.
// The zero value searches the usual places and takes the fast calls.
type LoadOptions struct {
	// CUDARTLibrary and NCCLLibrary are the libraries' full paths
	// (GCCL_CUDART_LIBRARY, GCCL_NCCL_LIBRARY). One that is set is the
	// only file tried for its library (a path the user named is never
	// silently replaced by another library); empty or blank searches
	// (discover.go).
	CUDARTLibrary, NCCLLibrary string
	// PythonPrefixes are the Python environments whose pip packages the
	// search tries first, in order (VIRTUAL_ENV, CONDA_PREFIX); Home is
	// the user's home, whose ~/.local it tries next (HOME). Empty ones
	// are skipped.
	PythonPrefixes []string
	Home           string
	// Purego makes the timed path's calls through purego.SyscallN rather
	// than the trampoline (GCCL_NCCL_CALL=purego); where there is no
	// trampoline (arm64) they always go through purego.
	Purego bool
	// InitByValue makes CommInitRank pass the unique id by value through
	// ncclCommInitRankConfig even where NCCL has ncclCommInitRankScalable
	// (GCCL_NCCL_INIT=byvalue).
	InitByValue bool
}

// LoadOptionsFromEnv reads the options from the environment, as the perf
// binaries do: the library itself reads no variable. An invalid value is
// an error naming the variable and what is valid.
func LoadOptionsFromEnv() (LoadOptions, error) { return LoadOptionsFromLookup(os.LookupEnv) }

// LoadOptionsFromLookup is LoadOptionsFromEnv over any lookup.
func LoadOptionsFromLookup(lookup func(string) (string, bool)) (LoadOptions, error) {
	var o LoadOptions
	o.CUDARTLibrary, _ = lookup(EnvCUDARTLibrary)
	o.NCCLLibrary, _ = lookup(EnvNCCLLibrary)
	for _, env := range []string{"VIRTUAL_ENV", "CONDA_PREFIX"} {
		if v, ok := lookup(env); ok && v != "" {
			o.PythonPrefixes = append(o.PythonPrefixes, v)
		}
	}
	o.Home, _ = lookup("HOME")
	v, _ := lookup(EnvCall)
	switch strings.TrimSpace(v) {
	case "", "fast":
	case "purego":
		o.Purego = true
	default:
		return o, fmt.Errorf("%s=%q: want fast (the default) or purego", EnvCall, v)
	}
	init, _ := lookup(EnvInit)
	o.InitByValue = init == "byvalue"
	return o, nil
}
