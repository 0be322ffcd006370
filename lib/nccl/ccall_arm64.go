//go:build linux && arm64

package nccl

// haveTrampoline: no trampoline here; every call goes through purego.
const haveTrampoline = false

func trampolineCall(fn uintptr, a *cArgs) uintptr {
	panic("nccl: no call trampoline on arm64 (callMode picks purego)")
}
