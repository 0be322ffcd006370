//go:build linux && (amd64 || arm64)

package perf

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"unsafe"

	"github.com/gccl/gccl/lib/ccl"
	"github.com/gccl/gccl/lib/exact"
	"github.com/gccl/gccl/lib/nccl"
	"github.com/gccl/gccl/lib/nccl/tunerplugin"
	"github.com/gccl/gccl/lib/reduce"
)

// ncclBackend runs the harness on NVIDIA's NCCL: one GPU per rank, this
// process's ranks on its GPUs (-g), one rank per process under a launcher.
type ncclBackend struct {
	lib  *nccl.Lib
	o    *Options
	job  *job
	devs []int // the CUDA device of each of this process's ranks
	base int   // this process's first rank
	desc []string
	bus  []string
	// tuning follows NCCL's TUNING log when the environment asks for it
	// (NCCL_DEBUG=INFO, NCCL_DEBUG_SUBSYS=TUNING): what NCCL ran goes in
	// the records. tuningPath is the file; tuningOwned: this process made
	// it up (NCCL_DEBUG_FILE was unset) and removes it.
	tuningPath  string
	tuningOwned bool
	tuning      *nccl.TuningLog
	// params are the NCCL parameters this run has written to the C
	// environment (nccl.SetParam), put back to the user's values (Go's
	// environment, which gccl never changes) by Close.
	params map[string]bool
	// ncclMem: device buffers come from ncclMemAlloc (nccl-tests' choice
	// from NCCL 2.19), else from cudaMalloc (EnvAlloc).
	ncclMem bool
}

// EnvAlloc picks where the device buffers come from: "ncclmemalloc" (the
// default where libnccl has it, as nccl-tests' AllocateBuffs) or
// "cudamalloc". It matters to NCCL: only ncclMemAlloc's memory can be
// registered with its peers when a CUDA graph is captured (NCCL_GRAPH_REGISTER),
// so -G on cudaMalloc buffers runs NCCL's copy-through-FIFO path.
const EnvAlloc = "GCCL_NCCL_ALLOC"

// allocChoice reads EnvAlloc against what the library has and -R needs.
func allocChoice(lookup func(string) (string, bool), haveMemAlloc bool, register int) (ncclMem bool, err error) {
	v, _ := lookup(EnvAlloc)
	switch strings.ToLower(strings.TrimSpace(v)) {
	case "":
		ncclMem = haveMemAlloc
	case "ncclmemalloc":
		ncclMem = true
	case "cudamalloc":
		ncclMem = false
	default:
		return false, fmt.Errorf("%s=%q: want ncclmemalloc (the default) or cudamalloc", EnvAlloc, v)
	}
	switch {
	case register == 2 && !ncclMem && haveMemAlloc:
		return false, fmt.Errorf("%s=cudamalloc with -R 2: symmetric registration needs ncclMemAlloc's memory; unset %s", EnvAlloc, EnvAlloc)
	case (register == 2 || ncclMem) && !haveMemAlloc:
		return false, errors.New("libnccl has no ncclMemAlloc (NCCL 2.19 or later has): -R 2 and " + EnvAlloc + "=ncclmemalloc need it")
	}
	return ncclMem, nil
}

// newNCCLBackend loads the libraries and picks this process's GPUs: with
// a launcher's local rank L and R ranks a process, devices L*R to L*R+R-1
// (nccl-tests' choice).
func newNCCLBackend(o *Options, j *job, nRanks int) (*ncclBackend, error) {
	be := &ncclBackend{o: o, job: j, params: map[string]bool{}}
	if err := be.open(nRanks); err != nil {
		be.restoreParams()
		return nil, err
	}
	return be, nil
}

// setParam writes one NCCL parameter for this run (nccl.SetParam) and
// remembers to put it back.
func (be *ncclBackend) setParam(k, v string) error {
	be.params[k] = true
	return nccl.SetParam(k, v)
}

// userParam puts parameter k back to what the user set (Go's environment),
// or removes it.
func userParam(k string) error {
	v, set := os.LookupEnv(k)
	return nccl.PutParam(k, v, set)
}

// restoreParams puts every parameter this run wrote back to the user's
// value: tune sweep runs many backends in one process, and each must start
// from what the user set, not from what the last one forced.
func (be *ncclBackend) restoreParams() error {
	var errs []error
	for k := range be.params {
		errs = append(errs, userParam(k))
	}
	clear(be.params)
	return errors.Join(errs...)
}

func (be *ncclBackend) open(nRanks int) error {
	o, j := be.o, be.job
	host, _ := os.Hostname()
	tuningWanted, tuningPath := nccl.TuningLogWanted(os.LookupEnv, host, os.Getpid())
	tuningOwned := false
	if tuningWanted && tuningPath == "" {
		// NCCL reads NCCL_DEBUG_FILE once, at its first call: name one
		// now, for the process's life (a later backend names the same).
		tuningPath = filepath.Join(os.TempDir(), fmt.Sprintf("gccl-nccl-%d.log", os.Getpid()))
		if err := nccl.SetParam("NCCL_DEBUG_FILE", tuningPath); err != nil {
			return err
		}
		tuningOwned = true
	}
	lo, err := nccl.LoadOptionsFromEnv()
	if err != nil {
		return err
	}
	lib, err := nccl.LoadWith(lo)
	if err != nil {
		return err
	}
	ncclMem, err := allocChoice(os.LookupEnv, lib.HasMemAlloc(), o.Register)
	if err != nil {
		return err
	}
	if o.TuningFile != "" {
		plugin, err := tunerPlugin(os.LookupEnv, lib.NCCLPath, func() (string, error) { return tunerplugin.Cached(os.Getenv("CC")) })
		if err != nil {
			return err
		}
		// NCCL loads the plugin, and the plugin reads its file, when a
		// communicator is created.
		if err := be.setParam("NCCL_TUNER_PLUGIN", plugin); err != nil {
			return err
		}
		if err := be.setParam("NCCL_TUNER_CONFIG_FILE", o.TuningFile); err != nil {
			return err
		}
	}
	count, err := lib.DeviceCount()
	if err != nil {
		return fmt.Errorf("no usable GPU (%w)", err)
	}
	local := nRanks
	be.lib, be.tuningPath, be.tuningOwned, be.ncclMem = lib, tuningPath, tuningOwned, ncclMem
	first := 0
	if j != nil {
		local = nRanks / j.procs
		be.base = j.proc * local
		if j.launch.LocalRank > 0 {
			first = j.launch.LocalRank * local
		}
	}
	if first+local > count {
		return fmt.Errorf("%d ranks in this process need GPUs %d to %d, but CUDA sees %d GPU(s) (one GPU per rank, as in nccl-tests: lower -t x -g or the processes per host)",
			local, first, first+local-1, count)
	}
	for i := 0; i < local; i++ {
		d := first + i
		bus, name, err := lib.Describe(d)
		if err != nil {
			return err
		}
		be.devs = append(be.devs, d)
		be.bus = append(be.bus, bus)
		be.desc = append(be.desc, name)
	}
	return nil
}

func (be *ncclBackend) Name() string { return "nccl" }

// ThreadBound: NCCL's groups and CUDA's current device are per thread.
func (be *ncclBackend) ThreadBound() bool { return true }

// Close stops following NCCL's log and removes the one this process named.
func (be *ncclBackend) Close() error {
	be.lib.FlushStdio()
	if be.tuning != nil {
		be.tuning.Close()
	}
	if be.tuningOwned {
		os.Remove(be.tuningPath)
	}
	return be.restoreParams()
}

// TuningLog names the file NCCL's decisions are read from, "" if none.
func (be *ncclBackend) TuningLog() string { return be.tuningPath }

// chosen is NCCL's latest logged decision for coll, if it logs them
// (rank 0 of a communicator does).
func (be *ncclBackend) chosen(coll string) ccl.Choice {
	if be.tuningPath == "" {
		return ccl.Choice{}
	}
	if be.tuning == nil {
		t, err := nccl.OpenTuningLog(be.tuningPath)
		if err != nil {
			return ccl.Choice{} // NCCL has written nothing yet
		}
		be.tuning = t
	}
	c, ok := be.tuning.Last(coll)
	if !ok {
		return ccl.Choice{}
	}
	return ccl.Choice{Algo: c.Algo, Proto: c.Proto, NChannels: c.NChannels, Bytes: c.Bytes, Source: "nccl-log"}
}

func (be *ncclBackend) Device(rank int) (string, string) {
	i := rank - be.base
	if i < 0 || i >= len(be.devs) {
		return "?", "?"
	}
	return be.bus[i], fmt.Sprintf("cuda:%d %s", be.devs[i], be.desc[i])
}

// Versions names the libraries for the header and the records.
func (be *ncclBackend) Versions() (ncclVersion, cudaVersion, paths string) {
	alloc := "cudaMalloc"
	if be.ncclMem {
		alloc = "ncclMemAlloc"
	}
	return nccl.VersionString(be.lib.NCCLVersion), nccl.CUDAVersionString(be.lib.CUDARTVersion),
		fmt.Sprintf("%s, %s (driver %s); ranks by %s; buffers by %s; calls by %s", be.lib.NCCLPath, be.lib.CUDARTPath,
			nccl.CUDAVersionString(be.lib.DriverVersion), be.lib.InitHow(), alloc, be.lib.CallPath())
}

// tunerPlugins are the names NCCL's example tuner plugin is built as.
var tunerPlugins = []string{"libnccl-tuner-example.so", "libnccl-tuner.so"}

// tunerPlugin finds the tuner plugin --tuning-file hands its CSV to:
// NCCL_TUNER_PLUGIN, else gccl's own (build: built once into the user's
// cache; it keeps NCCL's channel count where a rule sets none), else
// NCCL's example beside libnccl.
func tunerPlugin(lookup func(string) (string, bool), ncclPath string, build func() (string, error)) (string, error) {
	if p, ok := lookup("NCCL_TUNER_PLUGIN"); ok && strings.TrimSpace(p) != "" {
		return strings.TrimSpace(p), nil
	}
	own, buildErr := build()
	if buildErr == nil {
		return own, nil
	}
	var tried []string
	for _, name := range tunerPlugins {
		p := filepath.Join(filepath.Dir(ncclPath), name)
		if st, err := os.Stat(p); err == nil && !st.IsDir() {
			return p, nil
		}
		tried = append(tried, p)
	}
	return "", fmt.Errorf("--tuning-file needs a tuner plugin to read the CSV: gccl's could not be built (%v), and NCCL's example is not beside libnccl (tried %s); set NCCL_TUNER_PLUGIN to a plugin's path (`tune plugin --output PATH` builds gccl's)", buildErr, strings.Join(tried, ", "))
}

// ncclEnv maps a configuration to the variables NCCL reads when a
// communicator is created: NCCL_PROTO and NCCL_ALGO (read per
// communicator) and NCCL_BUFFSIZE (read once per process: options.go
// allows one). Channels go in ncclConfig_t (minCTAs = maxCTAs).
func ncclEnv(rc RunConfig) map[string]string {
	env := map[string]string{"NCCL_PROTO": rc.Proto, "NCCL_ALGO": rc.Algo, "NCCL_BUFFSIZE": ""}
	if rc.BuffSize > 0 {
		env["NCCL_BUFFSIZE"] = strconv.FormatInt(rc.BuffSize, 10)
	}
	return env
}

// Init creates this process's ranks of a run of n for configuration rc,
// on fresh communicators.
func (be *ncclBackend) Init(n int, rc RunConfig) ([]Comm, error) {
	for k, v := range ncclEnv(rc) {
		var err error
		if v != "" {
			err = be.setParam(k, v)
		} else { // auto: what the user's environment asked for, or NCCL's own choice
			err = userParam(k)
		}
		if err != nil {
			return nil, err
		}
	}
	var id nccl.UniqueID
	if be.job == nil || be.job.proc == 0 {
		var err error
		if id, err = be.lib.GetUniqueID(); err != nil {
			return nil, err
		}
	}
	if be.job != nil {
		b, err := be.job.link.Broadcast(0, id.Internal[:])
		if err != nil {
			return nil, fmt.Errorf("broadcasting NCCL's unique id: %w", err)
		}
		if len(b) != nccl.UniqueIDBytes {
			return nil, fmt.Errorf("broadcasting NCCL's unique id: got %d bytes, want %d", len(b), nccl.UniqueIDBytes)
		}
		copy(id.Internal[:], b)
	}
	ranks := make([]*ncclRank, len(be.devs))
	err := be.onThread(func() error {
		// InitRank inside a group creates the process's ranks together.
		if err := be.lib.GroupStart(); err != nil {
			return err
		}
		var initErr error
		for i, d := range be.devs {
			if initErr = be.lib.SetDevice(d); initErr != nil {
				break
			}
			r := &ncclRank{lib: be.lib, be: be, dev: d, rank: be.base + i, size: n, register: be.o.Register, ncclMem: be.ncclMem}
			if be.o.StreamNull == 0 {
				if r.stream, initErr = be.lib.StreamCreate(); initErr != nil {
					break
				}
			}
			if r.comm, initErr = be.lib.CommInitRank(n, id, r.rank, rc.NChannels); initErr != nil {
				break
			}
			ranks[i] = r
		}
		return errors.Join(initErr, be.lib.GroupEnd())
	})
	if err != nil {
		for _, r := range ranks {
			if r != nil {
				_ = be.lib.CommAbort(r.comm)
			}
		}
		return nil, err
	}
	out := make([]Comm, len(ranks))
	for i, r := range ranks {
		out[i] = r
	}
	return out, nil
}

// onThread runs f on a thread of its own for its whole length: NCCL's
// groups and CUDA's current device are per thread.
func (be *ncclBackend) onThread(f func() error) error {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	return f()
}

// ncclRank is one rank: its communicator, its stream and the device twins
// of the harness's buffers. One thread drives it at a time.
type ncclRank struct {
	lib        *nccl.Lib
	be         *ncclBackend
	lastColl   string // NCCL's name of the last collective called, for LastChoice
	comm       uintptr
	stream     uintptr // 0 with -y 1: the default stream
	dev        int
	rank, size int
	register   int  // -R
	ncclMem    bool // buffers from ncclMemAlloc, else cudaMalloc
	mirrors    []mirror
	graph      struct{ g, exec uintptr }
	events     []uintptr
	preMul     map[reduce.DataType]int32
	mu         sync.Mutex // guards destroyed
	destroyed  bool
	// group is the group depth of the thread driving this rank, shared
	// with the thread's other ranks (ShareThreadGroup); nil: every group
	// call goes to NCCL. Only that thread touches it, one at a time (the
	// runner hands a rank between goroutines through a WaitGroup).
	group *threadGroup
}

// threadGroup is one thread's ncclGroupStart depth as gccl counts it.
type threadGroup struct{ depth int }

// mirror is a host buffer and its device twin.
type mirror struct {
	host    []byte
	hostPtr uintptr // &host[0]: the heap does not move it
	dev     uintptr
	reg     uintptr // registration handle (-R 1) or window (-R 2)
}

func (r *ncclRank) Rank() int { return r.rank }
func (r *ncclRank) Size() int { return r.size }

// ThreadGroups: ncclGroupStart is per thread.
func (r *ncclRank) ThreadGroups() bool { return true }

func (r *ncclRank) Mirror(bufs ...[]byte) error {
	return r.lib.OnDevice(r.dev, func() error {
		for _, h := range bufs {
			if len(h) == 0 {
				continue
			}
			m := mirror{host: h, hostPtr: uintptr(unsafe.Pointer(&h[0]))}
			var err error
			if r.ncclMem {
				m.dev, err = r.lib.MemAlloc(len(h))
			} else {
				m.dev, err = r.lib.Malloc(len(h))
			}
			if err != nil {
				return err
			}
			r.mirrors = append(r.mirrors, m)
			switch r.register {
			case 1:
				m.reg, err = r.lib.Register(r.comm, m.dev, len(h))
			case 2:
				m.reg, err = r.lib.WindowRegister(r.comm, m.dev, len(h))
			}
			if err != nil {
				return err
			}
			r.mirrors[len(r.mirrors)-1] = m
		}
		return nil
	})
}

// ptr maps a slice of a mirrored host buffer to its device address.
func (r *ncclRank) ptr(b []byte) (uintptr, error) {
	p := uintptr(unsafe.Pointer(unsafe.SliceData(b)))
	for _, m := range r.mirrors {
		if p >= m.hostPtr && p+uintptr(len(b)) <= m.hostPtr+uintptr(len(m.host)) {
			return m.dev + (p - m.hostPtr), nil
		}
	}
	return 0, fmt.Errorf("rank %d: a buffer of %d bytes outside the mirrored ones (harness bug)", r.rank, len(b))
}

// ToDevice and ToHost copy on the rank's stream with its device current:
// a thread driving several GPUs may have another one current.
func (r *ncclRank) ToDevice(h []byte) error {
	d, err := r.ptr(h)
	if err != nil {
		return err
	}
	return r.lib.OnDevice(r.dev, func() error { return r.lib.ToDevice(d, h, r.stream) })
}

func (r *ncclRank) ToHost(h []byte) error {
	d, err := r.ptr(h)
	if err != nil {
		return err
	}
	return r.lib.OnDevice(r.dev, func() error { return r.lib.ToHost(h, d, r.stream) })
}

// args maps a call's send and recv buffers and its data type.
func (r *ncclRank) args(send, recv []byte, dt reduce.DataType) (s, d uintptr, ndt int32, err error) {
	if s, err = r.ptr(send); err != nil {
		return 0, 0, 0, err
	}
	if d, err = r.ptr(recv); err != nil {
		return 0, 0, 0, err
	}
	ndt, err = nccl.DataType(dt)
	return s, d, ndt, err
}

// redArgs is args and the reduction, for the reducing collectives.
func (r *ncclRank) redArgs(send, recv []byte, dt reduce.DataType, op ccl.RedOp) (s, d uintptr, ndt, nop int32, err error) {
	if s, d, ndt, err = r.args(send, recv, dt); err != nil {
		return 0, 0, 0, 0, err
	}
	nop, err = r.op(op, dt)
	return s, d, ndt, nop, err
}

// op maps a reduction; PreMulSum ops are made once per type and kept.
func (r *ncclRank) op(op ccl.RedOp, dt reduce.DataType) (int32, error) {
	if op.Op != reduce.PreMulSum {
		return nccl.RedOp(op.Op)
	}
	if o, ok := r.preMul[dt]; ok {
		return o, nil
	}
	if op.Scalar != exact.Scalar(dt) {
		return 0, fmt.Errorf("premulsum scalar %g: this backend keeps one per type (%g)", op.Scalar, exact.Scalar(dt))
	}
	ndt, err := nccl.DataType(dt)
	if err != nil {
		return 0, err
	}
	scalar, err := nccl.ScalarBytes(dt, op.Scalar)
	if err != nil {
		return 0, err
	}
	o, err := r.lib.PreMulSum(r.comm, scalar, ndt)
	if err != nil {
		return 0, err
	}
	if r.preMul == nil {
		r.preMul = map[reduce.DataType]int32{}
	}
	r.preMul[dt] = o
	return o, nil
}

func (r *ncclRank) AllReduce(send, recv []byte, count int, dt reduce.DataType, op ccl.RedOp) error {
	s, d, ndt, nop, err := r.redArgs(send, recv, dt, op)
	if err != nil {
		return err
	}
	r.lastColl = "AllReduce"
	return r.lib.AllReduce(s, d, count, ndt, nop, r.comm, r.stream)
}

func (r *ncclRank) AllGather(send, recv []byte, sendCount int, dt reduce.DataType) error {
	s, d, ndt, err := r.args(send, recv, dt)
	if err != nil {
		return err
	}
	r.lastColl = "AllGather"
	return r.lib.AllGather(s, d, sendCount, ndt, r.comm, r.stream)
}

func (r *ncclRank) ReduceScatter(send, recv []byte, recvCount int, dt reduce.DataType, op ccl.RedOp) error {
	s, d, ndt, nop, err := r.redArgs(send, recv, dt, op)
	if err != nil {
		return err
	}
	r.lastColl = "ReduceScatter"
	return r.lib.ReduceScatter(s, d, recvCount, ndt, nop, r.comm, r.stream)
}

func (r *ncclRank) Broadcast(send, recv []byte, count int, dt reduce.DataType, root int) error {
	s, d, ndt, err := r.args(send, recv, dt)
	if err != nil {
		return err
	}
	r.lastColl = "Broadcast"
	return r.lib.Broadcast(s, d, count, ndt, root, r.comm, r.stream)
}

func (r *ncclRank) Reduce(send, recv []byte, count int, dt reduce.DataType, op ccl.RedOp, root int) error {
	s, d, ndt, nop, err := r.redArgs(send, recv, dt, op)
	if err != nil {
		return err
	}
	r.lastColl = "Reduce"
	return r.lib.Reduce(s, d, count, ndt, nop, root, r.comm, r.stream)
}

// AlltoAll, Gather and Scatter are grouped sends and receives, as
// nccl-tests builds them.

func (r *ncclRank) AlltoAll(send, recv []byte, count int, dt reduce.DataType) error {
	b := count * dt.Size()
	return r.grouped(func() error {
		for p := 0; p < r.size; p++ {
			if err := r.Send(send[p*b:(p+1)*b], count, dt, p); err != nil {
				return err
			}
			if err := r.Recv(recv[p*b:(p+1)*b], count, dt, p); err != nil {
				return err
			}
		}
		return nil
	})
}

func (r *ncclRank) Gather(send, recv []byte, count int, dt reduce.DataType, root int) error {
	b := count * dt.Size()
	return r.grouped(func() error {
		if err := r.Send(send[:b], count, dt, root); err != nil {
			return err
		}
		if r.rank != root {
			return nil
		}
		for p := 0; p < r.size; p++ {
			if err := r.Recv(recv[p*b:(p+1)*b], count, dt, p); err != nil {
				return err
			}
		}
		return nil
	})
}

func (r *ncclRank) Scatter(send, recv []byte, count int, dt reduce.DataType, root int) error {
	b := count * dt.Size()
	return r.grouped(func() error {
		if r.rank == root {
			for p := 0; p < r.size; p++ {
				if err := r.Send(send[p*b:(p+1)*b], count, dt, p); err != nil {
					return err
				}
			}
		}
		return r.Recv(recv[:b], count, dt, root)
	})
}

func (r *ncclRank) grouped(f func() error) error {
	if err := r.GroupStart(); err != nil {
		return err
	}
	err := f()
	if endErr := r.GroupEnd(); err == nil {
		err = endErr
	}
	return err
}

func (r *ncclRank) Send(buf []byte, count int, dt reduce.DataType, peer int) error {
	p, err := r.ptr(buf)
	if err != nil {
		return err
	}
	ndt, err := nccl.DataType(dt)
	if err != nil {
		return err
	}
	return r.lib.Send(p, count, ndt, peer, r.comm, r.stream)
}

func (r *ncclRank) Recv(buf []byte, count int, dt reduce.DataType, peer int) error {
	p, err := r.ptr(buf)
	if err != nil {
		return err
	}
	ndt, err := nccl.DataType(dt)
	if err != nil {
		return err
	}
	return r.lib.Recv(p, count, ndt, peer, r.comm, r.stream)
}

// ShareThreadGroup gives the ranks cs, driven by one thread, one group
// depth: a group opened inside the thread's open group is NCCL's no-op,
// so only the outermost start and end go to NCCL (a 2-GPU sendrecv
// iteration: 6 calls instead of 10).
func (r *ncclRank) ShareThreadGroup(cs []Comm) {
	g := &threadGroup{}
	for _, c := range cs {
		if nr, ok := c.(*ncclRank); ok {
			nr.group = g
		}
	}
}

func (r *ncclRank) GroupStart() error { return r.group.start(r.lib.GroupStart) }
func (r *ncclRank) GroupEnd() error   { return r.group.end(r.lib.GroupEnd) }

// start opens a group: through call (ncclGroupStart) unless the thread's
// group is open already. A nil group always calls.
func (g *threadGroup) start(call func() error) error {
	if g == nil {
		return call()
	}
	if g.depth++; g.depth > 1 {
		return nil
	}
	if err := call(); err != nil {
		g.depth--
		return err
	}
	return nil
}

// end closes a group: through call (ncclGroupEnd) when it is the
// outermost, or when none is open (NCCL then says what is wrong).
func (g *threadGroup) end(call func() error) error {
	if g == nil || g.depth == 0 {
		return call()
	}
	if g.depth--; g.depth > 0 {
		return nil
	}
	return call()
}

func (r *ncclRank) Synchronize() error { return r.lib.StreamSynchronize(r.stream) }

// LastChoice is what NCCL's TUNING log says it ran for the last
// collective, when the log is on (NCCL_DEBUG=INFO,
// NCCL_DEBUG_SUBSYS=TUNING) and this is rank 0; else nothing.
func (r *ncclRank) LastChoice() ccl.Choice {
	if r.rank != 0 || r.lastColl == "" {
		return ccl.Choice{}
	}
	return r.be.chosen(r.lastColl)
}

func (r *ncclRank) BeginCapture() error { return r.lib.BeginCapture(r.stream) }

func (r *ncclRank) EndCapture() error {
	var err error
	r.graph.g, err = r.lib.EndCapture(r.stream)
	return err
}

func (r *ncclRank) Instantiate() error {
	var err error
	r.graph.exec, err = r.lib.Instantiate(r.graph.g)
	return err
}

func (r *ncclRank) LaunchGraph() error { return r.lib.GraphLaunch(r.graph.exec, r.stream) }

func (r *ncclRank) FreeGraph() error {
	if r.graph.g == 0 && r.graph.exec == 0 {
		return nil
	}
	err := r.lib.GraphFree(r.graph.g, r.graph.exec)
	r.graph.g, r.graph.exec = 0, 0
	return err
}

// RecordEvent records event i on the stream, creating events as needed.
func (r *ncclRank) RecordEvent(i int) error {
	for len(r.events) <= i {
		var e uintptr
		if err := r.lib.OnDevice(r.dev, func() (err error) { e, err = r.lib.EventCreate(); return err }); err != nil {
			return err
		}
		r.events = append(r.events, e)
	}
	return r.lib.EventRecord(r.events[i], r.stream)
}

func (r *ncclRank) EventMs(i, j int) (float64, error) {
	return r.lib.EventElapsed(r.events[i], r.events[j])
}

// Destroy frees the rank: graph, events, reductions, registrations,
// buffers, stream, communicator. Every error is reported.
func (r *ncclRank) Destroy() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.destroyed {
		return nil
	}
	r.destroyed = true
	var errs []error
	errs = append(errs, r.Synchronize(), r.FreeGraph())
	for _, e := range r.events {
		errs = append(errs, r.lib.EventDestroy(e))
	}
	for _, o := range r.preMul {
		errs = append(errs, r.lib.RedOpDestroy(o, r.comm))
	}
	for _, m := range r.mirrors {
		switch r.register {
		case 1:
			errs = append(errs, r.lib.Deregister(r.comm, m.reg))
		case 2:
			errs = append(errs, r.lib.WindowDeregister(r.comm, m.reg))
		}
		if r.ncclMem {
			errs = append(errs, r.lib.MemFree(m.dev))
		} else {
			errs = append(errs, r.lib.Free(m.dev))
		}
	}
	if r.stream != 0 {
		errs = append(errs, r.lib.StreamDestroy(r.stream))
	}
	errs = append(errs, r.lib.CommDestroy(r.comm))
	return errors.Join(errs...)
}
