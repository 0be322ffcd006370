package perf

import (
	"fmt"
	"os"
	"runtime"
	"strings"
	"time"

	"github.com/gccl/gccl/lib/ccl"
	"github.com/gccl/gccl/lib/reduce"
	"github.com/gccl/gccl/lib/tuning"
	"github.com/gccl/gccl/results"
)

// Comm is what the harness needs of one rank of a backend. The embedded
// stack's *ccl.Comm implements it; a real-NCCL backend comes later.
type Comm interface {
	Rank() int
	Size() int
	AllReduce(send, recv []byte, count int, dt reduce.DataType, op ccl.RedOp) error
	AllGather(send, recv []byte, sendCount int, dt reduce.DataType) error
	ReduceScatter(send, recv []byte, recvCount int, dt reduce.DataType, op ccl.RedOp) error
	Broadcast(send, recv []byte, count int, dt reduce.DataType, root int) error
	Reduce(send, recv []byte, count int, dt reduce.DataType, op ccl.RedOp, root int) error
	AlltoAll(send, recv []byte, count int, dt reduce.DataType) error
	Gather(send, recv []byte, count int, dt reduce.DataType, root int) error
	Scatter(send, recv []byte, count int, dt reduce.DataType, root int) error
	Send(buf []byte, count int, dt reduce.DataType, peer int) error
	Recv(buf []byte, count int, dt reduce.DataType, peer int) error
	GroupStart() error
	GroupEnd() error
	Synchronize() error
	Destroy() error
	LastChoice() ccl.Choice
}

// Forcer is a Comm that switches its forced configuration between
// operations (ccl.Comm.Force): what --interleave needs.
type Forcer interface {
	Force(f ccl.Forced) error
}

// RunConfig is one point of the sweep axes; zero values mean "auto".
type RunConfig struct {
	Proto     tuning.ProtoReq
	Algo      tuning.AlgoReq
	NChannels int
	// RanksPerHost groups the ranks into hosts (0: one host), see
	// ccl.Config.RanksPerHost.
	RanksPerHost int
	BuffSize     int64
	Timeout      time.Duration
	// MaxNChannels is the channels each rank starts (0: NChannels, or the
	// stack's default); --interleave starts enough for every configuration.
	MaxNChannels int
}

// Label names the configuration in "# Config:" lines and records.
func (c RunConfig) Label() string {
	var parts []string
	add := func(k, v string) { parts = append(parts, k+"="+v) }
	add("proto", c.Proto.String())
	add("algo", c.Algo.String())
	if c.NChannels > 0 {
		add("nchannels", fmt.Sprint(c.NChannels))
	} else {
		add("nchannels", "auto")
	}
	if c.BuffSize > 0 {
		add("buffsize", results.SizeLabel(c.BuffSize))
	} else {
		add("buffsize", "default")
	}
	return strings.Join(parts, " ")
}

// FileTag is Label as a file name part: "proto-LL.algo-Ring.nch-2.buff-1M".
func (c RunConfig) FileTag() string {
	r := strings.NewReplacer("=", "-", " ", ".", "nchannels", "nch", "buffsize", "buff")
	return r.Replace(c.Label())
}

// Backend creates the ranks of this process.
type Backend interface {
	Name() BackendName
	Init(nRanks int, cfg RunConfig) ([]Comm, error)
	// Device describes the "device" a rank runs on, for "# Using devices".
	Device(rank int) (busID, desc string)
}

// BackendName is a backend, as --backend names it: parsed once
// (ParseBackend), compared as a value.
type BackendName string

const (
	BackendEmbedded BackendName = "embedded"
	BackendNCCL     BackendName = "nccl"
)

// backends is the registry of --backend: each backend's name, what it
// is (for messages) and how it starts for a run of nRanks in job j (nil:
// every rank in this process).
var backends = []struct {
	name  BackendName
	about string
	open  func(o *Options, j *job, nRanks int) (Backend, error)
}{
	{BackendEmbedded, "gccl's own stack, the default", func(_ *Options, j *job, _ int) (Backend, error) { return Embedded{job: j}, nil }},
	{BackendNCCL, "NVIDIA's libnccl on GPUs", func(o *Options, j *job, nRanks int) (Backend, error) {
		be, err := newNCCLBackend(o, j, nRanks)
		if err != nil {
			return nil, err
		}
		return be, nil
	}},
}

// ParseBackend reads a backend's name (exactly as the registry spells it).
func ParseBackend(s string) (BackendName, error) {
	var valid []string
	for _, b := range backends {
		if string(b.name) == strings.TrimSpace(s) {
			return b.name, nil
		}
		valid = append(valid, fmt.Sprintf("%s (%s)", b.name, b.about))
	}
	return "", fmt.Errorf("unknown --backend %q: valid backends are: %s", s, strings.Join(valid, " and "))
}

// openBackend starts backend name for a run of nRanks in job j.
func openBackend(name BackendName, o *Options, j *job, nRanks int) (Backend, error) {
	for _, b := range backends {
		if b.name == name {
			return b.open(o, j, nRanks)
		}
	}
	_, err := ParseBackend(string(name))
	return nil, err
}

// Embedded is the default backend: the gccl stack, its ranks in this
// process, or this process's share of a job's ranks.
type Embedded struct {
	job *job // nil: every rank in this process
	// cfg is the stack's configuration apart from what RunConfig sets:
	// the GCCL_* variables perf read once (env.go) and --tuning-file
	// (Options.stackConfig). The stack reads no variable itself.
	cfg ccl.Config
}

func (Embedded) Name() BackendName { return BackendEmbedded }

// Init starts n ranks for rc, which perf has resolved against the
// environment (env.go): the settings that choose a configuration are
// rc's; the others (tuning and model files, LL buffers, debug, sockets,
// host id, network interface, shared-memory folder) are be.cfg's.
func (be Embedded) Init(n int, rc RunConfig) ([]Comm, error) {
	cfg := be.cfg
	cfg.Proto, cfg.Algo, cfg.NChannels, cfg.MaxNChannels = rc.Proto, rc.Algo, rc.NChannels, rc.MaxNChannels
	cfg.BuffSize, cfg.Timeout, cfg.RanksPerHost = int(rc.BuffSize), rc.Timeout, rc.RanksPerHost
	var (
		comms []*ccl.Comm
		err   error
	)
	if j := be.job; j != nil {
		local := n / j.procs
		ranks := make([]int, local)
		for i := range ranks {
			ranks[i] = j.proc*local + i
		}
		comms, err = j.initComms(n, ranks, cfg)
	} else {
		comms, err = ccl.InitAll(n, cfg)
	}
	if err != nil {
		return nil, err
	}
	out := make([]Comm, len(comms))
	for i, c := range comms {
		out[i] = &embeddedRank{Comm: c, events: events[*ccl.Comm]{s: c}}
	}
	return out, nil
}

// embeddedRank is a rank of the embedded stack with events: marks in its
// stream (ccl.Comm.Mark) that time each operation of a back-to-back loop
// without stopping the stream, as -I 1 does with CUDA events on a GPU.
type embeddedRank struct {
	*ccl.Comm
	events[*ccl.Comm]
}

// marker is a stream with completion marks: a ccl.Comm's operations, a
// ccl.DevStream's kernel launches.
type marker interface {
	RecordCompletions(capacity int) error
	Mark() (ccl.Mark, error)
	MarkTime(m ccl.Mark) (time.Time, error)
}

// events are a rank's events over the marks of stream s; only the thread
// driving the rank touches them.
type events[S marker] struct {
	s     S
	marks []ccl.Mark // by event index
}

// PrepareEvents readies n events (the stream logs n operations' completion
// times), or turns them off with 0; allocated says it made new memory.
func (e *events[S]) PrepareEvents(n int) (allocated bool, err error) {
	if cap(e.marks) < n { // made before the loop: no garbage inside it
		e.marks, allocated = make([]ccl.Mark, n), true
	}
	e.marks = e.marks[:n]
	return allocated, e.s.RecordCompletions(n)
}

// RecordEvent marks the stream's current end as event i (i < PrepareEvents' n).
func (e *events[S]) RecordEvent(i int) error {
	if i >= len(e.marks) {
		return fmt.Errorf("event %d past the %d prepared", i, len(e.marks))
	}
	m, err := e.s.Mark()
	if err != nil {
		return err
	}
	e.marks[i] = m
	return nil
}

// EventMs is the time between events i and j, in ms, once the operations
// before j finished.
func (e *events[S]) EventMs(i, j int) (float64, error) {
	a, err := e.EventAt(i)
	if err != nil {
		return 0, err
	}
	b, err := e.EventAt(j)
	if err != nil {
		return 0, err
	}
	return float64(b.Sub(a)) / float64(time.Millisecond), nil
}

// EventAt is when the stream passed event i, on this process's clock.
func (e *events[S]) EventAt(i int) (time.Time, error) {
	if i >= len(e.marks) {
		return time.Time{}, fmt.Errorf("event %d not recorded", i)
	}
	return e.s.MarkTime(e.marks[i])
}

func (Embedded) Device(rank int) (string, string) {
	return "cpu", fmt.Sprintf("%s (%d cores, embedded gccl)", cpuModel(), runtime.NumCPU())
}

// cpuModel reads the CPU model name (Linux), or GOARCH elsewhere.
func cpuModel() string {
	b, err := os.ReadFile("/proc/cpuinfo")
	if err == nil {
		for _, line := range strings.Split(string(b), "\n") {
			if k, v, ok := strings.Cut(line, ":"); ok && strings.TrimSpace(k) == "model name" {
				return strings.TrimSpace(v)
			}
		}
	}
	return runtime.GOARCH
}
