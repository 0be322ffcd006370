package ccl

import (
	"bytes"
	"fmt"
	"strings"
	"testing"

	"github.com/gccl/gccl/lib/exact"
	"github.com/gccl/gccl/lib/proto"
	"github.com/gccl/gccl/lib/reduce"
)

// TestMatrixTree runs the correctness matrix of the tree allreduce: rank
// counts 1..8, every ranks-per-host grouping of them (1..n), each protocol,
// 1..3 channels (so both trees of the double tree carry data), every type
// and reduction, the matrix sizes, in place and out of place. Groupings
// other than 1, 2 and n ranks per host run a sample of the type x
// reduction pairs (every pair still runs in some cell); under -race or
// -short only those three groupings run, each cell sampled.
func TestMatrixTree(t *testing.T) {
	short := raceEnabled || testing.Short()
	cell := 0
	for n := 1; n <= 8; n++ {
		for per := 1; per <= n; per++ {
			if short && per != 1 && per != 2 && per != n {
				continue // the full run covers every grouping
			}
			for _, p := range proto.All() {
				for _, nch := range []int{1, 2, 3} {
					cell++
					sample := short || !(per == 1 || per == 2 || per == n)
					cases := matrixCases([]Coll{CollAllReduce}, n, p, cell, sample)
					name := fmt.Sprintf("n=%d/per=%d/%s/ch=%d", n, per, p, nch)
					t.Run(name, func(t *testing.T) {
						t.Parallel()
						cfg := smallBuffers
						cfg.Proto, cfg.Algo, cfg.NChannels, cfg.RanksPerHost = protoReq(p.String()), algoReq("Tree"), nch, per
						comms := initT(t, n, cfg)
						runCases(t, comms, cases)
						if n > 1 {
							if got := comms[0].LastChoice().Algo; got != "Tree" {
								t.Errorf("last choice ran %s, want Tree", got)
							}
						}
					})
				}
			}
		}
	}
}

// TestTreeMatchesRing checks that the tree and the ring give bit-identical
// allreduce results on exact-by-construction inputs, with NCCL's default
// buffer sizes so the tree's shrunken chunks (TreeChunkBytes) are exercised.
func TestTreeMatchesRing(t *testing.T) {
	const n = 6
	counts := []int{1, 4097, 300_000, 2_000_003}
	for _, p := range proto.All() {
		t.Run(p.String(), func(t *testing.T) {
			t.Parallel()
			run := func(algo string) [][]byte {
				cfg := Config{Proto: protoReq(p.String()), Algo: algoReq(algo), NChannels: 2, RanksPerHost: 2}
				comms := initT(t, n, cfg)
				out := make([][]byte, n)
				perRank(comms, func(c *Comm) {
					r := c.Rank()
					var all []byte
					for i, cnt := range counts {
						dt, op := reduce.Float32, reduce.Sum
						if i%2 == 1 {
							dt, op = reduce.Bfloat16, reduce.Avg
						}
						send := make([]byte, cnt*dt.Size())
						exact.Fill(send, dt, op, uint64(i), r, n, 0, cnt)
						recv := make([]byte, len(send))
						if err := c.AllReduce(send, recv, cnt, dt, RedOp{Op: op}); err != nil {
							t.Error(err)
							return
						}
						if err := c.Synchronize(); err != nil {
							t.Error(err)
							return
						}
						all = append(all, recv...)
					}
					out[r] = all
				})
				return out
			}
			ring, tree := run("Ring"), run("Tree")
			for r := range ring {
				if len(ring[r]) == 0 || !bytes.Equal(ring[r], tree[r]) {
					t.Fatalf("rank %d: tree result differs from ring result (%d vs %d bytes)", r, len(tree[r]), len(ring[r]))
				}
			}
		})
	}
}

func TestTreeOnlyForAllReduce(t *testing.T) {
	comms := initT(t, 2, Config{Algo: algoReq("Tree")})
	buf := make([]byte, 64)
	err := comms[0].AllGather(buf[:32], buf, 8, reduce.Float32)
	if err == nil || !strings.Contains(err.Error(), "no Tree") || !strings.Contains(err.Error(), "Ring") {
		t.Fatalf("want an error saying allgather has no tree and Ring is valid, got %v", err)
	}
}
