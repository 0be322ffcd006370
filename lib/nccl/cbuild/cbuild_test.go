package cbuild

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestFindCompilerSaysWhat(t *testing.T) {
	t.Setenv("PATH", t.TempDir()) // no cc, no gcc
	_, err := FindCompiler("nope-cc", "the widget")
	if err == nil || !strings.Contains(err.Error(), "no C compiler to build the widget (tried nope-cc, cc, gcc)") {
		t.Errorf("%v", err)
	}
}

// Cached builds once per source into the cache, and not again; Build
// refuses a directory.
func TestCachedAndBuild(t *testing.T) {
	if _, err := FindCompiler("", "x"); err != nil {
		t.Skipf("skipping: %v", err)
	}
	t.Setenv("XDG_CACHE_HOME", t.TempDir())
	o := Object{What: "a test object", SrcName: "x.c", File: "libx.so", Src: []byte("int gccl_x(void) { return 42; }\n")}
	p, err := o.Cached("")
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(p)
	if err != nil || !strings.HasPrefix(string(b), "\x7fELF") {
		t.Fatalf("%s: not a shared object (%v)", p, err)
	}
	if err := os.WriteFile(p, []byte("kept"), 0o755); err != nil {
		t.Fatal(err)
	}
	if q, err := o.Cached(""); err != nil || q != p {
		t.Errorf("second Cached: %q, %v; want %q", q, err, p)
	}
	if b, _ := os.ReadFile(p); string(b) != "kept" {
		t.Error("Cached rebuilt an object it had")
	}
	o.Src = []byte("int gccl_x(void) { return 43; }\n")
	if q, err := o.Cached(""); err != nil || q == p {
		t.Errorf("another source: %q, %v; want a path of its own", q, err)
	}
	dir := t.TempDir()
	if err := o.Build(dir, ""); err == nil || !strings.Contains(err.Error(), "it is a directory") {
		t.Errorf("Build into a directory: %v", err)
	}
	bad := Object{What: "a broken object", SrcName: "bad.c", File: "libbad.so", Src: []byte("this is not C\n")}
	if _, err := bad.Compile(""); err == nil || !strings.Contains(err.Error(), "building a broken object") || !strings.Contains(err.Error(), "bad.c") {
		t.Errorf("a compile error: %v", err)
	}
	if left, _ := filepath.Glob(filepath.Join(dir, "*")); len(left) != 0 {
		t.Errorf("left %v", left)
	}
}
