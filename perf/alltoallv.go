package perf

import (
	"github.com/gccl/gccl/lib/exact"
)

// AlltoAllv is nccl-tests' alltoallv_perf (2.19): an alltoall in which each
// rank sends a different amount to each peer, as grouped sends and
// receives. The amounts come from a traffic pattern (traffic), read from
// the environment when the run starts (bindAlltoAllv); without one it is
// nccl-tests' default, fully distance-weighted.
var AlltoAllv = func() *Test {
	t := newAlltoAllv(&traffic{spread: 1})
	t.bind = bindAlltoAllv
	return t
}()

// newAlltoAllv is the alltoallv test of one traffic pattern. nccl-tests
// runs it in place on one buffer but does not check the result (#wrong
// N/A): a rank's receives overwrite segments it is still sending.
func newAlltoAllv(tr *traffic) *Test {
	return &Test{
		Prog: "alltoallv_perf", Collective: "alltoallv",
		sizes: tr, busFactor: ring, naInPlace: true, inPlaceStage: stageKept,
		run: tr.run, fill: tr.fill, want: tr.want,
	}
}

// traffic is an alltoallv traffic pattern: the bytes rank i sends to rank
// j. Every amount is a multiple of 16 bytes, so of every element size.
type traffic struct {
	// spread blends the generated pattern from uniform (0) to
	// distance-weighted (1): rank i sends rank j an amount that grows
	// with (j-i) mod n, nothing to itself.
	spread float64
	// matrix, when set, gives the bytes from row rank to column rank
	// (the first n rows and columns of NCCL_TESTS_ALLTOALLV_MATRIX_FILE)
	// whatever the size; the param count is then 0, as in nccl-tests.
	matrix [][]int64
	// stage is each rank's in-place receive buffer, set up by bind for n
	// ranks; element r is touched only by the goroutine driving rank r.
	stage [][]byte
}

// peerBytes are the bytes rank i sends rank j in a call that moves total
// bytes per rank (param count x n x element size).
func (tr *traffic) peerBytes(i, j, n int, total int64) int64 {
	if tr.matrix != nil {
		return tr.matrix[i][j]
	}
	if n == 1 {
		return total &^ 15
	}
	// nccl-tests' float formula, operation for operation (the float64
	// conversions keep Go from fusing a multiply-add), so that the sizes
	// it prints come out to the byte.
	d := (j - i + n) % n
	sumDist := float64(int64(n) * int64(n-1) / 2)
	uniform := float64(total) / float64(n)
	dist := float64(d) * float64(total) / sumDist
	b := float64((1-tr.spread)*uniform) + float64(tr.spread*dist)
	return int64(b) &^ 15
}

// totals are the most bytes any rank sends and any rank receives in a call
// of param elements of elt bytes.
func (tr *traffic) totals(param, elt, n int) (send, recv int64) {
	total := int64(param) * int64(n) * int64(elt)
	if tr.matrix == nil {
		// A generated pattern depends on (j-i) mod n only: every rank
		// sends and receives what rank 0 sends.
		for j := 0; j < n; j++ {
			send += tr.peerBytes(0, j, n, total)
		}
		return send, send
	}
	for i := 0; i < n; i++ {
		var s, r int64
		for j := 0; j < n; j++ {
			s += tr.peerBytes(i, j, n, total)
			r += tr.peerBytes(j, i, n, total)
		}
		send, recv = max(send, s), max(recv, r)
	}
	return send, recv
}

// counts: the param count is the per-peer count of an even split, rounded
// down to 16 bytes (0 with a matrix); the row's size is the larger buffer.
func (tr *traffic) counts(size int64, elt, n int) (param int, rowBytes int64) {
	if tr.matrix == nil {
		param = int((size / int64(elt) / int64(n)) &^ int64(16/elt-1))
	}
	send, recv := tr.totals(param, elt, n)
	return param, max(send, recv)
}

func (tr *traffic) bufBytes(param, elt, n int) (send, recv int) {
	s, r := tr.totals(param, elt, n)
	return int(s), int(r)
}

// algBytes: nccl-tests counts the busiest rank's bytes, sent or received.
func (tr *traffic) algBytes(param, elt, n int) int64 {
	s, r := tr.totals(param, elt, n)
	return max(s, r)
}

// run sends each peer its segment of the send buffer and receives each
// peer's segment into the receive buffer, in peer order, in one group.
func (tr *traffic) run(c Comm, a callArgs) error {
	n, me, elt := c.Size(), c.Rank(), a.dt.Size()
	total := int64(a.count) * int64(n) * int64(elt)
	recv := a.recv
	if sameStart(a.send, a.recv) {
		var err error
		if recv, err = tr.staging(c, me, len(a.recv)); err != nil {
			return err
		}
	}
	if err := c.GroupStart(); err != nil {
		return err
	}
	var err error
	var sent, got int64
	for p := 0; p < n && err == nil; p++ {
		if b := tr.peerBytes(me, p, n, total); b > 0 {
			err = c.Send(a.send[sent:sent+b], int(b)/elt, a.dt, p)
			sent += b
		}
		if b := tr.peerBytes(p, me, n, total); b > 0 && err == nil {
			err = c.Recv(recv[got:got+b], int(b)/elt, a.dt, p)
			got += b
		}
	}
	if endErr := c.GroupEnd(); err == nil {
		err = endErr
	}
	return err
}

// staging is rank's in-place receive buffer. In place, NCCL leaves the
// overlap of a rank's sends and receives undefined; here it would be a
// data race between channel goroutines. The receives land beside the
// buffer instead: the same traffic, and a result nobody checks.
// A device backend gets a twin of each new staging buffer.
func (tr *traffic) staging(c Comm, rank, size int) ([]byte, error) {
	if tr.stage == nil { // not bound to a run: a buffer per call
		return make([]byte, size), nil
	}
	if len(tr.stage[rank]) < size {
		tr.stage[rank] = make([]byte, size)
		if m, ok := c.(mirrorComm); ok {
			if err := m.Mirror(tr.stage[rank]); err != nil {
				return nil, err
			}
		}
	}
	return tr.stage[rank][:size], nil
}

// fill: a rank's send buffer is one stream of its plain data, cut into
// the peers' segments in peer order.
func (tr *traffic) fill(a dataArgs, send []byte) {
	elt := a.dt.Size()
	total := int64(a.count) * int64(a.n) * int64(elt)
	var b int64
	for p := 0; p < a.n; p++ {
		b += tr.peerBytes(a.rank, p, a.n, total)
	}
	exact.FillPlain(send[:b], a.dt, a.seed, a.rank, 0, int(b)/elt)
}

// want: the segments each source sent this rank, in source order, each
// read at its offset in the source's stream; the rest of the buffer (a
// matrix rank that receives less than the busiest) keeps the poison.
func (tr *traffic) want(a dataArgs) []byte {
	elt := a.dt.Size()
	_, recvLen := tr.bufBytes(a.count, elt, a.n)
	out := a.wantBuf(recvLen)
	total := int64(a.count) * int64(a.n) * int64(elt)
	var pos int64
	for src := 0; src < a.n; src++ {
		var first int64 // bytes src sends to ranks before this one
		for k := 0; k < a.rank; k++ {
			first += tr.peerBytes(src, k, a.n, total)
		}
		b := tr.peerBytes(src, a.rank, a.n, total)
		exact.FillPlain(out[pos:pos+b], a.dt, a.seed, src, int(first)/elt, int(b)/elt)
		pos += b
	}
	for i := pos; i < int64(len(out)); i++ {
		out[i] = poison
	}
	return out
}
