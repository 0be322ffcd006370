// Package fakelib builds a stand-in for libcudart and libnccl (csrc/fake.c)
// for tests and benchmarks of the NCCL backend's host path on machines
// without a GPU: one shared object with both libraries' symbols, whose
// calls count themselves, keep CUDA's and NCCL's per-thread rules and move
// no data. It needs a C compiler (the caller's, cc or gcc); tests skip without one.
package fakelib

import (
	_ "embed"
	"os"
	"path/filepath"

	"github.com/gccl/gccl/lib/nccl/cbuild"
)

//go:embed csrc/fake.c
var source []byte

// FileName is the shared object Build writes.
const FileName = "libfakecudanccl.so"

// The counters fake_count reads, in csrc/fake.c's order.
const (
	SetDevice = iota
	GroupStart
	GroupEnd
	Launch // a group's launch per communicator, or an ungrouped call's
	AllReduce
	Broadcast
	Reduce
	AllGather
	ReduceScatter
	Send
	Recv
	StreamSync
	Memcpy
	EventRecord
	GraphLaunch
	Malloc    // cudaMalloc
	MemAlloc  // ncclMemAlloc
	CommCount // ncclCommCount (nccl-tests' sendrecv calls it)
	UserRank  // ncclCommUserRank
	Foreign   // calls from another OS thread than the first since fake_reset
)

// Build compiles the fake into dir with the C compiler
// cbuild.FindCompiler(cc) finds (cc: a name or path, as $CC says; "" for
// cc or gcc) and returns its path.
func Build(dir, cc string) (string, error) {
	obj := cbuild.Object{What: "the fake CUDA/NCCL library", SrcName: "fake.c", File: FileName, Src: source}
	so, err := obj.Compile(cc)
	if err != nil {
		return "", err
	}
	out := filepath.Join(dir, FileName)
	return out, os.WriteFile(out, so, 0o755)
}
