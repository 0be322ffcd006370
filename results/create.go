package results

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"sync/atomic"
)

// File is a result file being written. Its bytes go to a temporary file
// beside the final path (".NAME.tmp-PID-N": hidden, and in the same
// directory so that the rename is atomic), and Commit renames it into
// place once it is complete. The final path therefore holds a whole file
// or nothing: a run that is killed, fails or is abandoned never leaves it
// empty or half-written. Abort removes the temporary file.
//
// A File is safe for concurrent use: a run's interrupt handler may abort
// or commit it while the run writes.
type File struct {
	path string // the final path, as given
	// dest is where Commit puts the file: path, or its target when path
	// is a symbolic link (writing through a link replaces what it points
	// to, as opening it would have).
	dest  string
	force bool // Commit may replace an existing file at dest

	mu sync.Mutex
	// f is the open temporary file (or the file itself in direct mode);
	// nil once committed or aborted. Guarded by mu.
	f *os.File
	// direct: f is dest itself, a device or pipe an explicit --force
	// writes through (such a thing cannot be replaced by a rename).
	direct bool
}

// Create starts a new result file at path. It never destroys data: when
// path already exists it returns an error wrapping ErrExists that says so,
// and Commit refuses (without losing what was written) if something
// created path in the meantime.
func Create(path string) (*File, error) { return create(path, false, 0o644) }

// CreateForce starts a result file at path that replaces an existing one
// when it is committed. Callers use it only when the user asked for that
// explicitly (a --force flag).
func CreateForce(path string) (*File, error) { return create(path, true, 0o644) }

// CreateMode is CreateForce for a file of mode perm (an executable).
func CreateMode(path string, perm fs.FileMode) (*File, error) { return create(path, true, perm) }

// tempSeq numbers the temporary files of this process. Incremented by
// every create, from any goroutine.
var tempSeq atomic.Int64

// tempPrefix is how every temporary name of path's begins; TempPattern
// globs them.
func tempPrefix(path string) string {
	return filepath.Join(filepath.Dir(path), "."+filepath.Base(path)+".tmp-")
}

// TempPattern is a glob matching the temporary files of path, of any
// process (tests look for leftovers with it).
func TempPattern(path string) string { return tempPrefix(path) + "*" }

func create(path string, force bool, perm fs.FileMode) (*File, error) {
	if err := checkParent(path); err != nil {
		return nil, err
	}
	rf := &File{path: path, dest: path, force: force}
	st, err := os.Lstat(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
	case err != nil:
		return nil, err
	case st.IsDir():
		return nil, fmt.Errorf("cannot write %s: it is a directory", path)
	case !force:
		return nil, fmt.Errorf("%s already exists; refusing to overwrite it: %w", path, ErrExists)
	case st.Mode()&fs.ModeSymlink != 0:
		if st, err = os.Stat(path); err != nil {
			return nil, fmt.Errorf("cannot write %s: %w", path, err)
		}
		switch {
		case st.IsDir():
			return nil, fmt.Errorf("cannot write %s: it links to a directory", path)
		case !st.Mode().IsRegular():
			rf.direct = true // /dev/stdout: written through the link
		default:
			if rf.dest, err = filepath.EvalSymlinks(path); err != nil {
				return nil, fmt.Errorf("cannot write %s: %w", path, err)
			}
		}
	default:
		rf.direct = !st.Mode().IsRegular()
	}
	if err := pending.add(rf); err != nil {
		return nil, err
	}
	if rf.direct {
		rf.f, err = os.OpenFile(rf.dest, os.O_WRONLY|os.O_TRUNC, perm)
	} else {
		rf.f, err = openTemp(rf.dest, perm)
	}
	if err != nil {
		pending.remove(rf)
		return nil, err
	}
	return rf, nil
}

// checkParent refuses a path whose directory does not exist: result files
// are never written where the user did not expect, and directories are
// never made for them.
func checkParent(path string) error {
	dir := filepath.Dir(path)
	st, err := os.Stat(dir)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return fmt.Errorf("cannot write %s: directory %s does not exist", path, dir)
	case err != nil:
		return fmt.Errorf("cannot write %s: %w", path, err)
	case !st.IsDir():
		return fmt.Errorf("cannot write %s: %s is not a directory", path, dir)
	}
	return nil
}

// openTemp creates a fresh temporary file beside dest.
func openTemp(dest string, perm fs.FileMode) (*os.File, error) {
	for range 100 {
		name := tempPrefix(dest) + strconv.Itoa(os.Getpid()) + "-" + strconv.FormatInt(tempSeq.Add(1), 10)
		f, err := os.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_EXCL, perm)
		if !errors.Is(err, fs.ErrExist) {
			if err != nil {
				return nil, fmt.Errorf("cannot write %s: %w", dest, err)
			}
			return f, nil
		}
	}
	return nil, fmt.Errorf("cannot write %s: no free temporary name %s", dest, TempPattern(dest))
}

// Name is the file's final path.
func (f *File) Name() string { return f.path }

// TempName is the temporary file being written ("" once committed or
// aborted, or when writing a device through --force).
func (f *File) TempName() string {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.f == nil || f.direct {
		return ""
	}
	return f.f.Name()
}

// errClosed is the error of a write after Commit or Abort.
var errClosed = errors.New("result file already committed or aborted")

// Write writes to the temporary file.
func (f *File) Write(b []byte) (int, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.f == nil {
		return 0, fmt.Errorf("%s: %w", f.path, errClosed)
	}
	return f.f.Write(b)
}

// Commit puts the complete file in place: synced, closed and renamed to
// its final path. Without force, a file that appeared at the final path
// meanwhile is not replaced: Commit fails, naming the temporary file that
// keeps what was written. On any other failure the temporary file is
// removed. Commit after Commit or Abort does nothing.
func (f *File) Commit() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.f == nil {
		return nil
	}
	defer pending.remove(f)
	tmp := f.f.Name()
	syncErr := f.f.Sync()
	if f.direct {
		syncErr = nil // a device or pipe need not sync
	}
	err := errors.Join(syncErr, f.f.Close())
	f.f = nil
	if err != nil {
		if !f.direct {
			os.Remove(tmp)
		}
		return fmt.Errorf("writing %s: %w", f.path, err)
	}
	if f.direct {
		return nil
	}
	if f.force {
		err = os.Rename(tmp, f.dest)
	} else {
		err = renameNoReplace(tmp, f.dest)
		if errors.Is(err, ErrExists) {
			return fmt.Errorf("%s appeared while it was being written; refusing to overwrite it: what was written is in %s: %w", f.path, tmp, ErrExists)
		}
	}
	if err != nil {
		os.Remove(tmp)
		return fmt.Errorf("writing %s: %w", f.path, err)
	}
	return nil
}

// renameNoReplace renames tmp to dest unless dest exists (ErrExists): a
// hard link fails atomically if it does; a file system without hard links
// falls back to a check, then the rename.
func renameNoReplace(tmp, dest string) error {
	err := os.Link(tmp, dest)
	if err == nil {
		return os.Remove(tmp)
	}
	if errors.Is(err, fs.ErrExist) {
		return ErrExists
	}
	if _, serr := os.Lstat(dest); serr == nil {
		return ErrExists
	}
	return os.Rename(tmp, dest)
}

// Abort discards the file: the temporary file is closed and removed, and
// the final path is left as it was. Abort after Commit or Abort does
// nothing, so `defer f.Abort()` cleans up every early return.
func (f *File) Abort() {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.f == nil {
		return
	}
	f.f.Close()
	if !f.direct {
		os.Remove(f.f.Name())
	}
	f.f = nil
	pending.remove(f)
}

// pending are the files of this process not yet committed or aborted,
// by final path: two at once for one path would leave only one, so the
// second is refused; AbortPending removes them all.
var pending = &registry{m: map[string]*File{}}

type registry struct {
	mu sync.Mutex
	m  map[string]*File // by absolute final path; guarded by mu
}

func key(f *File) string {
	if abs, err := filepath.Abs(f.dest); err == nil {
		return abs
	}
	return f.dest
}

func (r *registry) add(f *File) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	k := key(f)
	if _, busy := r.m[k]; busy {
		return fmt.Errorf("cannot write %s: this run is already writing it (give each output a path of its own)", f.path)
	}
	r.m[k] = f
	return nil
}

func (r *registry) remove(f *File) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.m[key(f)] == f {
		delete(r.m, key(f))
	}
}

// AbortPending aborts every file of this process not yet committed (an
// interrupted run about to exit at once) and returns their final paths.
func AbortPending() []string {
	pending.mu.Lock()
	files := make([]*File, 0, len(pending.m))
	for _, f := range pending.m {
		files = append(files, f)
	}
	pending.mu.Unlock()
	var paths []string
	for _, f := range files {
		paths = append(paths, f.path)
		f.Abort()
	}
	return paths
}
