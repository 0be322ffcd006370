package ccl

import (
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/gccl/gccl/lib/exact"
	"github.com/gccl/gccl/lib/proto"
)

// TestMatrixNoDirect runs a sample of the matrix with direct reads off
// (GCCL_P2P_DIRECT_DISABLE): every Simple step is copied through the FIFO
// slot, as across processes. TestMatrix and TestMatrixTree cover the
// default, direct reads on.
func TestMatrixNoDirect(t *testing.T) {
	cell := 0
	for _, n := range []int{2, 3, 5} {
		for _, algo := range []string{"Ring", "Tree"} {
			for _, nch := range []int{1, 2} {
				cell++
				colls := matrixColls
				if algo == "Tree" {
					colls = []Coll{CollAllReduce}
				}
				cases := matrixCases(colls, n, proto.Simple, cell, true)
				t.Run(fmt.Sprintf("n=%d/%s/ch=%d", n, algo, nch), func(t *testing.T) {
					t.Parallel()
					cfg := smallBuffers
					cfg.Proto, cfg.Algo, cfg.NChannels, cfg.NoDirect = protoReq("Simple"), algoReq(algo), nch, true
					comms := initT(t, n, cfg)
					runCases(t, comms, cases)
				})
			}
		}
	}
}

// TestDirectBuffersHeldUntilRead: with direct reads a peer reads a rank's
// own buffers, so a rank must not finish an operation while a peer may
// still read them. Here one rank starts late, and every other rank, once
// its Synchronize returns, at once scribbles over its send and receive
// buffers: the late rank must still get the exact result.
func TestDirectBuffersHeldUntilRead(t *testing.T) {
	const n = 3
	for _, algo := range []string{"Ring", "Tree"} {
		colls := []Coll{CollAllReduce, CollBroadcast, CollAllGather, CollReduce, CollReduceScatter}
		if algo == "Tree" {
			colls = colls[:1]
		}
		cfg := smallBuffers
		cfg.Proto, cfg.Algo, cfg.NChannels = protoReq("Simple"), algoReq(algo), 1
		comms := initT(t, n, cfg)
		for _, coll := range colls {
			// Within the FIFO's 8 steps (a rank may finish before its peer
			// started) and several times beyond it.
			for _, count := range []int{1000, 3*smallBuffers.BuffSize/4 + 5} {
				for late := 0; late < n; late++ {
					for _, inPlace := range []bool{false, true} {
						m := matrixCase{coll: coll, dt: Float32, op: 0, count: count, root: (late + 1) % n, inPlace: inPlace}
						t.Run(fmt.Sprintf("%s/%v/late=%d", algo, m, late), func(t *testing.T) {
							lateRankReadsSafely(t, comms, m, late)
						})
					}
				}
			}
		}
	}
}

func lateRankReadsSafely(t *testing.T, comms []*Comm, m matrixCase, late int) {
	n := len(comms)
	var mu sync.Mutex
	perRank(comms, func(c *Comm) {
		r := c.Rank()
		send, recv, want := buffersFor(m, r, n, 99)
		if r == late {
			time.Sleep(20 * time.Millisecond)
		}
		err := callColl(c, m, send, recv, RedOp{Op: m.op, Scalar: exact.Scalar(m.dt)})
		if err == nil {
			err = c.Synchronize()
		}
		if err == nil && want != nil {
			if wrong, first := exact.Compare(recvOf(m, r, send, recv)[:len(want)], want, m.dt, 0); wrong > 0 {
				err = fmt.Errorf("%d wrong elements, first at %d", wrong, first)
			}
		}
		if err != nil {
			mu.Lock()
			t.Errorf("rank %d: %v", r, err)
			mu.Unlock()
			return
		}
		for _, b := range [][]byte{send, recv} {
			for i := range b {
				b[i] = 0xff // the caller owns its buffers again
			}
		}
	})
}
