package perf

import (
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"os"
	"strings"
	"syscall"
	"time"

	"github.com/gccl/gccl/lib/bootstrap"
	"github.com/gccl/gccl/lib/ccl"
)

// job is this process's place in a run of several processes (mpirun,
// srun, torchrun or --np): the harness's own link to the other processes,
// which nccl-tests has in MPI_COMM_WORLD. Through it process 0 hands out
// each configuration's unique id, the threads' barriers span processes,
// and times, errors and device lines are combined. nil in a run of one
// process.
type job struct {
	launch bootstrap.Launch
	link   *bootstrap.Client
	served *ccl.UniqueID // the link's root, when this process serves it
	root   ccl.IDOptions // the roots process 0 serves: the link's, and each communicator set's
	proc   int           // this process's index (its launcher rank)
	procs  int
}

// EnvJobToken is the job's shared secret; without it the token derives
// from the launcher's job id.
const EnvJobToken = bootstrap.EnvJobToken

// joinJob detects the launcher and, for a launch of several processes,
// joins the harness's link (process 0 serves its root). A process on its
// own returns nil. rootTimeout is how long the roots process 0 serves wait
// for every process (GCCL_TIMEOUT, as readEnv read it; 0 or less: the
// stack's default).
func joinJob(lookup func(string) (string, bool), timeout, rootTimeout time.Duration) (*job, error) {
	l, err := bootstrap.Detect(lookup)
	if err != nil {
		return nil, usagef("%v", err)
	}
	if l.Size <= 1 {
		return nil, nil
	}
	token, _ := lookup(EnvJobToken)
	id, err := bootstrap.IDFor(l, strings.TrimSpace(token))
	if err != nil {
		return nil, usagef("%s rank %d of %d: %v", l.Launcher, l.Rank, l.Size, err)
	}
	root := ccl.IDOptions{Host: commIDHost(l), Timeout: rootTimeout}
	var served *ccl.UniqueID
	if l.Rank == 0 {
		if err := ccl.ServeRootWith(id, root); err != nil {
			return nil, fmt.Errorf("%s rank 0 of %d: serving the bootstrap root at %s (from %s): %w", l.Launcher, l.Size, l.Root, l.RootFrom, err)
		}
		served = &id
	}
	host, _ := os.Hostname()
	link, err := bootstrap.JoinID(id, l.Size, []int{l.Rank}, bootstrap.ProcInfo{Host: host, Pid: os.Getpid()},
		bootstrap.JoinOptions{Timeout: timeout, Name: "the harness's"})
	if err != nil {
		if served != nil {
			ccl.ReleaseRoot(*served, 0)
		}
		return nil, fmt.Errorf("%s rank %d of %d: joining the bootstrap root at %s (from %s): %w", l.Launcher, l.Rank, l.Size, l.Root, l.RootFrom, err)
	}
	return &job{launch: l, link: link, served: served, root: root, proc: l.Rank, procs: l.Size}, nil
}

// commIDHost is the host of GCCL_COMM_ID when the launch's root came from
// it (the job's address the others reach), where process 0 serves each
// communicator set's root too, as ccl.NewUniqueID would; "" (127.0.0.1)
// otherwise.
func commIDHost(l bootstrap.Launch) string {
	if l.RootFrom != bootstrap.EnvCommID {
		return ""
	}
	host, _, _ := net.SplitHostPort(l.Root) // Detect checked it is host:port
	return host
}

// rootLinger bounds how long process 0 keeps the link's root after its own
// part ended, for the others to leave or hear why the job failed.
const rootLinger = 5 * time.Second

// lossGrace is how long a failed process waits for the link to report a
// lost process, to name it (explain).
const lossGrace = 2 * time.Second

// explain adds to err, an error of this process's part of the job, why
// the job failed when the link knows: which process was lost or gave up.
// A process whose communicator's root vanished (its joining got no answer,
// or its world lost the root) otherwise names only the root, whose
// process may have outlived the one that was lost (seen in CI: a survivor
// of a killed rank 2 named rank 0's process; and here, under load:
// survivors of a killed rank 0 named only the root's address). The link hears of a loss within
// milliseconds of the root; it is waited for up to lossGrace.
func (j *job) explain(err error) error {
	if j == nil || err == nil {
		return err
	}
	lost := j.link.LostErr()
	// A root's word names the lost process already: waiting for the link
	// would only delay the error (by lossGrace: survivors of a SIGSTOPped
	// rank reported 3.9 s after the stop under GCCL_TIMEOUT=3).
	named := errors.Is(err, bootstrap.ErrLost) && !errors.Is(err, bootstrap.ErrRootLost)
	if lost == nil && peerGone(err) && !named {
		select {
		case <-j.link.Lost():
			lost = j.link.LostErr()
		case <-time.After(lossGrace):
		}
	}
	if lost == nil || strings.Contains(err.Error(), lost.Error()) {
		return err
	}
	return fmt.Errorf("%w\n  the job: %v", err, lost)
}

// peerGone reports whether err may come from another process of the job
// going away: a lost or aborted job, or a connection that ended.
func peerGone(err error) bool {
	for _, e := range []error{bootstrap.ErrLost, ccl.ErrAborted, io.EOF, io.ErrUnexpectedEOF, syscall.ECONNRESET, syscall.EPIPE} {
		if errors.Is(err, e) {
			return true
		}
	}
	return false
}

// size is the number of processes (1 without a job).
func (j *job) size() int {
	if j == nil {
		return 1
	}
	return j.procs
}

// launcher names what started the processes ("" for one on its own).
func (j *job) launcher() string {
	if j == nil {
		return ""
	}
	return j.launch.Launcher
}

func (j *job) close() {
	if j != nil {
		_ = j.link.Close()
		if j.served != nil {
			ccl.ReleaseRoot(*j.served, rootLinger)
		}
	}
}

// initComms creates this process's ranks of a configuration: process 0
// makes a fresh unique id (a root of its own per communicator set, as
// nccl-tests calls ncclGetUniqueId per communicator) and broadcasts it.
func (j *job) initComms(nRanks int, ranks []int, cfg ccl.Config) ([]*ccl.Comm, error) {
	var id ccl.UniqueID
	if j.proc == 0 {
		var err error
		if id, err = ccl.NewUniqueIDWith(j.root); err != nil {
			return nil, err
		}
	}
	b, err := j.link.Broadcast(0, id[:])
	if err != nil {
		return nil, fmt.Errorf("broadcasting the communicators' unique id: %w", err)
	}
	if len(b) != len(id) {
		return nil, fmt.Errorf("broadcasting the communicators' unique id: got %d bytes, want %d", len(b), len(id))
	}
	copy(id[:], b)
	return ccl.InitRanks(nRanks, id, ranks, cfg)
}

// The reductions below make every process hold the same numbers, so that
// they make the same decisions (batch sizes, when to stop) and process 0
// prints what the whole job measured. Each is a no-op for a nil job.

// sumInt64 adds v over the processes.
func (j *job) sumInt64(v *int64) error {
	if j == nil {
		return nil
	}
	a := []int64{*v}
	if err := j.link.AllReduceInt64(a, bootstrap.Sum); err != nil {
		return err
	}
	*v = a[0]
	return nil
}

// maxFloats takes the element-wise maximum of v over the processes.
func (j *job) maxFloats(v []float64) error {
	if j == nil || len(v) == 0 {
		return nil
	}
	return j.link.AllReduceFloat64(v, bootstrap.Max)
}

// any reports whether b is true in any process.
func (j *job) any(b bool) (bool, error) {
	if j == nil {
		return b, nil
	}
	v := []int64{0}
	if b {
		v[0] = 1
	}
	err := j.link.AllReduceInt64(v, bootstrap.Max)
	return v[0] != 0, err
}

// combine is nccl-tests' -a over every thread of every process: 0 the
// first thread's (process 0's), 1 the mean, 2 the min, 3 the max.
func (j *job) combine(secs []float64, how int) (float64, error) {
	local := combine(secs, how)
	if j == nil {
		return local, nil
	}
	var v []float64
	var op bootstrap.ReduceOp
	switch how {
	case 0:
		v, op = []float64{0}, bootstrap.Sum
		if j.proc == 0 {
			v[0] = local
		}
	case 2:
		v, op = []float64{local}, bootstrap.Min
	case 3:
		v, op = []float64{local}, bootstrap.Max
	default:
		sum := 0.0
		for _, s := range secs {
			sum += s
		}
		v, op = []float64{sum, float64(len(secs))}, bootstrap.Sum
	}
	if err := j.link.AllReduceFloat64(v, op); err != nil {
		return math.NaN(), err
	}
	if how == 1 {
		return v[0] / v[1], nil
	}
	return v[0], nil
}

// deviceLines gathers every process's "# Using devices" lines, in process
// order.
func (j *job) deviceLines(mine []string) ([]string, error) {
	if j == nil {
		return mine, nil
	}
	all, err := j.link.AllGather([]byte(strings.Join(mine, "\n")))
	if err != nil {
		return nil, err
	}
	var lines []string
	for _, b := range all {
		if len(b) > 0 {
			lines = append(lines, strings.Split(string(b), "\n")...)
		}
	}
	return lines, nil
}

// errJobLost wraps the error of a process whose job failed elsewhere.
var errJobLost = errors.New("the job failed in another process")
