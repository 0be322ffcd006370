package plots

import (
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
)

const module = "github.com/gccl/gccl/"

// gcclImports lists the gccl packages that the Go files of dir (a
// directory of the module, relative to its root) import, tests too when
// tests is set. Build constraints are ignored: every file counts.
func gcclImports(t *testing.T, root, dir string, tests bool) []string {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(root, dir, "*.go"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no Go files in %s: %v", dir, err)
	}
	seen := map[string]bool{}
	for _, f := range files {
		if !tests && strings.HasSuffix(f, "_test.go") {
			continue
		}
		af, err := parser.ParseFile(token.NewFileSet(), f, nil, parser.ImportsOnly)
		if err != nil {
			t.Fatal(err)
		}
		for _, im := range af.Imports {
			p, _ := strconv.Unquote(im.Path.Value)
			if rest, ok := strings.CutPrefix(p, module); ok {
				seen[rest] = true
			}
		}
	}
	var out []string
	for p := range seen {
		out = append(out, p)
	}
	sort.Strings(out)
	return out
}

// importChain follows gccl imports from dir (its tests included) through
// the module's packages (their tests not) and returns, for every package
// reached, the package that imports it.
func importChain(t *testing.T, root, dir string) map[string]string {
	t.Helper()
	from := map[string]string{dir: ""}
	queue := []string{dir}
	for len(queue) > 0 {
		p := queue[0]
		queue = queue[1:]
		for _, q := range gcclImports(t, root, p, p == dir) {
			if _, ok := from[q]; !ok {
				from[q] = p
				queue = append(queue, q)
			}
		}
	}
	return from
}

// plots draws what its caller decided: neither the gate (ci) nor the
// tuner is among its imports, directly or through another gccl package,
// and perf, which draws through plots, inherits neither. Nor does ci
// import plots.
func TestPlotsImports(t *testing.T) {
	root := ".."
	if _, err := os.Stat(filepath.Join(root, "go.mod")); err != nil {
		t.Fatalf("module root not found: %v", err)
	}
	for pkg, via := range importChain(t, root, "plots") {
		if pkg == "ci" || pkg == "tuner" || strings.HasPrefix(pkg, "ci/") || strings.HasPrefix(pkg, "tuner/") {
			t.Errorf("plots imports %s (through %s): plots draws what its caller decided; the caller runs the gate and the tuner", pkg, via)
		}
	}
	for pkg, via := range importChain(t, root, "ci") {
		if pkg == "plots" {
			t.Errorf("ci imports plots (through %s)", via)
		}
	}
}
