package ccl

import (
	"fmt"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/gccl/gccl/lib/board"
	"github.com/gccl/gccl/lib/board/layout"
	"github.com/gccl/gccl/lib/exact"
	"github.com/gccl/gccl/lib/proto"
	"github.com/gccl/gccl/lib/reduce"
	"github.com/gccl/gccl/lib/tuning"
)

// oneShotColls are the collectives with a one-shot schedule.
var oneShotColls = []Coll{CollAllReduce, CollReduceScatter, CollReduce, CollAllGather, CollBroadcast}

// oneShotCounts are element counts for the one-shot matrix: empty, one
// element, odd, around a round's end, and several rounds (more rounds than
// slots, so slots are reused inside one operation).
func oneShotCounts(elt int) []int {
	round := layout.RoundBytes / elt
	return []int{0, 1, 37, round - 1, round + 1, (board.Slots+3)*round + 5}
}

// TestMatrixOneShot runs the correctness matrix of the one-shot algorithm:
// every collective x type x reduction, 1-5 and 8 ranks, in place and out,
// bit for bit against the exact references, one set of communicators per
// rank count so rounds and slots carry over from case to case.
func TestMatrixOneShot(t *testing.T) {
	sample := raceEnabled || testing.Short()
	for _, n := range []int{1, 2, 3, 4, 5, 8} {
		t.Run(fmt.Sprintf("n=%d", n), func(t *testing.T) {
			t.Parallel()
			comms := initT(t, n, Config{Algo: algoReq("OneShot")})
			var cases []matrixCase
			eachCollTypeOp(oneShotColls, func(coll Coll, dt DataType, op reduce.Op, k int) {
				if sample && (k+n)%5 != 0 {
					return
				}
				for si, count := range oneShotCounts(dt.Size()) {
					if sample && si >= 3 && (k%3 != 0 || (n > 3 && si == 5)) {
						continue // rounds of 16 KiB on many ranks: the full run has them all
					}
					for _, inPlace := range []bool{false, true} {
						cases = append(cases, matrixCase{coll: coll, dt: dt, op: op, count: count, root: (si + k) % n, inPlace: inPlace})
					}
				}
			})
			runCases(t, comms, cases)
			if got := comms[0].LastChoice(); n > 1 && (got.Algo != "OneShot" || got.Proto != "LL" || got.NChannels != 1) {
				t.Errorf("last choice %+v, want OneShot/LL on one channel", got)
			}
		})
	}
}

// TestMatrixOneShotPosts runs part of the one-shot matrix with every post
// plain (the least plain post 0 bytes) and with every post in LL lines,
// whatever its size: both forms give the exact results, in place and out.
func TestMatrixOneShotPosts(t *testing.T) {
	defer plainMinBytes.Store(plainMinBytes.Load())
	for _, form := range []struct {
		name string
		min  int64
	}{{"plain", 0}, {"LL", math.MaxInt64}} {
		plainMinBytes.Store(form.min)
		for _, n := range []int{2, 3, 5} {
			t.Run(fmt.Sprintf("%s/n=%d", form.name, n), func(t *testing.T) {
				comms := initT(t, n, Config{Algo: algoReq("OneShot")})
				var cases []matrixCase
				eachCollTypeOp(oneShotColls, func(coll Coll, dt DataType, op reduce.Op, k int) {
					if (k+n)%3 != 0 {
						return
					}
					for si, count := range oneShotCounts(dt.Size())[:5] {
						for _, inPlace := range []bool{false, true} {
							cases = append(cases, matrixCase{coll: coll, dt: dt, op: op, count: count, root: (si + k) % n, inPlace: inPlace})
						}
					}
				})
				runCases(t, comms, cases)
			})
		}
	}
}

// TestPlainPosts: which one-shot posts go plain.
func TestPlainPosts(t *testing.T) {
	for _, c := range []struct {
		coll                   Coll
		a                      tuning.Algo
		count, roundElems, elt int
		want                   bool
	}{
		{CollAllReduce, tuning.OneShot, 64, 4096, 4, true},    // 256 B
		{CollAllReduce, tuning.OneShot, 63, 4096, 4, false},   // 252 B: LL lines
		{CollAllReduce, tuning.OneShot, 9000, 4096, 4, true},  // rounds of 16 KiB
		{CollAllReduce, tuning.TwoShot, 9000, 4096, 4, false}, // the two-shot posts LL lines
		{CollReduceScatter, tuning.OneShot, 4096, 1024, 4, false},
		{CollAllGather, tuning.OneShot, 64, 4096, 8, true},
		{CollBroadcast, tuning.OneShot, 1024, 16384, 1, true},
		{CollReduce, tuning.OneShot, 16, 2048, 8, false}, // 128 B
	} {
		if got := plainPosts(c.coll, c.a, c.count, c.roundElems, c.elt); got != c.want {
			t.Errorf("plainPosts(%s, %s, %d, %d, %d) = %v, want %v", c.coll, c.a, c.count, c.roundElems, c.elt, got, c.want)
		}
	}
}

// TestPlainPostsPricedAlike: the cost model prices a one-shot as plain
// posts (tuning.BoardPlain) exactly when the stack posts it plain, for
// every collective, algorithm, element size, rank count and count around
// the threshold and the round.
func TestPlainPostsPricedAlike(t *testing.T) {
	for _, n := range []int{2, 3, 5, 8} {
		c := initT(t, n, Config{})[0]
		for _, coll := range []Coll{CollAllReduce, CollAllGather, CollReduceScatter, CollBroadcast, CollReduce} {
			tc, _ := tuneColl(coll)
			for _, a := range []tuning.Algo{tuning.OneShot, tuning.TwoShot} {
				for _, elt := range []int{1, 2, 4, 8} {
					for _, bytes := range []int{0, 8, 64, 248, 252, 256, 260, 511, 1024, 16 << 10, 16<<10 + 8, 40 << 10} {
						count := bytes / elt
						tk := task{coll: coll, count: count, elt: elt}
						_, e, err := c.oneShotRounds(&tk, a)
						if err != nil {
							continue // no such plan (a two-shot of wide elements on many ranks)
						}
						nccl := int64(count * elt) // NCCL's bytes: the whole result for allgather and reducescatter
						if coll == CollAllGather || coll == CollReduceScatter {
							nccl *= int64(n)
						}
						if got, want := tuning.BoardPlain(tc, a, n, nccl), plainPosts(coll, a, count, e, elt); got != want {
							t.Errorf("%d ranks, %s %s, %d x %d B: BoardPlain = %v, the stack posts plain = %v", n, coll, a, count, elt, got, want)
						}
					}
				}
			}
		}
	}
}

// TestOneShotOneThreadDrivesAllRanks: one goroutine enqueues every rank's
// allreduce, then synchronizes them one by one (nccl-tests' -g N): the
// posts at enqueue make every result ready without any goroutine hop, and
// the same holds when the caller enqueues several operations before it
// synchronizes (the later ones post from the channel goroutines).
func TestOneShotOneThreadDrivesAllRanks(t *testing.T) {
	for _, n := range []int{2, 3, 7} {
		driveFromOneThread(t, n, "OneShot", []int{1, 3}, 12, func(int) int { return 5 })
	}
}

// driveFromOneThread runs ops allreduces of algo on n ranks from one
// goroutine, in bursts: it enqueues every rank's operations of a burst, then
// synchronizes the ranks one by one, and checks every result exactly.
// count(k) is the k-th operation's element count.
func driveFromOneThread(t *testing.T, n int, algo string, bursts []int, ops int, count func(k int) int) {
	t.Helper()
	comms := initT(t, n, Config{Algo: algoReq(algo)})
	dt, op := reduce.Float64, reduce.Sum
	k := 0
	for _, burst := range bursts {
		for i := 0; i < ops; i += burst {
			recvs := make([][][]byte, n)
			cnts := make([]int, burst)
			for j := range cnts {
				cnts[j] = count(k + j)
				for r, c := range comms {
					send := make([]byte, cnts[j]*8)
					exact.Fill(send, dt, op, uint64(k+j), r, n, 0, cnts[j])
					recv := make([]byte, cnts[j]*8)
					recvs[r] = append(recvs[r], recv)
					if err := c.AllReduce(send, recv, cnts[j], dt, RedOp{Op: op}); err != nil {
						t.Fatal(err)
					}
				}
			}
			for _, c := range comms {
				if err := c.Synchronize(); err != nil {
					t.Fatal(err)
				}
			}
			for j, cnt := range cnts {
				want := make([]byte, cnt*8)
				exact.Expected(want, dt, op, uint64(k+j), n, 0, cnt)
				for r := range comms {
					if wrong, first := exact.Compare(recvs[r][j], want, dt, 0); wrong > 0 {
						t.Fatalf("%s n=%d burst=%d op %d rank %d: %d wrong, first at %d", algo, n, burst, k+j, r, wrong, first)
					}
				}
			}
			k += burst
		}
	}
}

// TestOneShotMixedWithRing: one-shot, two-shot, ring and tree operations alternate on one
// communicator (Force between them), with sizes that take several rounds:
// the board's rounds and acknowledgements stay in step across algorithms.
func TestOneShotMixedWithRing(t *testing.T) {
	const n = 4
	comms := initT(t, n, Config{})
	dt, op := reduce.Int32, reduce.Sum
	perRank(comms, func(c *Comm) {
		for i := 0; i < 40; i++ {
			algo := []string{"OneShot", "Ring", "TwoShot", "Tree", "TwoShot"}[i%5]
			if err := c.Force(Forced{Algo: algoReq(algo)}); err != nil {
				t.Error(err)
				return
			}
			cnt := []int{1, 3000, 17, 9000}[i%4]
			send := make([]byte, cnt*4)
			exact.Fill(send, dt, op, uint64(i), c.Rank(), n, 0, cnt)
			recv := make([]byte, cnt*4)
			if err := c.AllReduce(send, recv, cnt, dt, RedOp{Op: op}); err != nil {
				t.Error(err)
				return
			}
			if err := c.Synchronize(); err != nil {
				t.Error(err)
				return
			}
			want := make([]byte, cnt*4)
			exact.Expected(want, dt, op, uint64(i), n, 0, cnt)
			if wrong, first := exact.Compare(recv, want, dt, 0); wrong > 0 {
				t.Errorf("rank %d op %d (%s): %d wrong, first at %d", c.Rank(), i, algo, wrong, first)
				return
			}
		}
	})
}

// TestOneShotNeedsLL: forcing OneShot with another protocol is an error
// naming both, from Config and from Force.
func TestOneShotNeedsLL(t *testing.T) {
	_, err := InitAll(2, Config{Algo: algoReq("OneShot"), Proto: protoReq("Simple")})
	if err == nil || !strings.Contains(err.Error(), "OneShot runs on LL only") {
		t.Fatalf("InitAll: got %v, want an error saying OneShot runs on LL only", err)
	}
	comms := initT(t, 2, Config{})
	if err := comms[0].Force(Forced{Algo: algoReq("OneShot"), Proto: protoReq("LL128")}); err == nil || !strings.Contains(err.Error(), "LL only") {
		t.Fatalf("Force: got %v, want an error saying OneShot runs on LL only", err)
	}
	if err := comms[0].Force(Forced{Algo: algoReq("OneShot"), Proto: protoReq(proto.LL.String())}); err != nil {
		t.Fatal(err)
	}
}

// TestSmallCallsDoNotAllocate: once warm, a repeated small allreduce and
// its Synchronize allocate nothing, on the one-shot fast path and on the
// ring's plan path alike.
func TestSmallCallsDoNotAllocate(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector allocates")
	}
	for _, algo := range []string{"OneShot", "Ring"} {
		comms := initT(t, 2, Config{Algo: algoReq(algo)})
		const runs = 500
		bufs := [2][2][]byte{{make([]byte, 64), make([]byte, 64)}, {make([]byte, 64), make([]byte, 64)}}
		call := func(r int) {
			if err := comms[r].AllReduce(bufs[r][0], bufs[r][1], 16, Float32, Sum); err != nil {
				t.Error(err)
			}
			if err := comms[r].Synchronize(); err != nil {
				t.Error(err)
			}
		}
		allocs := allocsPerCall(runs, call)
		if allocs != 0 {
			t.Errorf("%s: %v allocations per call, want 0", algo, allocs)
		}
	}
}

// TestOneShotOneThreadManyRounds: one goroutine drives every rank the way
// nccl-tests -g N does (rank 0's call inside a group, the others' outside,
// then each synchronized in turn), with operations of several rounds: no
// rank's later rounds may wait on a goroutine that has not got there yet.
func TestOneShotOneThreadManyRounds(t *testing.T) {
	const n = 3
	comms := initT(t, n, Config{Algo: algoReq("OneShot")})
	dt, op := reduce.Int32, reduce.Sum
	for i, cnt := range []int{5, 3*layout.RoundBytes/4 + 1, 1, layout.RoundBytes/4 + 7, 9, 3} {
		recvs := make([][]byte, n)
		if err := comms[0].GroupStart(); err != nil {
			t.Fatal(err)
		}
		scatter := i%2 == 1 // reducescatter's posts are one segment per rank
		for r, c := range comms {
			send := make([]byte, cnt*4)
			if scatter {
				send = make([]byte, n*cnt*4)
			}
			exact.Fill(send, dt, op, uint64(i), r, n, 0, len(send)/4)
			recvs[r] = make([]byte, cnt*4)
			call := c.AllReduce
			if scatter {
				call = c.ReduceScatter
			}
			if err := call(send, recvs[r], cnt, dt, RedOp{Op: op}); err != nil {
				t.Fatal(err)
			}
		}
		if err := comms[0].GroupEnd(); err != nil {
			t.Fatal(err)
		}
		for _, c := range comms {
			if err := c.Synchronize(); err != nil {
				t.Fatal(err)
			}
		}
		for r := range comms {
			want := make([]byte, cnt*4)
			first := 0
			if scatter {
				first = r * cnt
			}
			exact.Expected(want, dt, op, uint64(i), n, first, cnt)
			if wrong, at := exact.Compare(recvs[r], want, dt, 0); wrong > 0 {
				t.Fatalf("count %d rank %d (reducescatter %v): %d wrong, first at %d", cnt, r, scatter, wrong, at)
			}
		}
	}
}

// TestFastPathFollowsShapeAndForce: the fast path keeps what it derived
// for a call's shape and reuses it for the next call of that shape; a new
// shape (other buffers or count) or a Force must not run on the old one.
// Two ranks alternate two buffer sets and switch between OneShot and
// Ring every few calls; every result is exact and every call ran the
// algorithm forced at the time.
func TestFastPathFollowsShapeAndForce(t *testing.T) {
	comms := initT(t, 2, Config{})
	errs := make(chan error, 2)
	for _, c := range comms {
		go func(c *Comm) {
			errs <- func() error {
				sets := [2][2][]byte{{make([]byte, 8), make([]byte, 8)}, {make([]byte, 64), make([]byte, 64)}}
				for i := 0; i < 600; i++ {
					algo := []string{"OneShot", "Ring"}[(i/3)%2]
					if i%3 == 0 {
						if err := c.Force(Forced{Algo: algoReq(algo), Proto: protoReq("LL"), NChannels: 1}); err != nil {
							return err
						}
					}
					if i%50 == 25 { // a send/recv between: LastChoice must not keep saying P2P
						peer := 1 - c.Rank()
						if err := c.GroupStart(); err != nil {
							return err
						}
						if err := c.Send(sets[0][0], 2, Float32, peer); err != nil {
							return err
						}
						if err := c.Recv(sets[0][1], 2, Float32, peer); err != nil {
							return err
						}
						if err := c.GroupEnd(); err != nil {
							return err
						}
						if err := c.Synchronize(); err != nil {
							return err
						}
					}
					set := sets[(i/2)%2]
					in, out := set[0], set[1]
					n := len(in) / 4
					v := make([]float32, n)
					for j := range v {
						v[j] = float32(c.Rank()*1000 + i + j)
					}
					copy(in, f32s(v))
					if err := c.AllReduce(in, out, n, Float32, Sum); err != nil {
						return err
					}
					if err := c.Synchronize(); err != nil {
						return err
					}
					for j, got := range asF32(out) {
						if want := float32(1000 + 2*(i+j)); got != want {
							return fmt.Errorf("rank %d call %d (%s, %d B): element %d = %v, want %v", c.Rank(), i, algo, len(in), j, got, want)
						}
					}
					if got := c.LastChoice().Algo; got != algo {
						return fmt.Errorf("rank %d call %d: ran %s, forced %s", c.Rank(), i, got, algo)
					}
				}
				return nil
			}()
		}(c)
	}
	for range comms {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
}

// TestShapeCacheTellsScalarsApart: a repeated call with PreMulSum's scalar
// -0 instead of +0 is a new shape (the kernel differs: 1 x -0 is -0), on
// the fast path and off it.
func TestShapeCacheTellsScalarsApart(t *testing.T) {
	for _, algo := range []string{"OneShot", "Ring"} {
		comms := initT(t, 2, Config{Algo: algoReq(algo)})
		in := [2][]byte{f32s([]float32{1, 1}), f32s([]float32{1, 1})}
		out := [2][]byte{make([]byte, 8), make([]byte, 8)}
		for i, scalar := range []float64{0, math.Copysign(0, -1), 0, math.Copysign(0, -1)} {
			if err := perRankErr(comms, func(c *Comm) error {
				if err := c.AllReduce(in[c.Rank()], out[c.Rank()], 2, Float32, PreMulSum(scalar)); err != nil {
					return err
				}
				return c.Synchronize()
			}); err != nil {
				t.Fatal(err)
			}
			for r := range comms {
				for j, got := range asF32(out[r]) {
					if got != 0 || math.Signbit(float64(got)) != math.Signbit(scalar) {
						t.Errorf("%s call %d (scalar %v): rank %d element %d = %v, want %v", algo, i, scalar, r, j, got, scalar)
					}
				}
			}
		}
	}
}

// TestQueuedOperationsStayBounded: ranks that enqueue thousands of
// operations without synchronizing (nccl-tests' timing loop) hold at most
// MaxInFlight plans, the plans are reused, and every result is exact.
func TestQueuedOperationsStayBounded(t *testing.T) {
	for _, algo := range []string{"OneShot", "Ring"} {
		comms := initT(t, 2, Config{Algo: algoReq(algo)})
		const ops = 3 * MaxInFlight
		errs := make(chan error, 2)
		for _, c := range comms {
			go func() {
				errs <- func() error {
					in, out := make([]byte, ops*8), make([]byte, ops*8)
					for i := range ops {
						copy(in[i*8:], f32s([]float32{float32(c.Rank() + i), float32(c.Rank() * i)}))
						if err := c.AllReduce(in[i*8:i*8+8], out[i*8:i*8+8], 2, Float32, Sum); err != nil {
							return err
						}
						if n := len(c.inflight); n > MaxInFlight+1 {
							return fmt.Errorf("rank %d op %d: %d plans held, want at most %d", c.Rank(), i, n, MaxInFlight+1)
						}
					}
					if err := c.Synchronize(); err != nil {
						return err
					}
					if n := len(c.inflight) + len(c.freePlans); n > MaxInFlight+1 {
						return fmt.Errorf("rank %d: %d plans made for %d operations, want at most %d", c.Rank(), n, ops, MaxInFlight+1)
					}
					for i := range ops {
						got := asF32(out[i*8 : i*8+8])
						if want := []float32{float32(1 + 2*i), float32(i)}; got[0] != want[0] || got[1] != want[1] {
							return fmt.Errorf("rank %d op %d: %v, want %v", c.Rank(), i, got, want)
						}
					}
					return nil
				}()
			}()
		}
		for range comms {
			if err := <-errs; err != nil {
				t.Fatalf("%s: %v", algo, err)
			}
		}
	}
}

// TestShapeCacheFollowsBuffers: calls of one shape whose buffers move
// every iteration (nccl-tests' and perf's rotation) keep the cached shape
// and the fast path's work, each reading and writing its own buffers;
// switching between in place and out of place is a new shape; and a
// cached shape still refuses buffers that overlap without being in place.
func TestShapeCacheFollowsBuffers(t *testing.T) {
	const n, slots, count = 3, 16, 4
	for _, algo := range []string{"OneShot", "Ring"} {
		comms := initT(t, n, Config{Algo: algoReq(algo)})
		send := make([][]byte, n)
		recv := make([][]byte, n)
		for r := range comms {
			send[r], recv[r] = make([]byte, slots*count*4), make([]byte, slots*count*4)
		}
		// call i: slot i%slots; in place when inPlace(i). Every element of
		// rank r's input is r+i, so each output element is sum_r(r+i).
		run := func(i int, inPlace bool) {
			t.Helper()
			off := (i % slots) * count * 4
			if err := perRankErr(comms, func(c *Comm) error {
				r := c.Rank()
				in, out := send[r][off:off+count*4], recv[r][off:off+count*4]
				if inPlace {
					in = out
				}
				vals := make([]float32, count)
				for j := range vals {
					vals[j] = float32(r + i)
				}
				copy(in, f32s(vals))
				if err := c.AllReduce(in, out, count, Float32, Sum); err != nil {
					return err
				}
				return c.Synchronize()
			}); err != nil {
				t.Fatalf("%s call %d: %v", algo, i, err)
			}
			want := float32(n*(n-1)/2 + n*i)
			for r := range comms {
				for j, got := range asF32(recv[r][off : off+count*4]) {
					if got != want {
						t.Fatalf("%s call %d (in place %v): rank %d element %d = %v, want %v", algo, i, inPlace, r, j, got, want)
					}
				}
			}
		}
		run(0, false)
		gen := comms[0].shape.gen
		for i := 1; i < 3*slots; i++ {
			run(i, false)
		}
		if g := comms[0].shape.gen; g != gen {
			t.Errorf("%s: rotating buffers changed the shape generation %d -> %d", algo, gen, g)
		}
		if algo == "OneShot" && comms[0].fast.gen != gen {
			t.Errorf("%s: the fast path's work is of generation %d, the shape's %d", algo, comms[0].fast.gen, gen)
		}
		for i := 3 * slots; i < 4*slots; i++ {
			run(i, i%3 == 0)
		}
		// Overlapping, not in place: refused on a cached shape, alone on rank 0.
		c := comms[0]
		err := c.AllReduce(recv[0][0:count*4], recv[0][4:4+count*4], count, Float32, Sum)
		if err == nil || !strings.Contains(err.Error(), "overlap") {
			t.Errorf("%s: overlapping buffers of a cached shape: err = %v, want an overlap error", algo, err)
		}
		run(4*slots, false)
	}
}

// TestOneShotPostWakesSleepingReader: a rank whose one-shot read went to
// sleep before its peer posted is woken by the post itself, while the
// poster has not synchronized (its barrier and second look wait for that):
// the peers finish before rank 0 calls Synchronize. The delays put the
// readers in each phase of their wait (spinning, yielding, asleep).
func TestOneShotPostWakesSleepingReader(t *testing.T) {
	for _, n := range []int{2, 3} {
		comms := initT(t, n, Config{Algo: algoReq("OneShot")})
		dt, op := reduce.Float32, reduce.Sum
		const cnt = 2
		for i, delay := range []time.Duration{0, 30 * time.Microsecond, 200 * time.Microsecond, 5 * time.Millisecond, 20 * time.Millisecond} {
			sends, recvs := make([][]byte, n), make([][]byte, n)
			for r := range comms {
				sends[r], recvs[r] = make([]byte, cnt*4), make([]byte, cnt*4)
				exact.Fill(sends[r], dt, op, uint64(i), r, n, 0, cnt)
			}
			done := make(chan error, n)
			for r := 1; r < n; r++ {
				go func(c *Comm) {
					err := c.AllReduce(sends[c.Rank()], recvs[c.Rank()], cnt, dt, RedOp{Op: op})
					if err == nil {
						err = c.Synchronize()
					}
					done <- err
				}(comms[r])
			}
			time.Sleep(delay)
			if err := comms[0].AllReduce(sends[0], recvs[0], cnt, dt, RedOp{Op: op}); err != nil {
				t.Fatal(err)
			}
			for r := 1; r < n; r++ {
				select {
				case err := <-done:
					if err != nil {
						t.Fatal(err)
					}
				case <-time.After(10 * time.Second):
					t.Fatalf("n=%d delay %v: a rank still waits for rank 0's post 10 s after it was made (rank 0 has not synchronized): the post did not wake it", n, delay)
				}
			}
			if err := comms[0].Synchronize(); err != nil {
				t.Fatal(err)
			}
			want := make([]byte, cnt*4)
			exact.Expected(want, dt, op, uint64(i), n, 0, cnt)
			for r := range comms {
				if wrong, first := exact.Compare(recvs[r], want, dt, 0); wrong > 0 {
					t.Fatalf("n=%d delay %v rank %d: %d wrong, first at %d", n, delay, r, wrong, first)
				}
			}
		}
	}
}
