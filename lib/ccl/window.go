// window.go: memory windows (ncclCommWindowRegister): a buffer of every
// rank registered collectively, so that the ranks of one host (the LSA
// team) load and store each other's (lsa.go); and MemAlloc, the memory a
// window needs when those ranks live in several processes (ncclMemAlloc).

package ccl

import (
	"encoding/json"
	"errors"
	"fmt"
	"unsafe"

	"github.com/gccl/gccl/lib/shm"
)

// WinFlags are WindowRegister's flags (NCCL_WIN_*).
type WinFlags uint32

const (
	// WinDefault registers the buffer for this rank's own use: the other
	// ranks get no pointer into it (NCCL_WIN_DEFAULT).
	WinDefault WinFlags = 0
	// WinCollSymmetric registers a symmetric window: the same window
	// index on every rank, each rank's buffer reachable by the ranks of
	// its host (NCCL_WIN_COLL_SYMMETRIC). Sizes may differ per rank.
	WinCollSymmetric WinFlags = 1
)

// Window is one rank's handle on a window registered by every rank.
type Window struct {
	c   *Comm
	set *winSet
	// deregistered is owned by the rank's calling goroutine (Deregister);
	// the pointer functions read it from the same goroutine or after it.
	deregistered bool
}

// Index is the window's index: the same on every rank.
func (w *Window) Index() int { return w.set.index }

// Size is this rank's size of the window in bytes.
func (w *Window) Size() int { return w.set.sizes[w.c.rank] }

// winSet is what the local ranks' handles on one window share. Written
// by the meeting's build before any handle exists; read-only after,
// except maps and allocs, which the deregistration's build releases.
type winSet struct {
	index  int
	flags  WinFlags
	sizes  []int          // every rank's size, by world rank
	bufs   [][]byte       // by world rank: the memory this process reaches (nil: another host's)
	maps   []*shm.Segment // other processes' memory this process mapped
	allocs []*memAlloc    // this process's MemAlloc buffers the window holds
}

// memAlloc is a buffer from MemAlloc: Go memory, or a shared segment
// when ranks of other processes on this host may map it.
type memAlloc struct {
	buf  []byte
	seg  *shm.Segment // nil: Go memory
	name string       // the segment's name in the job's directory
	wins int          // windows registered on it (guarded by dev.mu)
}

// winArg is a rank's argument to WindowRegister.
type winArg struct {
	buf   []byte
	flags WinFlags
}

// winPart is what the other processes learn of a rank's buffer.
type winPart struct {
	Rank, Size int
	Flags      WinFlags
	Seg        string // the MemAlloc segment holding it ("" for no memory, or a window only this rank uses)
	SegSize    int
	Off        int // the buffer's offset in the segment
}

// WindowRegister registers buf as this rank's part of a window
// (ncclCommWindowRegister). It is collective: every rank calls it, in the
// same order as the other device collectives, with the same flags. In one
// process any buffer works; with ranks of other processes on this host, a
// symmetric window's buffer must come from MemAlloc, which they can map.
func (c *Comm) WindowRegister(buf []byte, flags WinFlags) (*Window, error) {
	if err := c.usable(); err != nil {
		return nil, err
	}
	if flags&^WinCollSymmetric != 0 {
		return nil, fmt.Errorf("ccl: WindowRegister: flags %#x: valid are WinDefault (0) and WinCollSymmetric (1)", uint32(flags))
	}
	out, err := c.meet(devOp{kind: "WindowRegister", prep: c.w.winPrep, build: c.w.winBuild}, winArg{buf: buf, flags: flags})
	if err != nil {
		return nil, err
	}
	return &Window{c: c, set: out.(*winSet)}, nil
}

// winPrep names, for the other processes, where each local rank's
// buffer lives.
func (w *world) winPrep(args map[int]any) ([]byte, error) {
	var parts []winPart
	for _, r := range sortedRanks(args) {
		a := args[r].(winArg)
		p := winPart{Rank: r, Size: len(a.buf), Flags: a.flags}
		if a.flags == WinCollSymmetric && len(a.buf) > 0 && w.hostShared() {
			al, off := w.findAlloc(a.buf)
			if al == nil || al.seg == nil {
				return nil, fmt.Errorf("rank %d's buffer (%d bytes) is not from Comm.MemAlloc: ranks of other processes on this host cannot map it (as NCCL's symmetric windows need ncclMemAlloc)", r, len(a.buf))
			}
			p.Seg, p.SegSize, p.Off = al.name, len(al.buf), off
		}
		parts = append(parts, p)
	}
	return json.Marshal(parts)
}

// winBuild makes the window: the local ranks' buffers, and the other
// processes' on this host mapped.
func (w *world) winBuild(args map[int]any, blobs [][]byte) (any, error) {
	s := &winSet{sizes: make([]int, w.n), bufs: make([][]byte, w.n)}
	first := true
	for _, r := range sortedRanks(args) {
		a := args[r].(winArg)
		if first {
			s.flags, first = a.flags, false
		} else if a.flags != s.flags {
			return nil, fmt.Errorf("rank %d registers with flags %d and rank %d with %d: every rank must pass the same", sortedRanks(args)[0], s.flags, r, a.flags)
		}
		s.sizes[r], s.bufs[r] = len(a.buf), a.buf
	}
	if err := w.mapPeers(s, blobs); err != nil {
		for _, seg := range s.maps {
			seg.Close()
		}
		return nil, err
	}
	w.dev.mu.Lock()
	defer w.dev.mu.Unlock()
	s.index = w.dev.nWin
	w.dev.nWin++
	if w.dev.wins == nil {
		w.dev.wins = map[int]*winSet{}
	}
	w.dev.wins[s.index] = s
	for _, r := range sortedRanks(args) {
		if al, _ := w.findAllocLocked(s.bufs[r]); al != nil {
			al.wins++
			s.allocs = append(s.allocs, al)
		}
	}
	return s, nil
}

// mapPeers fills in the other processes' ranks of window s from their
// blobs: sizes for all, memory for those of this host.
func (w *world) mapPeers(s *winSet, blobs [][]byte) error {
	j := w.job
	for pi, blob := range blobs {
		if pi == j.self {
			continue
		}
		var parts []winPart
		if err := json.Unmarshal(blob, &parts); err != nil {
			return fmt.Errorf("process %d's window: %v", pi, err)
		}
		for _, p := range parts {
			if p.Flags != s.flags {
				return fmt.Errorf("rank %d registers with flags %d and this process's ranks with %d: every rank must pass the same", p.Rank, p.Flags, s.flags)
			}
			s.sizes[p.Rank] = p.Size
			if p.Seg == "" || !j.local(pi) {
				continue
			}
			seg, err := shm.Attach(j.dir, p.Seg, p.SegSize, joinWait(w.set.timeout), w.abort.Aborted)
			if err != nil {
				return fmt.Errorf("mapping %s's window memory: %w", j.rankName(p.Rank), err)
			}
			s.maps = append(s.maps, seg)
			s.bufs[p.Rank] = seg.Data()[p.Off : p.Off+p.Size : p.Off+p.Size]
		}
	}
	return nil
}

// WindowDeregister deregisters window win (ncclCommWindowDeregister): a
// collective, like WindowRegister, that every rank calls for the same
// window. Pointers into it are not to be used after.
func (c *Comm) WindowDeregister(win *Window) error {
	if err := c.usable(); err != nil {
		return err
	}
	if err := c.ownWindow(win); err != nil {
		return fmt.Errorf("ccl: WindowDeregister: %w", err)
	}
	_, err := c.meet(devOp{kind: "WindowDeregister", prep: winDeregPrep, build: c.w.winDeregBuild}, win)
	if err == nil {
		win.deregistered = true
	}
	return err
}

// ownWindow checks that win is a live window of rank c.
func (c *Comm) ownWindow(win *Window) error {
	switch {
	case win == nil || win.set == nil:
		return errors.New("no window (nil): want one from this rank's WindowRegister")
	case win.c.w != c.w:
		return fmt.Errorf("window %d belongs to another communicator: want one this communicator registered", win.set.index)
	case win.c != c:
		return fmt.Errorf("window %d is rank %d's handle, not rank %d's: each rank passes its own", win.set.index, win.c.rank, c.rank)
	case win.deregistered:
		return fmt.Errorf("window %d is deregistered already", win.set.index)
	}
	return nil
}

func winDeregPrep(args map[int]any) ([]byte, error) {
	for _, r := range sortedRanks(args) {
		return json.Marshal(args[r].(*Window).set.index)
	}
	return nil, nil
}

// winDeregBuild checks that every rank deregisters the same window, then
// releases what this process holds of it.
func (w *world) winDeregBuild(args map[int]any, blobs [][]byte) (any, error) {
	rs := sortedRanks(args)
	s := args[rs[0]].(*Window).set
	for _, r := range rs[1:] {
		if o := args[r].(*Window).set; o != s {
			return nil, fmt.Errorf("rank %d deregisters window %d and rank %d window %d: every rank must deregister the same", rs[0], s.index, r, o.index)
		}
	}
	for pi, blob := range blobs {
		var index int
		if err := json.Unmarshal(blob, &index); err != nil || index != s.index {
			return nil, fmt.Errorf("process %d (ranks %v) deregisters window %s, this process window %d: every rank must deregister the same",
				pi, w.job.procs[pi].Ranks, string(blob), s.index)
		}
	}
	for _, seg := range s.maps {
		seg.Close()
	}
	w.dev.mu.Lock()
	for _, al := range s.allocs {
		al.wins--
	}
	s.maps, s.allocs = nil, nil
	delete(w.dev.wins, s.index)
	w.dev.mu.Unlock()
	return nil, nil
}

// hostShared reports whether ranks of other processes live on this
// host: then windows need shared memory.
func (w *world) hostShared() bool {
	j := w.job
	if j == nil {
		return false
	}
	for pi := range j.procs {
		if pi != j.self && j.local(pi) {
			return true
		}
	}
	return false
}

// MemAlloc allocates n bytes for a window (ncclMemAlloc): Go memory when
// every rank of this host lives in this process, else a shared segment
// that the other processes map at WindowRegister. Free it with MemFree.
func (c *Comm) MemAlloc(n int) ([]byte, error) {
	if err := c.usable(); err != nil {
		return nil, err
	}
	if n <= 0 {
		return nil, fmt.Errorf("ccl: MemAlloc: %d bytes: want at least 1", n)
	}
	w := c.w
	al := &memAlloc{}
	if w.hostShared() {
		j := w.job
		w.dev.mu.Lock()
		al.name = fmt.Sprintf("%s-mem-%d-%d", j.prefix, c.rank, w.dev.nAlloc)
		w.dev.nAlloc++
		w.dev.mu.Unlock()
		seg, err := shm.Open(j.dir, al.name, n, nil, joinWait(w.set.timeout), w.abort.Aborted)
		if err != nil {
			return nil, fmt.Errorf("ccl: MemAlloc: %w", err)
		}
		if !seg.Created {
			seg.Close()
			return nil, fmt.Errorf("ccl: MemAlloc: segment %s exists already (a stale segment of another job?)", seg.Path)
		}
		al.seg, al.buf = seg, seg.Data()[:n:n]
	} else {
		al.buf = make([]byte, n)
	}
	w.dev.mu.Lock()
	defer w.dev.mu.Unlock()
	if w.dev.allocs == nil {
		w.dev.allocs = map[*byte]*memAlloc{}
	}
	w.dev.allocs[&al.buf[0]] = al
	if al.seg != nil && !w.dev.closer {
		// Names not freed by the teardown go with it (their mappings
		// stay until MemFree or the process's exit).
		w.dev.closer = true
		w.mu.Lock()
		w.closers = append(w.closers, w.unlinkAllocs)
		w.mu.Unlock()
	}
	return al.buf, nil
}

// unlinkAllocs removes the names of the segments MemAlloc made.
func (w *world) unlinkAllocs() {
	w.dev.mu.Lock()
	defer w.dev.mu.Unlock()
	for _, al := range w.dev.allocs {
		if al.seg != nil {
			al.seg.Unlink()
		}
	}
}

// MemFree frees a buffer MemAlloc returned (ncclMemFree), once no window
// holds it.
func (c *Comm) MemFree(buf []byte) error {
	w := c.w
	w.dev.mu.Lock()
	defer w.dev.mu.Unlock()
	var al *memAlloc
	if len(buf) > 0 {
		al = w.dev.allocs[&buf[0]]
	}
	switch {
	case al == nil:
		return fmt.Errorf("ccl: MemFree: the buffer (%d bytes) is not one MemAlloc returned, or it was freed already", len(buf))
	case al.wins > 0:
		return fmt.Errorf("ccl: MemFree: the buffer is still registered in %d window(s): deregister them first", al.wins)
	}
	delete(w.dev.allocs, &buf[0])
	if al.seg != nil {
		al.seg.Unlink()
		al.seg.Close()
	}
	return nil
}

// findAlloc returns the MemAlloc buffer holding buf and buf's offset in it.
func (w *world) findAlloc(buf []byte) (*memAlloc, int) {
	w.dev.mu.Lock()
	defer w.dev.mu.Unlock()
	return w.findAllocLocked(buf)
}

func (w *world) findAllocLocked(buf []byte) (*memAlloc, int) {
	if len(buf) == 0 {
		return nil, 0
	}
	p := uintptr(unsafe.Pointer(&buf[0]))
	for _, al := range w.dev.allocs {
		base := uintptr(unsafe.Pointer(&al.buf[0]))
		if p >= base && p+uintptr(len(buf)) <= base+uintptr(len(al.buf)) {
			return al, int(p - base)
		}
	}
	return nil, 0
}
