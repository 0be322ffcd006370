// -R 2 and -D on the embedded backend: buffers from Comm.MemAlloc,
// registered as symmetric windows on every rank; and, with -D, each rank a
// device communicator and a "stream" of kernel launches, each launch -V
// coops (goroutines) running a devKernel (devkernels.go).

package perf

import (
	"encoding/binary"
	"errors"
	"fmt"
	"sync"
	"unsafe"

	"github.com/gccl/gccl/lib/ccl"
	"github.com/gccl/gccl/lib/reduce"
)

// symComm is a rank that has the device API (the embedded stack's).
type symComm interface {
	MemAlloc(n int) ([]byte, error)
	MemFree(buf []byte) error
	WindowRegister(buf []byte, flags ccl.WinFlags) (*ccl.Window, error)
	WindowDeregister(w *ccl.Window) error
	DevCommCreate(reqs ccl.DevCommRequirements) (*ccl.DevComm, error)
}

// symRank is one rank's symmetric windows (-R 2).
type symRank struct {
	c                symComm
	send, recv       []byte // the MemAlloc buffers, whole
	sendWin, recvWin *ccl.Window
	// stage is the GIN kernels' copy of the rank's own blocks in place
	// (a window: GIN puts read their source from one); nil otherwise.
	stage    []byte
	stageWin *ccl.Window
}

// eachRank runs f for every rank of comms at once (the device API's calls
// are collective: every rank of this process calls together) and joins
// their errors.
func eachRank[T any](items []T, f func(i int, it T) error) error {
	errs := make([]error, len(items))
	var wg sync.WaitGroup
	for i, it := range items {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = f(i, it)
		}()
	}
	wg.Wait()
	return errors.Join(errs...)
}

// symmetricBuffers gives every rank of comms send and recv buffers of size
// bytes from its MemAlloc and registers them as symmetric windows.
func symmetricBuffers(comms []Comm, size int) ([]*symRank, error) {
	syms := make([]*symRank, len(comms))
	for i, c := range comms {
		sc, ok := c.(symComm)
		if !ok {
			return nil, fmt.Errorf("rank %d: -R 2 needs the device API (Comm.MemAlloc, WindowRegister), which this backend's ranks lack", c.Rank())
		}
		syms[i] = &symRank{c: sc}
	}
	err := eachRank(syms, func(i int, s *symRank) (err error) {
		rank := comms[i].Rank()
		if s.send, err = s.c.MemAlloc(size); err != nil {
			return fmt.Errorf("rank %d: send buffer: %w", rank, err)
		}
		if s.recv, err = s.c.MemAlloc(size); err != nil {
			return fmt.Errorf("rank %d: recv buffer: %w", rank, err)
		}
		if uintptr(unsafe.Pointer(&s.send[0]))%8 != 0 || uintptr(unsafe.Pointer(&s.recv[0]))%8 != 0 {
			return fmt.Errorf("rank %d: MemAlloc returned memory not 8-byte aligned: the kernels' element loads need it", rank)
		}
		if s.sendWin, err = s.c.WindowRegister(s.send, ccl.WinCollSymmetric); err != nil {
			return fmt.Errorf("rank %d: registering the send window: %w", rank, err)
		}
		if s.recvWin, err = s.c.WindowRegister(s.recv, ccl.WinCollSymmetric); err != nil {
			return fmt.Errorf("rank %d: registering the recv window: %w", rank, err)
		}
		return nil
	})
	return syms, err
}

// release deregisters the windows and frees the buffers: collective, so
// only after a run whose communicators are sound (healthy); after a
// failure the communicators' teardown removes the segments' names and
// the process's exit their memory.
func releaseSymmetric(syms []*symRank, healthy bool) error {
	if !healthy {
		return nil
	}
	return eachRank(syms, func(_ int, s *symRank) error {
		if s == nil || s.recvWin == nil {
			return nil
		}
		err := errors.Join(s.c.WindowDeregister(s.sendWin), s.c.WindowDeregister(s.recvWin))
		if s.stageWin != nil {
			err = errors.Join(err, s.c.WindowDeregister(s.stageWin))
		}
		if err == nil {
			err = errors.Join(s.c.MemFree(s.send), s.c.MemFree(s.recv))
		}
		if err == nil && s.stage != nil {
			err = s.c.MemFree(s.stage)
		}
		return err
	})
}

// devLaunch is one kernel launch on one rank: the call's buffers as
// offsets into the windows.
type devLaunch struct {
	sendOff, recvOff int  // bytes from the windows' starts
	inPlace          bool // the send buffer is in the recv window
	count            int  // the call's param count
	dt               reduce.DataType
	coops            int // the coops it runs (coopsFor): the shares are fractions of the count by it
}

// coopWork is the bytes a launch gives each coop of an LSA kernel at
// least: past one coop, each more is a worker woken and joined every
// launch (2-4 us on the 16-core Xeon, where -V 16's 8 coops made 8 B take
// 3-5 us against one coop's 0.6), worth it only for work that takes
// longer (one coop sums 32 KiB of 2 ranks in 2 us there).
var coopWork = 64 << 10 // a variable for the tests: many coops on small launches

// coopsFor is how many of its v coops the LSA kernel k runs a launch of
// count elements of size bytes over n ranks on: one a coopWork of the
// bytes the rank moves, at least one. It depends on the launch alone, so
// every rank runs the same coops (their shares and barriers pair).
func coopsFor(k *devKernel, count, size, n, v int) int {
	b := count * size
	if k.blocks {
		b *= n
	}
	return min(v, max(1, (b+coopWork-1)/coopWork))
}

// devRank is one rank under -D: the backend's rank for everything but the
// timed collective, which launches the kernel on the rank's stream.
type devRank struct {
	Comm
	d      *ccl.DevComm
	kernel *devKernel
	// v is the coops a launch runs: -V for the GIN kernels (each coop
	// waits for its own signals); for the LSA kernels the coops every
	// rank can run at once, at most -V (agreeCoops).
	v   int
	sym *symRank
	// peerSend and peerRecv are every LSA peer's window memory, by LSA
	// rank, resolved once (LsaPointer at offset 0): the windows stay put
	// while registered.
	peerSend, peerRecv [][]byte
	coops              []*coop // by index: coop k's scratch, used by whichever worker runs coop k
	stream             *ccl.DevStream
	// events time each launch of a back-to-back loop (-I 1) by the
	// stream's completion marks, as CUDA events on the kernels' stream.
	events[*ccl.DevStream]
	// args are the launches' parameters by launch index modulo its
	// length (launch); body and stage the phases that read them. args and
	// launches (the launches so far) are written by the rank's driving
	// goroutine, args read by the coops of the launch of that index.
	args        []devLaunch
	launches    uint64
	body, stage func(k int) error
	inline      bool // the rank's thread drives it alone: launches run on it (DevStreamOptions.Inline)
}

// newDevRanks makes every rank's device communicator and stream, with
// kernel k at v coops per rank over the ranks' windows syms; inline when
// each rank has a thread of its own (-g 1).
func newDevRanks(comms []Comm, syms []*symRank, k *devKernel, v int, inline bool) ([]*devRank, error) {
	devs := make([]*devRank, len(comms))
	err := eachRank(comms, func(i int, c Comm) error {
		if k.gin {
			if err := syms[i].stageWindow(); err != nil {
				return fmt.Errorf("rank %d: %w", c.Rank(), err)
			}
		}
		d, err := syms[i].c.DevCommCreate(k.reqs(v))
		if err != nil {
			return fmt.Errorf("rank %d: %w", c.Rank(), err)
		}
		devs[i] = &devRank{Comm: c, d: d, kernel: k, v: v, sym: syms[i], inline: inline}
		return nil
	})
	if err == nil && !k.gin {
		err = agreeCoops(devs, coopsCan)
	}
	if err != nil {
		for _, r := range devs {
			if r != nil {
				r.d.Destroy()
			}
		}
		return nil, err
	}
	for _, r := range devs {
		if err := r.start(); err != nil {
			closeDevRanks(devs)
			return nil, err
		}
	}
	return devs, nil
}

// coopsCan is how many coops rank r can run at once: a worker each while
// the processors free to it last. A variable for the tests, which run
// every -V on any host.
var coopsCan = func(r *devRank) int {
	return r.d.StreamWorkers(ccl.DevStreamOptions{Coops: r.v, Inline: r.inline})
}

// agreeCoops sets every rank's coops to the least that any rank of the
// world (of every process) can run at once: a worker each, while the
// processors free to it last (DevComm.StreamWorkers), at most -V.
//
// A GPU runs -V CTAs at once, each meeting its peers at its own barrier.
// A rank with fewer processors than coops runs them in waves, and each
// coop's barrier is then a meeting of its own, one after another: -V 16
// on one worker is 32 meetings a launch where 2 would order the same
// accesses. So the LSA kernels split the work into as many coops as run
// at once; the sums and stores are the same, their grouping coarser.
// Every rank must split alike (a coop's barrier pairs the ranks' coops of
// one index, its share is a fraction of the count), hence the agreement:
// an allreduce of min over the world of what each rank can run (can).
func agreeCoops(devs []*devRank, can func(r *devRank) int) error {
	return eachRank(devs, func(_ int, r *devRank) error {
		var send, recv [4]byte
		w := can(r)
		binary.NativeEndian.PutUint32(send[:], uint32(w))
		err := r.Comm.AllReduce(send[:], recv[:], 1, reduce.Int32, ccl.Min)
		if err == nil {
			err = r.Comm.Synchronize()
		}
		if err != nil {
			return fmt.Errorf("rank %d: agreeing on the coops: %w", r.Rank(), err)
		}
		agreed := int(int32(binary.NativeEndian.Uint32(recv[:])))
		if agreed < 1 || agreed > r.v {
			return fmt.Errorf("rank %d: the ranks agreed on %d coops: want 1 to %d (-V)", r.Rank(), agreed, r.v)
		}
		r.v = agreed
		return nil
	})
}

// stageWindow allocates and registers the rank's stage window, as large
// as its recv buffer (in place, the send blocks are there).
func (s *symRank) stageWindow() (err error) {
	if s.stage, err = s.c.MemAlloc(len(s.recv)); err != nil {
		return fmt.Errorf("stage buffer: %w", err)
	}
	if s.stageWin, err = s.c.WindowRegister(s.stage, ccl.WinCollSymmetric); err != nil {
		return fmt.Errorf("registering the stage window: %w", err)
	}
	return nil
}

// start resolves the peers' memory, readies the coops and starts the
// stream.
func (r *devRank) start() error {
	d := r.d
	if r.kernel.lsaWorld && d.LsaSize != d.NRanks {
		return usagef("rank %d: -D %s loads and stores every rank's memory, so every rank must be in its LSA team (one host), as nccl-tests' LSA kernels require; its LSA team has %d of the %d ranks", d.Rank, r.kernel.impl, d.LsaSize, d.NRanks)
	}
	r.peerSend, r.peerRecv = make([][]byte, d.LsaSize), make([][]byte, d.LsaSize)
	for p := range d.LsaSize {
		var err error
		if r.peerSend[p], err = d.LsaPointer(r.sym.sendWin, 0, p); err != nil {
			return err
		}
		if r.peerRecv[p], err = d.LsaPointer(r.sym.recvWin, 0, p); err != nil {
			return err
		}
	}
	r.coops = make([]*coop, r.v)
	for k := range r.v {
		bar, err := d.LsaBarrier(k)
		if err != nil {
			return err
		}
		r.coops[k] = &coop{r: r, k: k, bar: bar, ptrs: make([]unsafe.Pointer, 2*d.LsaSize),
			srcs: make([][]byte, d.LsaSize), dsts: make([][]byte, d.LsaSize), tmp: make([]byte, chunkBytes)}
		if r.kernel.gin {
			if err := r.coops[k].ginSessions(); err != nil {
				return err
			}
		}
	}
	var err error
	// The LSA kernels' coops all run at once (agreeCoops); the GIN
	// kernels' may run in waves (the stream picks).
	workers := 0
	if !r.kernel.gin {
		workers = r.v
	}
	r.stream, err = d.NewStream(ccl.DevStreamOptions{Coops: r.v, Inline: r.inline, Workers: workers})
	r.events.s = r.stream
	return err
}

// launch launches one call of the timed collective: the kernel on every
// coop, after (in place, when the kernel has one) its stage on every coop.
// The call's parameters go into a ring the phases read by the stream's
// Running index, and the phases are made once: a launch allocates nothing
// (a loop of launches made garbage enough for a collection every few
// milliseconds).
func (r *devRank) launch(l devLaunch) error {
	if r.args == nil {
		r.args = make([]devLaunch, ccl.DevStreamDepth+1)
		r.body = func(k int) error {
			c := r.coops[k]
			c.l = &r.args[r.stream.Running()%uint64(len(r.args))]
			err := r.kernel.coop(c)
			c.l = nil
			return err
		}
		r.stage = func(k int) error {
			c := r.coops[k]
			c.l = &r.args[r.stream.Running()%uint64(len(r.args))]
			r.kernel.stage(c)
			c.l = nil
			return nil
		}
	}
	n, ring := r.launches, uint64(len(r.args))
	if n >= ring && r.stream.Finished() <= n-ring { // the stream's bound makes this never so
		if err := r.stream.Synchronize(); err != nil {
			return r.wrap(err)
		}
	}
	l.coops = r.v
	if !r.kernel.gin {
		l.coops = coopsFor(r.kernel, l.count, l.dt.Size(), r.d.LsaSize, r.v)
	}
	r.args[n%ring] = l
	r.launches++
	if r.kernel.stage != nil && l.inPlace {
		return r.wrap(r.stream.LaunchCoops(l.coops, r.stage, r.body))
	}
	return r.wrap(r.stream.LaunchCoops(l.coops, r.body))
}

// wrap names the kernel in a launch's failure.
func (r *devRank) wrap(err error) error {
	if err != nil {
		return fmt.Errorf("-D %s: %w", r.kernel.impl, err)
	}
	return nil
}

// Synchronize waits for every launch, and for the peers' stores of the
// last into this rank (the coops' last release, lsaCoop), then for the
// rank's own stream.
func (r *devRank) Synchronize() error {
	if err := r.stream.Synchronize(); err != nil {
		return r.wrap(err)
	}
	for _, c := range r.coops {
		if err := c.waitReleased(); err != nil {
			return r.wrap(err)
		}
	}
	return r.Comm.Synchronize()
}

// LastChoice: the stack chose nothing; the record's device_impl says what
// ran, over how many hosts (LSA teams).
func (r *devRank) LastChoice() ccl.Choice { return ccl.Choice{NHosts: r.d.NRanks / r.d.LsaSize} }

// closeDevRanks stops the streams and destroys the device communicators.
func closeDevRanks(devs []*devRank) {
	for _, r := range devs {
		if r == nil {
			continue
		}
		if r.stream != nil {
			r.stream.Close()
		}
		r.d.Destroy()
	}
}
