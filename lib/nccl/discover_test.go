package nccl

import (
	"errors"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// fakeEnv is os.LookupEnv over a map.
func fakeEnv(vars map[string]string) func(string) (string, bool) {
	return func(k string) (string, bool) {
		v, ok := vars[k]
		return v, ok
	}
}

// optsOf is the LoadOptions vars ask for (none of these tests sets an
// invalid value).
func optsOf(vars map[string]string) LoadOptions {
	o, err := LoadOptionsFromLookup(fakeEnv(vars))
	if err != nil {
		panic(err)
	}
	return o
}

// fakeGlob is filepath.Glob over canned matches per pattern; it records
// every pattern asked for. The matches are handed out in ascending order,
// as filepath.Glob does, so the test sees candidates reorder them.
type fakeGlob struct {
	matches map[string][]string
	asked   []string
}

func (g *fakeGlob) glob(pattern string) ([]string, error) {
	g.asked = append(g.asked, pattern)
	if pattern == "" {
		return nil, errors.New("empty pattern")
	}
	return append([]string(nil), g.matches[pattern]...), nil
}

func paths(cs []candidate) []string {
	var out []string
	for _, c := range cs {
		out = append(out, c.path)
	}
	return out
}

// TestCandidatesFromEnv: a path the user named in the variable is the only
// candidate (never silently replaced by another library), trimmed of the
// spaces a shell quote can leave; nothing is globbed.
func TestCandidatesFromEnv(t *testing.T) {
	tests := []struct {
		name string
		lib  library
		env  map[string]string
		want string
	}{
		{"cudart", cudartLib, map[string]string{EnvCUDARTLibrary: "/opt/cuda/libcudart.so.13"}, "/opt/cuda/libcudart.so.13"},
		{"cudart trimmed", cudartLib, map[string]string{EnvCUDARTLibrary: "  /opt/cuda/libcudart.so.13\t\n"}, "/opt/cuda/libcudart.so.13"},
		{"nccl", ncclLib, map[string]string{EnvNCCLLibrary: "/x/libnccl.so.2.28.9"}, "/x/libnccl.so.2.28.9"},
		{"nccl trimmed", ncclLib, map[string]string{EnvNCCLLibrary: " /x/lib nccl.so "}, "/x/lib nccl.so"},
		// Each library reads its own variable only.
		{"nccl with both set", ncclLib, map[string]string{EnvNCCLLibrary: "/n.so", EnvCUDARTLibrary: "/c.so", "VIRTUAL_ENV": "/venv"}, "/n.so"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := &fakeGlob{}
			cs, fromEnv := tt.lib.candidates(optsOf(tt.env), g.glob)
			if !fromEnv {
				t.Errorf("fromEnv = false, want true")
			}
			want := []candidate{{path: tt.want}}
			if !reflect.DeepEqual(cs, want) {
				t.Errorf("candidates = %+v, want %+v", cs, want)
			}
			if len(g.asked) != 0 {
				t.Errorf("globbed %q with the variable set", g.asked)
			}
		})
	}
}

// TestCandidatesBlankEnv: an empty or blank variable counts as unset, so
// the search runs (rather than dlopen("") loading the main program).
func TestCandidatesBlankEnv(t *testing.T) {
	for _, lib := range []library{cudartLib, ncclLib} {
		for _, v := range []string{"", "   ", "\t\n"} {
			g := &fakeGlob{}
			cs, fromEnv := lib.candidates(optsOf(map[string]string{lib.env: v}), g.glob)
			if fromEnv {
				t.Errorf("%s with %s=%q: fromEnv = true, want false", lib.what, lib.env, v)
			}
			if len(cs) == 0 || cs[0].path != lib.sonames[0] || !cs[0].soname {
				t.Errorf("%s with %s=%q: candidates = %+v, want the search starting at soname %q", lib.what, lib.env, v, cs, lib.sonames[0])
			}
			if len(g.asked) == 0 {
				t.Errorf("%s with %s=%q: nothing globbed", lib.what, lib.env, v)
			}
		}
	}
}

// TestCandidatesSearchOrder checks the whole search for both libraries:
// sonames first, then pip's packages (VIRTUAL_ENV's, CONDA_PREFIX's, the
// user's, then the system's site-packages), then the system globs; the
// matches of one pattern newest first; a file matched twice listed once.
func TestCandidatesSearchOrder(t *testing.T) {
	env := map[string]string{"VIRTUAL_ENV": "/venv", "CONDA_PREFIX": "/conda", "HOME": "/home/u"}
	tests := []struct {
		name    string
		lib     library
		matches map[string][]string
		want    []candidate
	}{
		{
			name: "nccl",
			lib:  ncclLib,
			matches: map[string][]string{
				// Ascending, as filepath.Glob returns them.
				"/venv/lib/python3*/site-packages/nvidia/nccl/lib/libnccl.so*": {
					"/venv/lib/python3.12/site-packages/nvidia/nccl/lib/libnccl.so.2",
					"/venv/lib/python3.12/site-packages/nvidia/nccl/lib/libnccl.so.2.21.5",
					"/venv/lib/python3.12/site-packages/nvidia/nccl/lib/libnccl.so.2.28.9",
				},
				"/conda/lib/python3*/site-packages/nvidia/cu13/lib/libnccl.so*":         {"/conda/lib/python3.11/site-packages/nvidia/cu13/lib/libnccl.so.2"},
				"/home/u/.local/lib/python3*/site-packages/nvidia/nccl/lib/libnccl.so*": {"/home/u/.local/lib/python3.10/site-packages/nvidia/nccl/lib/libnccl.so.2"},
				"/usr/lib/python3*/dist-packages/nvidia/nccl/lib/libnccl.so*":           {"/usr/lib/python3/dist-packages/nvidia/nccl/lib/libnccl.so.2"},
				"/usr/local/nccl/lib/libnccl.so*": {
					"/usr/local/nccl/lib/libnccl.so.2.21.5",
					"/usr/local/nccl/lib/libnccl.so.2.28.9",
				},
				// The same file through two patterns (the fake says so;
				// on disk a symlinked folder does it): listed once, at
				// its first place.
				"/usr/lib/x86_64-linux-gnu/libnccl.so*": {"/usr/local/nccl/lib/libnccl.so.2.28.9", "/usr/lib/x86_64-linux-gnu/libnccl.so.2"},
			},
			want: []candidate{
				{path: "libnccl.so.2", soname: true},
				{path: "libnccl.so", soname: true},
				{path: "/venv/lib/python3.12/site-packages/nvidia/nccl/lib/libnccl.so.2.28.9"},
				{path: "/venv/lib/python3.12/site-packages/nvidia/nccl/lib/libnccl.so.2.21.5"},
				{path: "/venv/lib/python3.12/site-packages/nvidia/nccl/lib/libnccl.so.2"},
				{path: "/conda/lib/python3.11/site-packages/nvidia/cu13/lib/libnccl.so.2"},
				{path: "/home/u/.local/lib/python3.10/site-packages/nvidia/nccl/lib/libnccl.so.2"},
				{path: "/usr/lib/python3/dist-packages/nvidia/nccl/lib/libnccl.so.2"},
				{path: "/usr/local/nccl/lib/libnccl.so.2.28.9"},
				{path: "/usr/local/nccl/lib/libnccl.so.2.21.5"},
				{path: "/usr/lib/x86_64-linux-gnu/libnccl.so.2"},
			},
		},
		{
			name: "cudart",
			lib:  cudartLib,
			matches: map[string][]string{
				"/venv/lib/python3*/site-packages/nvidia/cu13/lib/libcudart.so.*":              {"/venv/lib/python3.12/site-packages/nvidia/cu13/lib/libcudart.so.13"},
				"/venv/lib/python3*/site-packages/nvidia/cuda_runtime/lib/libcudart.so.*":      {"/venv/lib/python3.12/site-packages/nvidia/cuda_runtime/lib/libcudart.so.12"},
				"/usr/local/lib/python3*/dist-packages/nvidia/cuda_runtime/lib/libcudart.so.*": {"/usr/local/lib/python3.12/dist-packages/nvidia/cuda_runtime/lib/libcudart.so.12"},
				"/usr/local/cuda/lib64/libcudart.so*": {
					"/usr/local/cuda/lib64/libcudart.so",
					"/usr/local/cuda/lib64/libcudart.so.12",
					"/usr/local/cuda/lib64/libcudart.so.12.8.90",
				},
				"/usr/local/cuda/targets/*/lib/libcudart.so*": {
					"/usr/local/cuda/lib64/libcudart.so.12", // lib64 links to targets/x86_64-linux/lib
					"/usr/local/cuda/targets/x86_64-linux/lib/libcudart.so.12",
				},
			},
			want: []candidate{
				{path: "libcudart.so", soname: true},
				{path: "libcudart.so.13", soname: true},
				{path: "libcudart.so.12", soname: true},
				{path: "libcudart.so.11.0", soname: true},
				{path: "/venv/lib/python3.12/site-packages/nvidia/cu13/lib/libcudart.so.13"},
				{path: "/venv/lib/python3.12/site-packages/nvidia/cuda_runtime/lib/libcudart.so.12"},
				{path: "/usr/local/lib/python3.12/dist-packages/nvidia/cuda_runtime/lib/libcudart.so.12"},
				{path: "/usr/local/cuda/lib64/libcudart.so.12.8.90"},
				{path: "/usr/local/cuda/lib64/libcudart.so.12"},
				{path: "/usr/local/cuda/lib64/libcudart.so"},
				{path: "/usr/local/cuda/targets/x86_64-linux/lib/libcudart.so.12"},
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := &fakeGlob{matches: tt.matches}
			cs, fromEnv := tt.lib.candidates(optsOf(env), g.glob)
			if fromEnv {
				t.Errorf("fromEnv = true with %s unset", tt.lib.env)
			}
			if !reflect.DeepEqual(cs, tt.want) {
				t.Errorf("candidates:\n got %q\nwant %q", paths(cs), paths(tt.want))
				for i := range min(len(cs), len(tt.want)) {
					if cs[i] != tt.want[i] {
						t.Errorf("first difference at %d: got %+v, want %+v", i, cs[i], tt.want[i])
						break
					}
				}
			}
			// Every canned pattern must have been asked for, or the
			// table above tests a pattern the code no longer has.
			asked := map[string]bool{}
			for _, p := range g.asked {
				asked[p] = true
			}
			for p := range tt.matches {
				if !asked[p] {
					t.Errorf("pattern %q was never globbed (asked %q)", p, g.asked)
				}
			}
		})
	}
}

// TestCandidatesVenvBeforeSystem: with only VIRTUAL_ENV set, its packages
// come before the system's even when both hold the library, and the
// system's install places come after every pip match.
func TestCandidatesVenvBeforeSystem(t *testing.T) {
	const (
		venv   = "/venv/lib/python3.12/site-packages/nvidia/nccl/lib/libnccl.so.2"
		sysPip = "/usr/local/lib/python3.12/dist-packages/nvidia/nccl/lib/libnccl.so.2"
		sys    = "/usr/local/cuda/lib64/libnccl.so.2"
	)
	g := &fakeGlob{matches: map[string][]string{
		"/usr/local/cuda/lib64/libnccl.so*":                                 {sys},
		"/usr/local/lib/python3*/dist-packages/nvidia/nccl/lib/libnccl.so*": {sysPip},
		"/venv/lib/python3*/site-packages/nvidia/nccl/lib/libnccl.so*":      {venv},
	}}
	cs, _ := ncclLib.candidates(optsOf(map[string]string{"VIRTUAL_ENV": "/venv"}), g.glob)
	var files []string
	for _, c := range cs {
		if !c.soname {
			files = append(files, c.path)
		}
	}
	if want := []string{venv, sysPip, sys}; !reflect.DeepEqual(files, want) {
		t.Errorf("files = %q, want %q", files, want)
	}
	// The sonames lead: the loader's own search (LD_LIBRARY_PATH, ldconfig)
	// wins over anything found on disk.
	for i, c := range cs[:len(ncclLib.sonames)] {
		if !c.soname || c.path != ncclLib.sonames[i] {
			t.Errorf("candidate %d = %+v, want soname %q", i, c, ncclLib.sonames[i])
		}
	}
}

// TestCandidatesNoEnvVars: without VIRTUAL_ENV, CONDA_PREFIX or HOME no
// pattern is built on an empty prefix (which would glob from /lib).
func TestCandidatesNoEnvVars(t *testing.T) {
	for _, lib := range []library{cudartLib, ncclLib} {
		g := &fakeGlob{}
		cs, fromEnv := lib.candidates(optsOf(map[string]string{"VIRTUAL_ENV": "", "HOME": ""}), g.glob)
		if fromEnv || len(cs) != len(lib.sonames) {
			t.Errorf("%s: candidates = %+v, %v; want only the sonames", lib.what, cs, fromEnv)
		}
		for _, p := range g.asked {
			if strings.HasPrefix(p, "/lib/") || strings.HasPrefix(p, "/.local/") || !filepath.IsAbs(p) {
				t.Errorf("%s: globbed %q, built on an empty variable", lib.what, p)
			}
		}
	}
}

// TestCandidatesGlobError: a glob error skips that pattern, not the search.
func TestCandidatesGlobError(t *testing.T) {
	const good = "/usr/local/cuda/lib64/libnccl.so.2"
	glob := func(p string) ([]string, error) {
		if p == "/usr/local/cuda/lib64/libnccl.so*" {
			return []string{good}, nil
		}
		return nil, filepath.ErrBadPattern
	}
	cs, _ := ncclLib.candidates(optsOf(nil), glob)
	if len(cs) != len(ncclLib.sonames)+1 || cs[len(cs)-1].path != good {
		t.Errorf("candidates = %+v, want the sonames then %q", cs, good)
	}
}

// TestSearchPatternsValid: every pattern the search globs is well formed
// (filepath.Glob drops a malformed one silently) and absolute (a relative
// one would depend on the working folder).
func TestSearchPatternsValid(t *testing.T) {
	sites := sitePackages(optsOf(map[string]string{"VIRTUAL_ENV": "/v", "CONDA_PREFIX": "/c", "HOME": "/h"}))
	if len(sites) < 3 || sites[0] != "/v/lib/python3*/site-packages" || sites[1] != "/c/lib/python3*/site-packages" ||
		sites[2] != "/h/.local/lib/python3*/site-packages" {
		t.Errorf("sitePackages = %q, want VIRTUAL_ENV's, CONDA_PREFIX's, then HOME's first", sites)
	}
	for _, lib := range []library{cudartLib, ncclLib} {
		var patterns []string
		for _, s := range sites {
			for _, rel := range lib.pip {
				patterns = append(patterns, filepath.Join(s, rel))
			}
		}
		patterns = append(patterns, lib.system...)
		for _, p := range patterns {
			if _, err := filepath.Match(p, ""); err != nil {
				t.Errorf("%s: pattern %q: %v", lib.what, p, err)
			}
			if !filepath.IsAbs(p) {
				t.Errorf("%s: pattern %q is relative", lib.what, p)
			}
			if !strings.Contains(filepath.Base(p), strings.TrimPrefix(lib.what, "lib")) {
				t.Errorf("%s: pattern %q looks for another library", lib.what, p)
			}
		}
		for _, s := range lib.sonames {
			if strings.Contains(s, "/") || !strings.HasPrefix(s, lib.what+".so") {
				t.Errorf("%s: soname %q is not a bare %s.so name", lib.what, s, lib.what)
			}
		}
	}
}

// TestNotFoundError: the message says what to do next: with the variable
// set, that its path failed and why; else, that the library was not found,
// which variable to set and everything tried.
func TestNotFoundError(t *testing.T) {
	tried := []string{"libnccl.so.2: not in the loader's path", "/usr/local/nccl/lib/libnccl.so.2: invalid ELF header"}
	tests := []struct {
		name    string
		err     *NotFoundError
		want    []string
		notWant []string
	}{
		{
			name: "from env",
			err:  &NotFoundError{Lib: "libcudart", Env: EnvCUDARTLibrary, FromEnv: true, Tried: []string{"/x/libcudart.so: no such file"}},
			want: []string{"libcudart", EnvCUDARTLibrary, "/x/libcudart.so: no such file"},
			// The user named the file: "not found, set the variable" would
			// mislead.
			notWant: []string{"not found"},
		},
		{
			name: "search",
			err:  &NotFoundError{Lib: "libnccl", Env: EnvNCCLLibrary, Tried: tried},
			want: []string{"libnccl not found", "set " + EnvNCCLLibrary, tried[0], tried[1], tried[0] + "; " + tried[1]},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var err error = tt.err
			msg := err.Error()
			checkMessage(t, msg, tt.want, tt.notWant)
		})
	}
}

// Library versions order as numbers, not as text.
func TestVersionLess(t *testing.T) {
	cases := []struct {
		a, b string
		less bool
	}{
		{"libnccl.so.2.9.9", "libnccl.so.2.28.9", true},
		{"libnccl.so.2.28.9", "libnccl.so.2.9.9", false},
		{"libnccl.so.2.28.3", "libnccl.so.2.28.9", true},
		{"libnccl.so.2", "libnccl.so.2.28.9", true},
		{"libcudart.so.12", "libcudart.so.13", true},
		{"libnccl.so.2.28.9", "libnccl.so.2.28.9", false},
		{"a", "b", true},
	}
	for _, c := range cases {
		if got := versionLess(c.a, c.b); got != c.less {
			t.Errorf("versionLess(%q, %q) = %v", c.a, c.b, got)
		}
	}
}
