// Package bootstrap is how the processes of one job find each other:
// which launcher started this process and where it sits in the job
// (this file), the job's unique id (uniqueid.go), and, built on them, the
// rendezvous over TCP (to come: issue 16).
package bootstrap

import (
	"errors"
	"fmt"
	"hash/fnv"
	"net"
	"strconv"
	"strings"
)

// Launch is where this process sits in a job, as its launcher says.
type Launch struct {
	// Launcher names the launcher detected: "openmpi", "pmi" (MPICH,
	// Hydra, Intel MPI), "slurm", "torchrun", or "" for a process started
	// on its own (one process, Size 1).
	Launcher string
	Rank     int // this process's rank among the job's processes
	Size     int // processes in the job
	// LocalRank is this process's index among the job's processes on its
	// host (-1 when the launcher does not say).
	LocalRank int
	// JobID identifies the job to every process of it (the launcher's job
	// id), "" when the launcher gives none.
	JobID string
	// Root is the bootstrap root's address, host:port: GCCL_COMM_ID, else
	// MASTER_ADDR:MASTER_PORT, else (a job on one host) 127.0.0.1 with a
	// port derived from JobID; "" for a process on its own.
	Root string
	// RootFrom says where Root came from, for messages.
	RootFrom string
}

// Variables read by Detect.
const (
	// The built-in launcher's (package launch: perf --np).
	EnvLaunchRank      = "GCCL_LAUNCH_RANK"
	EnvLaunchSize      = "GCCL_LAUNCH_SIZE"
	EnvLaunchLocalRank = "GCCL_LAUNCH_LOCAL_RANK"
	EnvLaunchJobID     = "GCCL_LAUNCH_JOBID"
	// EnvJobToken is the job's shared secret (see IDFor).
	EnvJobToken = "GCCL_JOB_TOKEN"

	EnvCommID     = "GCCL_COMM_ID"     // host:port of the bootstrap root
	EnvMasterAddr = "MASTER_ADDR"      // torchrun's root host
	EnvMasterPort = "MASTER_PORT"      // torchrun's root port
	EnvSingleHost = "GCCL_SINGLE_HOST" // 1: the launcher put every process on this host
)

// ErrNoRendezvous is a job of several processes whose processes cannot find
// each other: no GCCL_COMM_ID, no MASTER_ADDR/MASTER_PORT, and no job id to
// derive a local port from.
var ErrNoRendezvous = errors.New("bootstrap: no way to rendezvous")

// launcher is one launcher's variables: rank, size, local rank (optional)
// and the variables whose values make a job id (optional).
type launcher struct {
	name                  string
	rank, size, localRank string
	jobID                 []string
}

// launchers are tried in order; the first whose rank and size variables
// are both set wins. Open MPI and Slurm come before PMI: mpirun under
// Slurm sets both, and Open MPI's own variables are the process's.
var launchers = []launcher{
	{name: "gccl", rank: EnvLaunchRank, size: EnvLaunchSize, localRank: EnvLaunchLocalRank, jobID: []string{EnvLaunchJobID}},
	{name: "openmpi", rank: "OMPI_COMM_WORLD_RANK", size: "OMPI_COMM_WORLD_SIZE", localRank: "OMPI_COMM_WORLD_LOCAL_RANK",
		jobID: []string{"OMPI_MCA_ess_base_jobid", "OMPI_MCA_orte_hnp_uri", "PMIX_NAMESPACE"}},
	{name: "slurm", rank: "SLURM_PROCID", size: "SLURM_NTASKS", localRank: "SLURM_LOCALID",
		jobID: []string{"SLURM_JOB_ID", "SLURM_STEP_ID"}},
	{name: "pmi", rank: "PMI_RANK", size: "PMI_SIZE", localRank: "MPI_LOCALRANKID",
		jobID: []string{"PMI_KVSNAME", "PMIX_NAMESPACE", "PMI_FD"}},
	{name: "torchrun", rank: "RANK", size: "WORLD_SIZE", localRank: "LOCAL_RANK",
		jobID: []string{"TORCHELASTIC_RUN_ID"}},
}

// LauncherVariables are the variables by which each launcher tells a
// process its place: what a launcher of its own clears from the
// environment it hands down, so an outer launcher cannot confuse it.
func LauncherVariables() []string {
	var vs []string
	for _, l := range launchers {
		vs = append(vs, l.rank, l.size, l.localRank)
		vs = append(vs, l.jobID...)
	}
	return vs
}

// Detect reads the launcher's variables through lookup (os.LookupEnv).
// A process no launcher started is rank 0 of 1. A launcher that says
// Size > 1 with no way to rendezvous is ErrNoRendezvous, with what to set:
// never N silent one-process jobs (the Launch is returned with it, filled
// in as far as the launcher said).
func Detect(lookup func(string) (string, bool)) (Launch, error) {
	get := func(k string) (string, bool) {
		v, ok := lookup(k)
		return strings.TrimSpace(v), ok && strings.TrimSpace(v) != ""
	}
	l := Launch{Size: 1, LocalRank: -1}
	for _, ln := range launchers {
		rs, okR := get(ln.rank)
		ss, okS := get(ln.size)
		if !okR || !okS {
			continue
		}
		rank, err := strconv.Atoi(rs)
		size, err2 := strconv.Atoi(ss)
		if err != nil || err2 != nil || size < 1 || rank < 0 || rank >= size {
			return Launch{}, fmt.Errorf("bootstrap: %s says rank %s=%q of %s=%q: want a rank from 0 to size-1", ln.name, ln.rank, rs, ln.size, ss)
		}
		l.Launcher, l.Rank, l.Size = ln.name, rank, size
		if v, ok := get(ln.localRank); ok {
			if lr, err := strconv.Atoi(v); err == nil && lr >= 0 {
				l.LocalRank = lr
			}
		}
		var parts []string
		for _, k := range ln.jobID {
			if v, ok := get(k); ok {
				parts = append(parts, k+"="+v)
			}
		}
		l.JobID = strings.Join(parts, ",")
		break
	}
	if err := l.findRoot(get); err != nil {
		if errors.Is(err, ErrNoRendezvous) {
			return l, err // what the launcher said, for the caller's message
		}
		return Launch{}, err
	}
	return l, nil
}

// findRoot sets Root: GCCL_COMM_ID, else MASTER_ADDR and MASTER_PORT,
// else for a job on one host a port on 127.0.0.1 derived from the job id.
func (l *Launch) findRoot(get func(string) (string, bool)) error {
	if v, ok := get(EnvCommID); ok {
		if err := checkHostPort(v); err != nil {
			return fmt.Errorf("bootstrap: invalid %s=%q: %v (want host:port, e.g. 10.0.0.1:29500 or [::1]:29500)", EnvCommID, v, err)
		}
		l.Root, l.RootFrom = v, EnvCommID
		return nil
	}
	addr, okA := get(EnvMasterAddr)
	port, okP := get(EnvMasterPort)
	if okA || okP {
		if !okA || !okP {
			return fmt.Errorf("bootstrap: %s and %s must be set together (got %s=%q, %s=%q)", EnvMasterAddr, EnvMasterPort, EnvMasterAddr, addr, EnvMasterPort, port)
		}
		hp := net.JoinHostPort(addr, port)
		if err := checkHostPort(hp); err != nil {
			return fmt.Errorf("bootstrap: invalid %s=%q / %s=%q: %v", EnvMasterAddr, addr, EnvMasterPort, port, err)
		}
		l.Root, l.RootFrom = hp, EnvMasterAddr+"/"+EnvMasterPort
		return nil
	}
	if l.Size == 1 {
		return nil // on its own: nothing to meet
	}
	if l.JobID == "" {
		return fmt.Errorf("%w: %s says %d processes but gives no job id; set %s=host:port (the rank-0 host and a free port), or %s and %s",
			ErrNoRendezvous, l.Launcher, l.Size, EnvCommID, EnvMasterAddr, EnvMasterPort)
	}
	if v, _ := get(EnvSingleHost); v != "1" && l.LocalRank >= 0 && l.Size > 1 && !l.allLocal(get) {
		return fmt.Errorf("%w: %s says %d processes, possibly on several hosts, and 127.0.0.1 reaches only this one; set %s=host:port (the rank-0 host and a free port), or %s=1 if every process runs on this host",
			ErrNoRendezvous, l.Launcher, l.Size, EnvCommID, EnvSingleHost)
	}
	l.Root = net.JoinHostPort("127.0.0.1", strconv.Itoa(DerivedPort(l.JobID)))
	l.RootFrom = "a port derived from the job id (" + l.JobID + ")"
	return nil
}

// allLocal reports whether the launcher says every process of the job is
// on this host (Open MPI's and Slurm's local sizes).
func (l *Launch) allLocal(get func(string) (string, bool)) bool {
	for _, k := range []string{"OMPI_COMM_WORLD_LOCAL_SIZE", "SLURM_NTASKS_PER_NODE", "MPI_LOCALNRANKS", "LOCAL_WORLD_SIZE"} {
		if v, ok := get(k); ok {
			n, err := strconv.Atoi(v)
			return err == nil && n == l.Size
		}
	}
	return false
}

// DerivedPort maps a job id to a port in [20000, 60000): every process of
// the job computes the same one, and another job on the host most likely
// another.
func DerivedPort(jobID string) int {
	h := fnv.New32a()
	h.Write([]byte(jobID))
	return 20000 + int(h.Sum32()%40000)
}

func checkHostPort(hp string) error {
	host, port, err := net.SplitHostPort(hp)
	if err != nil {
		return err
	}
	if host == "" {
		return errors.New("no host")
	}
	p, err := strconv.Atoi(port)
	if err != nil || p < 1 || p > 65535 {
		return fmt.Errorf("port %q: want 1 to 65535", port)
	}
	return nil
}
