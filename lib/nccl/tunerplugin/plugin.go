// Package tunerplugin builds gccl's NCCL tuner plugin (csrc/gccl_tuner.c):
// a shared object NCCL loads through NCCL_TUNER_PLUGIN that applies a
// tuning table's rules (NCCL_TUNER_CONFIG_FILE, the CSV of
// `tune table --nccl-csv`) and, unlike NCCL's example plugin, keeps
// NCCL's channel count wherever a rule does not set one.
package tunerplugin

import (
	_ "embed"
	"errors"
	"fmt"
	"hash/fnv"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

//go:embed csrc/gccl_tuner.c
var source []byte

// FileName is the plugin's conventional file name.
const FileName = "libnccl-tuner-gccl.so"

// Source returns the plugin's C source.
func Source() []byte { return source }

// FindCompiler returns the C compiler to build with: cc (a name or path,
// as $CC says one) when given, else cc, else gcc.
func FindCompiler(cc string) (string, error) {
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
	return "", fmt.Errorf("no C compiler to build the NCCL tuner plugin (tried %s): install gcc, or set CC", strings.Join(tried, ", "))
}

// CompilerFromEnv is FindCompiler($CC), make's and cgo's convention.
func CompilerFromEnv() (string, error) { return FindCompiler(os.Getenv("CC")) }

// CompileFromEnv is CompileWith($CC).
func CompileFromEnv() ([]byte, error) { return CompileWith(os.Getenv("CC")) }

// CompileWith builds the plugin with the compiler FindCompiler(cc) finds
// and returns the shared object's bytes.
func CompileWith(cc string) ([]byte, error) {
	cc, err := FindCompiler(cc)
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "gccl-tuner-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	src := filepath.Join(dir, "gccl_tuner.c")
	if err := os.WriteFile(src, source, 0o644); err != nil {
		return nil, err
	}
	so := filepath.Join(dir, FileName)
	cmd := exec.Command(cc, "-O2", "-Wall", "-fPIC", "-shared", "-fvisibility=hidden", "-o", so, src)
	if msg, err := cmd.CombinedOutput(); err != nil {
		return nil, fmt.Errorf("building the NCCL tuner plugin with %s: %v\n%s", cc, err, msg)
	}
	return os.ReadFile(so)
}

// Build compiles the plugin with cc (as CompileWith) into out (a .so
// path, in a directory that exists), replacing it.
func Build(out, cc string) error {
	if st, err := os.Stat(out); err == nil && st.IsDir() {
		return fmt.Errorf("cannot write %s: it is a directory", out)
	}
	b, err := CompileWith(cc)
	if err != nil {
		return err
	}
	// Write beside and rename: a process that has the old one loaded
	// keeps it, and out is never half-written.
	f, err := os.CreateTemp(filepath.Dir(out), "."+filepath.Base(out)+".tmp-*")
	if err != nil {
		return fmt.Errorf("cannot write %s: %w", out, err)
	}
	defer os.Remove(f.Name()) // gone once renamed; else nothing left behind
	_, err = f.Write(b)
	if err = errors.Join(err, f.Chmod(0o755), f.Close()); err != nil {
		return fmt.Errorf("writing %s: %w", out, err)
	}
	return os.Rename(f.Name(), out)
}

// Cached returns the plugin in the user's cache directory, building it
// there first (with cc, as CompileWith) if it is missing or older than
// this binary's source.
func Cached(cc string) (string, error) {
	dir, err := os.UserCacheDir()
	if err != nil {
		return "", errors.New("no cache directory for the NCCL tuner plugin ($HOME or $XDG_CACHE_HOME unset): build it with `tune plugin --output PATH` and set NCCL_TUNER_PLUGIN")
	}
	h := fnv.New32a()
	h.Write(source)
	out := filepath.Join(dir, "gccl", fmt.Sprintf("%s-%08x", FileName, h.Sum32()))
	if st, err := os.Stat(out); err == nil && st.Mode().IsRegular() {
		return out, nil
	}
	if err := os.MkdirAll(filepath.Dir(out), 0o755); err != nil {
		return "", err
	}
	return out, Build(out, cc)
}
