//go:build linux && amd64

package nccl

import "unsafe"

// haveTrampoline: this architecture has ccall_amd64.s.
const haveTrampoline = true

// cFrame is what the trampoline reads and writes: the function, its
// arguments and its result (offsets fixed in ccall_amd64.s).
type cFrame struct {
	fn uintptr
	a  cArgs
	r  uintptr
}

// trampolineABI0 is the trampoline's address (set in ccall_amd64.s).
var trampolineABI0 uintptr

// runtime_cgocall is runtime.cgocall, which the runtime keeps for
// purego: it runs fn(arg) on the system stack, the goroutine marked as in
// a system call. arg does not escape: the goroutine's stack does not move
// while it is in the call, as cgo's own calls rely on.
//
//go:linkname runtime_cgocall runtime.cgocall
//go:noescape
func runtime_cgocall(fn uintptr, arg unsafe.Pointer) int32

// trampolineCall calls fn with a's 8 integer arguments.
func trampolineCall(fn uintptr, a *cArgs) uintptr {
	f := cFrame{fn: fn, a: *a}
	runtime_cgocall(trampolineABI0, unsafe.Pointer(&f))
	return f.r
}
