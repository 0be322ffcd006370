//go:build linux && (amd64 || arm64)

package nccl

import (
	"os"
	"runtime"
	"strings"
	"testing"

	"github.com/ebitengine/purego"

	"github.com/gccl/gccl/lib/nccl/fakelib"
)

// fakeSyms loads the fake library (lib/nccl/fakelib) and resolves names.
func fakeSyms(t *testing.T, names ...string) map[string]uintptr {
	t.Helper()
	path, err := fakelib.Build(t.TempDir(), os.Getenv("CC"))
	if err != nil {
		t.Skipf("no fake library: %v", err)
	}
	h, err := purego.Dlopen(path, purego.RTLD_NOW|purego.RTLD_LOCAL)
	if err != nil {
		t.Fatal(err)
	}
	syms := map[string]uintptr{}
	for _, n := range names {
		if syms[n], err = purego.Dlsym(h, n); err != nil {
			t.Fatal(err)
		}
	}
	return syms
}

// Every argument of a call of 0 to 8 integer arguments arrives whole (64
// bits, registers and stack), and the result comes back, by either path.
func TestCallArguments(t *testing.T) {
	names := []string{"fake_args", "fake_int_args"}
	fns := []string{"fake_args0", "fake_args1", "fake_args2", "fake_args3", "fake_args4", "fake_args5", "fake_args6", "fake_args7", "fake_args8"}
	syms := fakeSyms(t, append(names, fns...)...)
	for _, viaPurego := range []bool{false, true} {
		if !viaPurego && !haveTrampoline {
			continue
		}
		l := &Lib{viaPurego: viaPurego}
		for n, name := range fns {
			var a cArgs
			var sum uintptr
			for i := 0; i < n; i++ {
				a[i] = uintptr(i+1)<<40 | uintptr(0x1000+i) // high bits set: no 32-bit truncation
				sum += a[i]
			}
			if n == 0 {
				sum = 7
			}
			got := l.callWide(syms[name], n, a)
			if got != sum {
				t.Errorf("purego=%v %s: returned %#x, want %#x", viaPurego, name, got, sum)
			}
			for i := 0; i < n; i++ {
				if v := l.callWide(syms["fake_args"], 2, cArgs{uintptr(n), uintptr(i)}); v != a[i] {
					t.Errorf("purego=%v %s: argument %d arrived as %#x, want %#x", viaPurego, name, i, v, a[i])
				}
			}
		}
		// int arguments from negative Go ints, an int result.
		neg := int32(-3)
		if got := l.call(syms["fake_int_args"], 3, cArgs{uintptr(1), uintptr(2), uintptr(neg)}); got != 10200-3 {
			t.Errorf("purego=%v int arguments: %d, want %d", viaPurego, got, 10200-3)
		}
	}
}

// callWide is call with the whole 64-bit result (the tests' functions
// return uint64).
func (l *Lib) callWide(fn uintptr, n int, a cArgs) uintptr {
	if l.viaPurego {
		r, _, _ := purego.SyscallN(fn, a[:n]...)
		return r
	}
	return trampolineCall(fn, &a)
}

// GCCL_NCCL_CALL picks the path (LoadOptions.Purego; purego always where
// there is no trampoline); a bad value is an error that says what is
// valid.
func TestCallMode(t *testing.T) {
	env := func(v string) func(string) (string, bool) {
		return func(k string) (string, bool) { return v, k == EnvCall && v != "" }
	}
	for _, c := range []struct {
		v      string
		purego bool
	}{{"", false}, {" fast ", false}, {"purego", true}} {
		o, err := LoadOptionsFromLookup(env(c.v))
		if err != nil || o.Purego != c.purego {
			t.Errorf("%s=%q: Purego %v, %v; want %v", EnvCall, c.v, o.Purego, err, c.purego)
		}
	}
	if _, err := LoadOptionsFromLookup(env("cgo")); err == nil || !strings.Contains(err.Error(), EnvCall) || !strings.Contains(err.Error(), "purego") {
		t.Errorf("a bad value: %v", err)
	}
}

// The trampoline allocates nothing: a timed iteration's calls leave no
// garbage.
func TestCallAllocatesNothing(t *testing.T) {
	if !haveTrampoline {
		t.Skip("no trampoline on " + runtime.GOARCH)
	}
	syms := fakeSyms(t, "fake_args7")
	l := &Lib{}
	if n := testing.AllocsPerRun(1000, func() { l.call(syms["fake_args7"], 7, cArgs{1, 2, 3, 4, 5, 6, 7}) }); n != 0 {
		t.Errorf("%v allocations a call, want 0", n)
	}
}
