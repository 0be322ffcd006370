package ccl

import (
	"fmt"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/gccl/gccl/lib/proto"
)

// TestFoldDrivers: a plan folds exactly when its ranks x channels with
// work outnumber the processors, with more than one rank and channel; then
// each rank gets as many drivers as fit the processors, at least one, and
// fewer than its channels.
func TestFoldDrivers(t *testing.T) {
	for n := 1; n <= 32; n++ {
		for nCh := 1; nCh <= 32; nCh++ {
			for _, procs := range []int{1, 2, 3, 8, 16, 64} {
				d := foldDrivers(n, nCh, procs)
				folds := n > 1 && nCh > 1 && n*nCh > procs
				switch {
				case !folds && d != 0:
					t.Fatalf("foldDrivers(%d, %d, %d) = %d, want 0: the runners fit", n, nCh, procs, d)
				case folds && (d < 1 || d >= nCh || d > 1 && n*d > procs || n*(d+1) <= procs):
					t.Fatalf("foldDrivers(%d, %d, %d) = %d: want the most drivers that fit, at least 1, fewer than the channels", n, nCh, procs, d)
				}
			}
		}
	}
}

// TestProcessFolding: a process of a world across processes folds its
// ranks' channels past its usable processors less one (at least one
// runner), whatever the world's size, unless the host's processes
// outnumber its processors; a lone rank of its process folds too.
func TestProcessFolding(t *testing.T) {
	for _, c := range []struct{ gomaxprocs, cpus, hostProcesses, hostProcs, want int }{
		{1, 16, 16, 16, 1}, {2, 16, 8, 16, 1}, {4, 16, 4, 16, 3}, {16, 16, 1, 16, 15}, {32, 16, 2, 16, 15},
		{8, 2, 2, 2, 1}, {3, 0, 1, 0, 2},
		{1, 2, 3, 2, 0}, {1, 2, 4, 2, 0}, {1, 16, 17, 16, 0}, // processes past the host's processors
	} {
		if got := processFoldProcs(c.gomaxprocs, c.cpus, c.hostProcesses, c.hostProcs); got != c.want {
			t.Errorf("processFoldProcs(%d, %d, %d processes, %d processors) = %d, want %d",
				c.gomaxprocs, c.cpus, c.hostProcesses, c.hostProcs, got, c.want)
		}
	}
	for _, c := range []struct{ ranks, nCh, procs, want int }{
		{1, 2, 1, 1}, {1, 4, 3, 3}, {1, 3, 3, 0}, {2, 4, 3, 1}, {2, 2, 4, 0}, {1, 1, 1, 0},
	} {
		if got := driversFor(c.ranks, c.nCh, c.procs); got != c.want {
			t.Errorf("driversFor(%d, %d, %d) = %d, want %d", c.ranks, c.nCh, c.procs, got, c.want)
		}
	}
}

// TestRunnerProcsReserve: one process's plans fold one processor in 32
// early (32 ranks x 2 channels on 64 folds onto one driver a rank), and
// exactly at the processors on hosts under 32 (8 ranks x 2 channels still
// fit 16 cores, 2 ranks x 1 channel the 2-core VM).
func TestRunnerProcsReserve(t *testing.T) {
	for procs := 1; procs <= 256; procs++ {
		got := runnerProcs(procs)
		if procs < 32 && got != procs || procs >= 32 && (got >= procs || got < procs-procs/32) {
			t.Fatalf("runnerProcs(%d) = %d, want %d less one in 32", procs, got, procs)
		}
	}
	for _, c := range []struct{ n, nCh, procs, want int }{
		{32, 2, 64, 1}, // 64 runners would fill every processor
		{32, 1, 64, 0}, // one channel: nothing to fold
		{16, 4, 64, 3}, // 48 runners
		{31, 2, 64, 0}, // 62 runners fit
		{8, 2, 16, 0},  // 16 runners fit 16 cores
		{2, 1, 2, 0},
		{2, 2, 4, 0},
	} {
		w := &world{n: c.n}
		if d := w.drivers(c.nCh, c.procs); d != c.want {
			t.Errorf("%d ranks x %d channels on %d processors: %d drivers a rank, want %d", c.n, c.nCh, c.procs, d, c.want)
		}
	}
}

// withFolding runs fn with folding on or off.
func withFolding(on bool, fn func()) {
	old := foldOff.Swap(!on)
	defer foldOff.Store(old)
	fn()
}

// TestMatrixUnfolded runs part of the matrix with folding off, so that the
// channel goroutines run several channels side by side on this 2-core
// machine too (where every plan of several ranks and channels folds), and
// checks that the plans of TestMatrix's configurations do fold here.
func TestMatrixUnfolded(t *testing.T) {
	withFolding(false, func() {
		cell := 0
		for _, n := range []int{2, 3, 5} {
			for _, p := range []proto.Protocol{proto.LL, proto.LL128, proto.Simple} {
				for _, nch := range []int{2, 3} {
					cell++
					cfg := smallBuffers
					cfg.Proto, cfg.Algo, cfg.NChannels = protoReq(p.String()), algoReq("Ring"), nch
					cfg.Timeout = 20 * time.Second
					comms, err := InitAll(n, cfg)
					must(t, err)
					runCases(t, comms, matrixCases(matrixColls, n, p, cell, true))
					for _, c := range comms {
						if c.fold.plan.Load() != 0 {
							t.Errorf("n=%d %s ch=%d: a plan folded with folding off", n, p, nch)
						}
						c.Destroy()
					}
				}
			}
		}
	})
	// With folding on, a multi-channel allreduce of 3 ranks folds here
	// (6 runners on at most GOMAXPROCS processors: run with more, and
	// the check is skipped).
	comms := initT(t, 3, Config{Algo: algoReq("Ring"), Proto: protoReq("Simple"), NChannels: 2})
	if comms[0].w.spinProcs >= 6 {
		t.Skipf("%d processors: 3 ranks x 2 channels fit", comms[0].w.spinProcs)
	}
	perRank(comms, func(c *Comm) {
		b := make([]byte, 1<<16)
		must(t, c.AllReduce(b, b, len(b)/4, Float32, Sum))
		must(t, c.Synchronize())
		if c.fold.plan.Load() != 1 {
			t.Errorf("rank %d: the plan did not fold", c.Rank())
		}
	})
}

// TestFoldedOneThreadDrivesAllRanks: one goroutine enqueues on every rank
// then synchronizes each in turn, with folded plans of several channels:
// the other ranks' plans run on their channel 0 goroutines, which their
// peers' kicks must reach through the channels the parts wait on.
func TestFoldedOneThreadDrivesAllRanks(t *testing.T) {
	for _, p := range []string{"LL", "Simple"} {
		t.Run(p, func(t *testing.T) {
			comms := initT(t, 4, Config{Algo: algoReq("Ring"), Proto: protoReq(p), NChannels: 3, Timeout: 20 * time.Second})
			if comms[0].w.spinProcs >= 12 {
				t.Skipf("%d processors: 4 ranks x 3 channels fit", comms[0].w.spinProcs)
			}
			const count = 50_000
			bufs := make([][]float32, len(comms))
			for r := range bufs {
				bufs[r] = make([]float32, count)
			}
			for it := 0; it < 5; it++ {
				for r, c := range comms {
					for i := range bufs[r] {
						bufs[r][i] = float32(r + (i+it)%7)
					}
					must(t, c.AllReduce(asBytes(bufs[r]), asBytes(bufs[r]), count, Float32, Sum))
				}
				for _, c := range comms {
					must(t, c.Synchronize())
				}
				for r := range comms {
					for i, v := range bufs[r] {
						if want := float32(6 + 4*((i+it)%7)); v != want {
							t.Fatalf("it %d rank %d [%d] = %v, want %v", it, r, i, v, want)
						}
					}
				}
				if comms[0].fold.plan.Load() == 0 {
					t.Fatal("the plans did not fold")
				}
			}
		})
	}
}

// TestFoldedTimeout: a rank that never joins makes a folded plan's ranks
// fail within the timeout, naming what they waited for, and Destroy then
// leaves no goroutine behind (the channels' coroutines end).
func TestFoldedTimeout(t *testing.T) {
	base := runtime.NumGoroutine()
	comms, err := InitAll(4, Config{Algo: algoReq("Ring"), Proto: protoReq("LL128"), NChannels: 3, Timeout: 300 * time.Millisecond})
	must(t, err)
	errs := make([]error, len(comms))
	start := time.Now()
	perRank(comms[:3], func(c *Comm) {
		b := make([]byte, 1<<18)
		if err := c.AllReduce(b, b, len(b)/4, Float32, Sum); err != nil {
			errs[c.Rank()] = err
			return
		}
		errs[c.Rank()] = c.Synchronize()
	})
	took := time.Since(start)
	for r, err := range errs[:3] {
		if err == nil {
			t.Fatalf("rank %d: no error with rank 3 missing", r)
		}
	}
	if took > 20*time.Second {
		t.Fatalf("the ranks took %v to fail with a 300 ms timeout", took)
	}
	msg := fmt.Sprint(errs[0], errs[1], errs[2])
	t.Log(msg)
	if !strings.Contains(msg, "timed out") || !strings.Contains(msg, "waiting for") {
		t.Fatalf("errors do not say what timed out: %v", msg)
	}
	for _, c := range comms {
		c.Destroy()
	}
	if got := settleGoroutines(base); got > base {
		t.Fatalf("%d goroutines after Destroy, %d before", got, base)
	}
}

// TestFoldedSeveralDrivers runs part of the matrix with each rank's
// channels folded onto two and three drivers (channels d, d+D, ... on
// driver d), playing a host of more processors than this one: the ranks
// x channels still outnumber them.
func TestFoldedSeveralDrivers(t *testing.T) {
	cell := 0
	for _, c := range []struct{ n, nch, procs, drivers int }{
		{2, 4, 4, 2}, {2, 5, 6, 3}, {3, 4, 6, 2}, {3, 3, 7, 2},
	} {
		for _, p := range []proto.Protocol{proto.LL, proto.LL128, proto.Simple} {
			cell++
			cfg := smallBuffers
			cfg.Proto, cfg.Algo, cfg.NChannels = protoReq(p.String()), algoReq("Ring"), c.nch
			cfg.MaxNChannels = c.nch
			comms := initT(t, c.n, cfg)
			comms[0].w.spinProcs = c.procs + int(liveRanks.Load()) - c.n // less what other tests' worlds take
			comms[0].w.load.Store(nil)                                   // nor other programs: the drivers are the point
			cases := matrixCases(matrixColls, c.n, p, cell, true)
			runCases(t, comms, cases)
			if got := comms[0].fold.drivers.Load(); got != int32(c.drivers) {
				t.Errorf("%d ranks x %d channels on %d processors, %s: last plan folded on %d drivers, want %d",
					c.n, c.nch, c.procs, p, got, c.drivers)
			}
		}
	}
}

// TestFoldMarkDriverOf: while the marked plan is unfinished, channel ch
// of a plan folded onto d drivers is driven by channel ch mod d, and the
// drivers drive themselves; before any mark, and once the plan finished,
// nothing is redirected.
func TestFoldMarkDriverOf(t *testing.T) {
	var m foldMark
	if _, ok := m.driverOf(3, 0); ok {
		t.Fatal("an unmarked communicator redirected a kick")
	}
	for d := 1; d <= 8; d++ {
		m.mark(10, d)
		for ch := 0; ch < 32; ch++ {
			got, ok := m.driverOf(ch, 9)
			if want := ch >= d; ok != want || ok && got != ch%d {
				t.Fatalf("%d drivers, channel %d: driverOf = %d, %v; want %d, %v", d, ch, got, ok, ch%d, want)
			}
			if _, ok := m.driverOf(ch, 10); ok {
				t.Fatalf("%d drivers, channel %d: redirected after the plan finished", d, ch)
			}
		}
	}
}
