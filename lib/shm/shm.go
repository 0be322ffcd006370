//go:build linux

// Package shm is memory shared between the processes of one host: named
// segments that two processes open by the same name (the first creates and
// initialises, the other maps what it made), unlinked as soon as every end
// has mapped them so that a crash leaks nothing, and futex waits on words
// inside them.
//
// Names are deterministic (both ends derive them from the connection they
// serve), so a connection made lazily by two processes needs no message
// between them.
package shm

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// EnvDir is the variable that names the directory segments live in: the
// package reads no variable itself, its callers pass the directory
// (ccl.Config.ShmDir, which ccl.Config.FromEnv fills from it).
const EnvDir = "GCCL_SHM_DIR"

// DefaultDir is the directory of segments when the caller names none.
const DefaultDir = "/dev/shm"

// HeaderBytes precedes a segment's data: one page, so the data is page
// aligned.
const HeaderBytes = 4096

const magic = 0x67636c2d73686d31 // "gccl-shm1"

// header is the first bytes of every segment.
type header struct {
	// size is the data size, written by the creator before magic.
	size atomic.Uint64
	// magic is stored last by the creator (release): an opener that sees
	// it sees an initialised segment. Read by openers.
	magic atomic.Uint64
	// mapped counts the ends that have mapped the segment. Added to by each
	// end once; the end that brings it to the expected count unlinks.
	mapped atomic.Uint32
}

// Segment is one mapping of a named segment.
type Segment struct {
	Path    string
	Created bool // this end created (and initialised) it
	mem     []byte
	hdr     *header
	// unlinked is set by the end that removed the name (CAS, so that
	// Unlink and MarkMapped racing in one process unlink once).
	unlinked atomic.Bool
}

// Data is the segment's memory after the header.
func (s *Segment) Data() []byte { return s.mem[HeaderBytes:] }

// Word returns the 32-bit word at byte offset off of the data, for atomics
// and futexes. off must be a multiple of 4.
func (s *Segment) Word(off int) *atomic.Uint32 {
	return (*atomic.Uint32)(unsafe.Pointer(&s.Data()[off]))
}

// Open opens the segment name in dir with size bytes of data, creating it
// if no other process has. init runs on a fresh segment's data before any
// other end can see it. An end that finds the segment already there waits
// until its creator has initialised it, for up to timeout, giving up early
// when stop returns true.
func Open(dir, name string, size int, init func(data []byte), timeout time.Duration, stop func() bool) (*Segment, error) {
	if size <= 0 {
		return nil, fmt.Errorf("shm: segment %s: size %d, want > 0", name, size)
	}
	path := filepath.Join(dir, name)
	total := HeaderBytes + size
	fd, err := unix.Open(path, unix.O_RDWR|unix.O_CREAT|unix.O_EXCL|unix.O_CLOEXEC, 0o600)
	if err == nil {
		s, err := create(fd, path, total, size, init)
		if err != nil {
			_ = unix.Unlink(path)
		}
		return s, err
	}
	if !errors.Is(err, unix.EEXIST) {
		return nil, fmt.Errorf("shm: creating %s: %w (set %s to a writable tmpfs directory)", path, err, EnvDir)
	}
	return attach(path, total, size, timeout, stop)
}

func create(fd int, path string, total, size int, init func([]byte)) (*Segment, error) {
	defer unix.Close(fd)
	if err := unix.Ftruncate(fd, int64(total)); err != nil {
		return nil, fmt.Errorf("shm: sizing %s to %d bytes: %w", path, total, err)
	}
	mem, err := mmap(fd, total)
	if err != nil {
		return nil, fmt.Errorf("shm: mapping %s: %w", path, err)
	}
	s := &Segment{Path: path, Created: true, mem: mem, hdr: (*header)(unsafe.Pointer(&mem[0]))}
	if init != nil {
		init(s.Data())
	}
	s.hdr.size.Store(uint64(size))
	s.hdr.magic.Store(magic)
	return s, nil
}

// attach maps a segment another process created, once it is initialised.
func attach(path string, total, size int, timeout time.Duration, stop func() bool) (*Segment, error) {
	deadline := time.Now().Add(timeout)
	var fd int
	var err error
	for pause := time.Microsecond; ; pause = min(2*pause, time.Millisecond) {
		fd, err = unix.Open(path, unix.O_RDWR|unix.O_CLOEXEC, 0)
		if err == nil {
			var st unix.Stat_t
			if err = unix.Fstat(fd, &st); err == nil && st.Size == int64(total) {
				break
			}
			if err == nil && st.Size != 0 {
				// The creator sizes a segment in one step: another size is
				// another job's, or a peer that disagrees on the connection.
				unix.Close(fd)
				return nil, fmt.Errorf("shm: %s holds %d bytes of data, want %d (a stale segment of another job?)", path, st.Size-HeaderBytes, size)
			}
			unix.Close(fd)
			err = fmt.Errorf("its creator has not sized it yet")
		}
		// ENOENT: both ends have mapped a previous segment of this name
		// and it is gone, or the creator failed; either way wait and see.
		if stop != nil && stop() {
			return nil, fmt.Errorf("shm: opening %s: stopped while waiting for its creator", path)
		}
		if time.Now().After(deadline) {
			return nil, fmt.Errorf("shm: opening %s: %v after %v", path, err, timeout)
		}
		time.Sleep(pause)
	}
	mem, err := mmap(fd, total)
	unix.Close(fd)
	if err != nil {
		return nil, fmt.Errorf("shm: mapping %s: %w", path, err)
	}
	s := &Segment{Path: path, mem: mem, hdr: (*header)(unsafe.Pointer(&mem[0]))}
	for pause := time.Microsecond; s.hdr.magic.Load() != magic; pause = min(2*pause, time.Millisecond) {
		if stop != nil && stop() {
			s.Close()
			return nil, fmt.Errorf("shm: opening %s: stopped while waiting for its creator to initialise it", path)
		}
		if time.Now().After(deadline) {
			s.Close()
			return nil, fmt.Errorf("shm: %s was never initialised by its creator within %v", path, timeout)
		}
		time.Sleep(pause)
	}
	if got := s.hdr.size.Load(); got != uint64(size) {
		s.Close()
		return nil, fmt.Errorf("shm: %s holds %d bytes of data, want %d (a stale segment of another job?)", path, got, size)
	}
	return s, nil
}

func mmap(fd, n int) ([]byte, error) {
	return unix.Mmap(fd, 0, n, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED)
}

// MarkMapped records that this end has mapped the segment; the end that
// brings the count to ends removes the name, after which only the
// mappings hold the memory (a crash then leaks nothing).
func (s *Segment) MarkMapped(ends uint32) {
	if s.hdr.mapped.Add(1) >= ends {
		s.Unlink()
	}
}

// Unlink removes the segment's name (once; a name already gone is fine).
func (s *Segment) Unlink() {
	if s.unlinked.CompareAndSwap(false, true) {
		_ = unix.Unlink(s.Path)
	}
}

// Close unmaps the segment. Its memory is freed once every end has closed
// and the name is gone.
func (s *Segment) Close() {
	if s.mem != nil {
		_ = unix.Munmap(s.mem)
		s.mem, s.hdr = nil, nil
	}
}

// RemovePrefix removes every segment in dir whose name starts with prefix:
// what a failed job's survivors run so that segments of connections the
// dead process never finished leave no trace. It returns how many it
// removed.
func RemovePrefix(dir, prefix string) int {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return 0
	}
	n := 0
	for _, e := range ents {
		if strings.HasPrefix(e.Name(), prefix) && os.Remove(filepath.Join(dir, e.Name())) == nil {
			n++
		}
	}
	return n
}

// FutexWait sleeps while *w == val, for at most timeout (<= 0: no limit),
// until FutexWake. It may return early (spuriously, on a signal): callers
// re-check their condition. The futex is shared, so a waker in another
// process reaches it.
func FutexWait(w *atomic.Uint32, val uint32, timeout time.Duration) {
	deadline := time.Now().Add(timeout)
	for {
		var ts *unix.Timespec
		if timeout > 0 {
			left := time.Until(deadline)
			if left <= 0 {
				return
			}
			t := unix.NsecToTimespec(int64(left))
			ts = &t
		}
		_, _, errno := unix.Syscall6(unix.SYS_FUTEX, uintptr(unsafe.Pointer(w)), futexWait, uintptr(val), uintptr(unsafe.Pointer(ts)), 0, 0)
		// EINTR is frequent: the Go runtime preempts with signals. Sleep on.
		if errno != unix.EINTR {
			return
		}
	}
}

// FutexWake wakes up to n waiters sleeping on w.
func FutexWake(w *atomic.Uint32, n int) {
	_, _, _ = unix.Syscall6(unix.SYS_FUTEX, uintptr(unsafe.Pointer(w)), futexWake, uintptr(n), 0, 0, 0)
}

// Yield gives the processor to another thread of any process
// (sched_yield): what a waiter whose peer is another process does between
// looks at a word, so that on a host with more processes than cores the
// peer gets to run.
func Yield() { _, _, _ = unix.RawSyscall(unix.SYS_SCHED_YIELD, 0, 0, 0) }

// Not FUTEX_PRIVATE_FLAG: the word is shared between processes.
const (
	futexWait = 0
	futexWake = 1
)
