// Package profplugin builds gccl's NCCL profiler plugin (csrc/gccl_profiler.c):
// a shared object NCCL loads through NCCL_PROFILER_PLUGIN that records
// NCCL's collectives, point-to-point operations, proxy operations with their
// steps, and kernel channels, and writes them, one file per rank, in the
// Trace Event Format with gccl's conventions (package tef); and merges the
// per-rank files of a run into one.
//
// Tracks (tid) of a rank (pid) in the plugin's files, beside tef's
// convention (tid c: channel c; tid tef.RankTrack: the rank's operations):
// further lanes where NCCL's events overlap without nesting, tef.OpLane,
// tef.ProxyLane and tef.KernelLane.
package profplugin

import (
	_ "embed"
	"os"

	"github.com/gccl/gccl/lib/nccl/cbuild"
)

//go:embed csrc/gccl_profiler.c
var source []byte

// FileName is the plugin's file name, as NCCL names profiler plugins
// (libnccl-profiler-NAME.so: NCCL_PROFILER_PLUGIN=gccl finds it on the
// library path; a path works anywhere).
const FileName = "libnccl-profiler-gccl.so"

// The environment the plugin reads when a communicator is created.
const (
	// EnvOutput is the trace file's path: %r the rank, %p the pid, %h the
	// host, %n the communicator's ordinal in the process, %% a %
	// (default gccl-nccl-trace-r%r-%h-%p-c%n.json).
	EnvOutput = "GCCL_PROFILER_OUTPUT"
	// EnvEvents is how many events a communicator keeps (default
	// 1048576, at most 2^26); the rest are counted as dropped.
	EnvEvents = "GCCL_PROFILER_EVENTS"
	// EnvMask chooses the events: group, coll, p2p, proxyop, proxystep,
	// kernelch or all, joined by commas, or NCCL's bit mask as a number
	// (default coll,p2p,proxyop,proxystep,kernelch).
	EnvMask = "GCCL_PROFILER_MASK"
	// EnvPlugin is NCCL's: the profiler plugin it loads.
	EnvPlugin = "NCCL_PROFILER_PLUGIN"
)

// Interfaces are the profiler interface versions the plugin exports,
// newest first (NCCL takes the newest it knows: v6 from NCCL 2.29, v5 in
// 2.28, v4 in 2.27).
var Interfaces = []string{"ncclProfiler_v6", "ncclProfiler_v5", "ncclProfiler_v4"}

var object = cbuild.Object{
	What: "the NCCL profiler plugin", SrcName: "gccl_profiler.c", File: FileName, Src: source,
	CacheHint: "build it with `tune profiler --output PATH` and set " + EnvPlugin,
}

// Source returns the plugin's C source.
func Source() []byte { return source }

// CompileWith builds the plugin with the C compiler cbuild.FindCompiler(cc)
// finds (cc: a name or path, as $CC says; "" for cc or gcc) and returns
// the shared object's bytes.
func CompileWith(cc string) ([]byte, error) { return object.Compile(cc) }

// CompileFromEnv is CompileWith($CC).
func CompileFromEnv() ([]byte, error) { return CompileWith(os.Getenv("CC")) }

// Build compiles the plugin with cc into out (a .so path, in a directory
// that exists), replacing it.
func Build(out, cc string) error { return object.Build(out, cc) }

// Cached returns the plugin in the user's cache directory, building it
// there first with cc if this source's build is missing.
func Cached(cc string) (string, error) { return object.Cached(cc) }
