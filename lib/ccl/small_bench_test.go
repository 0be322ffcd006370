package ccl

import (
	"fmt"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"
	"unsafe"

	"github.com/gccl/gccl/lib/reduce"
)

// BenchmarkSmallAllReduce is the latency floor: float32 sum allreduce of
// 8 B, 64 B and 1 KiB, one goroutine per rank calling AllReduce and
// Synchronize (as nccl-tests -t N), with the algorithm auto or forced, and
// beside it in the same run a spin round trip between two goroutines on
// one shared word (BenchmarkSpinRoundTrip): compare the two as a ratio.
// It reports the worst single call of 10,000 more (max_us): a stall
// shows there.
//
//	go test ./lib/ccl -run '^$' -bench 'SmallAllReduce|SpinRoundTrip' -benchtime 20000x -count 5
func BenchmarkSmallAllReduce(b *testing.B) {
	for _, n := range []int{2, 4} {
		for _, algo := range []string{"auto", "OneShot", "Ring"} {
			for _, size := range []int{8, 64, 1024} {
				b.Run(fmt.Sprintf("ranks=%d/algo=%s/size=%s", n, algo, sizeName(size)), func(b *testing.B) {
					benchSmall(b, n, algo, size)
				})
			}
		}
	}
}

func benchSmall(b *testing.B, n int, algo string, size int) {
	cfg := Config{Timeout: time.Minute}
	if algo != "auto" {
		cfg.Algo = algoReq(algo)
	}
	comms, err := InitAll(n, cfg)
	if err != nil {
		b.Fatal(err)
	}
	defer func() {
		for _, c := range comms {
			c.Destroy()
		}
	}()
	count := size / 4
	worst := make([]time.Duration, n)
	// run calls iters operations on every rank; with timed, each call is
	// timed too (for the worst one), which costs two clock reads a call.
	run := func(iters int, timed bool) {
		var wg sync.WaitGroup
		for _, c := range comms {
			wg.Add(1)
			go func(c *Comm) {
				defer wg.Done()
				in, out := ownLines(size), ownLines(size)
				var w time.Duration
				var t0 time.Time
				for i := 0; i < iters; i++ {
					if timed {
						t0 = time.Now()
					}
					if err := c.AllReduce(in, out, count, Float32, Sum); err != nil {
						b.Error(err)
						return
					}
					if err := c.Synchronize(); err != nil {
						b.Error(err)
						return
					}
					if timed {
						w = max(w, time.Since(t0))
					}
				}
				worst[c.Rank()] = w
			}(c)
		}
		wg.Wait()
	}
	run(1000, false) // warm up
	b.ResetTimer()
	start := time.Now()
	run(b.N, false)
	el := time.Since(start)
	b.StopTimer()
	run(10000, true) // the worst call of 10,000, apart from the timed loop
	b.ReportMetric(el.Seconds()/float64(b.N)*1e6, "us/op")
	b.ReportMetric(slices.Max(worst).Seconds()*1e6, "max_us")
	b.ReportMetric(0, "ns/op")
	if ch := comms[0].LastChoice(); ch.Algo != "" {
		b.Logf("%s", ch.Algo)
	}
}

// BenchmarkSpinRoundTrip is the hardware's floor for one exchange: two
// goroutines pass a counter back and forth through one shared word,
// spinning (with a yield now and then, so an oversubscribed machine still
// progresses). us/op is one round trip; max_us is the worst single round
// trip of 10,000 more, timed like BenchmarkSmallAllReduce's calls: the
// stalls the machine itself has, with no library in the way.
func BenchmarkSpinRoundTrip(b *testing.B) {
	var word atomic.Uint64
	// trips runs iters round trips after the first done ones, timing each
	// when timed, and returns the worst.
	trips := func(done, iters int, timed bool) time.Duration {
		finished := make(chan struct{})
		go func() {
			defer close(finished)
			for i := uint64(done + 1); i <= uint64(done+iters); i++ {
				for spins := 0; word.Load() != 2*i-1; spins++ {
					if spins%1024 == 1023 {
						runtime.Gosched()
					}
				}
				word.Store(2 * i)
			}
		}()
		var worst time.Duration
		var t0 time.Time
		for i := uint64(done + 1); i <= uint64(done+iters); i++ {
			if timed {
				t0 = time.Now()
			}
			word.Store(2*i - 1)
			for spins := 0; word.Load() != 2*i; spins++ {
				if spins%1024 == 1023 {
					runtime.Gosched()
				}
			}
			if timed {
				worst = max(worst, time.Since(t0))
			}
		}
		<-finished
		return worst
	}
	b.ResetTimer()
	start := time.Now()
	trips(0, b.N, false)
	el := time.Since(start)
	b.StopTimer()
	worst := trips(b.N, 10000, true)
	b.ReportMetric(el.Seconds()/float64(b.N)*1e6, "us/op")
	b.ReportMetric(worst.Seconds()*1e6, "max_us")
	b.ReportMetric(0, "ns/op")
}

// BenchmarkFloorSideBySide is the floor's ratio measured side by side: the
// same two goroutines alternate blocks of spin round trips on one shared
// word and blocks of 2-rank float32 sum allreduces
// (auto: each goroutine a rank calling AllReduce and Synchronize), one
// block pair per b.N. A shared machine's slow spells (a VM whose cores
// drift from 0.07 to 0.45 us a round trip from minute to minute) then
// fall on both members of a pair. It reports the medians over pairs of
// the allreduce's time (us/op), the spin's (spin_us) and their ratio
// (x_spin), the figure issue 19 sets at most 2.
//
// A third block of each pair is the bare exchange, the one-shot with no
// library around it: each goroutine copies its input into a slot of its
// own and raises the slot's flag, waits for the other's flag, and sums the
// two into its output with the same kernel (two slots each, alternating:
// a goroutine refills a slot only after its peer's next flag, raised once
// the peer had read it). Its time (bare_us) and its ratio to the spin
// (bare_x_spin) are what the hardware leaves to any one-shot.
//
//	go test ./lib/ccl -run '^$' -bench FloorSideBySide -benchtime 40x
func BenchmarkFloorSideBySide(b *testing.B) {
	for _, size := range []int{8, 64, 1024} {
		b.Run("size="+sizeName(size), func(b *testing.B) {
			comms := initT(b, 2, Config{Timeout: time.Minute})
			kernel, err := reduce.NewKernel(reduce.Float32, reduce.Sum, 0, 2)
			if err != nil {
				b.Fatal(err)
			}
			var slots [2][2]*bareSlot // [rank][round parity]
			for r := range slots {
				for k := range slots[r] {
					slots[r][k] = &bareSlot{data: ownLines(size)}
				}
			}
			// exchange runs bare rounds [first, first+count) as rank r.
			exchange := func(r int, in, out []byte, first, count uint64) {
				for i := first; i < first+count; i++ {
					mine, peer := slots[r][i%2], slots[1-r][i%2]
					copy(mine.data, in)
					mine.flag.Store(i + 1)
					waitWord(&peer.flag, i+1)
					a, c := mine.data, peer.data
					if r == 1 {
						a, c = c, a // rank 0's first: the same sum on both
					}
					kernel.Combine(out, a, c, false)
				}
			}
			// The spin's word, written by both goroutines in turn, alone on
			// its cache line: a neighbour written by either would slow the
			// yardstick, flattering the ratio.
			line := new(struct {
				_    [64]byte
				word atomic.Uint64
				_    [64]byte
			})
			word := &line.word
			// spin runs round trips [first, first+count): rank 0 writes
			// 2i+1 and waits for 2i+2, which rank 1 writes on seeing 2i+1.
			spin := func(rank int, first, count uint64) {
				for i := first; i < first+count; i++ {
					if rank == 0 {
						word.Store(2*i + 1)
						waitWord(word, 2*i+2)
					} else {
						waitWord(word, 2*i+1)
						word.Store(2*i + 2)
					}
				}
			}
			spinTimes, opTimes, bareTimes := make([]float64, b.N), make([]float64, b.N), make([]float64, b.N)
			phase := newPairBarrier() // both goroutines between phases
			var wg sync.WaitGroup
			for r, c := range comms {
				wg.Add(1)
				go func(r int, c *Comm) {
					defer wg.Done()
					in, out := ownLines(size), ownLines(size)
					allreduce := func(count int) bool {
						for i := 0; i < count; i++ {
							if err := c.AllReduce(in, out, size/4, Float32, Sum); err != nil {
								b.Error(err)
								return false
							}
							if err := c.Synchronize(); err != nil {
								b.Error(err)
								return false
							}
						}
						return true
					}
					var trips, rounds uint64 // round trips and bare rounds so far, alike on both goroutines
					for blk := 0; blk < b.N; blk++ {
						// Each phase starts untimed (floorWarm): the two
						// goroutines meet through the scheduler and may start
						// on one processor until the other takes one.
						phase.meet()
						spin(r, trips, floorWarm)
						t0 := time.Now()
						spin(r, trips+floorWarm, floorBlock)
						t1 := time.Now()
						trips += floorWarm + floorBlock
						phase.meet()
						if !allreduce(floorWarm) {
							return
						}
						t2 := time.Now()
						if !allreduce(floorBlock) {
							return
						}
						t3 := time.Now()
						phase.meet()
						exchange(r, in, out, rounds, floorWarm)
						t4 := time.Now()
						exchange(r, in, out, rounds+floorWarm, floorBlock)
						rounds += floorWarm + floorBlock
						if r == 0 {
							spinTimes[blk], opTimes[blk] = t1.Sub(t0).Seconds(), t3.Sub(t2).Seconds()
							bareTimes[blk] = time.Since(t4).Seconds()
						}
					}
				}(r, c)
			}
			wg.Wait()
			ratios, bareRatios := make([]float64, b.N), make([]float64, b.N)
			for i := range ratios {
				ratios[i] = opTimes[i] / spinTimes[i]
				bareRatios[i] = bareTimes[i] / spinTimes[i]
			}
			b.ReportMetric(median(opTimes)/floorBlock*1e6, "us/op")
			b.ReportMetric(median(spinTimes)/floorBlock*1e6, "spin_us")
			b.ReportMetric(median(ratios), "x_spin")
			b.ReportMetric(median(bareTimes)/floorBlock*1e6, "bare_us")
			b.ReportMetric(median(bareRatios), "bare_x_spin")
			b.ReportMetric(0, "ns/op")
		})
	}
}

// floorBlock is how many round trips or allreduces one timed block holds;
// floorWarm how many run untimed before it.
const floorBlock, floorWarm = 5000, 500

// waitWord spins until w holds v, yielding now and then (as
// BenchmarkSpinRoundTrip) so that an oversubscribed machine progresses.
func waitWord(w *atomic.Uint64, v uint64) {
	for spins := 0; w.Load() != v; spins++ {
		if spins%1024 == 1023 {
			runtime.Gosched()
		}
	}
}

// bareSlot is one slot of BenchmarkFloorSideBySide's bare exchange: a
// flag on a line of its own (the round that filled the slot, plus one),
// and the payload on lines of its own. The flag is written by the slot's
// rank after the payload and read by its peer before the payload.
type bareSlot struct {
	_    [64]byte
	flag atomic.Uint64
	_    [56]byte
	data []byte
}

// pairBarrier is where two goroutines meet between timed blocks (outside
// the timing: a mutex and a condition are fine).
type pairBarrier struct {
	mu           sync.Mutex
	cond         *sync.Cond
	arrived, gen int // guarded by mu
}

func newPairBarrier() *pairBarrier {
	p := &pairBarrier{}
	p.cond = sync.NewCond(&p.mu)
	return p
}

// meet returns once both goroutines have called it (again).
func (p *pairBarrier) meet() {
	p.mu.Lock()
	defer p.mu.Unlock()
	gen := p.gen
	if p.arrived++; p.arrived == 2 {
		p.arrived, p.gen = 0, p.gen+1
		p.cond.Broadcast()
		return
	}
	for gen == p.gen {
		p.cond.Wait()
	}
}

// BenchmarkQueuedSmallAllReduce is nccl-tests' timing loop: every rank
// enqueues its operations back to back, each on the next slot of a larger
// buffer (perf rotates buffers so), and synchronizes once at the end: the
// call path a repeated shape cannot shortcut, with up to b.N operations
// in flight.
func BenchmarkQueuedSmallAllReduce(b *testing.B) {
	for _, size := range []int{8, 1024} {
		b.Run("size="+sizeName(size), func(b *testing.B) {
			comms, err := InitAll(2, Config{Timeout: time.Minute})
			if err != nil {
				b.Fatal(err)
			}
			defer func() {
				for _, c := range comms {
					c.Destroy()
				}
			}()
			const slots = 64
			b.ReportAllocs()
			b.ResetTimer()
			var wg sync.WaitGroup
			for _, c := range comms {
				wg.Add(1)
				go func(c *Comm) {
					defer wg.Done()
					in, out := make([]byte, slots*size), make([]byte, slots*size)
					for i := 0; i < b.N; i++ {
						s := i % slots * size
						if err := c.AllReduce(in[s:s+size], out[s:s+size], size/4, Float32, Sum); err != nil {
							b.Error(err)
							return
						}
						if i == b.N-1 {
							if err := c.Synchronize(); err != nil {
								b.Error(err)
								return
							}
						}
					}
				}(c)
			}
			wg.Wait()
		})
	}
}

// ownLines returns n bytes on cache lines of their own. Two ranks' 8-byte
// buffers made one after another share a line (Go's allocator packs small
// objects), and each rank writing its result would pull the line from the
// other's core: a cost of the benchmark, not of the collective (perf's
// buffers are megabytes apart).
func ownLines(n int) []byte {
	const line = 64
	b := make([]byte, n+3*line)
	off := line - int(uintptr(unsafe.Pointer(&b[0]))%line) // the first whole line, with one before it
	return b[off+line : off+line+n : off+line+n]
}
