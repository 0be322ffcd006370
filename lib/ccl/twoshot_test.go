package ccl

import (
	"encoding/binary"
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/gccl/gccl/lib/board"
	"github.com/gccl/gccl/lib/board/layout"
	"github.com/gccl/gccl/lib/reduce"
)

// twoShotCounts are element counts for the two-shot matrix on n ranks:
// empty, one element (one block, the others empty), fewer elements than
// ranks, odd, around a round's end, and more rounds than the board has
// slots (each round takes two of them).
func twoShotCounts(n, elt int) []int {
	round := layout.TwoShotSegment(n) * n / elt
	return []int{0, 1, max(n-1, 1), 37, round - 1, round + 1, (board.Slots/2+3)*round + 5}
}

// TestMatrixTwoShot runs the correctness matrix of the two-shot allreduce:
// every type x reduction, 1-5, 7, 8 and 16 ranks, in place and out, bit for
// bit against the exact references, one set of communicators per rank
// count so rounds and slots carry over from case to case.
func TestMatrixTwoShot(t *testing.T) {
	sample := raceEnabled || testing.Short()
	for _, n := range []int{1, 2, 3, 4, 5, 7, 8, 16} {
		t.Run(fmt.Sprintf("n=%d", n), func(t *testing.T) {
			t.Parallel()
			comms := initT(t, n, Config{Algo: algoReq("TwoShot")})
			var cases []matrixCase
			eachCollTypeOp([]Coll{CollAllReduce}, func(coll Coll, dt DataType, op reduce.Op, k int) {
				if sample && (k+n)%4 != 0 {
					return
				}
				for si, count := range twoShotCounts(n, dt.Size()) {
					if sample && si >= 4 && (k%3 != 0 || (n > 4 && si == 6)) {
						continue // rounds of 16 KiB on many ranks: the full run has them all
					}
					for _, inPlace := range []bool{false, true} {
						cases = append(cases, matrixCase{coll: coll, dt: dt, op: op, count: count, inPlace: inPlace})
					}
				}
			})
			runCases(t, comms, cases)
			if got := comms[0].LastChoice(); n > 1 && (got.Algo != "TwoShot" || got.Proto != "LL" || got.NChannels != 1) {
				t.Errorf("last choice %+v, want TwoShot/LL on one channel", got)
			}
		})
	}
}

// TestTwoShotSameBitsAsOneShot: with rounding data (random float32 and
// bfloat16 sums, whose result depends on the order), every rank gets the
// same bits, and the two-shot's bits are the one-shot's: block b is reduced
// by rank b in the one-shot's rank order.
func TestTwoShotSameBitsAsOneShot(t *testing.T) {
	const n = 6
	for _, dt := range []DataType{Float32, Bfloat16} {
		for _, cnt := range []int{3, 1000, 9000} {
			rng := rand.New(rand.NewPCG(uint64(cnt), uint64(dt)))
			sends := make([][]byte, n)
			for r := range sends {
				sends[r] = make([]byte, cnt*dt.Size())
				for i := 0; i < cnt; i++ {
					v := float32(rng.NormFloat64() * math.Pow(10, float64(rng.IntN(6)-3)))
					if dt == Float32 {
						binary.LittleEndian.PutUint32(sends[r][4*i:], math.Float32bits(v))
					} else {
						binary.LittleEndian.PutUint16(sends[r][2*i:], uint16(math.Float32bits(v)>>16))
					}
				}
			}
			results := map[string][][]byte{}
			for _, algo := range []string{"OneShot", "TwoShot"} {
				comms := initT(t, n, Config{Algo: algoReq(algo)})
				outs := make([][]byte, n)
				if err := perRankErr(comms, func(c *Comm) error {
					outs[c.Rank()] = make([]byte, cnt*dt.Size())
					if err := c.AllReduce(sends[c.Rank()], outs[c.Rank()], cnt, dt, Sum); err != nil {
						return err
					}
					return c.Synchronize()
				}); err != nil {
					t.Fatal(err)
				}
				results[algo] = outs
			}
			want := results["OneShot"][0]
			for algo, outs := range results {
				for r, got := range outs {
					if string(got) != string(want) {
						t.Fatalf("%v count %d: %s rank %d's bits differ from OneShot rank 0's", dt, cnt, algo, r)
					}
				}
			}
		}
	}
}

// TestTwoShotOneThreadDrivesAllRanks: one goroutine enqueues every rank's
// allreduce (a burst of several, some of several rounds) and then
// synchronizes them one by one, as nccl-tests -g N: a rank's second round
// waits for peers' blocks that their channel goroutines, kicked, post.
func TestTwoShotOneThreadDrivesAllRanks(t *testing.T) {
	for _, n := range []int{2, 3, 7} {
		round := layout.TwoShotSegment(n) * n / 8 // float64 elements a round
		cnts := []int{5, round + 3, 1, 2*round - 1}
		driveFromOneThread(t, n, "TwoShot", []int{1, 3, 2}, 6, func(k int) int { return cnts[k%len(cnts)] })
	}
}

// TestTwoShotOnlyAllReduce: forcing TwoShot on a collective other than
// allreduce is an error naming the algorithms that collective has, and
// TwoShot with a protocol other than LL is refused like OneShot.
func TestTwoShotOnlyAllReduce(t *testing.T) {
	comms := initT(t, 2, Config{Algo: algoReq("TwoShot")})
	err := perRankErr(comms, func(c *Comm) error {
		return c.AllGather(make([]byte, 8), make([]byte, 16), 2, Float32)
	})
	if err == nil || !strings.Contains(err.Error(), "allgather has no TwoShot algorithm") || !strings.Contains(err.Error(), "Ring, OneShot") {
		t.Fatalf("AllGather with TwoShot: got %v, want an error naming Ring, OneShot", err)
	}
	if _, err := InitAll(2, Config{Algo: algoReq("TwoShot"), Proto: protoReq("LL128")}); err == nil || !strings.Contains(err.Error(), "TwoShot runs on LL only") {
		t.Fatalf("InitAll TwoShot/LL128: got %v, want an error saying TwoShot runs on LL only", err)
	}
}
