package results

import (
	"errors"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"sync"
	"testing"
)

// leftovers are the temporary files of path still on disk.
func leftovers(t *testing.T, path string) []string {
	t.Helper()
	m, err := filepath.Glob(TempPattern(path))
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// write starts a file with create, writes s and commits it.
func write(t *testing.T, create func(string) (*File, error), path, s string) error {
	t.Helper()
	f, err := create(path)
	if err != nil {
		return err
	}
	if _, err := io.WriteString(f, s); err != nil {
		t.Fatal(err)
	}
	return f.Commit()
}

// The final path does not exist until Commit, which puts the whole file
// there at once; the bytes go to a hidden temporary file beside it, which
// Commit renames away.
func TestFileCommitPutsWholeFileInPlace(t *testing.T) {
	path := filepath.Join(t.TempDir(), "out.jsonl")
	f, err := Create(path)
	if err != nil {
		t.Fatal(err)
	}
	tmp := f.TempName()
	if filepath.Dir(tmp) != filepath.Dir(path) || filepath.Base(tmp)[0] != '.' || len(leftovers(t, path)) != 1 {
		t.Fatalf("temporary file %q: want a hidden file beside %s matching %s", tmp, path, TempPattern(path))
	}
	for i := range 3 {
		if _, err := io.WriteString(f, "line "+strconv.Itoa(i)+"\n"); err != nil {
			t.Fatal(err)
		}
		if _, err := os.Stat(path); !errors.Is(err, os.ErrNotExist) {
			t.Fatalf("after %d writes the final path exists (%v): it must appear only when complete", i+1, err)
		}
	}
	if err := f.Commit(); err != nil {
		t.Fatal(err)
	}
	if b, err := os.ReadFile(path); err != nil || string(b) != "line 0\nline 1\nline 2\n" {
		t.Fatalf("committed file %q (%v)", b, err)
	}
	if l := leftovers(t, path); len(l) != 0 {
		t.Errorf("temporary files left: %v", l)
	}
	if st, _ := os.Stat(path); st.Mode().Perm()&0o600 != 0o600 || st.Mode().Perm()&0o111 != 0 {
		t.Errorf("mode %v, want a readable, writable, non-executable file", st.Mode())
	}
	if _, err := f.Write([]byte("late")); err == nil {
		t.Error("a write after Commit succeeded")
	}
	if err := f.Commit(); err != nil {
		t.Errorf("a second Commit: %v, want nothing done", err)
	}
	f.Abort() // after Commit: nothing
	if _, err := os.Stat(path); err != nil {
		t.Errorf("Abort after Commit removed the file: %v", err)
	}
}

// Abort leaves nothing: no final path, no temporary file; a file that was
// there before is untouched.
func TestFileAbortLeavesNothing(t *testing.T) {
	dir := t.TempDir()
	fresh := filepath.Join(dir, "fresh.csv")
	f, err := Create(fresh)
	if err != nil {
		t.Fatal(err)
	}
	io.WriteString(f, "half a rec")
	f.Abort()
	f.Abort()
	if _, err := os.Stat(fresh); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("aborted file exists: %v", err)
	}
	old := filepath.Join(dir, "old.csv")
	os.WriteFile(old, []byte("precious\n"), 0o644)
	f, err = CreateForce(old)
	if err != nil {
		t.Fatal(err)
	}
	io.WriteString(f, "replacement, never finished")
	f.Abort()
	if b, _ := os.ReadFile(old); string(b) != "precious\n" {
		t.Errorf("an aborted --force write changed the old file to %q", b)
	}
	if l := append(leftovers(t, fresh), leftovers(t, old)...); len(l) != 0 {
		t.Errorf("temporary files left: %v", l)
	}
}

// Create never destroys data: an existing file is refused at the start,
// and one that appears while the file is written is not replaced (the
// data written stays in the temporary file, which the error names).
// CreateForce replaces it.
func TestCreateRefusesExistingFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "out.jsonl")
	if err := write(t, Create, path, "precious\n"); err != nil {
		t.Fatal(err)
	}
	_, err := Create(path)
	if !errors.Is(err, ErrExists) {
		t.Fatalf("second Create: %v, want ErrExists", err)
	}
	wantErr(t, err, path, "already exists", "refusing to overwrite")
	if b, _ := os.ReadFile(path); string(b) != "precious\n" {
		t.Errorf("file changed to %q", b)
	}
	if err := write(t, CreateForce, path, "new\n"); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(path); string(b) != "new\n" {
		t.Errorf("CreateForce left %q", b)
	}

	late := filepath.Join(t.TempDir(), "late.jsonl")
	f, err := Create(late)
	if err != nil {
		t.Fatal(err)
	}
	io.WriteString(f, "mine\n")
	tmp := f.TempName()
	os.WriteFile(late, []byte("theirs\n"), 0o644)
	err = f.Commit()
	if !errors.Is(err, ErrExists) {
		t.Fatalf("Commit over a file that appeared: %v, want ErrExists", err)
	}
	wantErr(t, err, late, "refusing to overwrite", tmp)
	if b, _ := os.ReadFile(late); string(b) != "theirs\n" {
		t.Errorf("the file that appeared changed to %q", b)
	}
	if b, _ := os.ReadFile(tmp); string(b) != "mine\n" {
		t.Errorf("what was written is not kept in %s: %q", tmp, b)
	}
}

// A path whose directory is missing, or that is a directory, is refused
// with an error naming it; no directory is made.
func TestCreateRefusesBadPaths(t *testing.T) {
	dir := t.TempDir()
	missing := filepath.Join(dir, "no", "such", "x.json")
	for _, create := range []func(string) (*File, error){Create, CreateForce} {
		_, err := create(missing)
		wantErr(t, err, "cannot write "+missing, "directory "+filepath.Dir(missing)+" does not exist")
		_, err = create(dir)
		wantErr(t, err, "cannot write "+dir, "is a directory")
	}
	if _, err := os.Stat(filepath.Join(dir, "no")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a directory was made: %v", err)
	}
	file := filepath.Join(dir, "f")
	os.WriteFile(file, nil, 0o644)
	_, err := Create(filepath.Join(file, "x.json"))
	wantErr(t, err, "cannot write", file+" is not a directory")
}

// Two files of one run at one path would leave only one: the second is
// refused while the first is being written, and allowed once it is done.
func TestCreateRefusesSamePathTwice(t *testing.T) {
	path := filepath.Join(t.TempDir(), "run.jsonl")
	f, err := Create(path)
	if err != nil {
		t.Fatal(err)
	}
	_, err = CreateForce(path)
	wantErr(t, err, "cannot write "+path, "already writing it")
	f.Abort()
	g, err := CreateForce(path)
	if err != nil {
		t.Fatalf("after the first was aborted: %v", err)
	}
	g.Abort()
}

// A link is written through: the file it points to is replaced, the link
// stays. A device is written in place (it cannot be renamed over).
func TestCreateForceThroughLinkAndDevice(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("symbolic links and /dev/null")
	}
	dir := t.TempDir()
	target := filepath.Join(dir, "target.json")
	link := filepath.Join(dir, "link.json")
	os.WriteFile(target, []byte("old"), 0o644)
	if err := os.Symlink(target, link); err != nil {
		t.Fatal(err)
	}
	if err := write(t, CreateForce, link, "new"); err != nil {
		t.Fatal(err)
	}
	if st, err := os.Lstat(link); err != nil || st.Mode()&os.ModeSymlink == 0 {
		t.Errorf("the link was replaced: %v %v", st.Mode(), err)
	}
	if b, _ := os.ReadFile(target); string(b) != "new" {
		t.Errorf("the link's target holds %q", b)
	}
	if err := write(t, CreateForce, os.DevNull, "discarded"); err != nil {
		t.Fatal(err)
	}
	if st, err := os.Stat(os.DevNull); err != nil || st.Mode().IsRegular() {
		t.Fatalf("%s is now %v (%v)", os.DevNull, st.Mode(), err)
	}
}

// CreateMode makes an executable; AbortPending removes every file not yet
// committed, from any goroutine, and leaves the committed ones.
func TestCreateModeAndAbortPending(t *testing.T) {
	dir := t.TempDir()
	exe := filepath.Join(dir, "p.so")
	f, err := CreateMode(exe, 0o755)
	if err != nil {
		t.Fatal(err)
	}
	io.WriteString(f, "\x7fELF")
	if err := f.Commit(); err != nil {
		t.Fatal(err)
	}
	if st, _ := os.Stat(exe); st.Mode().Perm()&0o100 == 0 {
		t.Errorf("mode %v, want executable", st.Mode())
	}
	var open []string
	for i := range 4 {
		p := filepath.Join(dir, "f"+strconv.Itoa(i))
		f, err := Create(p)
		if err != nil {
			t.Fatal(err)
		}
		io.WriteString(f, "partial")
		open = append(open, p)
	}
	var wg sync.WaitGroup
	var got []string
	wg.Add(1)
	go func() { defer wg.Done(); got = AbortPending() }()
	wg.Wait()
	if len(got) != len(open) {
		t.Errorf("AbortPending aborted %v, want %v", got, open)
	}
	for _, p := range open {
		if _, err := os.Stat(p); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("%s exists after AbortPending: %v", p, err)
		}
		if l := leftovers(t, p); len(l) != 0 {
			t.Errorf("temporary files left: %v", l)
		}
	}
	if _, err := os.Stat(exe); err != nil {
		t.Errorf("the committed file went: %v", err)
	}
}
