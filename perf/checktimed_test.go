package perf

import (
	"strings"
	"sync/atomic"
	"testing"

	"github.com/gccl/gccl/lib/ccl"
	"github.com/gccl/gccl/lib/reduce"
)

// corruptBackend is the embedded stack with ranks that flip one bit of the
// output of the last collective they ran, right after a Synchronize that
// flip chooses (rank, 1-based count of that rank's Synchronize calls).
type corruptBackend struct {
	Embedded
	flip  func(rank, sync int) bool
	flips atomic.Int64
}

func (b *corruptBackend) Init(n int, rc RunConfig) ([]Comm, error) {
	comms, err := b.Embedded.Init(n, rc)
	if err != nil {
		return nil, err
	}
	for i, c := range comms {
		comms[i] = &corruptComm{Comm: c, be: b}
	}
	return comms, nil
}

// corruptComm is driven by one goroutine at a time, like every Comm.
type corruptComm struct {
	Comm
	be    *corruptBackend
	last  []byte // the output of the last collective enqueued
	syncs int
}

func (c *corruptComm) AllReduce(send, recv []byte, count int, dt reduce.DataType, op ccl.RedOp) error {
	c.last = recv[:count*dt.Size()]
	return c.Comm.AllReduce(send, recv, count, dt, op)
}

func (c *corruptComm) Synchronize() error {
	err := c.Comm.Synchronize()
	c.syncs++
	if err == nil && len(c.last) > 0 && c.be.flip(c.Rank(), c.syncs) {
		c.last[0] ^= 1 // the low mantissa bit of element 0
		c.be.flips.Add(1)
	}
	return err
}

// TestCheckTimedCatchesCorruption: rank 0 corrupts the output of a timed
// iteration, once, after its fourth Synchronize. The first two end the
// warm-up pass (one size, two placements), the third the point's warmup;
// the fourth comes right after a timed iteration: the last
// one without --check-timed (which waits only at the end), the first one
// with it (which waits and checks after every iteration). The -c check runs
// on fresh data afterwards, so only --check-timed can see it.
func TestCheckTimedCatchesCorruption(t *testing.T) {
	cleanBwEnv(t)
	sweep := []string{"-g", "2", "-b", "1K", "-e", "1K", "-n", "3", "-w", "1"}
	once := func() *corruptBackend {
		return &corruptBackend{flip: func(rank, sync int) bool { return rank == 0 && sync == 4 }}
	}

	be := once()
	r := runWith(t, AllReduce, be, sweep...)
	if be.flips.Load() != 1 {
		t.Fatalf("without --check-timed: %d flips, want 1 (the test's premise broke)", be.flips.Load())
	}
	if r.code != 0 || !hasLine(r.stdout, "# Out of bounds values : 0 OK") {
		t.Errorf("without --check-timed the corruption of a timed iteration must go unseen (as in nccl-tests): exit %d\n%s", r.code, r.stdout)
	}
	if rows := dataRows(r.stdout); len(rows) != 1 || strings.Fields(rows[0])[8] != "0" {
		t.Errorf("rows %q", rows)
	}

	be = once()
	r = runWith(t, AllReduce, be, args(sweep, []string{"--check-timed"})...)
	if be.flips.Load() != 1 {
		t.Fatalf("with --check-timed: %d flips, want 1", be.flips.Load())
	}
	if r.code != exitDataError {
		t.Errorf("with --check-timed: exit %d, want %d\n%s%s", r.code, exitDataError, r.stdout, r.stderr)
	}
	if !hasLine(r.stdout, "# Out of bounds values : 1 FAILED") {
		t.Errorf("with --check-timed: want exactly the one flipped element counted:\n%s", r.stdout)
	}
	if !strings.Contains(r.stdout, "# Check Timed: every timed iteration is verified") {
		t.Errorf("no Check Timed note")
	}
	rows := dataRows(r.stdout)
	if len(rows) != 1 {
		t.Fatalf("rows %q", rows)
	}
	if f := strings.Fields(rows[0]); f[8] != "1" || f[12] != "0" {
		t.Errorf("want the out-of-place #wrong 1 and in-place 0: %q", rows[0])
	}

	// --check-timed with -c 0 still checks the timed iterations.
	be = once()
	r = runWith(t, AllReduce, be, args(sweep, []string{"--check-timed", "-c", "0"})...)
	if r.code != exitDataError || !hasLine(r.stdout, "# Out of bounds values : 1 FAILED") {
		t.Errorf("--check-timed -c 0: exit %d\n%s", r.code, r.stdout)
	}
}

// TestCheckTimedClean: --check-timed on the honest stack finds nothing, for
// every test and with threads.
func TestCheckTimedClean(t *testing.T) {
	cleanBwEnv(t)
	for _, tt := range Tests {
		g := "3"
		if tt == Hypercube {
			g = "2"
		}
		r := runPerf(t, tt, args(tiny, []string{"-g", g, "--check-timed"})...)
		if r.code != 0 || !hasLine(r.stdout, "# Out of bounds values : 0 OK") {
			t.Errorf("%s --check-timed: exit %d\n%s%s", tt.Prog, r.code, r.stdout, r.stderr)
		}
	}
	r := runPerf(t, AllReduce, args(tiny, []string{"-t", "2", "-g", "2", "--check-timed"})...)
	if r.code != 0 || !hasLine(r.stdout, "# Out of bounds values : 0 OK") {
		t.Errorf("-t 2 -g 2 --check-timed: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
}

// TestCheckTimedAggregated: --check-timed with -m 2 must not report errors
// on an honest stack: each of an iteration's -m operations has a buffer slot
// of its own, so in place the second allreduce does not reduce the output
// of the first.
func TestCheckTimedAggregated(t *testing.T) {
	cleanBwEnv(t)
	for _, tt := range []*Test{AllReduce, ReduceScatter, Reduce, AllGather} {
		r := runPerf(t, tt, args(tiny, []string{"-g", "2", "--check-timed", "-m", "2"})...)
		if r.code != 0 || !hasLine(r.stdout, "# Out of bounds values : 0 OK") {
			t.Errorf("%s -m 2 --check-timed: exit %d\n%s%s", tt.Prog, r.code, r.stdout, r.stderr)
		}
	}
}

// TestCorruptEverywhere: a stack that corrupts every operation fails the
// ordinary -c 1 check: #wrong > 0, FAILED, exit 7.
func TestCorruptEverywhere(t *testing.T) {
	cleanBwEnv(t)
	be := &corruptBackend{flip: func(int, int) bool { return true }}
	r := runWith(t, AllReduce, be, args(tiny, []string{"-g", "2"})...)
	if r.code != exitDataError {
		t.Errorf("exit %d, want %d", r.code, exitDataError)
	}
	if !strings.Contains(r.stdout, "# Out of bounds values : ") || !strings.Contains(r.stdout, " FAILED\n") {
		t.Errorf("no FAILED footer:\n%s", r.stdout)
	}
	rows := dataRows(r.stdout)
	if len(rows) != 5 {
		t.Fatalf("%d rows", len(rows))
	}
	for _, row := range rows {
		f := strings.Fields(row)
		if f[8] == "0" || f[12] == "0" || f[8] == "N/A" || f[12] == "N/A" {
			t.Errorf("a corrupted row reports %s/%s wrong: %q", f[8], f[12], row)
		}
	}
	// The run goes on after a data error: every size is measured.
	if !hasLine(r.stdout, "# Collective test concluded: all_reduce_perf") {
		t.Errorf("no conclusion line")
	}
}

// A sweep whose largest size leaves too few slots fails with the usage
// error before the warm-up pass runs a call off the buffers (it panicked).
func TestCheckTimedSlotsCheckedBeforeWarmup(t *testing.T) {
	r := runPerf(t, AllReduce, args(tiny, []string{"-g", "2", "--check-timed", "-m", "3"})...)
	if r.code != exitInvalidUsage || !strings.Contains(r.stderr, "--check-timed with -m 3 needs 3 slots") {
		t.Fatalf("exit %d, stderr %q", r.code, r.stderr)
	}
}
