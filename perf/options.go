// The perf binaries' options: the flags (parseOptions) and their
// validation against each other, the collective and the backend.

package perf

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/pflag"

	"github.com/gccl/gccl/lib/ccl"
	"github.com/gccl/gccl/lib/exact"
	"github.com/gccl/gccl/lib/proto"
	"github.com/gccl/gccl/lib/reduce"
	"github.com/gccl/gccl/lib/tuning"
)

// Exit codes, as nccl-tests' testResult_t, plus 7 for data errors.
const (
	exitOK           = 0
	exitInternal     = 1
	exitCUDA         = 2 // no GPU or CUDA library, or a CUDA call failed (testCudaError)
	exitStack        = 3 // the collective stack returned an error (testNcclError)
	exitTimeout      = 4
	exitNotImpl      = 5
	exitInvalidUsage = 6
	exitDataError    = 7 // wrong elements, or average bus bandwidth below the floor
)

// usageError is a bad command line: exit code 6.
type usageError struct{ msg string }

func (e *usageError) Error() string { return e.msg }

func usagef(format string, args ...any) error { return &usageError{fmt.Sprintf(format, args...)} }

// Options is the parsed command line.
type Options struct {
	// nccl-tests flags.
	Threads, RanksPerThread int   // -t, -g
	RanksPerHost            int   // --ranks-per-host (gccl)
	MinBytes, MaxBytes      int64 // -b, -e
	StepBytes, StepFactor   int64 // -i, -f
	// SizeList is --sizes: the sizes to measure, ascending, instead of the
	// -b/-e/-f series (MinBytes and MaxBytes are its ends); nil for the series.
	SizeList                        []int64
	Iters, AggIters, Warmup, Cycles int               // -n, -m, -w, -N
	ParallelInit                    int               // -p
	Check                           int               // -c
	Ops                             []reduce.Op       // -o (all: every op)
	Types                           []reduce.DataType // -d (all: every type)
	Roots                           []int             // -r (-1 or all: every root)
	rootSpec                        string
	Blocking                        int    // -z
	StreamNull                      int    // -y
	Timeout                         int    // -T seconds
	NP                              int    // --np: processes the built-in launcher starts
	Hosts                           int    // --hosts: the --np processes as this many hosts (loopback)
	Netns                           bool   // --netns: each host its own network namespace
	BindTo                          string // --bind-to: core (each process its own processors) or none
	CPUProfile                      string // --cpuprofile: a pprof CPU profile of each process
	Trace                           string // --trace: a Go execution trace of each process
	StepTrace                       string // --trace-steps: the embedded stack's step timeline (steps.go)
	TraceEvery                      int    // --trace-every: record one operation in this many; 0 auto (autoTraceEvery)
	traceEverySet                   bool   // --trace-every was given
	Average                         int    // -a
	PerIter                         int    // -I
	Bitwise                         int    // -K
	Timestamps                      int    // -S
	JSONFile                        string // -J
	Unalign                         int    // -u
	MemReport                       int    // -M
	CPUTime                         int    // -C
	Graph                           int    // -G
	Register                        int    // -R
	DeviceImpl                      int    // -D
	DeviceCTAs                      int    // -V
	CTAPolicy                       int    // -x

	// gccl additions.
	Protos     []proto.Protocol // --proto
	Algos      []tuning.Algo    // --algo
	algoAll    bool             // --algo all: the algorithms the collective has
	Channels   []int            // --nchannels
	BuffSizes  []int64          // --buffsize
	CheckTimed bool             // --check-timed
	// ConfigList is --configs: explicit configurations (algorithm,
	// protocol and channels; "" and 0 auto) instead of the product of
	// --proto, --algo and --nchannels.
	ConfigList []RunConfig
	// Interleave measures the configurations side by side on one set of
	// communicators (--interleave).
	Interleave bool
	// Precision > 0 repeats batches of -n timed iterations until the 95%
	// confidence interval of the median iteration time lies within
	// Precision of the median, or MaxTime has been spent on the point
	// (--precision, --max-time).
	Precision float64
	MaxTime   time.Duration
	// OutOfPlaceOnly skips the in-place measurement (--out-of-place-only):
	// tuning sweeps need one placement.
	OutOfPlaceOnly bool
	Out            string      // --out FILE.jsonl
	CSV            string      // --csv FILE
	Force          bool        // --force: overwrite result files
	Backend        BackendName // --backend
	TuningFile     string      // --tuning-file: the stack's table, or NCCL's tuner CSV
	Plot           string      // --plot FILE: busBW plot of the run (PNG, SVG or PDF by extension)
	ShowVersion    bool        // --version: print the version and exit

	// env is what the GCCL_* variables ask for; timeoutSet and
	// ranksPerHostSet say -T and --ranks-per-host were given (a flag beats
	// the environment, env.go).
	env                         envSettings
	timeoutSet, ranksPerHostSet bool

	// noWarmUp skips the warm-up pass before the first size (warmUp): for
	// the benchmark that shows what the pass is for.
	noWarmUp bool

	notes []string // one-line notes about ignored GPU-only flags and the environment
	args  []string // the command line, for nccl-tests' JSON
}

// nRanks is the number of ranks in this process.
func (o *Options) nRanks() int { return o.Threads * o.RanksPerThread }

// parseOptions parses args (without the program name).
func parseOptions(prog string, args []string, stderr io.Writer) (*Options, error) {
	o := &Options{args: args}
	fs := pflag.NewFlagSet(prog, pflag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.SortFlags = false
	var minB, maxB, stepB, sizeList, op, dt, root string
	var protos, algos, channels, buffs, precision, configList, backend, traceEvery string
	fs.IntVarP(&o.Threads, "nthreads", "t", 1, "threads per process")
	fs.IntVarP(&o.RanksPerThread, "ngpus", "g", 1, "ranks per thread (GPUs per thread in nccl-tests)")
	fs.IntVar(&o.RanksPerHost, "ranks-per-host", 0, "group the ranks into hosts of this many ranks, as if on separate machines (trees and the cost model see hosts); 0 = one host")
	fs.StringVarP(&minB, "minbytes", "b", "32M", "min size in bytes (K/M/G binary suffixes, decimals allowed)")
	fs.StringVarP(&maxB, "maxbytes", "e", "32M", "max size in bytes")
	fs.StringVarP(&stepB, "stepbytes", "i", "1M", "increment size")
	fs.Int64VarP(&o.StepFactor, "stepfactor", "f", 1, "increment factor (used instead of -i when > 1)")
	fs.StringVar(&sizeList, "sizes", "", "measure exactly these sizes, e.g. 12,3K,1.5M (instead of -b, -e, -f and -i)")
	fs.IntVarP(&o.Iters, "iters", "n", 20, "iteration count")
	fs.IntVarP(&o.AggIters, "agg_iters", "m", 1, "aggregated iteration count (ops per group)")
	fs.IntVarP(&o.Warmup, "warmup_iters", "w", 5, "warmup iteration count")
	fs.IntVarP(&o.Cycles, "run_cycles", "N", 1, "run and print each cycle (0 = infinite)")
	fs.IntVarP(&o.ParallelInit, "parallel_init", "p", 0, "threads initialise their ranks concurrently (0/1)")
	fs.IntVarP(&o.Check, "check", "c", 1, "check iteration count (0 = no data check)")
	fs.StringVarP(&op, "op", "o", "sum", "reduction: sum/prod/min/max/avg/mulsum/all")
	fs.StringVarP(&dt, "datatype", "d", "float", "data type (int8 uint8 int32 uint32 int64 uint64 half float double bfloat16) or all")
	fs.StringVarP(&root, "root", "r", "0", "root rank; -1 or all sweeps every root")
	fs.IntVarP(&o.Blocking, "blocking", "z", 0, "wait after each op (1: and barrier; 2: no barrier; 3: per outer iteration)")
	fs.IntVarP(&o.StreamNull, "stream_null", "y", 0, "use the default stream (GPU only)")
	fs.IntVarP(&o.Timeout, "timeout", "T", 0, "abort an operation that makes no progress for this many seconds (0: stack default)")
	fs.IntVarP(&o.Average, "average", "a", 1, "time reported: 0 rank 0, 1 mean, 2 min, 3 max over threads")
	fs.IntVarP(&o.PerIter, "per_iter_timing", "I", 0, "per-iteration timing: min/max/p99/cv columns (0/1)")
	fs.StringVar(&precision, "precision", "", "repeat batches of -n iterations until the median's 95% confidence interval is within this fraction of it (e.g. 2% or 0.02); implies -I 1")
	fs.DurationVar(&o.MaxTime, "max-time", 2*time.Second, "with --precision: the most time spent timing one size and placement")
	fs.BoolVar(&o.OutOfPlaceOnly, "out-of-place-only", false, "measure out of place only (in-place columns print -)")
	fs.IntVarP(&o.Bitwise, "bitwise", "K", 0, "bitwise repeatability: compare N repeats with a reference run")
	fs.IntVarP(&o.Timestamps, "report_timestamps", "S", 0, "append a timestamp to every row (0/1)")
	fs.StringVarP(&o.JSONFile, "output_file", "J", "", "write nccl-tests' JSON (version 3) to this file; several configurations write one file each, named FILE with .proto-P.algo-A.nch-N.buff-B before its extension; never overwrites (--force)")
	fs.IntVarP(&o.Unalign, "unalign", "u", 0, "offset buffers by this many elements from their aligned start")
	fs.IntVarP(&o.MemReport, "memory_report", "M", 0, "report buffer memory (0/1)")
	fs.IntVar(&o.MemReport, "memory", 0, "same as --memory_report (recent nccl-tests' spelling)")
	fs.IntVarP(&o.CPUTime, "report_cputime", "C", 0, "report the host time up to the last enqueue (nccl-tests' cputime: the final wait not counted) in the time column, labelled cputime (0/1)")
	fs.IntVarP(&o.Graph, "cudagraph", "G", 0, "capture the -n iterations into a CUDA graph and launch it this many times (--backend nccl)")
	fs.IntVarP(&o.Register, "local_register", "R", 0, "buffer registration: 0 none, 1 local (ncclCommRegister, --backend nccl), 2 symmetric windows (ncclMemAlloc + ncclCommWindowRegister; embedded: Comm.MemAlloc + WindowRegister)")
	fs.IntVarP(&o.DeviceImpl, "device_implementation", "D", 0, "device implementation: nccl-tests' own kernels through the device API instead of the collective (embedded backend, needs -R 2): all_reduce 1 (LSA) or 2 (LSA, vectorised), alltoall 1 (LSA), 2 (LSA, bulk copies), 3 (GIN puts and signals) or 4 (LSA inside a host, GIN across)")
	fs.IntVarP(&o.DeviceCTAs, "device_cta_count", "V", 16, "device CTA count: the -D kernel's coops (goroutines) per rank, 1 to 128")
	fs.IntVarP(&o.CTAPolicy, "cta_policy", "x", -1, "CTA policy (GPU only)")
	fs.StringVar(&protos, "proto", "", "sweep protocols: LL,LL128,Simple or all")
	fs.StringVar(&algos, "algo", "", "sweep algorithms: Ring, Tree (allreduce only), OneShot (LL, one channel), TwoShot (allreduce only, LL, one channel) or all (those the collective has)")
	fs.StringVar(&channels, "nchannels", "", "sweep channel counts, e.g. 1,2,4")
	fs.StringVar(&buffs, "buffsize", "", "sweep Simple buffer sizes, e.g. 1M,4M")
	fs.StringVar(&configList, "configs", "", "explicit configurations ALGO/PROTO/CHANNELS, any part auto, e.g. auto,Ring/LL/1,Tree/Simple/4 (instead of --proto/--algo/--nchannels)")
	fs.BoolVar(&o.Interleave, "interleave", false, "measure the configurations side by side on one set of communicators: at each size every configuration runs in turn, round after round (embedded backend)")
	fs.BoolVar(&o.CheckTimed, "check-timed", false, "verify the data of every timed iteration too")
	fs.StringVar(&o.Out, "out", "", "write result records as JSONL to this file (one per configuration, size and placement; never overwrites: --force)")
	fs.StringVar(&o.CSV, "csv", "", "write result records as CSV to this file (never overwrites: --force)")
	fs.BoolVar(&o.Force, "force", false, "overwrite existing result and plot files (--out, --csv, -J, --plot)")
	fs.StringVar(&backend, "backend", string(BackendEmbedded), "collective backend: embedded (gccl's stack) or nccl (libnccl and libcudart on GPUs; GCCL_NCCL_LIBRARY and GCCL_CUDART_LIBRARY name them)")
	fs.StringVar(&o.TuningFile, "tuning-file", "", "tuning table for the automatic choices: the stack's JSON table (GCCL_TUNING_FILE); with --backend nccl, NCCL's example-tuner CSV (tune table --nccl-csv) handed to a tuner plugin (NCCL_TUNER_PLUGIN, else gccl's own, built once with cc into the user's cache, else libnccl-tuner-example.so beside libnccl)")
	fs.IntVar(&o.NP, "np", 0, "start this many processes on this host (built-in launcher), each with -t x -g ranks; process 0 prints the table")
	fs.IntVar(&o.Hosts, "hosts", 0, "with --np: run the processes as this many hosts (consecutive processes share one; each host its own GCCL_HOSTID, joined by the network transport on loopback unless GCCL_SOCKET_IFNAME is set; default 0: the processes are one host)")
	fs.StringVar(&o.BindTo, "bind-to", "core", "with --np: core binds each process to processors of its own (this host's split evenly, as mpirun --bind-to core; nothing is bound when the processes outnumber them), none leaves them to the scheduler")
	fs.BoolVar(&o.Netns, "netns", false, "with --hosts: run each host in a network namespace of its own (its own TCP/IP stack, a veth link to a bridge), built for the run and removed after it; needs root and iproute2")
	fs.StringVar(&o.CPUProfile, "cpuprofile", "", "write a CPU profile (go tool pprof) of the run to this file; with --np each process writes FILE.<process>")
	fs.StringVar(&o.Trace, "trace", "", "write a Go execution trace (go tool trace) of the run to this file; with --np each process writes FILE.<process>")
	fs.StringVar(&traceEvery, "trace-every", "auto", "with --trace-steps, record one operation in N: those whose position in the communicator's stream is a multiple of N, the same on every rank. A recorded operation costs 0.2-0.8 us more, too much where operations take a few us; auto samples by size: 64 up to 4 KiB, halving as the size doubles, every operation from 256 KiB (the file's otherData says which); 1 records every operation")
	fs.StringVar(&o.StepTrace, "trace-steps", "", "write the step timeline to this file: Trace Event Format JSON that trace viewers open (Perfetto, speedscope; tune trace reads it), one process per rank, one track per channel and one for the rank's calls, holding each operation, its steps (primitive, peers, bytes, protocol) and its waits (on what, on whom). It records the timed iterations of every size and placement, not the warmup, up to 4096 events a channel each (the first ones; the file's otherData counts the rest): use it on a few sizes. With --np each process writes FILE.<process>, its clock aligned to process 0's through the bootstrap, and process 0 merges them into FILE. With --backend nccl, NCCL records it through gccl's NCCL profiler plugin (built with cc; collectives, kernel channels, proxy operations, their steps and waits; GCCL_PROFILER_MASK picks fewer), each rank writing into FILE.nccl/, merged into FILE after the run")
	fs.BoolVar(&o.ShowVersion, "version", false, "print the version (gccl, nccl-tests compatibility, Go, build revision) and exit")
	fs.StringVar(&o.Plot, "plot", "", "write the busBW curves of this run (out-of-place, one per configuration) to this image: .png, .svg or .pdf (never overwrites: --force)")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, pflag.ErrHelp) {
			return nil, err
		}
		return nil, usagef("%v", err)
	}
	if o.ShowVersion {
		return o, nil
	}
	if fs.NArg() > 0 {
		return nil, usagef("unexpected argument %q (flags only; see --help)", fs.Arg(0))
	}
	o.timeoutSet, o.ranksPerHostSet = fs.Changed("timeout"), fs.Changed("ranks-per-host")
	var err error
	if o.env, err = readEnv(os.LookupEnv); err != nil {
		return nil, err
	}
	if o.MinBytes, err = parseSizeFlag("minbytes", minB); err != nil {
		return nil, err
	}
	if o.MaxBytes, err = parseSizeFlag("maxbytes", maxB); err != nil {
		return nil, err
	}
	if o.StepBytes, err = parseSizeFlag("stepbytes", stepB); err != nil {
		return nil, err
	}
	if fs.Changed("sizes") {
		for _, f := range []string{"minbytes", "maxbytes", "stepbytes", "stepfactor"} {
			if fs.Changed(f) {
				return nil, usagef("--sizes names every size to measure: give it or --%s, not both", f)
			}
		}
		if o.SizeList, err = parseSizeList(sizeList); err != nil {
			return nil, err
		}
		o.MinBytes, o.MaxBytes = o.SizeList[0], o.SizeList[len(o.SizeList)-1]
	}
	if o.Types, err = parseTypes(dt); err != nil {
		return nil, err
	}
	if o.Ops, err = parseOps(op); err != nil {
		return nil, err
	}
	o.rootSpec = root
	if o.Protos, err = parseList("proto", protos, proto.All(), proto.Parse); err != nil {
		return nil, err
	}
	if o.Algos, err = parseList("algo", algos, tuning.Algos(), tuning.ParseAlgo); err != nil {
		return nil, err
	}
	o.algoAll = strings.EqualFold(strings.TrimSpace(algos), "all")
	if o.Precision, err = parsePrecision(precision); err != nil {
		return nil, err
	}
	if o.Precision > 0 {
		o.PerIter = 1 // the interval needs every iteration's time
	}
	if o.Channels, err = parseChannels(channels); err != nil {
		return nil, err
	}
	if o.BuffSizes, err = parseBuffSizes(buffs); err != nil {
		return nil, err
	}
	if o.TraceEvery, err = parseTraceEvery(traceEvery); err != nil {
		return o, err
	}
	o.traceEverySet = fs.Changed("trace-every")
	if o.ConfigList, err = parseConfigList(configList); err != nil {
		return nil, err
	}
	if len(o.ConfigList) > 0 && len(o.Protos)+len(o.Algos)+len(o.Channels) > 0 {
		return nil, usagef("--configs lists whole configurations: give it or --proto/--algo/--nchannels, not both")
	}
	if o.Backend, err = ParseBackend(backend); err != nil {
		return nil, usagef("%v", err)
	}
	return o, o.validate()
}

// validate checks ranges and turns GPU-only flags into notes or errors.
func (o *Options) validate() error {
	if len(o.Algos) > 0 && len(o.configs()) == 0 {
		return usagef("invalid --algo/--proto/--nchannels: OneShot and TwoShot run on LL on one channel, and no other algorithm was asked for")
	}
	switch {
	case o.Threads < 1:
		return usagef("invalid -t/--nthreads %d: want at least 1", o.Threads)
	case o.Precision > 0 && o.MaxTime <= 0:
		return usagef("invalid --max-time %v: want a positive duration (e.g. 2s)", o.MaxTime)
	case o.RanksPerHost < 0:
		return usagef("invalid --ranks-per-host %d: want ranks per host, or 0 for one host", o.RanksPerHost)
	case o.RanksPerThread < 1:
		return usagef("invalid -g/--ngpus %d: want at least 1", o.RanksPerThread)
	case o.nRanks() > 1024:
		return usagef("invalid -t x -g = %d ranks: at most 1024 ranks in one process", o.nRanks())
	case o.nRanks() > exact.MaxRanks && (o.Check > 0 || o.CheckTimed || o.Bitwise > 0):
		return usagef("invalid -t x -g = %d ranks with a data check: the check's exact values cover at most %d ranks; use -c 0 (and no --check-timed or -K) to measure more ranks unchecked", o.nRanks(), exact.MaxRanks)
	case o.MinBytes > o.MaxBytes:
		return usagef("invalid sizes for 'minbytes' and 'maxbytes': %d > %d", o.MinBytes, o.MaxBytes)
	case o.StepFactor < 1:
		return usagef("invalid -f/--stepfactor %d: want at least 1", o.StepFactor)
	case o.StepFactor == 1 && o.StepBytes < 1 && o.MinBytes != o.MaxBytes:
		return usagef("invalid -i/--stepbytes %d: want at least 1 byte (or use -f)", o.StepBytes)
	case o.Iters < 1:
		return usagef("invalid -n/--iters %d: want at least 1", o.Iters)
	case o.AggIters < 1:
		return usagef("invalid -m/--agg_iters %d: want at least 1", o.AggIters)
	case o.Warmup < 0:
		return usagef("invalid -w/--warmup_iters %d: want 0 or more", o.Warmup)
	case o.Cycles < 0:
		return usagef("invalid -N/--run_cycles %d: want 0 (infinite) or more", o.Cycles)
	case o.Check < 0:
		return usagef("invalid -c/--check %d: want 0 or more", o.Check)
	case o.Average < 0 || o.Average > 3:
		return usagef("invalid -a/--average %d: want 0 (rank 0), 1 (mean), 2 (min) or 3 (max)", o.Average)
	case o.Blocking < 0 || o.Blocking > 3:
		return usagef("invalid -z/--blocking %d: want 0, 1, 2 or 3", o.Blocking)
	case o.NP < 0 || o.NP > 1024:
		return usagef("invalid --np %d: want 1 to 1024 processes (0: this process alone)", o.NP)
	case o.BindTo != "core" && o.BindTo != "none":
		return usagef("invalid --bind-to %q: want core or none", o.BindTo)
	case o.Hosts != 0 && o.NP == 0:
		return usagef("--hosts %d needs --np: the hosts are groups of the processes the built-in launcher starts", o.Hosts)
	case o.Hosts < 0 || (o.Hosts > 0 && (o.Hosts > o.NP || o.NP%o.Hosts != 0)):
		return usagef("invalid --hosts %d with --np %d: want a divisor of --np (every host holds as many processes)", o.Hosts, o.NP)
	case o.Netns && o.Hosts == 0:
		return usagef("--netns needs --np and --hosts: it puts each host's processes in a network namespace of its own")
	case o.Netns && o.env.cfg.SocketIfname != "":
		return usagef("--netns gives each host its own link and names it: unset %s", ccl.EnvSocketIfname)
	case o.Timeout < 0:
		return usagef("invalid -T/--timeout %d: want seconds >= 0", o.Timeout)
	case o.Unalign < 0:
		return usagef("invalid -u/--unalign %d: want 0 or more elements", o.Unalign)
	case o.Bitwise < 0:
		return usagef("invalid -K/--bitwise %d: want 0 or more repeats", o.Bitwise)
	}
	for _, b := range []struct {
		v    int
		flag string
	}{{o.PerIter, "-I/--per_iter_timing"}, {o.Timestamps, "-S/--report_timestamps"}, {o.MemReport, "-M/--memory_report"}, {o.CPUTime, "-C/--report_cputime"}, {o.ParallelInit, "-p/--parallel_init"}} {
		if b.v != 0 && b.v != 1 {
			return usagef("invalid %s %d: want 0 or 1", b.flag, b.v)
		}
	}
	if o.TuningFile != "" {
		st, err := os.Stat(o.TuningFile)
		if err != nil || st.IsDir() {
			return usagef("--tuning-file %q: not a readable file (want a table from tune table: JSON for the embedded stack, --nccl-csv for NCCL)", o.TuningFile)
		}
		if o.TuningFile, err = filepath.Abs(o.TuningFile); err != nil {
			return usagef("--tuning-file: %v", err)
		}
	}
	if o.traceEverySet && o.StepTrace == "" {
		return usagef("--trace-every samples the step timeline: give --trace-steps FILE too")
	}
	if o.StepTrace != "" && o.Cycles == 0 {
		return usagef("--trace-steps writes its file when the run ends; -N 0 runs until stopped, and a stopped run writes none: give -N a number of cycles")
	}
	if o.Backend == BackendNCCL {
		if o.traceEverySet && o.TraceEvery != 1 {
			return usagef("--trace-every samples the embedded stack's timeline; NCCL's profiler plugin records every operation (GCCL_PROFILER_MASK and GCCL_PROFILER_EVENTS make it cheaper): drop --trace-every, or give 1")
		}
		if o.StepTrace != "" {
			// NCCL's ranks write their files through gccl's profiler
			// plugin, in every process: one path for all of them.
			abs, err := filepath.Abs(o.StepTrace)
			if err != nil {
				return usagef("--trace-steps: %v", err)
			}
			o.StepTrace = abs
		}
		return o.validateNCCL()
	}
	if o.StepTrace != "" && o.DeviceImpl != 0 {
		return usagef("--trace-steps records the stack's collectives; -D %d runs the device API's kernels, whose steps it does not see: drop one of them", o.DeviceImpl)
	}
	// GPU-only flags: accepted; meaningless here, so say so or refuse.
	if o.Graph > 0 {
		return usagef("-G/--cudagraph %d needs CUDA graphs; the embedded backend has none (use -G 0)", o.Graph)
	}
	if err := o.validateDevice(); err != nil {
		return err
	}
	if o.StreamNull != 0 {
		o.notes = append(o.notes, "-y/--stream_null ignored: the embedded backend has one stream per communicator")
	}
	if o.Register == 1 {
		o.notes = append(o.notes, "-R/--local_register ignored: embedded buffers need no local registration (-R 1); -R 2 registers symmetric windows")
	}
	if o.DeviceCTAs != 16 && o.DeviceImpl == 0 {
		o.notes = append(o.notes, "-V/--device_cta_count ignored: it sizes the device kernels of -D")
	}
	if o.CTAPolicy != -1 {
		o.notes = append(o.notes, "-x/--cta_policy ignored: channels play the role of CTAs; use --nchannels")
	}
	if o.ParallelInit != 0 {
		o.notes = append(o.notes, "-p/--parallel_init ignored: in-process ranks are created together")
	}
	for _, k := range minBwEnv {
		if v, ok := os.LookupEnv(k); ok && strings.TrimSpace(v) != "" {
			if _, err := strconv.ParseFloat(strings.TrimSpace(v), 64); err != nil {
				return usagef("invalid %s=%q: want the lowest acceptable average bus bandwidth in GB/s, e.g. 100 or 0.5", k, v)
			}
		}
	}
	o.notes = append(o.notes, o.envNotes()...)
	return validatePlot(o)
}

// validateNCCL checks the flags of a run on the NCCL backend (nccl-tests'
// own checks of -G, -I, -z and -R), and notes what NCCL takes elsewhere.
func (o *Options) validateNCCL() error {
	switch {
	case o.Graph < 0:
		return usagef("invalid -G/--cudagraph %d: want 0 (no graph) or the number of graph launches", o.Graph)
	case o.Graph > 0 && o.PerIter != 0:
		return usagef("-G/--cudagraph with per-iteration timing (-I or --precision) is not supported: the graph's iterations are not timed apart (as in nccl-tests)")
	case o.Graph > 0 && o.Blocking == 3:
		return usagef("-G/--cudagraph with -z 3 is not supported: a graph has no host barrier between iterations (as in nccl-tests)")
	case o.Graph > 0 && o.CheckTimed:
		return usagef("-G/--cudagraph with --check-timed is not supported: the graph's iterations cannot be checked one by one")
	case o.Register < 0 || o.Register > 2:
		return usagef("invalid -R/--local_register %d: want 0 (none), 1 (local, ncclCommRegister) or 2 (symmetric, ncclCommWindowRegister)", o.Register)
	case o.DeviceImpl != 0:
		return usagef("-D/--device_implementation %d runs nccl-tests' own device kernels (NCCL's device API), which would need CUDA kernels gccl does not build: use -D 0 here, or the embedded backend, where -R 2 -D 1 to 4 run them as goroutines", o.DeviceImpl)
	case o.Interleave:
		return usagef("--interleave needs a backend whose ranks switch configurations per operation; NCCL fixes them per communicator: drop --interleave")
	case len(o.BuffSizes) > 1:
		return usagef("--buffsize %v: NCCL reads NCCL_BUFFSIZE once per process, so one process measures one buffer size: run one --buffsize per process", o.BuffSizes)
	case o.RanksPerHost != 0:
		return usagef("--ranks-per-host groups the embedded stack's ranks into fake hosts; NCCL sees the real topology: drop it")
	}
	if o.DeviceCTAs != 16 {
		o.notes = append(o.notes, "-V/--device_cta_count ignored: it sizes nccl-tests' own device kernels (-D)")
	}
	if o.CTAPolicy != -1 {
		o.notes = append(o.notes, "-x/--cta_policy ignored: use --nchannels (ncclConfig_t minCTAs/maxCTAs)")
	}
	o.notes = append(o.notes, o.envNotes()...)
	return validatePlot(o)
}

// timeout converts -T to the stack's timeout (0 keeps the default).
func (o *Options) timeout() time.Duration { return time.Duration(o.Timeout) * time.Second }

// isTerminal reports whether w is a terminal (for the progress bar).
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}

// fitAlgos checks the --algo list against the collective: Tree and
// TwoShot run only allreduce. "all" keeps the algorithms the collective
// has; naming another for the collective is an error.
func (o *Options) fitAlgos(coll string) error {
	tc, err := tuning.ParseColl(coll)
	if err != nil {
		// Collectives made of sends and receives (alltoall, gather...)
		// ignore the algorithm; they take those every collective has.
		tc = tuning.AllGather
	}
	valid := strings.Join(tuning.AlgoNamesFor(tc), ", ")
	for _, rc := range o.ConfigList {
		if a, ok := rc.Algo.Get(); ok && !tuning.Supports(tc, a) {
			return usagef("invalid --configs entry with %s: %s has no %s algorithm (valid: %s, auto)", a, coll, a, valid)
		}
	}
	var keep []tuning.Algo
	for _, a := range o.Algos {
		if tuning.Supports(tc, a) {
			keep = append(keep, a)
		} else if !o.algoAll {
			return usagef("invalid --algo %s: %s has no %s algorithm (valid: %s)", a, coll, a, valid)
		}
	}
	o.Algos = keep
	return nil
}
