package archcheck

import (
	"flag"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"
)

const module = "github.com/gccl/gccl/"

// update rewrites the document's table from the code:
// go test ./internal/archcheck -update (then review the diff).
var update = flag.Bool("update", false, "rewrite docs/ARCHITECTURE.md's import table from the code")

// imports maps each package directory of the module (relative, "lib/ccl")
// to the module's packages its non-test files import, under any build tag.
func imports(t *testing.T, root string) map[string][]string {
	t.Helper()
	deps := map[string]map[string]bool{}
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		name := d.Name()
		if d.IsDir() {
			if path != root && (strings.HasPrefix(name, ".") || name == "testdata" || name == "bin") {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(name, ".go") || strings.HasSuffix(name, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(token.NewFileSet(), path, nil, parser.ImportsOnly)
		if err != nil {
			return err
		}
		dir, _ := filepath.Rel(root, filepath.Dir(path))
		dir = filepath.ToSlash(dir)
		if deps[dir] == nil {
			deps[dir] = map[string]bool{}
		}
		for _, imp := range f.Imports {
			p, _ := strconv.Unquote(imp.Path.Value)
			if rest, ok := strings.CutPrefix(p, module); ok {
				deps[dir][rest] = true
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	out := map[string][]string{}
	for dir, set := range deps {
		out[dir] = []string{}
		for p := range set {
			out[dir] = append(out[dir], p)
		}
		sort.Strings(out[dir])
	}
	return out
}

// table renders the imports as the document's block: one line a package
// that imports any of the module's, "pkg -> a b c".
func table(deps map[string][]string) string {
	var lines []string
	for dir, ds := range deps {
		if len(ds) > 0 && !strings.HasPrefix(dir, "cmd/") && !strings.HasPrefix(dir, "scripts") {
			lines = append(lines, dir+" -> "+strings.Join(ds, " "))
		}
	}
	sort.Strings(lines)
	return strings.Join(lines, "\n") + "\n"
}

// closure is every package p reaches through imports.
func closure(deps map[string][]string, p string) map[string]bool {
	seen := map[string]bool{}
	var walk func(string)
	walk = func(q string) {
		for _, d := range deps[q] {
			if !seen[d] {
				seen[d] = true
				walk(d)
			}
		}
	}
	walk(p)
	return seen
}

// TestImportTable: docs/ARCHITECTURE.md's import table is the code's.
func TestImportTable(t *testing.T) {
	deps := imports(t, "../..")
	doc, err := os.ReadFile("../../docs/ARCHITECTURE.md")
	if err != nil {
		t.Fatal(err)
	}
	const begin, end = "<!-- imports:begin -->\n```\n", "```\n<!-- imports:end -->"
	s := string(doc)
	i, j := strings.Index(s, begin), strings.Index(s, end)
	if i < 0 || j < i {
		t.Fatalf("docs/ARCHITECTURE.md has no import table between %q and %q", begin, end)
	}
	got, want := s[i+len(begin):j], table(deps)
	if got != want && *update {
		s = s[:i+len(begin)] + want + s[j:]
		if err := os.WriteFile("../../docs/ARCHITECTURE.md", []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	if got != want {
		t.Errorf("docs/ARCHITECTURE.md's import table is stale (go test ./internal/archcheck -update rewrites it); the code's is:\n%s", want)
	}
}

// TestNoDiagonalImports: the layers' rules. The harness reaches neither
// the gate nor the tuner; plots draw what their caller decided, and the
// report renders what its caller hands in (no lib/, no perf); the gate
// reads records, not the stack; the results store keeps records, not the
// stack; change-point detection is pure statistics (nothing of the
// module); the cost model prices the board from its layout alone; the
// library reaches nothing above it.
func TestNoDiagonalImports(t *testing.T) {
	deps := imports(t, "../..")
	rules := []struct {
		from   string
		banned []string
	}{
		{"perf", []string{"ci", "tuner", "tuner/cli"}},
		{"plots", []string{"ci", "tuner", "tuner/cli", "perf"}},
		{"ci", []string{"lib/ccl", "perf", "plots", "tuner"}},
		{"lib/tuning", []string{"lib/board", "lib/ccl"}},
		{"results", []string{"lib/ccl", "perf", "ci", "tuner", "plots"}},
		{"history", []string{"lib/ccl", "lib/tuning", "perf", "plots", "tuner", "tuner/cli"}},
		{"report", []string{"perf", "ci", "tuner", "tuner/cli", "plots"}},
	}
	for _, r := range rules {
		if _, ok := deps[r.from]; !ok {
			t.Errorf("package %s not found", r.from)
			continue
		}
		reach := closure(deps, r.from)
		for _, b := range r.banned {
			if reach[b] {
				t.Errorf("%s reaches %s", r.from, b)
			}
		}
	}
	for dir := range deps {
		if !strings.HasPrefix(dir, "lib/") {
			continue
		}
		for d := range closure(deps, dir) {
			if !strings.HasPrefix(d, "lib/") && !strings.HasPrefix(d, "internal/") {
				t.Errorf("%s (the library) reaches %s", dir, d)
			}
		}
	}
	if _, ok := deps["changepoint"]; !ok {
		t.Error("package changepoint not found")
	}
	for d := range closure(deps, "changepoint") {
		t.Errorf("changepoint (pure statistics) reaches %s", d)
	}
	// The results store keeps records: it reads them (results) and keys
	// them as the gate does (ci), and reaches nothing of the stack.
	for d := range closure(deps, "history") {
		if strings.HasPrefix(d, "lib/") {
			t.Errorf("history (the results store) reaches %s", d)
		}
	}
	// The report renders plain data: nothing of the stack under it.
	for d := range closure(deps, "report") {
		if strings.HasPrefix(d, "lib/") {
			t.Errorf("report reaches %s", d)
		}
	}
	if !slices.Contains(deps["perf"], "lib/ccl") {
		t.Error("the walk missed perf's import of lib/ccl")
	}
}
