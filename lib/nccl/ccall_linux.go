//go:build linux && (amd64 || arm64)

package nccl

import "github.com/ebitengine/purego"

// The timed path's calls into libnccl and libcudart. purego.SyscallN
// costs several times a C call's host time (it copies 64 words, takes a
// pooled block and heap-allocates its variadic arguments); a one-GPU
// sendrecv iteration makes 4 such calls and a 4-GPU allreduce 6, which
// nccl-tests makes from C for a few ns each. On amd64 a call goes instead
// through the runtime's cgocall and a trampoline of this package
// (ccall_amd64.s) that passes up to 8 integer arguments, with no
// allocation (docs/PERFORMANCE.md, "The NCCL backend beside nccl-tests";
// both paths: docs/log/performance-2026-11.md 7d).

// cArgs are a call's integer arguments; unused ones are 0 (a C function
// ignores arguments beyond its own).
type cArgs [8]uintptr

// call calls fn with the first n of a and returns its int result.
func (l *Lib) call(fn uintptr, n int, a cArgs) int32 {
	if l.viaPurego {
		return syscallN(fn, n, a)
	}
	return int32(trampolineCall(fn, &a))
}

// syscallN is the purego path; its own copy of the arguments goes to the
// heap (SyscallN's arguments escape), not call's.
//
//go:noinline
func syscallN(fn uintptr, n int, a cArgs) int32 {
	r, _, _ := purego.SyscallN(fn, a[:n]...)
	return int32(r)
}

// CallPath says which way the timed path's calls go, for the header.
func (l *Lib) CallPath() string {
	if l.viaPurego {
		return "purego.SyscallN"
	}
	return "cgocall trampoline"
}
