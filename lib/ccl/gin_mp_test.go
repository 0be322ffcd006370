package ccl

import (
	"fmt"
	"os"
	"testing"
	"time"
)

func init() {
	devScenarios["gin"] = ginChild
	devScenarios["gindie"] = ginDieChild
}

// TestMultiHostGin: GIN across processes: put+signal ordering with
// counters and flushes, the alltoall -D 3 and -D 4 kernels and the GIN and
// hybrid barriers, over hosts of 1 and 2 ranks (the network transport on
// loopback, the job's listener), 2 hosts of 2 processes, and 2 processes
// of one host (GIN's own loopback listener).
func TestMultiHostGin(t *testing.T) {
	layouts := []struct {
		procs, per int
		hosts      []string
	}{
		{2, 1, []string{"hostA", "hostB"}},
		{2, 2, []string{"hostA", "hostB"}},
		{4, 1, []string{"hostA", "hostA", "hostB", "hostB"}},
		{2, 1, nil},
	}
	for _, l := range layouts {
		t.Run(fmt.Sprintf("procs=%d/ranks=%d/hosts=%v", l.procs, l.per, l.hosts), func(t *testing.T) {
			outs, errs := runJob(t, l.procs, l.per, nil, "gin", 2*time.Minute, l.hosts...)
			expectJobOK(t, outs, errs)
		})
	}
}

func ginChild(t *testing.T, job mpJob, ids []UniqueID) {
	childRunComms(job, ids, Config{Timeout: 30 * time.Second}, ginChildRun)
}

func ginChildRun(comms []*Comm) error {
	n := comms[0].Size()
	rounds := 40
	if raceEnabled {
		rounds = 15
	}
	const b, count = 300, 2000
	f, err := newGinFix(comms, ginReqs(2, 2*n), n*b, 2*n*b, true)
	if err != nil {
		return err
	}
	if p := f.ds[0].QueryProperties(); p.GinType != "proxy" {
		return fmt.Errorf("QueryProperties: %+v, want GinType proxy", p)
	}
	if err := ginOrdering(f, rounds, b); err != nil {
		return fmt.Errorf("ordering: %w", err)
	}
	if err := ginBarriers(f, rounds); err != nil {
		return fmt.Errorf("barriers: %w", err)
	}
	if err := f.close(); err != nil {
		return err
	}
	f, err = newGinFix(comms, ginReqs(3, 1), 8*count*n, 8*count*n, true)
	if err != nil {
		return err
	}
	for _, mode := range []int{3, 4} {
		if err := ginAlltoall(f, mode, count, 5); err != nil {
			return err
		}
	}
	return f.close()
}

// TestMultiHostGinDies: across 3 hosts, the last rank's process exits
// while the others sync on a GIN barrier; they fail well within the 20 s
// timeout, naming it.
func TestMultiHostGinDies(t *testing.T) {
	expectRank2Lost(t, "gindie", "hostA", "hostB", "hostC")
}

func ginDieChild(t *testing.T, job mpJob, ids []UniqueID) {
	comms, err := childInitRanks(job.NRanks, ids[0], job.Ranks, Config{Timeout: 20 * time.Second})
	if err != nil {
		fmt.Printf("RESULT %v\n", err)
		return
	}
	c := comms[0]
	d, err := c.DevCommCreate(ginReqs(1, 1))
	if err != nil {
		fmt.Printf("RESULT %v\n", err)
		return
	}
	g, err := d.Gin(0)
	if err != nil {
		fmt.Printf("RESULT %v\n", err)
		return
	}
	bar, err := g.Barrier(TeamWorld(d), 0)
	if err != nil {
		fmt.Printf("RESULT %v\n", err)
		return
	}
	for i := 0; ; i++ {
		if i == 50 && c.Rank() == job.NRanks-1 {
			os.Exit(7)
		}
		if err := bar.Sync(); err != nil {
			fmt.Printf("RESULT %v\n", err)
			d.Destroy()
			c.Destroy()
			return
		}
	}
}
