package ccl

import (
	"errors"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"
)

// devScenarios are the device API's children of the tests across
// processes (mpScenario runs them by name).
var devScenarios = map[string]func(t *testing.T, job mpJob, ids []UniqueID){
	"dev":    devChild,
	"devdie": devDieChild,
}

// TestMultiProcDevAPI: windows from MemAlloc with parts of different
// sizes read by every peer, the reference allreduce kernel with exact
// sums, and the refusal of a window not from MemAlloc, across 2 and 3
// processes and 2 processes of 2 ranks; no segment left behind.
func TestMultiProcDevAPI(t *testing.T) {
	for _, l := range []struct{ procs, per int }{{2, 1}, {3, 1}, {2, 2}} {
		t.Run(fmt.Sprintf("%dx%d", l.procs, l.per), func(t *testing.T) {
			outs, errs := runJob(t, l.procs, l.per, nil, "dev", time.Minute)
			expectJobOK(t, outs, errs)
		})
	}
}

func devChild(t *testing.T, job mpJob, ids []UniqueID) {
	childRunComms(job, ids, Config{Timeout: 20 * time.Second}, devChildRun)
}

func devChildRun(comms []*Comm) error {
	const v, count = 2, 999
	n := comms[0].Size()
	// Go memory cannot be mapped by the other processes.
	errs := make([]error, len(comms))
	perRank(comms, func(c *Comm) {
		_, errs[c.Rank()-comms[0].Rank()] = c.WindowRegister(make([]byte, 64), WinCollSymmetric)
	})
	for _, err := range errs {
		if err == nil || !strings.Contains(err.Error(), "ncclMemAlloc") {
			return fmt.Errorf("WindowRegister of Go memory across processes: %v, want an error naming ncclMemAlloc", err)
		}
	}
	ds := make([]*DevComm, len(comms))
	sizes, sends, recvs := make([]*Window, len(comms)), make([]*Window, len(comms)), make([]*Window, len(comms))
	bufs := make([][][]byte, len(comms))
	err := perRankErr(comms, func(c *Comm) (err error) {
		k := c.Rank() - comms[0].Rank()
		if ds[k], err = c.DevCommCreate(DevCommRequirements{LsaBarrierCount: v}); err != nil {
			return err
		}
		for _, size := range []int{16 * (c.Rank() + 1), 8 * count, 8 * count} {
			b, err := c.MemAlloc(size)
			if err != nil {
				return err
			}
			bufs[k] = append(bufs[k], b)
		}
		copy(bufs[k][0], pattern(c.Rank(), len(bufs[k][0])))
		if sizes[k], err = c.WindowRegister(bufs[k][0], WinCollSymmetric); err != nil {
			return err
		}
		if sends[k], err = c.WindowRegister(bufs[k][1], WinCollSymmetric); err != nil {
			return err
		}
		recvs[k], err = c.WindowRegister(bufs[k][2], WinCollSymmetric)
		return err
	})
	if err != nil {
		return err
	}
	err = perRankErr(comms, func(c *Comm) error {
		d := ds[c.Rank()-comms[0].Rank()]
		bar, err := d.LsaBarrier(0)
		if err != nil {
			return err
		}
		if err := bar.Sync(); err != nil {
			return err
		}
		for p := range n {
			got, err := d.LsaPointer(sizes[c.Rank()-comms[0].Rank()], 0, p)
			if err != nil {
				return err
			}
			if want := pattern(p, 16*(p+1)); string(got) != string(want) {
				return fmt.Errorf("rank %d reads rank %d's part as %x, want %x", c.Rank(), p, got, want)
			}
		}
		return nil
	})
	if err != nil {
		return err
	}
	if err := checkLsaAllReduce(ds, sends, recvs, count, v, 20); err != nil {
		return err
	}
	return perRankErr(comms, func(c *Comm) error {
		k := c.Rank() - comms[0].Rank()
		if err := c.MemFree(bufs[k][0]); err == nil {
			return errors.New("MemFree of a registered buffer: no error")
		}
		for _, w := range []*Window{sizes[k], sends[k], recvs[k]} {
			if err := c.WindowDeregister(w); err != nil {
				return err
			}
		}
		for _, b := range bufs[k] {
			if err := c.MemFree(b); err != nil {
				return err
			}
		}
		return ds[k].Destroy()
	})
}

// TestMultiProcDevDies: a process exits while the others sync on an LSA
// barrier; they fail well within the 20 s timeout, naming it.
func TestMultiProcDevDies(t *testing.T) {
	expectRank2Lost(t, "devdie")
}

func devDieChild(t *testing.T, job mpJob, ids []UniqueID) {
	comms, err := childInitRanks(job.NRanks, ids[0], job.Ranks, Config{Timeout: 20 * time.Second})
	if err != nil {
		fmt.Printf("RESULT %v\n", err)
		return
	}
	c := comms[0]
	d, err := c.DevCommCreate(DevCommRequirements{LsaBarrierCount: 1})
	if err != nil {
		fmt.Printf("RESULT %v\n", err)
		return
	}
	bar, err := d.LsaBarrier(0)
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

// childRunComms is a child process's part of a device-API job: its ranks,
// run over them, then Destroy (Abort after a failure); the outcome as the
// RESULT line the parent reads.
func childRunComms(job mpJob, ids []UniqueID, cfg Config, run func([]*Comm) error) {
	comms, err := childInitRanks(job.NRanks, ids[0], job.Ranks, cfg)
	if err != nil {
		fmt.Printf("RESULT %v\n", err)
		return
	}
	if err := run(comms); err != nil {
		fmt.Printf("RESULT %v\n", err)
		for _, c := range comms {
			c.Abort()
		}
		return
	}
	for _, c := range comms {
		if err := c.Destroy(); err != nil {
			fmt.Printf("RESULT Destroy: %v\n", err)
			return
		}
	}
	fmt.Println("RESULT ok")
}

// expectJobOK fails t for every process that did not report ok.
func expectJobOK(t *testing.T, outs []string, errs []error) {
	t.Helper()
	for p := range outs {
		if errs[p] != nil || resultLine(outs[p]) != "ok" {
			t.Errorf("process %d: %v\n%s", p, errs[p], outs[p])
		}
	}
}

// expectRank2Lost runs scenario over 3 processes of one rank (on hostIDs,
// if given), whose process 2 dies: the others must fail well within the
// 20 s timeout with an abort naming rank 2.
func expectRank2Lost(t *testing.T, scenario string, hostIDs ...string) {
	t.Helper()
	start := time.Now()
	outs, errs := runJob(t, 3, 1, nil, scenario, time.Minute, hostIDs...)
	if d := time.Since(start); d > 15*time.Second {
		t.Errorf("the job took %v to fail, want well under the 20 s timeout", d)
	}
	for p := 0; p < 2; p++ {
		res := resultLine(outs[p])
		t.Logf("process %d: %s", p, res)
		if errs[p] != nil || !strings.Contains(res, "rank 2") || !strings.Contains(res, "aborted") {
			t.Errorf("process %d: %v: %q, want an abort naming rank 2\n%s", p, errs[p], res, outs[p])
		}
	}
	if errs[2] == nil {
		t.Errorf("the dying process exited cleanly")
	}
}
