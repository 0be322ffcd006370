package ccl

import (
	"bytes"
	"errors"
	"fmt"
	"sync"
	"testing"

	"github.com/gccl/gccl/lib/exact"
	"github.com/gccl/gccl/lib/proto"
	"github.com/gccl/gccl/lib/reduce"
)

// The correctness matrix: every collective x type x reduction x rank count
// x protocol x channel count x size, in place and out of place, against
// exact-by-construction references compared bit for bit. One set of
// communicators per (ranks, protocol, channels) runs every case in sequence,
// so FIFO step counters also carry over between operations and protocols.
//
// Under -race (or -short) each cell runs a deterministic sample of the
// types and reductions; without it, everything.

var matrixColls = []Coll{CollAllReduce, CollReduceScatter, CollReduce, CollAllGather, CollBroadcast, CollAlltoAll, CollGather, CollScatter, CollSend}

func reduces(c Coll) bool { return c == CollAllReduce || c == CollReduceScatter || c == CollReduce }

// matrixSizes are element counts: empty, one element, odd, just below and
// above one step of the protocol, and several times the whole buffer.
func matrixSizes(p proto.Protocol, buff int, elt int) []int {
	step := p.StepData(buff) / elt
	if p == proto.Simple {
		step = buff / proto.Steps / elt
	}
	return []int{0, 1, 37, step - 1, step + 1, 3*buff/elt + 5}
}

type matrixCase struct {
	coll    Coll
	dt      DataType
	op      reduce.Op
	count   int
	root    int
	inPlace bool
}

func (m matrixCase) String() string {
	place := "out"
	if m.inPlace {
		place = "in"
	}
	return fmt.Sprintf("%s %s %s count=%d root=%d %s-place", m.coll, m.dt, m.op, m.count, m.root, place)
}

func TestMatrix(t *testing.T) {
	sample := raceEnabled || testing.Short()
	protos := []proto.Protocol{proto.LL, proto.LL128, proto.Simple}
	cell := 0
	for _, n := range []int{1, 2, 3, 4, 5, 8} {
		for _, p := range protos {
			for _, nch := range []int{1, 2, 3} {
				cell++
				name := fmt.Sprintf("n=%d/%s/ch=%d", n, p, nch)
				cases := matrixCases(matrixColls, n, p, cell, sample)
				t.Run(name, func(t *testing.T) {
					t.Parallel()
					cfg := smallBuffers
					cfg.Proto, cfg.Algo, cfg.NChannels = protoReq(p.String()), algoReq("Ring"), nch
					comms := initT(t, n, cfg)
					runCases(t, comms, cases)
				})
			}
		}
	}
}

func matrixCases(colls []Coll, n int, p proto.Protocol, cell int, sample bool) []matrixCase {
	buff := proto.DefaultBuffSizes()
	buff[proto.Simple], buff[proto.LL], buff[proto.LL128] = smallBuffers.BuffSize, smallBuffers.LLBuffSize, smallBuffers.LL128BuffSize
	var cases []matrixCase
	eachCollTypeOp(colls, func(coll Coll, dt DataType, op reduce.Op, k int) {
		if sample && (k+cell)%7 != 0 {
			return
		}
		for si, count := range matrixSizes(p, buff[p], dt.Size()) {
			if coll == CollAlltoAll || coll == CollGather || coll == CollScatter {
				count = min(count, 2*buff[p]/dt.Size()) // n messages each way: keep it quick
			}
			for _, inPlace := range []bool{false, true} {
				if inPlace && coll == CollSend {
					continue // send/recv has no in-place form
				}
				cases = append(cases, matrixCase{coll: coll, dt: dt, op: op, count: count, root: (si + k) % n, inPlace: inPlace})
			}
		}
	})
	return cases
}

// eachCollTypeOp calls fn for every collective x type x reduction (Sum
// alone for those that do not reduce), k counting the calls from 1.
func eachCollTypeOp(colls []Coll, fn func(coll Coll, dt DataType, op reduce.Op, k int)) {
	k := 0
	for _, coll := range colls {
		ops := []reduce.Op{reduce.Sum}
		if reduces(coll) {
			ops = reduce.AllOps()
		}
		for _, dt := range reduce.AllDataTypes() {
			for _, op := range ops {
				k++
				fn(coll, dt, op, k)
			}
		}
	}
}

const guard = 64 // bytes after every buffer that must stay untouched

func runCases(t *testing.T, comms []*Comm, cases []matrixCase) {
	n := comms[0].Size() // comms may be this process's share of the ranks
	var mu sync.Mutex
	fail := func(format string, args ...any) {
		mu.Lock()
		defer mu.Unlock()
		t.Errorf(format, args...)
	}
	perRank(comms, func(c *Comm) {
		r := c.Rank()
		for i, m := range cases {
			seed := uint64(i*977 + 13)
			send, recv, want := buffersFor(m, r, n, seed)
			op := RedOp{Op: m.op, Scalar: exact.Scalar(m.dt)}
			if err := callColl(c, m, send, recv, op); err != nil {
				fail("rank %d %v: %v", r, m, err)
				return
			}
			if err := c.Synchronize(); err != nil {
				fail("rank %d %v: %v", r, m, err)
				return
			}
			got := recvOf(m, r, send, recv)
			if want != nil {
				if wrong, first := exact.Compare(got[:len(want)], want, m.dt, 0); wrong > 0 {
					fail("rank %d %v: %d wrong elements, first at %d", r, m, wrong, first)
					return
				}
			}
			for _, b := range [][]byte{send, recv} {
				if b != nil && !bytes.Equal(b[len(b)-guard:], guardBytes) {
					fail("rank %d %v: wrote past the end of a buffer", r, m)
					return
				}
			}
		}
	})
}

var guardBytes = bytes.Repeat([]byte{0xA5}, guard)

func withGuard(n int) []byte {
	b := make([]byte, n+guard)
	copy(b[n:], guardBytes)
	return b
}

// buffersFor builds rank r's send and recv buffers (with guards) and the
// exact expected output; want is nil when rank r has no output.
func buffersFor(m matrixCase, r, n int, seed uint64) (send, recv, want []byte) {
	e, cnt := m.dt.Size(), m.count
	b := cnt * e
	fill := func(buf []byte, rank, first, count int) {
		exact.Fill(buf[:count*e], m.dt, m.op, seed, rank, n, first, count)
	}
	plain := func(buf []byte, rank, first, count int) {
		exact.FillPlain(buf[:count*e], m.dt, seed, rank, first, count)
	}
	switch m.coll {
	case CollAllReduce, CollReduce:
		send = withGuard(b)
		fill(send, r, 0, cnt)
		if m.coll == CollAllReduce || r == m.root {
			want = make([]byte, b)
			exact.Expected(want, m.dt, m.op, seed, n, 0, cnt)
		}
		if m.inPlace {
			return send, nil, want
		}
		return send, withGuard(b), want
	case CollReduceScatter:
		send = withGuard(n * b)
		fill(send, r, 0, n*cnt)
		want = make([]byte, b)
		exact.Expected(want, m.dt, m.op, seed, n, r*cnt, cnt)
		if m.inPlace {
			return send, nil, want
		}
		return send, withGuard(b), want
	case CollAllGather:
		recv = withGuard(n * b)
		want = make([]byte, n*b)
		for p := 0; p < n; p++ {
			plain(want[p*b:], p, 0, cnt)
		}
		if m.inPlace {
			plain(recv[r*b:], r, 0, cnt)
			return nil, recv, want
		}
		send = withGuard(b)
		plain(send, r, 0, cnt)
		return send, recv, want
	case CollBroadcast:
		want = make([]byte, b)
		plain(want, m.root, 0, cnt)
		send = withGuard(b)
		if r == m.root {
			plain(send, r, 0, cnt)
		}
		if m.inPlace {
			return send, nil, want
		}
		return send, withGuard(b), want
	case CollAlltoAll:
		send, want = withGuard(n*b), make([]byte, n*b)
		for p := 0; p < n; p++ {
			plain(send[p*b:], r, p*cnt, cnt)
			plain(want[p*b:], p, r*cnt, cnt)
		}
		if m.inPlace {
			return send, nil, want
		}
		return send, withGuard(n * b), want
	case CollGather:
		if r == m.root {
			recv, want = withGuard(n*b), make([]byte, n*b)
			for p := 0; p < n; p++ {
				plain(want[p*b:], p, 0, cnt)
			}
		}
		if m.inPlace && r == m.root {
			plain(recv[r*b:], r, 0, cnt)
			return nil, recv, want
		}
		send = withGuard(b)
		plain(send, r, 0, cnt)
		return send, recv, want
	case CollSend: // a shift: send to r+d, receive from r-d (p2pShift)
		send, recv, want = withGuard(b), withGuard(b), make([]byte, b)
		plain(send, r, 0, cnt)
		plain(want, (r-p2pShift(m, n)+n)%n, 0, cnt)
		return send, recv, want
	case CollScatter:
		want = make([]byte, b)
		plain(want, m.root, r*cnt, cnt)
		if r == m.root {
			send = withGuard(n * b)
			for p := 0; p < n; p++ {
				plain(send[p*b:], r, p*cnt, cnt)
			}
			if m.inPlace {
				return send, nil, want
			}
		}
		return send, withGuard(b), want
	}
	panic("unreachable")
}

// inPlaceViews returns the send and recv slices the call sees: in place, one
// is a view of the other as NCCL defines it.
func inPlaceViews(m matrixCase, r, n int, send, recv []byte) ([]byte, []byte) {
	b := m.count * m.dt.Size()
	if !m.inPlace {
		return send, recv
	}
	switch m.coll {
	case CollAllReduce, CollReduce, CollBroadcast, CollAlltoAll:
		return send, send
	case CollReduceScatter:
		return send, send[r*b:]
	case CollAllGather:
		return recv[r*b:], recv
	case CollGather:
		if r == m.root {
			return recv[r*b:], recv
		}
	case CollScatter:
		if r == m.root {
			return send, send[r*b:]
		}
	}
	return send, recv
}

func recvOf(m matrixCase, r int, send, recv []byte) []byte {
	if !m.inPlace {
		return recv
	}
	b := m.count * m.dt.Size()
	switch m.coll {
	case CollAllReduce, CollReduce, CollBroadcast, CollAlltoAll:
		return send
	case CollReduceScatter:
		return send[r*b:]
	case CollScatter:
		if recv == nil {
			return send[r*b:]
		}
	}
	return recv
}

func callColl(c *Comm, m matrixCase, send, recv []byte, op RedOp) error {
	send, recv = inPlaceViews(m, c.Rank(), c.Size(), send, recv)
	switch m.coll {
	case CollAllReduce:
		return c.AllReduce(send, recv, m.count, m.dt, op)
	case CollReduceScatter:
		return c.ReduceScatter(send, recv, m.count, m.dt, op)
	case CollReduce:
		return c.Reduce(send, recv, m.count, m.dt, op, m.root)
	case CollAllGather:
		return c.AllGather(send, recv, m.count, m.dt)
	case CollBroadcast:
		return c.Broadcast(send, recv, m.count, m.dt, m.root)
	case CollAlltoAll:
		return c.AlltoAll(send, recv, m.count, m.dt)
	case CollGather:
		return c.Gather(send, recv, m.count, m.dt, m.root)
	case CollScatter:
		return c.Scatter(send, recv, m.count, m.dt, m.root)
	case CollSend:
		r, n, d := c.Rank(), c.Size(), p2pShift(m, c.Size())
		if err := c.GroupStart(); err != nil {
			return err
		}
		err := c.Send(send, m.count, m.dt, (r+d)%n)
		if err == nil {
			err = c.Recv(recv, m.count, m.dt, (r-d+n)%n)
		}
		return errors.Join(err, c.GroupEnd())
	}
	return fmt.Errorf("no call for %s", m.coll)
}

// p2pShift is how far a send/recv case sends, 1 to n-1 by its root (a
// rank to itself on one rank).
func p2pShift(m matrixCase, n int) int { return 1 + m.root%max(n-1, 1) }
