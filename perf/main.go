// Package perf is the engine of the nccl-tests-compatible perf binaries
// (nccl-tests' common.cu): flags, sizes, buffers, timing, checks, printing
// and machine-readable results. Each cmd/<coll>_perf main is one call to Main.
package perf

import (
	"cmp"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"runtime"
	"runtime/debug"
	"runtime/pprof"
	"runtime/trace"
	"slices"
	"sort"
	"strconv"
	"strings"
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
	if o.NP > 0 {
		return launchProcesses(t, o, args, stdout, stderr)
	}
	// Signals are handled from here until the run returns, its files
	// written and its job left (interrupt.go): registered first, stopped last.
	intr := watchInterrupts(t.Prog, stderr)
	defer intr.stop()
	j, err := joinJob(os.LookupEnv, o.timeout())
	if err != nil {
		fmt.Fprintf(stderr, "%s: %v\n", t.Prog, err)
		return exitCode(err)
	}
	defer j.close()
	intr.quiet.Store(j != nil && j.proc != 0)
	intr.alone.Store(j == nil && o.Threads == 1)
	switch {
	case be != nil:
	case o.Backend == "nccl":
		nranks := o.nRanks() * j.size()
		nb, err := newNCCLBackend(o, j, nranks)
		if err != nil {
			fmt.Fprintf(stderr, "%s: --backend nccl: %v\n", t.Prog, err)
			return exitCUDA
		}
		be = nb
		defer nb.Close()
	default:
		be = Embedded{job: j}
	}
	if eb, ok := be.(Embedded); ok { // a test's too: the stack reads no variable itself
		eb.cfg = o.stackConfig()
		be = eb
	}
	e := &engine{t: t, o: o, be: be, out: stdout, errw: stderr, started: time.Now(), env: o.recordEnv(), job: j, probeBytes: probeMax, intr: intr}
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
	code, err := e.run()
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

// runConfigs runs every configuration, side by side or one after another.
func (e *engine) runConfigs(configs []RunConfig, sizes []int64, ops []reduce.Op, roots []int, label bool) (int, error) {
	if e.o.Interleave {
		for _, g := range interleaveGroups(configs) {
			if code, err := e.runInterleaved(g, sizes, ops, roots, label); err != nil {
				return code, err
			}
		}
		return exitOK, nil
	}
	for _, rc := range configs {
		// Before its communicators are made: a stopped run makes none.
		if stop, err := e.stopAsked(); err != nil || stop {
			return exitStack, cmp.Or(err, errInterrupted)
		}
		if code, err := e.runConfig(rc, sizes, ops, roots, label); err != nil {
			return code, err
		}
	}
	return exitOK, nil
}

// runConfig runs every cycle, type, op, root and size of one configuration.
func (e *engine) runConfig(rc RunConfig, sizes []int64, ops []reduce.Op, roots []int, label bool) (int, error) {
	o := e.o
	comms, err := e.be.Init(e.n, rc)
	if err != nil {
		return exitInvalidUsage, fmt.Errorf("config %s: %w", rc.Label(), err)
	}
	defer func() {
		for _, c := range comms {
			c.Destroy()
		}
	}()
	r, err := e.newRunner(comms)
	if err != nil {
		return exitInternal, err
	}
	defer r.close()
	if err := e.warmUp(r, sizes, ops, roots, nil); err != nil {
		return exitCode(err), err
	}
	if label {
		fmt.Fprintf(e.out, "# Config: %s\n", rc.Label())
	}
	fmt.Fprint(e.out, resultHeader(o.CPUTime != 0, o.Timestamps != 0, o.PerIter != 0, o.Bitwise > 0))
	err = e.eachPoint(sizes, ops, roots, func(p point) error {
		if err := e.runPoint(r, rc, p); err != nil {
			return err
		}
		e.prog.step()
		return nil
	})
	if err != nil {
		return exitCode(err), err
	}
	return exitOK, nil
}

// eachPoint calls f for every cycle, type, op, root and size, in
// nccl-tests' order, until f fails.
func (e *engine) eachPoint(sizes []int64, ops []reduce.Op, roots []int, f func(point) error) error {
	o := e.o
	for cycle := 0; o.Cycles == 0 || cycle < o.Cycles; cycle++ {
		for _, dt := range o.Types {
			for _, op := range ops {
				for _, root := range roots {
					for _, size := range sizes {
						if stop, err := e.stopAsked(); err != nil || stop {
							return cmp.Or(err, errInterrupted)
						}
						p := newPoint(e.t, size, dt, op, root, e.n)
						if err := f(p); err != nil {
							if errors.Is(err, errInterrupted) {
								e.cut = fmt.Sprintf("the size in progress (%s %s) was stopped unfinished and dropped", results.SizeLabel(p.bytes), p.dt)
							}
							return err
						}
						if e.intr != nil {
							e.intr.points.Add(1)
						}
					}
				}
			}
		}
	}
	return nil
}

// runInterleaved runs every cycle, type, op, root and size of configs on
// one set of communicators, measuring the configurations side by side at
// each size (runner.measureInterleaved). Records go out as each size is
// done; the table of each configuration prints at the end, as runConfig's
// would.
func (e *engine) runInterleaved(configs []RunConfig, sizes []int64, ops []reduce.Op, roots []int, label bool) (int, error) {
	o := e.o
	start := configs[0]
	start.Proto, start.Algo, start.NChannels = "", "", 0
	start.MaxNChannels = 1
	forces := make([]ccl.Forced, len(configs))
	for i, rc := range configs {
		forces[i] = forcedOf(rc)
		start.MaxNChannels = max(start.MaxNChannels, rc.NChannels, forces[i].MaxNChannels)
	}
	comms, err := e.be.Init(e.n, start)
	if err != nil {
		return exitInvalidUsage, fmt.Errorf("interleaved configs: %w", err)
	}
	defer func() {
		for _, c := range comms {
			c.Destroy()
		}
	}()
	r, err := e.newRunner(comms)
	if err != nil {
		return exitInternal, err
	}
	defer r.close()
	if err := e.warmUp(r, sizes, ops, roots, forces); err != nil {
		return exitCode(err), err
	}
	rows := make([][]string, len(configs))
	err = e.eachPoint(sizes, ops, roots, func(p point) error {
		var ms [2][]measurement
		for k, inPlace := range e.placements() {
			var err error
			if ms[k], err = r.measureInterleaved(p, inPlace, forces); err != nil {
				return fmt.Errorf("interleaved configs: %w", err)
			}
		}
		for i, rc := range configs {
			var mine [2]*measurement
			for k := range ms {
				if ms[k] != nil {
					mine[k] = &ms[k][i]
				}
			}
			row, err := e.pointRow(rc, p, mine)
			if err != nil {
				return err
			}
			rows[i] = append(rows[i], row)
			e.prog.step()
		}
		return nil
	})
	if err != nil {
		return exitCode(err), err
	}
	for i, rc := range configs {
		if label {
			fmt.Fprintf(e.out, "# Config: %s\n", rc.Label())
		}
		fmt.Fprint(e.out, resultHeader(o.CPUTime != 0, o.Timestamps != 0, o.PerIter != 0, o.Bitwise > 0))
		for _, row := range rows[i] {
			fmt.Fprintln(e.out, row)
		}
	}
	return exitOK, nil
}

// runPoint measures both placements of one point and prints its row.
func (e *engine) runPoint(r *runner, rc RunConfig, p point) error {
	var ms [2]*measurement
	for k, inPlace := range e.placements() {
		m, err := r.measure(p, inPlace)
		if err != nil {
			return err
		}
		ms[k] = &m
	}
	row, err := e.pointRow(rc, p, ms)
	if err != nil {
		return err
	}
	fmt.Fprintln(e.out, row)
	return nil
}

// placements are the placements measured: out of place, then in place
// unless --out-of-place-only.
func (e *engine) placements() []bool {
	if e.o.OutOfPlaceOnly {
		return []bool{false}
	}
	return []bool{false, true}
}

// pointRow records the measurements of one point (ms: out of place, in
// place; nil when not measured) and returns its table row.
func (e *engine) pointRow(rc RunConfig, p point, ms [2]*measurement) (string, error) {
	var row strings.Builder
	row.WriteString(rowPreamble(p.bytes, int64(p.param), p.dt.String(), opName(e.t, p.op.String()), p.root))
	for k, inPlace := range []bool{false, true} {
		m := ms[k]
		if m == nil {
			fmt.Fprintf(&row, "  %7s  %6s  %6s  %6s", "-", "-", "-", "-")
			break
		}
		algBw, busBw := e.t.BusBw(p.param, p.dt.Size(), e.n, m.timeUs/1e6)
		row.WriteString(placementCols{timeUs: m.timeUs, algBw: algBw, busBw: busBw, wrong: m.wrong, bitdiff: m.bitdiff, iter: m.iter}.format(e.o.Bitwise > 0))
		e.bwSum += busBw
		e.bwCount++
		if m.wrong > 0 {
			e.wrong += m.wrong
		}
		rec := e.record(rc, p, inPlace, *m, algBw, busBw)
		e.keepForPlot(rec)
		if err := e.sink.add(rc, rec); err != nil {
			return "", err
		}
	}
	if e.o.Timestamps != 0 {
		fmt.Fprintf(&row, "%21s", time.Now().Format("2006-01-02 15:04:05"))
	}
	return row.String(), nil
}

// toNanosecond rounds times in us to the nanosecond, the clock's
// resolution: the digits past it are float noise from the conversion
// (1.3579999999999999), bytes in every result file that mean nothing.
func toNanosecond(us []float64) []float64 {
	out := make([]float64, len(us))
	for i, t := range us {
		out[i] = math.Round(t*1e3) / 1e3
	}
	return out
}

// record builds the result record of one placement.
func (e *engine) record(rc RunConfig, p point, inPlace bool, m measurement, algBw, busBw float64) results.Record {
	host, _ := os.Hostname()
	place := results.OutOfPlace
	if inPlace {
		place = results.InPlace
	}
	r := results.Record{
		Schema: results.SchemaVersion, Tool: "gccl " + Version, GitRev: gitRev(), Timestamp: e.started,
		Host: host, CPU: cpuModel(), Cores: runtime.NumCPU(), GoVersion: runtime.Version(), Backend: e.be.Name(),
		NRanks: e.n, NProcs: e.job.size(), RanksPerProc: e.n / e.job.size(), Launcher: e.job.launcher(), NHosts: max(m.chosen.NHosts, 1),
		Collective: e.t.Collective, Type: p.dt.String(), Op: opName(e.t, p.op.String()), Root: p.root,
		Algorithm: orAuto(rc.Algo), Protocol: orAuto(rc.Proto), Channels: rc.NChannels, BuffSize: rc.BuffSize,
		ChosenAlgo: m.chosen.Algo, ChosenProto: m.chosen.Proto, ChosenCh: m.chosen.NChannels,
		ChosenBy: m.chosen.Source, PredictedUs: m.chosen.PredictedUs,
		Placement: place, Size: p.bytes, Count: int64(p.param),
		Iterations: e.o.Iters, AggIters: e.o.AggIters, TimeUs: m.timeUs, StopReason: m.stop,
		AlgBw: algBw, BusBw: busBw, Wrong: m.wrong, RefCopyGBps: e.refCopy, Interleaved: e.o.Interleave,
		Env: e.env,
	}
	if v, ok := e.be.(versioned); ok {
		r.NCCLVersion, r.CUDAVersion, _ = v.Versions()
		r.GraphLaunches, r.Register = e.o.Graph, e.o.Register
	}
	r.ChosenBuff = rc.BuffSize
	if r.ChosenBuff == 0 && r.Backend == "embedded" {
		r.ChosenBuff = ccl.DefaultSimpleBuffSize
		if b := m.chosen.BuffSize; b > 0 && m.chosen.Proto == "Simple" {
			r.ChosenBuff = int64(b) // 4 MiB across hosts (ccl.NetSimpleBuffSize)
		}
	} else if r.ChosenBuff == 0 {
		r.ChosenBuff = 4 << 20 // NCCL's
	}
	if m.iter != nil {
		r.MedianUs, r.MinUs, r.MaxUs, r.P99Us = m.iter.medUs, m.iter.minUs, m.iter.maxUs, m.iter.p99Us
		r.IterTimesUs = toNanosecond(m.iters)
		r.Iterations = len(m.iters)
	}
	return r
}

func (e *engine) printHeader() {
	o := e.o
	fmt.Fprintf(e.out, "# nccl-tests version %s compatible: gccl %s backend=%s\n", NCCLTestsVersion, Version, e.be.Name())
	if v, ok := e.be.(versioned); ok {
		nv, cv, paths := v.Versions()
		fmt.Fprintf(e.out, "# NCCL %s, CUDA runtime %s: %s\n", nv, cv, paths)
		if l, ok := e.be.(interface{ TuningLog() string }); ok && l.TuningLog() != "" {
			fmt.Fprintf(e.out, "# NCCL's TUNING log (%s) fills the chosen_* fields of the records; the logging adds host time to every call\n", l.TuningLog())
		}
	}
	fmt.Fprintf(e.out, "# Collective test starting: %s\n", e.t.Prog)
	if o.TuningFile != "" {
		fmt.Fprintf(e.out, "# Tuning file: %s\n", o.TuningFile)
	}
	step, kind := o.StepBytes, "bytes"
	if o.StepFactor > 1 {
		step, kind = o.StepFactor, "factor"
	}
	check := o.Check
	fmt.Fprintf(e.out, "# nThread %d nGpus %d minBytes %d maxBytes %d step: %d(%s) warmup iters: %d iters: %d agg iters: %d validation: %d graph: %d unalign: %d\n",
		o.Threads, o.RanksPerThread, o.MinBytes, o.MaxBytes, step, kind, o.Warmup, o.Iters, o.AggIters, check, o.Graph, o.Unalign)
	switch o.Blocking {
	case 1:
		fmt.Fprintln(e.out, "# Blocking Enabled: wait and barrier after each inner iteration (-m) ")
	case 2:
		fmt.Fprintln(e.out, "# Blocking Enabled: wait after each inner iteration (-m), no barrier ")
	case 3:
		fmt.Fprintln(e.out, "# Blocking Enabled: wait and barrier after each outer iteration (-n); time excludes barrier ")
	}
	if o.PerIter != 0 {
		clock := "wall-clock"
		if _, ok := e.be.(versioned); ok && perIterEvents(o) {
			clock = "CUDA event" // a device backend's streams time each iteration (devtime.go)
		}
		fmt.Fprintf(e.out, "# Per-Iteration Report: %s timing; i_* uses max over threads \n", clock)
	}
	if o.Bitwise > 0 {
		fmt.Fprintf(e.out, "# Bitwise Repeatability: %d comparisons after one reference run \n", o.Bitwise)
	}
	if o.CheckTimed {
		fmt.Fprintln(e.out, "# Check Timed: every timed iteration is verified (clock paused while checking; no buffer rotation)")
	}
	for _, n := range o.notes {
		fmt.Fprintf(e.out, "# Note: %s\n", n)
	}
	fmt.Fprintln(e.out, "#")
	fmt.Fprintln(e.out, "# Using devices")
	for _, l := range e.devices {
		fmt.Fprintln(e.out, l)
	}
	if o.MemReport != 0 {
		per := countBufs(e.rankBuffers()) * (o.MaxBytes + o.bufPad())
		fmt.Fprintf(e.out, "# %-20s : buffers %s per rank | Total %s\n", "Host memory usage", results.SizeLabel(per), results.SizeLabel(per*int64(e.n)))
	}
}

// gatherDevices makes the "# Using devices" lines: one per rank of every
// process (its host and pid), in rank order.
func (e *engine) gatherDevices() error {
	host, _ := os.Hostname()
	local, base := e.n, 0
	if e.job != nil {
		local = e.n / e.job.procs
		base = e.job.proc * local
	}
	var mine []string
	for r := base; r < base+local; r++ {
		bus, desc := e.be.Device(r)
		mine = append(mine, fmt.Sprintf("#  Rank %2d Group %2d Pid %6d on %10s device %2d [%s] %s", r, 0, os.Getpid(), host, r-base, bus, desc))
	}
	var err error
	e.devices, err = e.job.deviceLines(mine)
	return err
}

// printFooter prints nccl-tests' summary and returns the exit code.
func (e *engine) printFooter() int {
	avg := 0.0
	if e.bwCount > 0 {
		avg = e.bwSum / float64(e.bwCount)
	}
	minBw, checked := minBandwidth()
	status := ""
	failedBw := checked && avg < minBw*0.9
	if checked {
		status = "OK"
		if failedBw {
			status = "FAILED"
		}
	}
	oob := "OK"
	if e.wrong > 0 {
		oob = "FAILED"
	}
	fmt.Fprintf(e.out, "# %-20s : %d %s\n", "Out of bounds values", e.wrong, oob)
	fmt.Fprintf(e.out, "# %-20s : %s %s\n", "Avg bus bandwidth", strconv.FormatFloat(avg, 'g', 6, 64), status)
	fmt.Fprintln(e.out, "#")
	fmt.Fprintf(e.out, "# Collective test concluded: %s\n", e.t.Prog)
	fmt.Fprintln(e.out, "#")
	fmt.Fprintln(e.out)
	if e.wrong > 0 || failedBw {
		return exitDataError
	}
	return exitOK
}

// minBwEnv set a floor on the average bus bandwidth (GB/s): below 0.9 of
// it the run fails (exit 7), as nccl-tests does with NCCL_TESTS_MIN_BW.
var minBwEnv = []string{"GCCL_MIN_BW", "NCCL_TESTS_MIN_BW"}

// minBandwidth reads the bus bandwidth floor (validate refused a bad one).
func minBandwidth() (float64, bool) {
	for _, k := range minBwEnv {
		if v, ok := os.LookupEnv(k); ok && strings.TrimSpace(v) != "" { // empty: unset
			if f, err := strconv.ParseFloat(strings.TrimSpace(v), 64); err == nil {
				return f, true
			}
		}
	}
	return 0, false
}

// allocBuffers gives every rank a send and a recv buffer of maxBytes (plus
// the -u offset); calls rotate through them. touch prefaults them: not
// for a backend whose calls run on device twins (the host buffers then
// only stage the checks' data, and touching 8 GiB for -g 4 -e 1G took
// seconds a run). A run that checks gets a buffer of expected values as
// large, and one of -K a reference buffer (rankBuffers counts them all).
func allocBuffers(n int, maxBytes int64, unalign int, touch, expect, ref bool) []rankBufs {
	size := int(maxBytes) + unalign*8 + 64
	bufs := make([]rankBufs, n)
	for i := range bufs {
		bufs[i] = rankBufs{send: make([]byte, size), recv: make([]byte, size)}
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

// configs is the cartesian product of the sweep axes ("auto" where unset).
func (o *Options) configs() []RunConfig {
	protos, algos, chans, buffs := o.Protos, o.Algos, o.Channels, o.BuffSizes
	if len(protos) == 0 {
		protos = []string{""}
	}
	if len(algos) == 0 {
		algos = []string{""}
	}
	if len(chans) == 0 {
		chans = []int{0}
	}
	if len(buffs) == 0 {
		buffs = []int64{0}
	}
	var out []RunConfig
	add := func(rc RunConfig) {
		rc.Timeout, rc.RanksPerHost = o.timeout(), o.RanksPerHost
		out = append(out, o.resolve(rc))
	}
	if len(o.ConfigList) > 0 {
		for _, rc := range o.ConfigList {
			for _, b := range buffs {
				add(RunConfig{Proto: rc.Proto, Algo: rc.Algo, NChannels: rc.NChannels, BuffSize: b})
			}
		}
		return out
	}
	for _, p := range protos {
		for _, a := range algos {
			for _, c := range chans {
				if onBoard(a) && ((p != "" && p != "LL") || c > 1) {
					continue // it runs LL on one channel: no such configuration
				}
				for _, b := range buffs {
					add(RunConfig{Proto: p, Algo: a, NChannels: c, BuffSize: b})
				}
			}
		}
	}
	return out
}

func (o *Options) hasAxes() bool {
	return len(o.Protos)+len(o.Algos)+len(o.Channels)+len(o.BuffSizes)+len(o.ConfigList) > 0
}

// interleaveGroups splits configs into the sets --interleave measures on one
// set of communicators: those that share a buffer size (a communicator's
// FIFOs have one), in order of first appearance.
func interleaveGroups(configs []RunConfig) [][]RunConfig {
	var groups [][]RunConfig
	at := map[int64]int{}
	for _, rc := range configs {
		i, ok := at[rc.BuffSize]
		if !ok {
			i = len(groups)
			at[rc.BuffSize] = i
			groups = append(groups, nil)
		}
		groups[i] = append(groups[i], rc)
	}
	return groups
}

// forcedOf is what a rank is forced to for configuration rc on a
// communicator started for several: an auto channel count is capped at the
// stack's default, so "auto" decides as a communicator of its own would.
func forcedOf(rc RunConfig) ccl.Forced {
	f := ccl.Forced{Algo: rc.Algo, Proto: rc.Proto, NChannels: rc.NChannels}
	if rc.NChannels == 0 {
		f.MaxNChannels = ccl.DefaultMaxNChannels()
	}
	return f
}

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
