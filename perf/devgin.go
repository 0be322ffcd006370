// The GIN kernels of alltoall -D 3 and -D 4 (nccl-tests' GinAlltoAllKernel
// and HybridAlltoAllKernel): each coop reads its signal, meets the world
// at the hybrid barrier of its index, puts its blocks to their ranks with
// a SignalInc each (-D 4: LSA stores to the ranks of its host instead),
// the receiving coop waits until its signal counted the puts it expects,
// every coop flushes its puts, and the world meets again.
//
// A coop is a CTA of one thread: coop k puts to the ranks p with
// p % V == k, signalling index k at p, so every put to rank p lands on
// signal p % V, which p's coop p % V waits for (nccl-tests' receivingCta
// with blockDim 1). Signals are never reset: each launch reads its
// signal before the first barrier, when no put of this launch can have
// landed (every sender waits there for this rank) and every put of the
// last one has (its receiving coop waited for them), and waits for that
// value plus the puts expected, comparing modulo 2^64 (nccl-tests'
// readSignal + waitSignal(signalValue + n)).

package perf

import (
	"github.com/gccl/gccl/lib/ccl"
)

// ginContexts is the GIN contexts a device communicator of -D 3/4 has:
// nccl-tests' kernels put on context 0 only.
const ginContexts = 1

// ginReqs is nccl-tests' requirements of -D 3/4: a barrier (LSA and rail
// GIN) and a GIN signal per coop, and GIN.
func ginReqs(v int) ccl.DevCommRequirements {
	return ccl.DevCommRequirements{BarrierCount: v, GinSignalCount: v, GinContextCount: ginContexts}
}

// ginSessions gives the coop its GIN context (coop k: context k modulo
// the contexts) and its session on the hybrid barrier of its index.
func (c *coop) ginSessions() error {
	d := c.r.d
	g, err := d.Gin(c.k % d.GinContextCount)
	if err != nil {
		return err
	}
	if c.hbar, err = d.Barrier(g, c.k); err != nil {
		return err
	}
	c.gin = g
	return nil
}

// ginStage copies coop k's share of the rank's own blocks (in place: in
// the recv window) into the stage window at the same offsets. The run
// finishes it on every coop before any coop arrives at the first
// barrier, so no peer overwrites a block before it is staged, and the
// puts and stores read the staged copy.
func ginStage(c *coop) {
	l := c.l
	b := c.r.d.NRanks * l.count * l.dt.Size()
	lo, hi := split(b, 1, c.k, c.r.v)
	copy(c.r.sym.stage[l.sendOff+lo:l.sendOff+hi], c.r.sym.recv[l.sendOff+lo:l.sendOff+hi])
}

// ginAlltoAll is -D 3 (hybrid false: a GIN put to every rank) or -D 4
// (hybrid: LSA stores to the ranks of this host, GIN puts to the others).
func ginAlltoAll(hybrid bool) func(c *coop) error {
	return func(c *coop) error {
		r, l, d := c.r, c.l, c.r.d
		sig := c.k
		base, err := c.gin.ReadSignal(sig)
		if err != nil {
			return err
		}
		if err := c.hbar.Sync(); err != nil {
			return err
		}
		blk := l.count * l.dt.Size()
		src, local := r.sym.sendWin, r.sym.send
		if l.inPlace {
			src, local = r.sym.stageWin, r.sym.stage
		}
		world := ccl.TeamWorld(d)
		first := d.Rank - d.LsaRank // the world rank of this host's LSA rank 0
		expect := d.NRanks
		if hybrid {
			expect -= d.LsaSize
		}
		for p := c.k; p < d.NRanks; p += r.v {
			if hybrid && p >= first && p < first+d.LsaSize {
				continue
			}
			if err := c.gin.Put(world, p, r.sym.recvWin, l.recvOff+d.Rank*blk, src, l.sendOff+p*blk, blk, ccl.SignalInc{Signal: sig}, nil); err != nil {
				return err
			}
		}
		if hybrid {
			c.lsaStores(local[l.sendOff:], first)
		}
		if d.Rank%r.v == c.k && expect > 0 {
			if err := c.gin.WaitSignal(sig, base+uint64(expect)); err != nil {
				return err
			}
		}
		if err := c.gin.Flush(); err != nil {
			return err
		}
		return c.hbar.Sync()
	}
}

// lsaStores is -D 4's LSA part: the coop's range of this rank's block for
// each rank of its host (blocks from mine, indexed by world rank first +
// LSA rank) stored into that rank's recv buffer at this rank's slot.
func (c *coop) lsaStores(mine []byte, first int) {
	r, l := c.r, c.l
	size := l.dt.Size()
	lo, hi := split(l.count, size, c.k, r.v)
	blk := l.count * size
	at := l.recvOff + r.d.Rank*blk
	for lp, dst := range r.peerRecv {
		q := first + lp
		copy(dst[at+lo*size:at+hi*size], mine[q*blk+lo*size:q*blk+hi*size])
	}
}
