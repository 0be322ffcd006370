package ccl

import (
	"fmt"
	"math"
	"unsafe"

	"github.com/gccl/gccl/lib/reduce"
)

// task is one call recorded into the current group.
type task struct {
	coll     Coll
	send     []byte
	recv     []byte
	count    int // elements (per rank for allgather/reducescatter, per peer for p2p)
	dt       DataType
	op       RedOp
	kernel   *reduce.Kernel
	root     int // root, or the peer for send/recv
	elt      int
	inPlace  bool
	seqInGrp int
}

// AllReduce reduces count elements of every rank's send into every rank's recv.
func (c *Comm) AllReduce(send, recv []byte, count int, dt DataType, op RedOp) error {
	return c.enqueueColl(task{coll: CollAllReduce, send: send, recv: recv, count: count, dt: dt, op: op})
}

// AllGather gathers sendCount elements from every rank into recv, rank r's
// block at r*sendCount. In place when send is recv's block of this rank.
func (c *Comm) AllGather(send, recv []byte, sendCount int, dt DataType) error {
	return c.enqueueColl(task{coll: CollAllGather, send: send, recv: recv, count: sendCount, dt: dt})
}

// ReduceScatter reduces n*recvCount elements and leaves block r in rank r's
// recv. In place when recv is send's block of this rank.
func (c *Comm) ReduceScatter(send, recv []byte, recvCount int, dt DataType, op RedOp) error {
	return c.enqueueColl(task{coll: CollReduceScatter, send: send, recv: recv, count: recvCount, dt: dt, op: op})
}

// Broadcast copies count elements of root's send into every rank's recv.
// send is read on the root only.
func (c *Comm) Broadcast(send, recv []byte, count int, dt DataType, root int) error {
	return c.enqueueColl(task{coll: CollBroadcast, send: send, recv: recv, count: count, dt: dt, root: root})
}

// Reduce reduces count elements of every rank's send into root's recv.
// recv is written on the root only.
func (c *Comm) Reduce(send, recv []byte, count int, dt DataType, op RedOp, root int) error {
	return c.enqueueColl(task{coll: CollReduce, send: send, recv: recv, count: count, dt: dt, op: op, root: root})
}

// Send sends count elements of buf to peer. Inside a group it pairs with
// the peer's Recv without blocking the group's other calls.
func (c *Comm) Send(buf []byte, count int, dt DataType, peer int) error {
	return c.enqueueP2P(task{coll: CollSend, send: buf, count: count, dt: dt, root: peer})
}

// Recv receives count elements from peer into buf.
func (c *Comm) Recv(buf []byte, count int, dt DataType, peer int) error {
	return c.enqueueP2P(task{coll: CollRecv, recv: buf, count: count, dt: dt, root: peer})
}

// AlltoAll sends block p (count elements) of send to rank p and receives
// rank p's block into block p of recv: one group of sends and receives.
// In place (send and recv the same buffer) the receives land in a staging
// buffer that is copied into recv once the whole plan is done; any other
// overlap is an error.
func (c *Comm) AlltoAll(send, recv []byte, count int, dt DataType) error {
	n := c.Size()
	if err := c.checkBuffers(CollAlltoAll, send, recv, count, dt, n, n); err != nil {
		return c.groupFail(err)
	}
	total := c.bytes(count*n, dt)
	dst, staged := recv[:total], false
	if overlaps(send[:total], dst) {
		if !sameStart(send, recv) {
			return c.groupFail(fmt.Errorf("ccl: alltoall on rank %d: send and recv overlap without being the same buffer", c.rank))
		}
		dst, staged = make([]byte, total), true
	}
	c.labelGroup(CollAlltoAll)
	return c.grouped(func() error {
		b := c.bytes(count, dt)
		for p := 0; p < n; p++ {
			if err := c.Send(send[p*b:(p+1)*b], count, dt, p); err != nil {
				return err
			}
			if err := c.Recv(dst[p*b:(p+1)*b], count, dt, p); err != nil {
				return err
			}
		}
		if staged {
			return c.addTask(task{coll: collStagedCopy, send: dst, recv: recv[:total]})
		}
		return nil
	})
}

// Gather collects count elements of every rank's send into root's recv,
// rank r's block at r*count. recv is used on the root only.
func (c *Comm) Gather(send, recv []byte, count int, dt DataType, root int) error {
	n := c.Size()
	if err := c.checkRoot(CollGather, root); err != nil {
		return c.groupFail(err)
	}
	recvBlocks := 0
	if c.rank == root {
		recvBlocks = n
	}
	if err := c.checkBuffers(CollGather, send, recv, count, dt, 1, recvBlocks); err != nil {
		return c.groupFail(err)
	}
	c.labelGroup(CollGather)
	return c.grouped(func() error {
		b := c.bytes(count, dt)
		if err := c.Send(send[:b], count, dt, root); err != nil {
			return err
		}
		if c.rank == root {
			for p := 0; p < n; p++ {
				if err := c.Recv(recv[p*b:(p+1)*b], count, dt, p); err != nil {
					return err
				}
			}
		}
		return nil
	})
}

// Scatter sends block r (count elements) of root's send to rank r's recv.
// send is used on the root only.
func (c *Comm) Scatter(send, recv []byte, count int, dt DataType, root int) error {
	n := c.Size()
	if err := c.checkRoot(CollScatter, root); err != nil {
		return c.groupFail(err)
	}
	sendBlocks := 0
	if c.rank == root {
		sendBlocks = n
	}
	if err := c.checkBuffers(CollScatter, send, recv, count, dt, sendBlocks, 1); err != nil {
		return c.groupFail(err)
	}
	c.labelGroup(CollScatter)
	return c.grouped(func() error {
		b := c.bytes(count, dt)
		if c.rank == root {
			for p := 0; p < n; p++ {
				if err := c.Send(send[p*b:(p+1)*b], count, dt, p); err != nil {
					return err
				}
			}
		}
		return c.Recv(recv[:b], count, dt, root)
	})
}

// grouped runs calls inside a group of their own (nested in the caller's).
func (c *Comm) grouped(calls func() error) error {
	if err := c.GroupStart(); err != nil {
		return err
	}
	err := calls()
	if endErr := c.GroupEnd(); err == nil {
		err = endErr
	}
	return err
}

func (c *Comm) bytes(count int, dt DataType) int { return count * dt.Size() }

// checkCount rejects unknown types, negative counts and counts whose byte
// size overflows.
func checkCount(coll Coll, count int, dt DataType, blocks int) error {
	if !dt.Valid() {
		return fmt.Errorf("ccl: %s: unknown data type %d (valid: int8, uint8, int32, uint32, int64, uint64, half, float, double, bfloat16)", coll, int(dt))
	}
	if count < 0 {
		return fmt.Errorf("ccl: %s: negative count %d", coll, count)
	}
	if blocks > 0 && count > math.MaxInt/dt.Size()/blocks {
		return fmt.Errorf("ccl: %s: count %d x %d blocks x %d bytes overflows", coll, count, blocks, dt.Size())
	}
	return nil
}

// checkBuffers checks that send holds sendBlocks and recv recvBlocks blocks
// of count elements (a buffer of 0 blocks is not used and may be nil).
func (c *Comm) checkBuffers(coll Coll, send, recv []byte, count int, dt DataType, sendBlocks, recvBlocks int) error {
	if err := checkCount(coll, count, dt, max(sendBlocks, recvBlocks, 1)); err != nil {
		return err
	}
	for _, b := range []struct {
		name   string
		buf    []byte
		blocks int
	}{{"send", send, sendBlocks}, {"recv", recv, recvBlocks}} {
		need := count * dt.Size() * b.blocks
		if len(b.buf) < need {
			what := "is nil"
			if b.buf != nil {
				what = fmt.Sprintf("holds %d bytes", len(b.buf))
			}
			return fmt.Errorf("ccl: %s on rank %d: %s buffer %s but %d elements of %s need %d bytes",
				coll, c.rank, b.name, what, count*b.blocks, dt, need)
		}
	}
	return nil
}

func (c *Comm) checkRoot(coll Coll, root int) error {
	if root < 0 || root >= c.Size() {
		what := "root"
		if coll == CollSend || coll == CollRecv {
			what = "peer"
		}
		return fmt.Errorf("ccl: %s: %s %d is out of range: want 0..%d", coll, what, root, c.Size()-1)
	}
	return nil
}

func addr(b []byte) uintptr { return uintptr(unsafe.Pointer(unsafe.SliceData(b))) }

// overlaps reports whether two non-empty byte ranges share memory.
func overlaps(a, b []byte) bool {
	if len(a) == 0 || len(b) == 0 {
		return false
	}
	return addr(a) < addr(b)+uintptr(len(b)) && addr(b) < addr(a)+uintptr(len(a))
}

func sameStart(a, b []byte) bool { return len(a) > 0 && len(b) > 0 && addr(a) == addr(b) }

// validateColl checks a collective's arguments and fills in its derived
// fields. It returns the bytes its send and recv buffers must hold.
func (c *Comm) validateColl(t *task) (needSend, needRecv int, err error) {
	n, elt := c.Size(), t.dt.Size()
	sendBlocks, recvBlocks := 1, 1
	switch t.coll {
	case CollAllGather:
		recvBlocks = n
	case CollReduceScatter:
		sendBlocks = n
	case CollBroadcast, CollReduce:
		if err := c.checkRoot(t.coll, t.root); err != nil {
			return 0, 0, err
		}
		if t.coll == CollBroadcast && c.rank != t.root {
			sendBlocks = 0
		}
		if t.coll == CollReduce && c.rank != t.root {
			recvBlocks = 0
		}
	}
	if err := c.checkBuffers(t.coll, t.send, t.recv, t.count, t.dt, sendBlocks, recvBlocks); err != nil {
		return 0, 0, err
	}
	t.elt = elt
	if t.coll == CollAllReduce || t.coll == CollReduceScatter || t.coll == CollReduce {
		if !t.op.Op.Valid() {
			return 0, 0, fmt.Errorf("ccl: %s: unknown reduction %d (valid: sum, prod, max, min, avg, premulsum)", t.coll, int(t.op.Op))
		}
		k, err := c.kernel(t.dt, t.op)
		if err != nil {
			return 0, 0, fmt.Errorf("ccl: %s: %w", t.coll, err)
		}
		t.kernel = k
	}
	needSend, needRecv = t.count*elt*sendBlocks, t.count*elt*recvBlocks
	var overlap bool
	if t.inPlace, overlap = c.placement(t, needSend, needRecv); overlap {
		return 0, 0, c.overlapError(t)
	}
	return needSend, needRecv, nil
}

// placement reports whether t runs in place, the exact aliasing NCCL
// defines, given the bytes of its buffers it uses (which they hold), and
// whether they overlap otherwise (an error: overlapError).
func (c *Comm) placement(t *task, needSend, needRecv int) (inPlace, overlap bool) {
	in, out := t.send[:needSend], t.recv[:needRecv]
	switch t.coll {
	case CollAllGather:
		inPlace = sameStart(in, out[c.rank*needSend:])
	case CollReduceScatter:
		inPlace = sameStart(out, in[c.rank*needRecv:])
	default:
		inPlace = sameStart(in, out)
	}
	return inPlace, !inPlace && overlaps(in, out)
}

func (c *Comm) overlapError(t *task) error {
	return fmt.Errorf("ccl: %s on rank %d: send and recv buffers overlap without being in place", t.coll, c.rank)
}

func (c *Comm) enqueueColl(t task) error {
	if err := c.usable(); err != nil {
		return err
	}
	if err := c.validateCached(&t); err != nil {
		return c.groupFail(err)
	}
	if c.tryFast(&t) {
		return nil
	}
	return c.addTask(t)
}

func (c *Comm) enqueueP2P(t task) error {
	if err := c.usable(); err != nil {
		return err
	}
	buf := t.send
	if t.coll == CollRecv {
		buf = t.recv
	}
	if err := c.checkRoot(t.coll, t.root); err != nil {
		return c.groupFail(err)
	}
	if err := checkCount(t.coll, t.count, t.dt, 1); err != nil {
		return c.groupFail(err)
	}
	if need := t.count * t.dt.Size(); len(buf) < need {
		return c.groupFail(fmt.Errorf("ccl: %s on rank %d to/from peer %d: buffer holds %d bytes but %d elements of %s need %d",
			t.coll, c.rank, t.root, len(buf), t.count, t.dt, need))
	}
	t.elt = t.dt.Size()
	return c.addTask(t)
}

// kernelKey names a PreMulSum kernel: its scalar by its bits, as -0 and
// +0 scale to different signs (and are one map key as float64s).
type kernelKey struct {
	dt     DataType
	op     reduce.Op
	scalar uint64
}

// kernel returns the cached reduction kernel for (dt, op): kernels are
// immutable, so operations share them.
func (c *Comm) kernel(dt DataType, op RedOp) (*reduce.Kernel, error) {
	if op.Op != reduce.PreMulSum && dt.Valid() && op.Op.Valid() {
		if k := c.opKernels[dt][op.Op]; k != nil {
			return k, nil
		}
		k, err := reduce.NewKernel(dt, op.Op, 0, c.Size())
		if err == nil {
			c.opKernels[dt][op.Op] = k
		}
		return k, err
	}
	key := kernelKey{dt, op.Op, math.Float64bits(op.Scalar)}
	if k, ok := c.kernels[key]; ok {
		return k, nil
	}
	k, err := reduce.NewKernel(dt, op.Op, op.Scalar, c.Size())
	if err != nil {
		return nil, err
	}
	if c.kernels == nil {
		c.kernels = map[kernelKey]*reduce.Kernel{}
	}
	c.kernels[key] = k
	return k, nil
}
