//go:build linux && (amd64 || arm64)

// One rank of the NCCL backend: its communicator, stream and device
// buffers, and each operation as one NCCL call (groups counted per thread).

package perf

import (
	"errors"
	"fmt"
	"sync"
	"unsafe"

	"github.com/gccl/gccl/lib/ccl"
	"github.com/gccl/gccl/lib/exact"
	"github.com/gccl/gccl/lib/nccl"
	"github.com/gccl/gccl/lib/reduce"
)

// ncclRank is one rank: its communicator, its stream and the device twins
// of the harness's buffers. One thread drives it at a time.
type ncclRank struct {
	lib        *nccl.Lib
	be         *ncclBackend
	lastColl   string // NCCL's name of the last collective called, for LastChoice
	comm       uintptr
	stream     uintptr // 0 with -y 1: the default stream
	dev        int
	rank, size int
	register   int  // -R
	ncclMem    bool // buffers from ncclMemAlloc, else cudaMalloc
	mirrors    []mirror
	graph      struct{ g, exec uintptr }
	events     []uintptr
	preMul     map[reduce.DataType]int32
	mu         sync.Mutex // guards destroyed
	destroyed  bool
	// group is the group depth of the thread driving this rank, shared
	// with the thread's other ranks (ShareThreadGroup); nil: every group
	// call goes to NCCL. Only that thread touches it, one at a time (the
	// runner hands a rank between goroutines through a WaitGroup).
	group *threadGroup
}

// threadGroup is one thread's ncclGroupStart depth as gccl counts it.
type threadGroup struct{ depth int }

// mirror is a host buffer and its device twin.
type mirror struct {
	host    []byte
	hostPtr uintptr // &host[0]: the heap does not move it
	dev     uintptr
	reg     uintptr // registration handle (-R 1) or window (-R 2)
}

func (r *ncclRank) Rank() int { return r.rank }

func (r *ncclRank) Size() int { return r.size }

// ThreadGroups: ncclGroupStart is per thread.
func (r *ncclRank) ThreadGroups() bool { return true }

func (r *ncclRank) Mirror(bufs ...[]byte) error {
	return r.lib.OnDevice(r.dev, func() error {
		for _, h := range bufs {
			if len(h) == 0 {
				continue
			}
			m := mirror{host: h, hostPtr: uintptr(unsafe.Pointer(&h[0]))}
			var err error
			if r.ncclMem {
				m.dev, err = r.lib.MemAlloc(len(h))
			} else {
				m.dev, err = r.lib.Malloc(len(h))
			}
			if err != nil {
				return err
			}
			r.mirrors = append(r.mirrors, m)
			switch r.register {
			case 1:
				m.reg, err = r.lib.Register(r.comm, m.dev, len(h))
			case 2:
				m.reg, err = r.lib.WindowRegister(r.comm, m.dev, len(h))
			}
			if err != nil {
				return err
			}
			r.mirrors[len(r.mirrors)-1] = m
		}
		return nil
	})
}

// ptr maps a slice of a mirrored host buffer to its device address.
func (r *ncclRank) ptr(b []byte) (uintptr, error) {
	p := uintptr(unsafe.Pointer(unsafe.SliceData(b)))
	for _, m := range r.mirrors {
		if p >= m.hostPtr && p+uintptr(len(b)) <= m.hostPtr+uintptr(len(m.host)) {
			return m.dev + (p - m.hostPtr), nil
		}
	}
	return 0, fmt.Errorf("rank %d: a buffer of %d bytes outside the mirrored ones (harness bug)", r.rank, len(b))
}

// ToDevice and ToHost copy on the rank's stream with its device current:
// a thread driving several GPUs may have another one current.
func (r *ncclRank) ToDevice(h []byte) error {
	d, err := r.ptr(h)
	if err != nil {
		return err
	}
	return r.lib.OnDevice(r.dev, func() error { return r.lib.ToDevice(d, h, r.stream) })
}

func (r *ncclRank) ToHost(h []byte) error {
	d, err := r.ptr(h)
	if err != nil {
		return err
	}
	return r.lib.OnDevice(r.dev, func() error { return r.lib.ToHost(h, d, r.stream) })
}

// args maps a call's send and recv buffers and its data type.
func (r *ncclRank) args(send, recv []byte, dt reduce.DataType) (s, d uintptr, ndt int32, err error) {
	if s, err = r.ptr(send); err != nil {
		return 0, 0, 0, err
	}
	if d, err = r.ptr(recv); err != nil {
		return 0, 0, 0, err
	}
	ndt, err = nccl.DataType(dt)
	return s, d, ndt, err
}

// redArgs is args and the reduction, for the reducing collectives.
func (r *ncclRank) redArgs(send, recv []byte, dt reduce.DataType, op ccl.RedOp) (s, d uintptr, ndt, nop int32, err error) {
	if s, d, ndt, err = r.args(send, recv, dt); err != nil {
		return 0, 0, 0, 0, err
	}
	nop, err = r.op(op, dt)
	return s, d, ndt, nop, err
}

// op maps a reduction; PreMulSum ops are made once per type and kept.
func (r *ncclRank) op(op ccl.RedOp, dt reduce.DataType) (int32, error) {
	if op.Op != reduce.PreMulSum {
		return nccl.RedOp(op.Op)
	}
	if o, ok := r.preMul[dt]; ok {
		return o, nil
	}
	if op.Scalar != exact.Scalar(dt) {
		return 0, fmt.Errorf("premulsum scalar %g: this backend keeps one per type (%g)", op.Scalar, exact.Scalar(dt))
	}
	ndt, err := nccl.DataType(dt)
	if err != nil {
		return 0, err
	}
	scalar, err := nccl.ScalarBytes(dt, op.Scalar)
	if err != nil {
		return 0, err
	}
	o, err := r.lib.PreMulSum(r.comm, scalar, ndt)
	if err != nil {
		return 0, err
	}
	if r.preMul == nil {
		r.preMul = map[reduce.DataType]int32{}
	}
	r.preMul[dt] = o
	return o, nil
}

func (r *ncclRank) AllReduce(send, recv []byte, count int, dt reduce.DataType, op ccl.RedOp) error {
	s, d, ndt, nop, err := r.redArgs(send, recv, dt, op)
	if err != nil {
		return err
	}
	r.lastColl = "AllReduce"
	return r.lib.AllReduce(s, d, count, ndt, nop, r.comm, r.stream)
}

func (r *ncclRank) AllGather(send, recv []byte, sendCount int, dt reduce.DataType) error {
	s, d, ndt, err := r.args(send, recv, dt)
	if err != nil {
		return err
	}
	r.lastColl = "AllGather"
	return r.lib.AllGather(s, d, sendCount, ndt, r.comm, r.stream)
}

func (r *ncclRank) ReduceScatter(send, recv []byte, recvCount int, dt reduce.DataType, op ccl.RedOp) error {
	s, d, ndt, nop, err := r.redArgs(send, recv, dt, op)
	if err != nil {
		return err
	}
	r.lastColl = "ReduceScatter"
	return r.lib.ReduceScatter(s, d, recvCount, ndt, nop, r.comm, r.stream)
}

func (r *ncclRank) Broadcast(send, recv []byte, count int, dt reduce.DataType, root int) error {
	s, d, ndt, err := r.args(send, recv, dt)
	if err != nil {
		return err
	}
	r.lastColl = "Broadcast"
	return r.lib.Broadcast(s, d, count, ndt, root, r.comm, r.stream)
}

func (r *ncclRank) Reduce(send, recv []byte, count int, dt reduce.DataType, op ccl.RedOp, root int) error {
	s, d, ndt, nop, err := r.redArgs(send, recv, dt, op)
	if err != nil {
		return err
	}
	r.lastColl = "Reduce"
	return r.lib.Reduce(s, d, count, ndt, nop, root, r.comm, r.stream)
}

// AlltoAll, Gather and Scatter are grouped sends and receives, as
// nccl-tests builds them.

func (r *ncclRank) AlltoAll(send, recv []byte, count int, dt reduce.DataType) error {
	b := count * dt.Size()
	return r.grouped(func() error {
		for p := 0; p < r.size; p++ {
			if err := r.Send(send[p*b:(p+1)*b], count, dt, p); err != nil {
				return err
			}
			if err := r.Recv(recv[p*b:(p+1)*b], count, dt, p); err != nil {
				return err
			}
		}
		return nil
	})
}

func (r *ncclRank) Gather(send, recv []byte, count int, dt reduce.DataType, root int) error {
	b := count * dt.Size()
	return r.grouped(func() error {
		if err := r.Send(send[:b], count, dt, root); err != nil {
			return err
		}
		if r.rank != root {
			return nil
		}
		for p := 0; p < r.size; p++ {
			if err := r.Recv(recv[p*b:(p+1)*b], count, dt, p); err != nil {
				return err
			}
		}
		return nil
	})
}

func (r *ncclRank) Scatter(send, recv []byte, count int, dt reduce.DataType, root int) error {
	b := count * dt.Size()
	return r.grouped(func() error {
		if r.rank == root {
			for p := 0; p < r.size; p++ {
				if err := r.Send(send[p*b:(p+1)*b], count, dt, p); err != nil {
					return err
				}
			}
		}
		return r.Recv(recv[:b], count, dt, root)
	})
}

func (r *ncclRank) grouped(f func() error) error {
	if err := r.GroupStart(); err != nil {
		return err
	}
	err := f()
	if endErr := r.GroupEnd(); err == nil {
		err = endErr
	}
	return err
}

func (r *ncclRank) Send(buf []byte, count int, dt reduce.DataType, peer int) error {
	p, err := r.ptr(buf)
	if err != nil {
		return err
	}
	ndt, err := nccl.DataType(dt)
	if err != nil {
		return err
	}
	return r.lib.Send(p, count, ndt, peer, r.comm, r.stream)
}

func (r *ncclRank) Recv(buf []byte, count int, dt reduce.DataType, peer int) error {
	p, err := r.ptr(buf)
	if err != nil {
		return err
	}
	ndt, err := nccl.DataType(dt)
	if err != nil {
		return err
	}
	return r.lib.Recv(p, count, ndt, peer, r.comm, r.stream)
}

// ShareThreadGroup gives the ranks cs, driven by one thread, one group
// depth: a group opened inside the thread's open group is NCCL's no-op,
// so only the outermost start and end go to NCCL (a 2-GPU sendrecv
// iteration: 6 calls instead of 10).
func (r *ncclRank) ShareThreadGroup(cs []Comm) {
	g := &threadGroup{}
	for _, c := range cs {
		if nr, ok := c.(*ncclRank); ok {
			nr.group = g
		}
	}
}

func (r *ncclRank) GroupStart() error { return r.group.start(r.lib.GroupStart) }

func (r *ncclRank) GroupEnd() error { return r.group.end(r.lib.GroupEnd) }

// start opens a group: through call (ncclGroupStart) unless the thread's
// group is open already. A nil group always calls.
func (g *threadGroup) start(call func() error) error {
	if g == nil {
		return call()
	}
	if g.depth++; g.depth > 1 {
		return nil
	}
	if err := call(); err != nil {
		g.depth--
		return err
	}
	return nil
}

// end closes a group: through call (ncclGroupEnd) when it is the
// outermost, or when none is open (NCCL then says what is wrong).
func (g *threadGroup) end(call func() error) error {
	if g == nil || g.depth == 0 {
		return call()
	}
	if g.depth--; g.depth > 0 {
		return nil
	}
	return call()
}

func (r *ncclRank) Synchronize() error { return r.lib.StreamSynchronize(r.stream) }

// LastChoice is what NCCL's TUNING log says it ran for the last
// collective, when the log is on (NCCL_DEBUG=INFO,
// NCCL_DEBUG_SUBSYS=TUNING) and this is rank 0; else nothing.
func (r *ncclRank) LastChoice() ccl.Choice {
	if r.rank != 0 || r.lastColl == "" {
		return ccl.Choice{}
	}
	return r.be.chosen(r.lastColl)
}

func (r *ncclRank) BeginCapture() error { return r.lib.BeginCapture(r.stream) }

func (r *ncclRank) EndCapture() error {
	var err error
	r.graph.g, err = r.lib.EndCapture(r.stream)
	return err
}

func (r *ncclRank) Instantiate() error {
	var err error
	r.graph.exec, err = r.lib.Instantiate(r.graph.g)
	return err
}

func (r *ncclRank) LaunchGraph() error { return r.lib.GraphLaunch(r.graph.exec, r.stream) }

func (r *ncclRank) FreeGraph() error {
	if r.graph.g == 0 && r.graph.exec == 0 {
		return nil
	}
	err := r.lib.GraphFree(r.graph.g, r.graph.exec)
	r.graph.g, r.graph.exec = 0, 0
	return err
}

// RecordEvent records event i on the stream, creating events as needed.
func (r *ncclRank) RecordEvent(i int) error {
	for len(r.events) <= i {
		var e uintptr
		if err := r.lib.OnDevice(r.dev, func() (err error) { e, err = r.lib.EventCreate(); return err }); err != nil {
			return err
		}
		r.events = append(r.events, e)
	}
	return r.lib.EventRecord(r.events[i], r.stream)
}

func (r *ncclRank) EventMs(i, j int) (float64, error) {
	return r.lib.EventElapsed(r.events[i], r.events[j])
}

// Destroy frees the rank: graph, events, reductions, registrations,
// buffers, stream, communicator. Every error is reported.
func (r *ncclRank) Destroy() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.destroyed {
		return nil
	}
	r.destroyed = true
	var errs []error
	errs = append(errs, r.Synchronize(), r.FreeGraph())
	for _, e := range r.events {
		errs = append(errs, r.lib.EventDestroy(e))
	}
	for _, o := range r.preMul {
		errs = append(errs, r.lib.RedOpDestroy(o, r.comm))
	}
	for _, m := range r.mirrors {
		switch r.register {
		case 1:
			errs = append(errs, r.lib.Deregister(r.comm, m.reg))
		case 2:
			errs = append(errs, r.lib.WindowDeregister(r.comm, m.reg))
		}
		if r.ncclMem {
			errs = append(errs, r.lib.MemFree(m.dev))
		} else {
			errs = append(errs, r.lib.Free(m.dev))
		}
	}
	if r.stream != 0 {
		errs = append(errs, r.lib.StreamDestroy(r.stream))
	}
	errs = append(errs, r.lib.CommDestroy(r.comm))
	return errors.Join(errs...)
}
