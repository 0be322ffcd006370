// Package perf is the engine of the nccl-tests-compatible perf binaries
// (nccl-tests' common.cu): flags, sizes, buffers, timing, checks, printing
// and machine-readable results. Each cmd/<coll>_perf main is one call to Main.
package perf

import (
	"errors"
	"fmt"
	"io"
	"os"
	"runtime"
	"runtime/debug"
	"runtime/pprof"
	"runtime/trace"
	"slices"
	"sort"
	"strconv"
	"time"

	"github.com/spf13/pflag"

	"github.com/gccl/gccl/lib/ccl"
	"github.com/gccl/gccl/lib/exact"
	"github.com/gccl/gccl/lib/reduce"
	"github.com/gccl/gccl/results"
)

// Version is the harness version printed in headers and records.
const Version = "0.1.0"

// VersionLine is what --version prints: the program, gccl's version, the
// nccl-tests release whose flags and output it follows, Go and the build's
// revision.
func VersionLine(prog string) string {
	rev := gitRev()
	if rev == "" {
		rev = "unknown"
	}
	return fmt.Sprintf("%s: gccl %s (nccl-tests %s compatible), %s %s/%s, revision %s",
		prog, Version, NCCLTestsVersion, runtime.Version(), runtime.GOOS, runtime.GOARCH, rev)
}

// NCCLTestsVersion is the nccl-tests release whose flags, output and JSON
// the binaries follow.
const NCCLTestsVersion = "2.19.6"

// Main runs test t with the command line args (without the program name),
// printing to stdout and stderr, and returns the process exit code.
func Main(t *Test, args []string, stdout, stderr io.Writer) int {
	return run(t, nil, args, stdout, stderr)
}

// startProfile profiles (or traces) this process into path; a process of
// a job of several writes path.<process> (each process profiles itself).
func startProfile(path string, j *job, start func(io.Writer) error, stop func()) (func(), error) {
	if j != nil && j.procs > 1 {
		path += "." + strconv.Itoa(j.proc)
	}
	f, err := os.Create(path)
	if err != nil {
		return nil, err
	}
	if err := start(f); err != nil {
		f.Close()
		return nil, err
	}
	return func() { stop(); f.Close() }, nil
}

// run is Main with an explicit backend (tests inject their own); nil
// picks the one --backend names.
func run(t *Test, be Backend, args []string, stdout, stderr io.Writer) int {
	o, err := parseOptions(t.Prog, args, stderr)
	if errors.Is(err, pflag.ErrHelp) {
		return exitOK
	}
	if err != nil {
		fmt.Fprintf(stderr, "%s: %v\n", t.Prog, err)
		return exitInvalidUsage
	}
	if o.ShowVersion {
		fmt.Fprintln(stdout, VersionLine(t.Prog))
		return exitOK
	}
	if err := o.fitAlgos(t.Collective); err != nil {
		fmt.Fprintf(stderr, "%s: %v\n", t.Prog, err)
		return exitInvalidUsage
	}
	dev, err := o.fitDevice(t.Collective)
	if err != nil {
		fmt.Fprintf(stderr, "%s: %v\n", t.Prog, err)
		return exitInvalidUsage
	}
	if o.NP > 0 {
		return launchProcesses(t, o, args, stdout, stderr)
	}
	// Signals are handled from here until the run returns, its files
	// written and its job left (interrupt.go): registered first, stopped last.
	intr := watchInterrupts(t.Prog, stderr)
	defer intr.stop()
	j, err := joinJob(os.LookupEnv, o.timeout(), o.env.cfg.Timeout)
	if err != nil {
		fmt.Fprintf(stderr, "%s: %v\n", t.Prog, err)
		return exitCode(err)
	}
	defer j.close()
	intr.quiet.Store(j != nil && j.proc != 0)
	intr.alone.Store(j == nil && o.Threads == 1)
	if be == nil { // a test's backend, or the one --backend names
		opened, err := openBackend(o.Backend, o, j, o.nRanks()*j.size())
		if err != nil {
			fmt.Fprintf(stderr, "%s: --backend %s: %v\n", t.Prog, o.Backend, err)
			return exitCUDA // the embedded backend always opens: NCCL's libraries or GPUs failed
		}
		if c, ok := opened.(io.Closer); ok {
			defer c.Close()
		}
		be = opened
	}
	if eb, ok := be.(Embedded); ok { // a test's too: the stack reads no variable itself
		eb.cfg = o.stackConfig()
		be = eb
	}
	e := &engine{t: t, o: o, be: be, dev: dev, out: stdout, errw: stderr, started: time.Now(), env: o.recordEnv(), job: j, probeBytes: probeMax, intr: intr}
	if j != nil && j.proc != 0 {
		// Process 0 prints the table and writes the files; the others
		// report only their errors.
		e.out = io.Discard
		o.JSONFile, o.Out, o.CSV, o.Plot = "", "", "", ""
	}
	for _, p := range []struct {
		flag, path string
		start      func(io.Writer) error
		stop       func()
	}{{"cpuprofile", o.CPUProfile, pprof.StartCPUProfile, pprof.StopCPUProfile}, {"trace", o.Trace, trace.Start, trace.Stop}} {
		if p.path == "" {
			continue
		}
		stop, err := startProfile(p.path, j, p.start, p.stop)
		if err != nil {
			fmt.Fprintf(stderr, "%s: --%s: %v\n", e.who(), p.flag, err)
			return exitInvalidUsage
		}
		defer stop()
	}
	stepPath := o.StepTrace
	if o.Backend == BackendNCCL {
		stepPath = "" // NCCL's ranks write theirs through the profiler plugin
	}
	if e.steps, err = openStepTrace(stepPath, t.Prog, o.TraceEvery, j); err != nil {
		fmt.Fprintf(stderr, "%s: %v\n", e.who(), err)
		return exitInvalidUsage
	}
	code, err := e.run()
	e.steps.discardUnwritten()
	if err == nil && o.Backend == BackendNCCL && o.StepTrace != "" {
		if err = finishNCCLTrace(o.StepTrace, j, e.out); err != nil {
			code = exitInternal
		}
	}
	if err != nil {
		fmt.Fprintf(stderr, "%s: %v\n", e.who(), j.explain(err))
	}
	return code
}

// who names this process in error messages: the program, and its place
// in a job of several processes.
func (e *engine) who() string {
	if e.job == nil {
		return e.t.Prog
	}
	return fmt.Sprintf("%s [process %d of %d, pid %d]", e.t.Prog, e.job.proc, e.job.procs, os.Getpid())
}

// engine is one invocation.
type engine struct {
	t       *Test
	o       *Options
	be      Backend
	out     io.Writer
	errw    io.Writer
	started time.Time

	n       int
	sink    *sink
	bwSum   float64
	bwCount int
	wrong   int64 // wrong elements over the whole run
	refCopy float64
	prog    *progress
	steps   *stepTrace // --trace-steps; nil without it

	dev      *devKernel        // the -D kernel; nil: the stack's collective
	devCoops int               // the coops each rank of the -D kernel runs (set by newRunner, read by record: the run's goroutine)
	job      *job              // this process's place in a run of several, or nil
	devices  []string          // "# Using devices" lines of every process's ranks
	intr     *interrupts       // Ctrl-C and SIGTERM (interrupt.go); nil in some tests
	cut      string            // the point a signal stopped unfinished, said in the message
	plotRecs []results.Record  // the run's records, kept for --plot
	env      map[string]string // the recorded variables in force (Options.recordEnv)
	// probeBytes is the size of each of copyBandwidth's two buffers:
	// probeMax, or less where the memory limit leaves less (limitMemory).
	probeBytes int
}

func (e *engine) run() (int, error) {
	o, t := e.o, e.t
	e.n = o.nRanks()
	if e.job != nil {
		e.n *= e.job.procs
		if e.n > exact.MaxRanks && (o.Check > 0 || o.CheckTimed || o.Bitwise > 0) {
			return exitInvalidUsage, usagef("%d processes x -t x -g = %d ranks with a data check: the check's exact values cover at most %d ranks; use -c 0 (and no --check-timed or -K) to measure more ranks unchecked", e.job.procs, e.n, exact.MaxRanks)
		}
	}
	if t.bind != nil {
		bound, err := t.bind(o, e.n)
		if err != nil {
			return exitInvalidUsage, err
		}
		e.t, t = bound, bound
	}
	if t.check != nil {
		if err := t.check(e.n); err != nil {
			return exitInvalidUsage, err
		}
	}
	roots := []int{-1}
	if t.Rooted {
		var err error
		if roots, err = o.roots(e.n); err != nil {
			return exitInvalidUsage, err
		}
	}
	ops := []reduce.Op{reduce.Sum}
	if t.Reduces {
		ops = o.Ops
	}
	restore, err := e.limitMemory()
	if err != nil {
		return exitCode(err), err
	}
	defer restore()
	sizes := sizeList(o.MinBytes, o.MaxBytes, o.StepBytes, o.StepFactor)
	if o.SizeList != nil { // limitMemory may have lowered MaxBytes
		sizes = slices.DeleteFunc(slices.Clone(o.SizeList), func(s int64) bool { return s > o.MaxBytes })
	}
	configs := o.configs()

	if err := checkPlotFile(o); err != nil {
		return exitInvalidUsage, err
	}
	if o.JSONFile != "" && len(configs) > 1 {
		o.notes = append(o.notes, fmt.Sprintf("-J writes one nccl-tests JSON document per configuration (%d): %s", len(configs), jsonPaths(o.JSONFile, configs)[0]+", ..."))
	}
	sink, err := openSink(o, e.be, e.started, configs)
	if err != nil {
		return exitInvalidUsage, err
	}
	e.sink = sink
	defer sink.close() // removes what an early return left unwritten
	if e.intr != nil {
		e.intr.sink.Store(sink)
	}
	e.refCopy = copyBandwidth(e.probeBytes)
	debug.FreeOSMemory() // the probe's pages go back before the buffers are allocated

	if err := e.gatherDevices(); err != nil {
		return exitInternal, err
	}
	e.printHeader()
	units := len(configs) * len(o.Types) * len(ops) * len(roots) * len(sizes) * max(o.Cycles, 1)
	if e.job != nil && e.job.proc != 0 {
		e.prog = newProgress(io.Discard, units)
	} else {
		e.prog = newProgress(e.errw, units)
	}
	defer e.prog.done()

	label := len(configs) > 1 || o.hasAxes()
	code, err := e.runConfigs(configs, sizes, ops, roots, label)
	if errors.Is(err, errInterrupted) {
		return e.stopped()
	}
	if err != nil {
		// The records finished are whole: keep the JSONL and CSV (valid,
		// partial); a -J document is written only by a run that ends.
		e.sink.abandon()
		return code, err
	}
	if err := e.sink.commit(false); err != nil {
		return exitInternal, err
	}
	if err := e.writePlot(); err != nil {
		return exitInternal, err
	}
	if e.steps != nil {
		if err := e.steps.write(e.job); err != nil {
			return exitInternal, err
		}
	}
	e.finished()
	return e.printFooter(), nil
}

// stopped ends a run a signal stopped in order: every file that has a
// record is written, valid, and the run says what it kept.
func (e *engine) stopped() (int, error) {
	err := e.sink.commit(true)
	e.finished()
	var s any = "interrupted in another process of the job"
	if sig, ok := e.interrupted(); ok {
		s = sig
	}
	cut := ""
	if e.cut != "" {
		cut = "; " + e.cut
	}
	if e.job == nil || e.job.proc == 0 { // the others have no files to tell of
		fmt.Fprintf(e.errw, "%s: %v: %d points measured%s; %s\n", e.t.Prog, s, e.points(), cut, e.sink.kept())
	}
	if err != nil {
		return exitInternal, err
	}
	return ExitInterrupted, nil
}

// finished tells the interrupt watcher that the files are complete: a
// signal now lets the run end with its own code.
func (e *engine) finished() {
	if e.intr != nil {
		e.intr.finished.Store(true)
	}
}

// points is how many points the run finished.
func (e *engine) points() int64 {
	if e.intr == nil {
		return 0
	}
	return e.intr.points.Load()
}

// allocBuffers gives every rank a send and a recv buffer of maxBytes (plus
// the -u offset); calls rotate through them. touch prefaults them: not
// for a backend whose calls run on device twins (the host buffers then
// only stage the checks' data, and touching 8 GiB for -g 4 -e 1G took
// seconds a run). A run that checks gets a buffer of expected values as
// large, and one of -K a reference buffer (rankBuffers counts them all).
// With syms (-R 2), the send and recv buffers are the ranks' windows.
func allocBuffers(n int, maxBytes int64, unalign int, touch, expect, ref bool, syms []*symRank) []rankBufs {
	size := bufBytes(maxBytes, unalign)
	bufs := make([]rankBufs, n)
	for i := range bufs {
		if syms != nil {
			bufs[i] = rankBufs{send: syms[i].send, recv: syms[i].recv}
		} else {
			bufs[i] = rankBufs{send: make([]byte, size), recv: make([]byte, size)}
		}
		if touch {
			prefault(bufs[i].send)
			prefault(bufs[i].recv)
		}
		if expect {
			bufs[i].expect = make([]byte, size)
		}
		if ref {
			bufs[i].ref = make([]byte, 0, size)
		}
	}
	return bufs
}

// bufBytes is the size of each send and recv buffer: the largest size,
// the -u offset and room to spare.
func bufBytes(maxBytes int64, unalign int) int { return int(maxBytes) + unalign*8 + 64 }

// exitCode maps an error from the stack to nccl-tests' result codes.
func exitCode(err error) int {
	var ue *usageError
	switch {
	case errors.As(err, &ue):
		return exitInvalidUsage
	case errors.Is(err, ccl.ErrTimeout):
		return exitTimeout
	case isCUDAError(err):
		return exitCUDA
	default:
		return exitStack
	}
}

// gitRev is the VCS revision the binary was built from, if recorded.
func gitRev() string {
	info, ok := debug.ReadBuildInfo()
	if !ok {
		return ""
	}
	rev, dirty := "", false
	for _, s := range info.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.modified":
			dirty = s.Value == "true"
		}
	}
	if dirty && rev != "" {
		rev += "-dirty"
	}
	return rev
}

// probeMax is the size of copyBandwidth's buffers, unless the memory
// limit makes it smaller (engine.probeBytes).
const probeMax = 64 << 20

// copyBandwidth is single-goroutine copy() of size bytes, in GB/s (median
// of 5).
func copyBandwidth(size int) float64 {
	src, dst := make([]byte, size), make([]byte, size)
	copy(dst, src)
	var v []float64
	for k := 0; k < 5; k++ {
		t := time.Now()
		copy(dst, src)
		v = append(v, float64(size)/time.Since(t).Seconds()/1e9)
	}
	sort.Float64s(v)
	return v[2]
}

// prefault touches every page, so first-touch page faults happen here and
// not inside timed iterations that rotate onto fresh memory (GPU memory
// from cudaMalloc has no such cost).
func prefault(b []byte) {
	for i := 0; i < len(b); i += 4096 {
		b[i] = 0
	}
}
