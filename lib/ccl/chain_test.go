package ccl

import (
	"encoding/binary"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"
)

// TestChainOneWayOnEveryChannel: broadcast and reduce follow one chain on
// every channel, so a rank near the root finishes an operation without the
// ranks further down the chain. On chains that ran the reverse on odd
// channels, the root's neighbour was the last of those chains and waited
// for every other rank: back-to-back broadcasts lost their pipelining
// along the chain (docs/log/performance-2026-11.md 12w). Direct reads are off, so a
// rank that posted into its successor's FIFO owes it nothing more.
//
// Broadcast from rank 0 along 0,1,2,3: ranks 0 and 1 finish alone. Reduce
// to rank 0: rank 1 starts the chain (it only sends) and finishes alone.
// Then the others run and every result is checked.
func TestChainOneWayOnEveryChannel(t *testing.T) {
	const n, count = 4, 1000 // 4000 bytes: a FIFO step of each channel's part
	for _, coll := range []Coll{CollBroadcast, CollReduce} {
		for _, nch := range []int{2, 3, 4} {
			t.Run(fmt.Sprintf("%s/ch=%d", coll, nch), func(t *testing.T) {
				cfg := smallBuffers
				cfg.Proto, cfg.Algo, cfg.NChannels, cfg.NoDirect = protoReq("Simple"), algoReq("Ring"), nch, true
				cfg.Timeout = 5 * time.Second // an early rank left waiting fails, not hangs
				comms := initT(t, n, cfg)
				in := make([][]byte, n)
				out := make([][]byte, n)
				for r := range comms {
					in[r], out[r] = make([]byte, 4*count), make([]byte, 4*count)
					for i := range count {
						binary.LittleEndian.PutUint32(in[r][4*i:], uint32(r*1000+i)) // int32: exact sums
					}
				}
				call := func(c *Comm) error {
					r := c.Rank()
					var err error
					if coll == CollBroadcast {
						err = c.Broadcast(in[r], out[r], count, Int32, 0)
					} else {
						err = c.Reduce(in[r], out[r], count, Int32, Sum, 0)
					}
					if err == nil {
						err = c.Synchronize()
					}
					return err
				}
				early := comms[:2] // the root and its successor
				if coll == CollReduce {
					early = comms[1:2] // the chain's first rank
				}
				if err := perRankErr(early, call); err != nil {
					t.Fatalf("ranks %v alone: %v", ranksOf(early), err)
				}
				var wg sync.WaitGroup
				errs := make([]error, n)
				for _, c := range comms {
					if slices.Contains(early, c) {
						continue
					}
					wg.Add(1)
					go func(c *Comm) { defer wg.Done(); errs[c.Rank()] = call(c) }(c)
				}
				wg.Wait()
				for r, err := range errs {
					if err != nil {
						t.Fatalf("rank %d: %v", r, err)
					}
				}
				for r := range comms {
					if coll == CollReduce && r != 0 {
						continue // only the root's output is defined
					}
					for i := range count {
						want := uint32(i) // broadcast: rank 0's input
						if coll == CollReduce {
							want = uint32(n*i + 1000*(n*(n-1)/2))
						}
						if got := binary.LittleEndian.Uint32(out[r][4*i:]); got != want {
							t.Fatalf("rank %d element %d: %d, want %d", r, i, got, want)
						}
					}
				}
			})
		}
	}
}

func ranksOf(comms []*Comm) []int {
	rs := make([]int, len(comms))
	for i, c := range comms {
		rs[i] = c.Rank()
	}
	return rs
}
