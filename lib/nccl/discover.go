package nccl

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

// Environment variables naming the libraries' full paths
// (LoadOptions.CUDARTLibrary, NCCLLibrary).
const (
	EnvCUDARTLibrary = "GCCL_CUDART_LIBRARY"
	EnvNCCLLibrary   = "GCCL_NCCL_LIBRARY"
)

// A library is one of the two the backend loads.
type library struct {
	what    string                     // "libcudart", for messages
	env     string                     // the variable that names its full path
	path    func(o LoadOptions) string // the full path o names for it ("" or nil: search)
	sonames []string                   // tried through the dynamic loader's own search
	// pip are the paths, relative to a site-packages folder, where pip's
	// nvidia-* packages put it (globs).
	pip []string
	// system are globs of the usual install places.
	system []string
}

var (
	cudartLib = library{
		what: "libcudart", env: EnvCUDARTLibrary, path: func(o LoadOptions) string { return o.CUDARTLibrary },
		sonames: []string{"libcudart.so", "libcudart.so.13", "libcudart.so.12", "libcudart.so.11.0"},
		pip:     []string{"nvidia/cu13/lib/libcudart.so.*", "nvidia/cuda_runtime/lib/libcudart.so.*"},
		system: []string{"/usr/local/cuda/lib64/libcudart.so*", "/usr/local/cuda/targets/*/lib/libcudart.so*",
			"/usr/lib/x86_64-linux-gnu/libcudart.so*", "/usr/lib/aarch64-linux-gnu/libcudart.so*"},
	}
	ncclLib = library{
		what: "libnccl", env: EnvNCCLLibrary, path: func(o LoadOptions) string { return o.NCCLLibrary },
		sonames: []string{"libnccl.so.2", "libnccl.so"},
		pip:     []string{"nvidia/nccl/lib/libnccl.so*", "nvidia/cu13/lib/libnccl.so*"},
		system: []string{"/usr/local/nccl/lib/libnccl.so*", "/usr/local/cuda/lib64/libnccl.so*",
			"/usr/lib/x86_64-linux-gnu/libnccl.so*", "/usr/lib/aarch64-linux-gnu/libnccl.so*"},
	}
)

// sitePackages are globs of the folders Python packages live in: the
// active virtual or conda environment first (o.PythonPrefixes), then the
// user's (o.Home), the system's and virtual environments under /opt.
func sitePackages(o LoadOptions) []string {
	var dirs []string
	for _, p := range o.PythonPrefixes {
		if p != "" {
			dirs = append(dirs, filepath.Join(p, "lib/python3*/site-packages"))
		}
	}
	if o.Home != "" {
		dirs = append(dirs, filepath.Join(o.Home, ".local/lib/python3*/site-packages"))
	}
	return append(dirs,
		"/usr/local/lib/python3*/dist-packages", "/usr/local/lib/python3*/site-packages",
		"/usr/lib/python3*/dist-packages",
		"/opt/*/.venv/lib/python3*/site-packages", "/opt/conda/lib/python3*/site-packages")
}

// candidate is one way to load a library: a soname for the loader's
// search or a file found on disk.
type candidate struct {
	path   string
	soname bool // path is a bare name for dlopen's own search
}

// candidates lists, in order, where lib is looked for: the full path o
// names alone when it names one (a path the user named is never silently
// replaced by another library); else the sonames, then pip's places, then
// the system's. glob is filepath.Glob (tests fake it).
func (lib library) candidates(o LoadOptions, glob func(string) ([]string, error)) (cs []candidate, fromEnv bool) {
	if lib.path != nil {
		if p := strings.TrimSpace(lib.path(o)); p != "" {
			return []candidate{{path: p}}, true
		}
	}
	for _, s := range lib.sonames {
		cs = append(cs, candidate{path: s, soname: true})
	}
	seen := map[string]bool{}
	add := func(pattern string) {
		matches, _ := glob(pattern)
		// Newest version first: libnccl.so.2.28.9 before libnccl.so.2.9.9.
		sort.SliceStable(matches, func(i, j int) bool { return versionLess(matches[j], matches[i]) })
		for _, m := range matches {
			if !seen[m] {
				seen[m] = true
				cs = append(cs, candidate{path: m})
			}
		}
	}
	for _, site := range sitePackages(o) {
		for _, rel := range lib.pip {
			add(filepath.Join(site, rel))
		}
	}
	for _, g := range lib.system {
		add(g)
	}
	return cs, false
}

// NotFoundError says a library could not be loaded, with everything tried.
type NotFoundError struct {
	Lib     string   // "libnccl"
	Env     string   // the variable that names it
	FromEnv bool     // the variable was set: its path alone was tried
	Tried   []string // each candidate and why it failed
}

func (e *NotFoundError) Error() string {
	var b strings.Builder
	if e.FromEnv {
		fmt.Fprintf(&b, "%s: cannot load the library %s names: %s", e.Lib, e.Env, strings.Join(e.Tried, "; "))
		return b.String()
	}
	fmt.Fprintf(&b, "%s not found: set %s to its full path (tried %s)", e.Lib, e.Env, strings.Join(e.Tried, "; "))
	return b.String()
}

// fileExists is os.Stat for candidates that name a file.
func fileExists(p string) bool {
	st, err := os.Stat(p)
	return err == nil && !st.IsDir()
}

// versionLess orders names by their numbers as numbers: "libnccl.so.2.9.9"
// before "libnccl.so.2.28.9".
func versionLess(a, b string) bool {
	for a != "" && b != "" {
		da, db := digits(a), digits(b)
		if da > 0 && db > 0 {
			na, nb := strings.TrimLeft(a[:da], "0"), strings.TrimLeft(b[:db], "0")
			if len(na) != len(nb) {
				return len(na) < len(nb)
			}
			if na != nb {
				return na < nb
			}
			a, b = a[da:], b[db:]
			continue
		}
		if a[0] != b[0] {
			return a[0] < b[0]
		}
		a, b = a[1:], b[1:]
	}
	return len(a) < len(b)
}

// digits is the length of s's leading run of decimal digits.
func digits(s string) int {
	n := 0
	for n < len(s) && s[n] >= '0' && s[n] <= '9' {
		n++
	}
	return n
}
