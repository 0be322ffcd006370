//go:build linux && (amd64 || arm64)

package nccl

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// notALibrary are files that exist but that dlopen must refuse: Load has
// to report them, not crash on them.
var notALibrary = []struct {
	name    string
	content []byte
}{
	// Longer than an ELF header, so dlopen reads and rejects it.
	{"garbage", bytes.Repeat([]byte("this is not an ELF shared object\n"), 128)},
	{"empty", nil},
	{"truncated ELF", []byte("\x7fELF\x02\x01\x01\x00")},
}

// loadFromEnv is LoadWith(LoadOptionsFromEnv()), as the perf binaries load.
func loadFromEnv(t *testing.T) (*Lib, error) {
	t.Helper()
	o, err := LoadOptionsFromEnv()
	if err != nil {
		t.Fatal(err)
	}
	return LoadWith(o)
}

// checkFromEnv asserts err is the *NotFoundError of lib's variable naming
// path.
func checkFromEnv(t *testing.T, err error, lib library, path string) {
	t.Helper()
	if err == nil {
		t.Fatalf("loading %s from %s = %q succeeded, want an error", lib.what, lib.env, path)
	}
	var nf *NotFoundError
	if !errors.As(err, &nf) {
		t.Fatalf("error %q (%T) is not a *NotFoundError", err, err)
	}
	if !nf.FromEnv {
		t.Errorf("FromEnv = false with %s set: %v", lib.env, err)
	}
	if nf.Lib != lib.what || nf.Env != lib.env {
		t.Errorf("NotFoundError{Lib: %q, Env: %q}, want %q, %q", nf.Lib, nf.Env, lib.what, lib.env)
	}
	// The named path alone is tried: no fallback to another library.
	if len(nf.Tried) != 1 || !strings.HasPrefix(nf.Tried[0], path+": ") {
		t.Errorf("Tried = %q, want the one entry %q: why", nf.Tried, path)
	}
	if !strings.Contains(err.Error(), path) || !strings.Contains(err.Error(), lib.env) {
		t.Errorf("error %q does not name %s and %s", err, path, lib.env)
	}
}

// TestLoadEnvMissing: GCCL_CUDART_LIBRARY naming no file fails with a
// *NotFoundError that says so, rather than searching elsewhere.
func TestLoadEnvMissing(t *testing.T) {
	dir := t.TempDir()
	tests := []struct {
		name, path string
	}{
		{"no such file", filepath.Join(dir, "nope", "libcudart.so.13")},
		// A folder is no library either (fileExists wants a file).
		{"a folder", dir},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Setenv(EnvCUDARTLibrary, tt.path)
			start := time.Now()
			l, err := loadFromEnv(t)
			t.Logf("Load failed in %v", time.Since(start))
			if l != nil {
				t.Errorf("LoadWith returned a *Lib with the error %v", err)
			}
			checkFromEnv(t, err, cudartLib, tt.path)
			if err != nil && !strings.Contains(err.Error(), "no such file") {
				t.Errorf("error %q does not say the file is missing", err)
			}
		})
	}
}

// TestLoadEnvNotALibrary: GCCL_CUDART_LIBRARY naming a file dlopen refuses
// fails (no panic, no fallback) with an error naming the file.
func TestLoadEnvNotALibrary(t *testing.T) {
	for _, tt := range notALibrary {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "libcudart.so.13")
			if err := os.WriteFile(path, tt.content, 0o644); err != nil {
				t.Fatal(err)
			}
			t.Setenv(EnvCUDARTLibrary, path)
			start := time.Now()
			l, err := loadFromEnv(t)
			t.Logf("Load failed in %v: %v", time.Since(start), err)
			if l != nil {
				t.Errorf("LoadWith returned a *Lib with the error %v", err)
			}
			checkFromEnv(t, err, cudartLib, path)
			// dlopen's reason follows the path; it is not "no such file".
			if err != nil && strings.Contains(err.Error(), path+": no such file") {
				t.Errorf("error %q calls an existing file missing", err)
			}
		})
	}
}

// TestOpenNCCLFromEnv: libnccl's variable behaves as libcudart's (Load
// reaches libnccl only after libcudart loads, so open is called directly).
func TestOpenNCCLFromEnv(t *testing.T) {
	dir := t.TempDir()
	garbage := filepath.Join(dir, "libnccl.so.2")
	if err := os.WriteFile(garbage, []byte("not ELF"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, path := range []string{filepath.Join(dir, "missing.so"), garbage} {
		h, got, err := open(ncclLib, LoadOptions{NCCLLibrary: "  " + path + " "})
		if h != 0 || got != "" {
			t.Errorf("open(%q) = %#x, %q with the error %v", path, h, got, err)
		}
		checkFromEnv(t, err, ncclLib, path)
	}
}

// TestOpenSearchNotFound runs the search over a library no machine has: a
// soname the loader cannot find is reported as such, files that are not
// libraries with dlopen's reason, and the error says which variable to set.
func TestOpenSearchNotFound(t *testing.T) {
	dir := t.TempDir()
	for _, name := range []string{"libgcclnope.so.1", "libgcclnope.so.2"} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte("junk"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	lib := library{
		what:    "libgcclnope",
		env:     "GCCL_TEST_NOPE_LIBRARY",
		sonames: []string{"libgcclnope.so.7"},
		system:  []string{filepath.Join(dir, "libgcclnope.so*"), filepath.Join(dir, "absent", "libgcclnope.so*")},
	}
	h, got, err := open(lib, LoadOptions{})
	if err == nil {
		t.Fatalf("open = %#x, %q, nil; want an error", h, got)
	}
	var nf *NotFoundError
	if !errors.As(err, &nf) {
		t.Fatalf("error %q (%T) is not a *NotFoundError", err, err)
	}
	if nf.FromEnv {
		t.Errorf("FromEnv = true with %s unset", lib.env)
	}
	want := []string{
		"libgcclnope.so.7: not in the loader's path",
		filepath.Join(dir, "libgcclnope.so.2") + ": ",
		filepath.Join(dir, "libgcclnope.so.1") + ": ",
	}
	if len(nf.Tried) != len(want) {
		t.Fatalf("Tried = %q, want %d entries", nf.Tried, len(want))
	}
	for i, w := range want {
		if !strings.HasPrefix(nf.Tried[i], w) {
			t.Errorf("Tried[%d] = %q, want it to start %q", i, nf.Tried[i], w)
		}
	}
	msg := err.Error()
	for _, w := range []string{"libgcclnope not found", "set GCCL_TEST_NOPE_LIBRARY"} {
		if !strings.Contains(msg, w) {
			t.Errorf("error %q lacks %q", msg, w)
		}
	}
}

// TestResolved: Lib reports the file a symlink leads to (libnccl.so.2 ->
// libnccl.so.2.28.9 tells the version), and a soname as is.
func TestResolved(t *testing.T) {
	dir := t.TempDir()
	target := filepath.Join(dir, "libnccl.so.2.28.9")
	if err := os.WriteFile(target, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, "libnccl.so.2")
	if err := os.Symlink("libnccl.so.2.28.9", link); err != nil {
		t.Fatal(err)
	}
	wantTarget, err := filepath.EvalSymlinks(target) // TempDir may sit under a symlink
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		c    candidate
		want string
	}{
		{candidate{path: link}, wantTarget},
		{candidate{path: target}, wantTarget},
		{candidate{path: "libgcclnope.so.7", soname: true}, "libgcclnope.so.7"},
	}
	for _, tt := range tests {
		if got := resolved(tt.c); got != tt.want {
			t.Errorf("resolved(%+v) = %q, want %q", tt.c, got, tt.want)
		}
	}
}

// TestCString: C strings end at the first NUL, or at the buffer's end.
func TestCString(t *testing.T) {
	tests := []struct {
		in   []byte
		want string
	}{
		{[]byte("0000:1b:00.0\x00garbage"), "0000:1b:00.0"},
		{[]byte("\x00abc"), ""},
		{[]byte("NVIDIA H100"), "NVIDIA H100"},
		{nil, ""},
	}
	for _, tt := range tests {
		if got := cString(tt.in); got != tt.want {
			t.Errorf("cString(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

// TestErrWrappers: success is nil; a failure becomes an *Error carrying the
// library's text and, for NCCL, ncclGetLastError's detail for that
// communicator, trimmed.
func TestErrWrappers(t *testing.T) {
	var lastComm uintptr
	l := &Lib{
		cudaGetErrorString: func(rc int32) string { return "cuda text" },
		ncclGetErrorString: func(rc int32) string { return "nccl text" },
		ncclGetLastError: func(comm uintptr) string {
			lastComm = comm
			return "  peer 3 went away\n"
		},
	}
	if err := l.cudaErr("cudaFree", 0); err != nil {
		t.Errorf("cudaErr(0) = %v, want nil", err)
	}
	if err := l.ncclErr("ncclSend", 0, 7); err != nil {
		t.Errorf("ncclErr(0) = %v, want nil", err)
	}
	var e *Error
	if err := l.cudaErr("cudaFree", 2); !errors.As(err, &e) ||
		*e != (Error{Call: "cudaFree", Lib: "CUDA", Code: 2, Text: "cuda text"}) {
		t.Errorf("cudaErr(2) = %#v", err)
	}
	if err := l.ncclErr("ncclSend", 6, 0xbeef); !errors.As(err, &e) ||
		*e != (Error{Call: "ncclSend", Lib: "NCCL", Code: 6, Text: "nccl text", Detail: "peer 3 went away"}) {
		t.Errorf("ncclErr(6) = %#v", err)
	}
	if lastComm != 0xbeef {
		t.Errorf("ncclGetLastError got comm %#x, want 0xbeef", lastComm)
	}
	// Without ncclGetLastError there is no detail, and no crash.
	l.ncclGetLastError = nil
	if err := l.ncclErr("ncclSend", 6, 0); !errors.As(err, &e) || e.Detail != "" {
		t.Errorf("ncclErr without ncclGetLastError = %#v", err)
	}
}

// TestOptionalSymbols: what an older NCCL lacks is reported as an error
// naming the library and the release needed, not a nil-func panic.
func TestOptionalSymbols(t *testing.T) {
	l := &Lib{NCCLPath: "/x/libnccl.so.2.19.3"}
	if _, err := l.MemAlloc(1 << 20); err == nil || !strings.Contains(err.Error(), l.NCCLPath) ||
		!strings.Contains(err.Error(), "ncclMemAlloc") {
		t.Errorf("MemAlloc without ncclMemAlloc: %v", err)
	}
	if _, err := l.WindowRegister(1, 2, 3); err == nil || !strings.Contains(err.Error(), l.NCCLPath) ||
		!strings.Contains(err.Error(), "2.27") {
		t.Errorf("WindowRegister without ncclCommWindowRegister: %v", err)
	}
}

// TestInitHow: ncclCommInitRankScalable where NCCL has it, unless
// GCCL_NCCL_INIT=byvalue asks for the by-value path.
func TestInitHow(t *testing.T) {
	scalable := func(*uintptr, int32, int32, int32, *UniqueID, *config) int32 { return 0 }
	tests := []struct {
		name     string
		scalable bool
		env      string
		want     string
	}{
		{"old NCCL", false, "", "ncclCommInitRankConfig"},
		{"new NCCL", true, "", "ncclCommInitRankScalable"},
		{"new NCCL, byvalue", true, "byvalue", "ncclCommInitRankConfig"},
		{"new NCCL, other value", true, "scalable", "ncclCommInitRankScalable"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o, err := LoadOptionsFromLookup(fakeEnv(map[string]string{EnvInit: tt.env}))
			if err != nil {
				t.Fatal(err)
			}
			l := &Lib{initByValue: o.InitByValue}
			if tt.scalable {
				l.ncclCommInitScalable = scalable
			}
			if got := l.InitHow(); !strings.HasPrefix(got, tt.want) {
				t.Errorf("InitHow() = %q, want %s", got, tt.want)
			}
		})
	}
}

// TestCopyEmpty: an empty copy returns before calling CUDA (the symbols
// here are unset, so a call would crash), as cudaMemcpyAsync of &host[0]
// cannot take an empty slice.
func TestCopyEmpty(t *testing.T) {
	l := &Lib{}
	if err := l.ToDevice(0, nil, 0); err != nil {
		t.Errorf("ToDevice(empty) = %v", err)
	}
	if err := l.ToHost([]byte{}, 0, 0); err != nil {
		t.Errorf("ToHost(empty) = %v", err)
	}
}
