//go:build linux && (amd64 || arm64)

// The NCCL backend: loading the libraries, NCCL's parameters for a run,
// and creating this process's ranks (ncclrank_linux.go has the ranks).

package perf

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"

	"github.com/gccl/gccl/lib/ccl"
	"github.com/gccl/gccl/lib/nccl"
	"github.com/gccl/gccl/lib/nccl/profplugin"
	"github.com/gccl/gccl/lib/nccl/tunerplugin"
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
	if o.StepTrace != "" {
		if j == nil || j.proc == 0 {
			if err := profplugin.ClearRanks(o.StepTrace); err != nil {
				return fmt.Errorf("--trace-steps: an earlier run's NCCL trace files: %w", err)
			}
		}
		if err := be.traceNCCL(o.StepTrace); err != nil {
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

func (be *ncclBackend) Name() BackendName { return BackendNCCL }

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
// communicator; "" for auto: the variable is put back as the user had it) and NCCL_BUFFSIZE (read once per process: options.go
// allows one). Channels go in ncclConfig_t (minCTAs = maxCTAs).
func ncclEnv(rc RunConfig) map[string]string {
	env := map[string]string{"NCCL_PROTO": "", "NCCL_ALGO": "", "NCCL_BUFFSIZE": ""}
	if !rc.Proto.IsAuto() {
		env["NCCL_PROTO"] = rc.Proto.String()
	}
	if !rc.Algo.IsAuto() {
		env["NCCL_ALGO"] = rc.Algo.String()
	}
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
