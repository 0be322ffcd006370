// Package cbuild builds the C that gccl embeds in its binaries (NCCL's
// tuner and profiler plugins, the fake CUDA/NCCL library of the tests)
// into shared objects with the system's C compiler: finding the compiler,
// compiling, writing the object in place atomically, and keeping one built
// copy per source in the user's cache.
package cbuild

import (
	"errors"
	"fmt"
	"hash/fnv"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// FindCompiler returns the C compiler to build with: cc (a name or path,
// as $CC says one) when given, else cc, else gcc. what names the thing to
// build in the error ("the NCCL tuner plugin").
func FindCompiler(cc, what string) (string, error) {
	var tried []string
	for _, c := range []string{cc, "cc", "gcc"} {
		if c = strings.TrimSpace(c); c == "" {
			continue
		}
		if p, err := exec.LookPath(c); err == nil {
			return p, nil
		}
		tried = append(tried, c)
	}
	return "", fmt.Errorf("no C compiler to build %s (tried %s): install gcc, or set CC", what, strings.Join(tried, ", "))
}

// Object is one embedded C source and the shared object built from it.
type Object struct {
	What    string // the thing built, in messages: "the NCCL tuner plugin"
	SrcName string // the C file's name, as the compiler's messages show it
	File    string // the shared object's file name
	Src     []byte // the C source
	// CacheHint says, when there is no cache directory, how to build the
	// object by hand and hand it over.
	CacheHint string
}

// Compile builds the object with the compiler FindCompiler(cc) finds and
// returns the shared object's bytes.
func (o Object) Compile(cc string) ([]byte, error) {
	cc, err := FindCompiler(cc, o.What)
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "gccl-cc-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	src := filepath.Join(dir, o.SrcName)
	if err := os.WriteFile(src, o.Src, 0o644); err != nil {
		return nil, err
	}
	so := filepath.Join(dir, o.File)
	cmd := exec.Command(cc, "-O2", "-Wall", "-fPIC", "-shared", "-fvisibility=hidden", "-o", so, src)
	if msg, err := cmd.CombinedOutput(); err != nil {
		return nil, fmt.Errorf("building %s with %s: %v\n%s", o.What, cc, err, msg)
	}
	return os.ReadFile(so)
}

// Build compiles the object with cc (as Compile) into out (a .so path, in
// a directory that exists), replacing it.
func (o Object) Build(out, cc string) error {
	if st, err := os.Stat(out); err == nil && st.IsDir() {
		return fmt.Errorf("cannot write %s: it is a directory", out)
	}
	b, err := o.Compile(cc)
	if err != nil {
		return err
	}
	return WriteFile(out, b)
}

// WriteFile writes a shared object to out, executable: beside it and
// renamed, so that a process that has the old one loaded keeps it, and out
// is never half-written.
func WriteFile(out string, so []byte) error {
	f, err := os.CreateTemp(filepath.Dir(out), "."+filepath.Base(out)+".tmp-*")
	if err != nil {
		return fmt.Errorf("cannot write %s: %w", out, err)
	}
	defer os.Remove(f.Name()) // gone once renamed; else nothing left behind
	_, err = f.Write(so)
	if err = errors.Join(err, f.Chmod(0o755), f.Close()); err != nil {
		return fmt.Errorf("writing %s: %w", out, err)
	}
	return os.Rename(f.Name(), out)
}

// Cached returns the object in the user's cache directory (gccl/FILE-HASH,
// the hash of its source), building it there first with cc if it is
// missing: a binary with another source builds its own.
func (o Object) Cached(cc string) (string, error) {
	dir, err := os.UserCacheDir()
	if err != nil {
		return "", fmt.Errorf("no cache directory for %s ($HOME or $XDG_CACHE_HOME unset): %s", o.What, o.CacheHint)
	}
	h := fnv.New32a()
	h.Write(o.Src)
	out := filepath.Join(dir, "gccl", fmt.Sprintf("%s-%08x", o.File, h.Sum32()))
	if st, err := os.Stat(out); err == nil && st.Mode().IsRegular() {
		return out, nil
	}
	if err := os.MkdirAll(filepath.Dir(out), 0o755); err != nil {
		return "", err
	}
	return out, o.Build(out, cc)
}
