// Package lib_test holds checks over the whole library.
package lib_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"strings"
	"testing"
)

// envFuncs are the functions that read the process's environment, by
// import path.
var envFuncs = map[string]map[string]bool{
	"os":      {"Getenv": true, "LookupEnv": true, "Environ": true, "ExpandEnv": true},
	"syscall": {"Getenv": true, "Environ": true},
}

// explicitHelper reports whether a function of this name may read the
// environment: the library's explicit helpers (ccl.ConfigFromEnv,
// Config.FromEnv, IDOptionsFromEnv, nccl.LoadOptionsFromEnv, ...), which a
// caller names to ask for NCCL-style configuration by variables. No other
// function of lib/ may: the rest takes values (issue 42).
func explicitHelper(name string) bool {
	return strings.HasSuffix(name, "FromEnv") || strings.HasSuffix(name, "FromLookup")
}

// envRead is a use of an environment function.
type envRead struct {
	pos  token.Position
	call string // "os.Getenv"
	in   string // the enclosing function ("" at package level)
}

// envReads lists every use of an environment function in f, called or
// passed as a value, with the top-level function it is in (a closure
// counts as its enclosing function's).
func envReads(fset *token.FileSet, f *ast.File) []envRead {
	local := map[string]string{} // the name a file imports a package as -> its path
	var reads []envRead
	for _, imp := range f.Imports {
		path := strings.Trim(imp.Path.Value, `"`)
		if envFuncs[path] == nil {
			continue
		}
		name := path
		if imp.Name != nil {
			name = imp.Name.Name
		}
		if name == "." {
			reads = append(reads, envRead{pos: fset.Position(imp.Pos()), call: "dot import of " + path})
		}
		local[name] = path
	}
	if len(local) == 0 {
		return reads
	}
	inspect := func(n ast.Node, in string) {
		ast.Inspect(n, func(n ast.Node) bool {
			sel, ok := n.(*ast.SelectorExpr)
			if !ok {
				return true
			}
			if id, ok := sel.X.(*ast.Ident); ok && envFuncs[local[id.Name]][sel.Sel.Name] {
				reads = append(reads, envRead{pos: fset.Position(sel.Pos()), call: local[id.Name] + "." + sel.Sel.Name, in: in})
			}
			return true
		})
	}
	for _, d := range f.Decls {
		if fd, ok := d.(*ast.FuncDecl); ok {
			inspect(fd, fd.Name.Name)
		} else {
			inspect(d, "")
		}
	}
	return reads
}

// violations are the reads of src outside the explicit helpers.
func violations(t *testing.T, fset *token.FileSet, name string, src any) (bad, allowed []envRead) {
	t.Helper()
	f, err := parser.ParseFile(fset, name, src, parser.SkipObjectResolution)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range envReads(fset, f) {
		if r.in != "" && explicitHelper(r.in) {
			allowed = append(allowed, r)
		} else {
			bad = append(bad, r)
		}
	}
	return bad, allowed
}

// TestEnvCheckerCatches: the check itself finds a read in an ordinary
// function, a package-level variable, a value passed on and a renamed
// import, and lets the helpers' reads through.
func TestEnvCheckerCatches(t *testing.T) {
	src := `package p

import (
	"os"
	sys "syscall"
)

var home = os.Getenv("HOME")

func Load() error { return load(os.LookupEnv) }

func dir() string { v, _ := sys.Getenv("X"); return v }

func (c Config) FromEnv() (Config, error) { return c.FromLookup(os.LookupEnv) }

func OptionsFromEnv() []string { f := func() []string { return os.Environ() }; return f() }
`
	bad, allowed := violations(t, token.NewFileSet(), "p.go", src)
	var got []string
	for _, r := range bad {
		got = append(got, r.call+" in "+r.in)
	}
	want := "os.Getenv in ,os.LookupEnv in Load,syscall.Getenv in dir"
	if strings.Join(got, ",") != want || len(allowed) != 2 {
		t.Errorf("violations %q, %d allowed; want %q and 2 allowed", got, len(allowed), want)
	}
}

// TestLibReadsEnvOnlyInHelpers: no file of lib/ but tests reads the
// environment outside a function named ...FromEnv or ...FromLookup. Files
// of every platform are read, whatever their build tags.
func TestLibReadsEnvOnlyInHelpers(t *testing.T) {
	fset := token.NewFileSet()
	files, helpers := 0, map[string]bool{}
	err := filepath.WalkDir(".", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if n := d.Name(); path != "." && (n == "testdata" || strings.HasPrefix(n, ".") || strings.HasPrefix(n, "_")) {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		files++
		bad, allowed := violations(t, fset, path, nil)
		for _, r := range bad {
			where := "at package level"
			if r.in != "" {
				where = "in " + r.in
			}
			t.Errorf("%s: %s %s: lib/ reads the environment only in functions named ...FromEnv or ...FromLookup; take the value as an input (an option, a Config field) and read it in such a helper", r.pos, r.call, where)
		}
		for _, r := range allowed {
			helpers[filepath.Base(filepath.Dir(path))+"."+r.in] = true
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	// The walk saw the library: its files and the helpers known to read.
	for _, h := range []string{"ccl.FromEnv", "ccl.IDOptionsFromEnv", "nccl.LoadOptionsFromEnv", "tunerplugin.CompilerFromEnv"} {
		if !helpers[h] {
			t.Errorf("no environment read found in %s (helpers seen: %v): is the walk reading lib/?", h, helpers)
		}
	}
	if files < 50 {
		t.Errorf("read %d files of lib/: want the whole library", files)
	}
}
