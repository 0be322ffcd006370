package ccl

import (
	"bytes"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gccl/gccl/lib/proto"
	"github.com/gccl/gccl/lib/shm"
)

// Tests across processes re-execute this test binary as the job's
// processes (TestMultiProcChild, selected by mpEnv). The parent serves the
// bootstrap roots and checks that every child passed; each child runs its
// ranks' share of the cells and checks its own results bit for bit.

const mpEnv = "GCCL_TEST_MP_JOB"

// mpJob is what the parent hands every child, as JSON in mpEnv.
type mpJob struct {
	IDs    []string // one unique id (hex) per cell
	NRanks int
	Ranks  []int // this child's
	Cells  []mpCell
	// Scenario other than "" runs a special child (see mpScenario).
	Scenario string
	ShmDir   string
	Timeout  time.Duration // the scenario's Config.Timeout, when set
	// Procs > 0 plays a process of that many processors less one (the
	// worlds' foldProcs): to make plans fold, or not, whatever this host
	// has.
	Procs int
}

// mpCell is one set of communicators: its configuration and its cases.
type mpCell struct {
	Proto, Algo  string
	NCh, PerHost int
	Colls        []Coll
	Sample       int
	// Procs > 0 plays a process of that many processors less one (as
	// mpJob.Procs); Drivers is then the drivers per rank its plans must
	// fold onto (0: none).
	Procs, Drivers int
}

// runJob starts procs children holding perProc consecutive ranks each,
// waits for them and returns their combined output and exit errors.
// hostIDs, when given, is each process's GCCL_HOSTID: processes with
// different ones are different hosts to the stack (the network transport,
// on loopback: GCCL_SOCKET_IFNAME=lo).
func runJob(t *testing.T, procs, perProc int, cells []mpCell, scenario string, timeout time.Duration, hostIDs ...string) (outputs []string, errs []error) {
	t.Helper()
	var place func(p int, cmd *exec.Cmd)
	if len(hostIDs) > 0 {
		place = func(p int, cmd *exec.Cmd) {
			cmd.Env = append(cmd.Env, EnvHostID+"="+hostIDs[p], EnvSocketIfname+"=lo")
		}
	}
	return startJob(t, jobSpec{procs: procs, perProc: perProc, cells: cells, scenario: scenario, place: place}).wait(timeout)
}

// jobSpec is a job of test children: procs processes of perProc
// consecutive ranks, running cells or a scenario.
type jobSpec struct {
	procs, perProc int
	cells          []mpCell
	scenario       string
	rankTimeout    time.Duration // the scenario's Config.Timeout (0: its own)
	foldProcs      int           // mpJob.Procs
	// place, when set, adapts process p's command: its host id, or the
	// network namespace it runs in.
	place func(p int, cmd *exec.Cmd)
}

// mpRun is a started job.
type mpRun struct {
	t    *testing.T
	cmds []*exec.Cmd
	outs []*syncBuffer
	dir  string
	done []chan error // each process's exit, once
}

// startJob serves the job's bootstrap roots in this process and starts its
// children.
func startJob(t *testing.T, spec jobSpec) *mpRun {
	t.Helper()
	n := spec.procs * spec.perProc
	r := &mpRun{t: t, dir: t.TempDir()}
	ids := newRoots(t, max(len(spec.cells), 1))
	for p := range spec.procs {
		job := mpJob{IDs: ids, NRanks: n, Cells: spec.cells, Scenario: spec.scenario, ShmDir: r.dir, Timeout: spec.rankTimeout, Procs: spec.foldProcs}
		for k := range spec.perProc {
			job.Ranks = append(job.Ranks, p*spec.perProc+k)
		}
		b, _ := json.Marshal(job)
		cmd := exec.Command(os.Args[0], "-test.run=^TestMultiProcChild$", "-test.v")
		cmd.Env = append(os.Environ(), mpEnv+"="+string(b), shm.EnvDir+"="+r.dir, "GOMAXPROCS=2")
		if spec.place != nil {
			spec.place(p, cmd)
		}
		out := new(syncBuffer)
		cmd.Stdout, cmd.Stderr = out, out
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		done := make(chan error, 1)
		go func() { done <- cmd.Wait() }()
		r.cmds, r.outs, r.done = append(r.cmds, cmd), append(r.outs, out), append(r.done, done)
	}
	t.Cleanup(func() { // a test that stopped early leaves no child behind
		for _, c := range r.cmds {
			_ = c.Process.Kill()
		}
	})
	return r
}

// newRoots serves n bootstrap roots in this process and returns their ids
// (hex). A root waits for its job's first process within the timeout, and
// a job's last cells start minutes after its first: these roots wait 15
// minutes. Their host is GCCL_COMM_ID's, as NewUniqueID's (the network
// namespace tests set it to their bridge's address).
func newRoots(t *testing.T, n int) []string {
	t.Helper()
	o, err := IDOptionsFromEnv()
	if err != nil {
		t.Fatal(err)
	}
	o.Timeout = 15 * time.Minute
	var ids []string
	for range n {
		id, err := NewUniqueIDWith(o)
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, hex.EncodeToString(id[:]))
		t.Cleanup(func() { stopRoot(id) })
	}
	return ids
}

// wait waits for every child, killing those still running after timeout,
// and returns their outputs and exit errors.
func (r *mpRun) wait(timeout time.Duration) (outputs []string, errs []error) {
	errs = make([]error, len(r.cmds))
	var wg sync.WaitGroup
	for p := range r.cmds {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[p] = r.waitOne(p, timeout)
		}()
	}
	wg.Wait()
	for p := range r.cmds {
		outputs = append(outputs, r.outs[p].String())
	}
	if left, _ := os.ReadDir(r.dir); len(left) > 0 {
		var names []string
		for _, e := range left {
			names = append(names, e.Name())
		}
		r.t.Errorf("shared-memory segments left behind: %v", names)
	}
	return outputs, errs
}

// waitOne waits up to timeout for process p, then kills it.
func (r *mpRun) waitOne(p int, timeout time.Duration) error {
	select {
	case err := <-r.done[p]:
		return err
	case <-time.After(timeout):
		_ = r.cmds[p].Process.Kill()
		<-r.done[p]
		return fmt.Errorf("still running after %v: killed", timeout)
	}
}

// waitOutput waits until every process has printed line, or d passes.
func (r *mpRun) waitOutput(line string, d time.Duration) error {
	deadline := time.Now().Add(d)
	for p := range r.outs {
		for !strings.Contains(r.outs[p].String(), line) {
			if time.Now().After(deadline) {
				return fmt.Errorf("process %d did not print %q within %v:\n%s", p, line, d, r.outs[p].String())
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	return nil
}

// TestMultiProcMatrix runs the correctness matrix, sampled, across 2, 3
// and 4 processes and 2 processes of 2 ranks: ring and tree, every
// protocol, 1 and 3 channels, the one-shot and the two-shot; each cell on a fresh set
// of communicators.
func TestMultiProcMatrix(t *testing.T) {
	layouts := []struct{ procs, per int }{{2, 1}, {3, 1}, {4, 1}, {2, 2}}
	for li, l := range layouts {
		var cells []mpCell
		k := li
		for _, p := range proto.All() {
			for _, algo := range []string{"Ring", "Tree"} {
				for _, nch := range []int{1, 3} {
					k++
					c := mpCell{Proto: p.String(), Algo: algo, NCh: nch, Sample: k}
					if algo == "Tree" {
						c.Colls = []Coll{CollAllReduce}
						c.PerHost = 1 + k%2 // hosts of one or two ranks: trees across "hosts"
					} else {
						c.Colls = matrixColls
					}
					cells = append(cells, c)
				}
			}
		}
		// The one-shot over the job's shared board.
		k++
		cells = append(cells, mpCell{Proto: "LL", Algo: "OneShot", NCh: 1, Sample: k, Colls: oneShotColls})
		// The two-shot allreduce over the same board.
		k++
		cells = append(cells, mpCell{Proto: "LL", Algo: "TwoShot", NCh: 1, Sample: k, Colls: []Coll{CollAllReduce}})
		t.Run(fmt.Sprintf("procs=%d/ranks=%d", l.procs, l.per), func(t *testing.T) {
			outs, errs := runJob(t, l.procs, l.per, cells, "", 4*time.Minute)
			for p, err := range errs {
				if err != nil {
					t.Errorf("process %d: %v\n%s", p, err, outs[p])
				}
			}
		})
	}
}

// TestMultiHostMatrix runs the correctness matrix, sampled, across "hosts":
// processes with different host ids, joined by the network transport over
// loopback TCP. 2 hosts of 1 process of 1 or 2 ranks, 3 hosts of 1 rank,
// and 2 hosts of 2 processes (shared memory inside a host, TCP between):
// ring and tree, every protocol, 1 and 2 channels.
func TestMultiHostMatrix(t *testing.T) {
	layouts := []struct {
		procs, per int
		hosts      []string
	}{
		{2, 1, []string{"hostA", "hostB"}},
		{2, 2, []string{"hostA", "hostB"}},
		{3, 1, []string{"hostA", "hostB", "hostC"}},
		{4, 1, []string{"hostA", "hostA", "hostB", "hostB"}},
	}
	for li, l := range layouts {
		cells := hostCells(li, 2)
		t.Run(fmt.Sprintf("procs=%d/ranks=%d/hosts=%d", l.procs, l.per, len(l.hosts)), func(t *testing.T) {
			outs, errs := runJob(t, l.procs, l.per, cells, "", 4*time.Minute, l.hosts...)
			for p, err := range errs {
				if err != nil {
					t.Errorf("process %d: %v\n%s", p, err, outs[p])
				}
			}
		})
	}
}

// hostCells are the cells of a matrix across hosts: ring (every
// collective) and tree (allreduce) for every protocol, channels 1 to maxCh
// in turn from sample first on, then auto (which must never pick the
// one-shot across hosts).
func hostCells(first, maxCh int) []mpCell {
	var cells []mpCell
	k := first
	for _, p := range proto.All() {
		for _, algo := range []string{"Ring", "Tree"} {
			k++
			c := mpCell{Proto: p.String(), Algo: algo, NCh: 1 + k%maxCh, Sample: k, Colls: matrixColls}
			if algo == "Tree" {
				c.Colls = []Coll{CollAllReduce}
			}
			cells = append(cells, c)
		}
	}
	return append(cells, mpCell{Sample: k + 1, Colls: []Coll{CollAllReduce, CollAllGather}})
}

// childInitRanks is InitRanks in a child of a job: the parent hands some
// settings down as GCCL_* variables (GCCL_NSOCKS, ...), which the child
// applies over cfg as a program that wants NCCL-style configuration does.
func childInitRanks(nranks int, id UniqueID, ranks []int, cfg Config) ([]*Comm, error) {
	cfg, err := cfg.FromEnv()
	if err != nil {
		return nil, err
	}
	return InitRanks(nranks, id, ranks, cfg)
}

// TestMultiProcChild is a process of a job when mpEnv is set.
func TestMultiProcChild(t *testing.T) {
	spec := os.Getenv(mpEnv)
	if spec == "" {
		t.Skip("a child of the tests across processes")
	}
	var job mpJob
	if err := json.Unmarshal([]byte(spec), &job); err != nil {
		t.Fatal(err)
	}
	ids := make([]UniqueID, len(job.IDs))
	for i, h := range job.IDs {
		b, err := hex.DecodeString(h)
		if err != nil || len(b) != len(UniqueID{}) {
			t.Fatalf("id %d: %v", i, err)
		}
		copy(ids[i][:], b)
	}
	if job.Scenario != "" {
		mpScenario(t, job, ids)
		return
	}
	for i, cell := range job.Cells {
		cfg := smallBuffers
		cfg.Proto, cfg.Algo, cfg.NChannels, cfg.RanksPerHost = protoReq(cell.Proto), algoReq(cell.Algo), cell.NCh, cell.PerHost
		cfg.Timeout = 60 * time.Second
		comms, err := childInitRanks(job.NRanks, ids[i], job.Ranks, cfg)
		if err != nil {
			t.Fatalf("cell %d (%+v): %v", i, cell, err)
		}
		if cell.Procs > 0 {
			comms[0].w.foldProcs = cell.Procs // before any launch reads it
		}
		var protoOf proto.Protocol
		for _, p := range proto.All() {
			if p.String() == cell.Proto {
				protoOf = p
			}
		}
		cases := matrixCases(cell.Colls, job.NRanks, protoOf, cell.Sample, true)
		t.Run(fmt.Sprintf("%s/%s/ch=%d", cell.Proto, cell.Algo, cell.NCh), func(t *testing.T) {
			runCases(t, comms, cases)
			if comms[0].NHosts() > 1 && comms[0].LastChoice().Algo == "OneShot" {
				t.Errorf("the one-shot ran across %d hosts", comms[0].NHosts())
			}
			if cell.Procs > 0 {
				if got := comms[0].fold.drivers.Load(); got != int32(cell.Drivers) {
					t.Errorf("%d ranks x %d channels, %d processors: plans folded on %d drivers, want %d",
						len(job.Ranks), cell.NCh, cell.Procs, got, cell.Drivers)
				}
			}
		})
		for _, c := range comms {
			if err := c.Destroy(); err != nil {
				t.Errorf("Destroy: %v", err)
			}
		}
		if t.Failed() {
			return
		}
	}
}

// mpScenario runs the special children: faults and failures.
func mpScenario(t *testing.T, job mpJob, ids []UniqueID) {
	id := ids[0]
	cfg := Config{Timeout: 20 * time.Second}
	switch job.Scenario {
	case "die":
		// The last rank dies in the middle of a stream of allreduces; the
		// others must fail naming it, well within the timeout, and leave
		// no goroutine behind once their communicators are destroyed.
		before := runtime.NumGoroutine()
		comms, err := childInitRanks(job.NRanks, id, job.Ranks, cfg)
		if err != nil {
			t.Fatal(err)
		}
		buf := make([]byte, 4096)
		for i := 0; ; i++ {
			for _, c := range comms {
				if err := c.AllReduce(buf, buf, 1024, Float32, RedOp{}); err != nil {
					fmt.Printf("RESULT %v\n", err)
					return
				}
			}
			for _, c := range comms {
				if err := c.Synchronize(); err != nil {
					fmt.Printf("RESULT %v\n", err)
					for _, c := range comms {
						c.Destroy()
					}
					fmt.Printf("GOROUTINES %d %d\n", before, settleGoroutines(before))
					return
				}
			}
			if i == 50 && job.Ranks[0] == job.NRanks-1 {
				os.Exit(7)
			}
		}
	case "netfault":
		// Allreduces until something fails (the parent cuts a link or
		// kills a host once every process said READY); the error is the
		// RESULT line and the exit is non-zero, as a job's would be.
		cfg.Timeout = job.Timeout
		comms, err := childInitRanks(job.NRanks, id, job.Ranks, cfg)
		if err != nil {
			fmt.Printf("RESULT %v\n", err)
			os.Exit(3)
		}
		buf := make([]byte, 64<<10)
		fail := func(err error) {
			fmt.Printf("RESULT %v\n", err)
			for _, c := range comms {
				c.Abort()
			}
			os.Exit(3)
		}
		for i := 0; ; i++ {
			for _, c := range comms {
				if err := c.AllReduce(buf, buf, len(buf)/4, Float32, RedOp{}); err != nil {
					fail(err)
				}
			}
			for _, c := range comms {
				if err := c.Synchronize(); err != nil {
					fail(err)
				}
			}
			if i == 20 {
				fmt.Println("READY")
			}
		}
	case "onedriver":
		// One goroutine drives both ranks of this process (enqueue both,
		// then synchronize both, as nccl-tests -g 2): the first Synchronize
		// waits on the other process, whose own first Synchronize waits on
		// this process's second rank, queued and not yet synchronized. Only
		// the remote kick starts that work once its idle goroutine sleeps
		// (a sleeping idle goroutine naps for 1 s: with a 900 ms timeout, a
		// lost kick is a timeout).
		for k, algo := range []string{"Ring", "Tree"} {
			for j, pr := range []string{"LL", "Simple"} {
				cfg := Config{Algo: algoReq(algo), Proto: protoReq(pr), NChannels: 2, Timeout: 900 * time.Millisecond}
				comms, err := childInitRanks(job.NRanks, ids[2*k+j], job.Ranks, cfg)
				if err != nil {
					fmt.Printf("RESULT %s/%s: %v\n", algo, pr, err)
					return
				}
				if job.Procs > 0 {
					comms[0].w.foldProcs = job.Procs
				}
				// Pairs (rank, 1): one on a host of its own (channel 0
				// alone has work), 64 KiB of them on a played one, so
				// that both channels have work and the plans fold or not.
				pairs := 1
				if job.Procs > 0 {
					pairs = 8192
				}
				bufs := make([][]byte, len(comms))
				fill := func(i int, c *Comm) {
					v := make([]float32, 2*pairs)
					for k := 0; k < pairs; k++ {
						v[2*k], v[2*k+1] = float32(c.Rank()), 1
					}
					bufs[i] = f32s(v)
				}
				for iter := 0; iter < 100; iter++ {
					if iter%25 == 0 {
						time.Sleep(20 * time.Millisecond) // every idle goroutine asleep
					}
					for i, c := range comms {
						fill(i, c)
						if err := c.AllReduce(bufs[i], bufs[i], 2*pairs, Float32, Sum); err != nil {
							fmt.Printf("RESULT %s/%s: %v\n", algo, pr, err)
							return
						}
					}
					for i, c := range comms {
						if err := c.Synchronize(); err != nil {
							fmt.Printf("RESULT %s/%s: %v\n", algo, pr, err)
							return
						}
						n := float32(job.NRanks)
						got := asF32(bufs[i])
						for k := 0; k < pairs; k++ {
							if got[2*k] != n*(n-1)/2 || got[2*k+1] != n {
								fmt.Printf("RESULT %s/%s rank %d: pair %d is %v\n", algo, pr, c.Rank(), k, got[2*k:2*k+2])
								return
							}
						}
					}
				}
				if folded := comms[0].fold.plan.Load() != 0; job.Procs > 0 && folded != (job.Procs < 2*len(job.Ranks)) {
					fmt.Printf("RESULT %s/%s: plans folded %v on %d processors\n", algo, pr, folded, job.Procs)
					return
				}
				for _, c := range comms {
					c.Destroy()
				}
			}
		}
		fmt.Println("RESULT ok")
	case "netdrain":
		// Rank 0 sends 2 MiB to rank 1 on another host, Simple, over and
		// over, overwriting its buffer the moment Synchronize returns. Its
		// proxy writes the steps posted by reference straight from that
		// buffer: Synchronize must wait until the proxy has written them,
		// or rank 1 receives the overwrite.
		comms, err := childInitRanks(job.NRanks, id, job.Ranks, Config{Proto: protoReq("Simple"), NChannels: 1, Timeout: 30 * time.Second})
		if err != nil {
			fmt.Printf("RESULT %v\n", err)
			return
		}
		c := comms[0]
		const size = 2 << 20
		buf, want := make([]byte, size), make([]byte, size)
		fill := func(b []byte, v byte) { // by doubling copies: cheap under the race detector
			b[0] = v
			for n := 1; n < len(b); n *= 2 {
				copy(b[n:], b[:n])
			}
		}
		iters := 20
		if raceEnabled {
			iters = 6
		}
		for iter := 0; iter < iters; iter++ {
			fill(want, byte(iter+1))
			if c.Rank() == 0 {
				copy(buf, want)
				err = c.Send(buf, len(buf), Uint8, 1)
			} else {
				err = c.Recv(buf, len(buf), Uint8, 0)
			}
			if err == nil {
				err = c.Synchronize()
			}
			if err != nil {
				fmt.Printf("RESULT %v\n", err)
				return
			}
			if c.Rank() == 0 {
				fill(buf, 0xff)
				continue
			}
			if !bytes.Equal(buf, want) {
				i := 0
				for buf[i] == want[i] {
					i++
				}
				fmt.Printf("RESULT iteration %d: byte %d of %d is %#x, want %#x\n", iter, i, len(buf), buf[i], want[i])
				return
			}
		}
		c.Destroy()
		fmt.Println("RESULT ok")
	case "absent":
		// The job says more ranks than processes start: InitRanks fails.
		_, err := childInitRanks(job.NRanks+1, id, job.Ranks, Config{Timeout: 2 * time.Second})
		fmt.Printf("RESULT %v\n", err)
	default:
		if f := devScenarios[job.Scenario]; f != nil {
			f(t, job, ids)
			return
		}
		t.Fatalf("unknown scenario %q", job.Scenario)
	}
}

// TestMultiProcRankDies: a process exits in the middle of a stream of
// allreduces; every other process fails within seconds (not the 20 s
// timeout) with an error that names the lost rank and its pid, and
// leaves no segment behind.
func TestMultiProcRankDies(t *testing.T) {
	start := time.Now()
	outs, errs := runJob(t, 3, 1, nil, "die", time.Minute)
	if d := time.Since(start); d > 15*time.Second {
		t.Errorf("the job took %v to fail, want well under the 20 s timeout", d)
	}
	for p := 0; p < 2; p++ {
		if errs[p] != nil {
			t.Errorf("process %d: %v\n%s", p, errs[p], outs[p])
			continue
		}
		res := resultLine(outs[p])
		if !strings.Contains(res, "rank 2") || !strings.Contains(res, "pid") {
			t.Errorf("process %d's error does not name rank 2 and its pid: %q\n%s", p, res, outs[p])
		}
		if !strings.Contains(outs[p], "progress of every rank") {
			t.Errorf("process %d's error carries no progress dump:\n%s", p, outs[p])
		}
		var before, after int
		for _, l := range strings.Split(outs[p], "\n") {
			fmt.Sscanf(l, "GOROUTINES %d %d", &before, &after)
		}
		if before == 0 || after > before {
			t.Errorf("process %d: %d goroutines after Destroy, %d before InitRanks:\n%s", p, after, before, outs[p])
		}
	}
	if errs[2] == nil {
		t.Errorf("the dying process exited cleanly")
	}
}

// TestMultiProcOneDriver: each process drives its two ranks from one
// goroutine; progress needs the remote kick (see the "onedriver" child).
// With the plans folded (processes of 2 processors for 2 ranks x 2
// channels each), channel 1's part runs on channel 0's driver, and a kick
// of channel 1 from the other process must reach that driver.
func TestMultiProcOneDriver(t *testing.T) {
	for _, procs := range []int{0, 2, 4} { // 0: this process's own
		t.Run(fmt.Sprintf("procs=%d", procs), func(t *testing.T) {
			// Four ids: one job per algorithm and protocol.
			outs, errs := startJob(t, jobSpec{procs: 2, perProc: 2, cells: make([]mpCell, 4), scenario: "onedriver", foldProcs: procs}).wait(time.Minute)
			for p := range outs {
				if errs[p] != nil {
					t.Errorf("process %d: %v\n%s", p, errs[p], outs[p])
				}
				if res := resultLine(outs[p]); res != "ok" {
					t.Errorf("process %d: %s\n%s", p, res, outs[p])
				}
			}
		})
	}
}

// TestMultiProcFolded runs the matrix, sampled, across processes with
// plans folded: each process plays fewer processors than its ranks x
// channels, so every rank's channels run on 1 or 2 drivers whose parts'
// bells relay to the drivers' bells.
func TestMultiProcFolded(t *testing.T) {
	layouts := []struct{ procs, per, nch, foldProcs, drivers int }{
		{2, 1, 3, 1, 1}, // one driver a rank
		{2, 2, 4, 4, 2}, // channels 0, 2 and 1, 3 on two drivers
		{3, 1, 3, 2, 2}, // odd ranks and channels: channels 0, 2 and 1
		{2, 1, 2, 8, 0}, // fits: nothing folds
	}
	if raceEnabled {
		layouts = layouts[:2] // one and two drivers a rank: the race run's time is CI's
	}
	for li, l := range layouts {
		var cells []mpCell
		k := 10 * li
		for _, p := range proto.All() {
			for _, algo := range []string{"Ring", "Tree"} {
				k++
				c := mpCell{Proto: p.String(), Algo: algo, NCh: l.nch, Sample: k, Colls: matrixColls, Procs: l.foldProcs, Drivers: l.drivers}
				if algo == "Tree" {
					c.Colls = []Coll{CollAllReduce}
				}
				cells = append(cells, c)
			}
		}
		t.Run(fmt.Sprintf("procs=%d/ranks=%d/ch=%d/fold=%d", l.procs, l.per, l.nch, l.foldProcs), func(t *testing.T) {
			outs, errs := runJob(t, l.procs, l.per, cells, "", 4*time.Minute)
			for p, err := range errs {
				if err != nil {
					t.Errorf("process %d: %v\n%s", p, err, outs[p])
				}
			}
		})
	}
}

// TestNetSendHoldsBufferUntilWritten: a send to another host lends the
// sender's buffer to its proxy (posted by reference); Synchronize returns
// only once the proxy has written it (see the "netdrain" child).
// With GCCL_NSOCKS=2 (and a goroutine per socket) each 512 KiB step goes
// in two parts, received straight into rank 1's buffer where it waits.
func TestNetSendHoldsBufferUntilWritten(t *testing.T) {
	for _, socks := range []string{"1", "2"} {
		t.Run("socks="+socks, func(t *testing.T) {
			place := func(p int, cmd *exec.Cmd) {
				cmd.Env = append(cmd.Env, EnvHostID+"=h"+fmt.Sprint(p), EnvSocketIfname+"=lo", EnvNSocks+"="+socks, EnvNSocksThreads+"="+socks)
			}
			outs, errs := startJob(t, jobSpec{procs: 2, perProc: 1, scenario: "netdrain", place: place}).wait(time.Minute)
			for p := range outs {
				if errs[p] != nil {
					t.Errorf("process %d: %v\n%s", p, errs[p], outs[p])
				}
				if res := resultLine(outs[p]); res != "ok" {
					t.Errorf("process %d: %s\n%s", p, res, outs[p])
				}
			}
		})
	}
}

// TestNetSocketsMustAgree: processes that set different GCCL_NSOCKS fail
// at init naming the setting.
func TestNetSocketsMustAgree(t *testing.T) {
	place := func(p int, cmd *exec.Cmd) {
		cmd.Env = append(cmd.Env, EnvHostID+"=h"+fmt.Sprint(p), EnvSocketIfname+"=lo", EnvNSocks+"="+fmt.Sprint(p+1))
	}
	outs, _ := startJob(t, jobSpec{procs: 2, perProc: 1, scenario: "netdrain", place: place}).wait(time.Minute)
	for p := range outs {
		if res := resultLine(outs[p]); !strings.Contains(res, "GCCL_NSOCKS") {
			t.Errorf("process %d: want an error naming GCCL_NSOCKS, got %q\n%s", p, res, outs[p])
		}
	}
}

// TestMultiProcNeverJoins: a job of more ranks than are started fails in
// every process within the timeout, naming the missing rank.
func TestMultiProcNeverJoins(t *testing.T) {
	outs, errs := runJob(t, 2, 1, nil, "absent", time.Minute)
	for p := range outs {
		if errs[p] != nil {
			t.Errorf("process %d: %v\n%s", p, errs[p], outs[p])
		}
		// Not just "2": the root's address has one (it hid a process
		// that gave up first and named the other process, not rank 2).
		if res := resultLine(outs[p]); !strings.Contains(res, "rank 2 never joined") {
			t.Errorf("process %d: want an error naming rank 2, got %q", p, res)
		}
	}
}

func resultLine(out string) string {
	for _, l := range strings.Split(out, "\n") {
		if s, ok := strings.CutPrefix(l, "RESULT "); ok {
			return s
		}
	}
	return ""
}

// TestRemoteKickFollowsTheFold: a kick from another process of a channel
// whose part a driver runs (the rank's last folded plan unfinished) also
// kicks the driver's channel, ch mod drivers; once the plan finished, or
// for channels that drive themselves, only the channel itself. The job is
// one process holding both ranks, its words read as another process would.
func TestRemoteKickFollowsTheFold(t *testing.T) {
	ids := newRoots(t, 1)
	b, _ := hex.DecodeString(ids[0])
	var id UniqueID
	copy(id[:], b)
	comms, err := InitRanks(2, id, []int{0, 1}, Config{NChannels: 4, MaxNChannels: 4, Timeout: 10 * time.Second, ShmDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		for _, c := range comms {
			c.Destroy()
		}
	}()
	j := comms[0].w.job
	oc := j.rankProgress(1)
	kicked := func() (got []int) {
		for ch := 0; ch < 4; ch++ {
			if j.kickWord(1, ch).Swap(0) != 0 {
				got = append(got, ch)
			}
		}
		return got
	}
	kicked() // clear
	finished := oc.finished.Load()
	for _, c := range []struct {
		drivers, ch int
		unfinished  bool
		want        []int
	}{
		{1, 3, true, []int{0, 3}},
		{2, 3, true, []int{1, 3}},
		{2, 2, true, []int{0, 2}},
		{2, 1, true, []int{1}}, // a driver itself
		{2, 3, false, []int{3}},
		{0, 3, true, []int{3}},
	} {
		oc.fold.drivers.Store(int32(c.drivers))
		oc.fold.plan.Store(finished)
		if c.unfinished {
			oc.fold.plan.Store(finished + 1)
		}
		j.remoteKick(1, c.ch)()
		if got := kicked(); !slices.Equal(got, c.want) {
			t.Errorf("%d drivers, kick of channel %d (folded plan unfinished: %v): channels %v kicked, want %v",
				c.drivers, c.ch, c.unfinished, got, c.want)
		}
	}
	oc.fold.drivers.Store(0)
	oc.fold.plan.Store(0)
}
