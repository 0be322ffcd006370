// Printing: the header, each point's row (and the record it writes to the
// result files), the devices and the footer with its bandwidth floor.

package perf

import (
	"fmt"
	"math"
	"os"
	"runtime"
	"strconv"
	"strings"
	"time"

	"github.com/gccl/gccl/lib/ccl"
	"github.com/gccl/gccl/results"
)

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
		Host: host, CPU: cpuModel(), Cores: runtime.NumCPU(), GoVersion: runtime.Version(), Backend: string(e.be.Name()),
		NRanks: e.n, NProcs: e.job.size(), RanksPerProc: e.n / e.job.size(), Launcher: e.job.launcher(), NHosts: max(m.chosen.NHosts, 1),
		Collective: e.t.Collective, Type: p.dt.String(), Op: opName(e.t, p.op.String()), Root: p.root,
		Algorithm: rc.Algo.String(), Protocol: rc.Proto.String(), Channels: rc.NChannels, BuffSize: rc.BuffSize,
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
	} else if e.o.Register == 2 {
		r.Register = 2 // symmetric windows
	}
	if e.dev != nil {
		r.DeviceImpl, r.DeviceCTAs, r.DeviceCoops = e.dev.impl, e.o.DeviceCTAs, e.devCoops
	}
	r.ChosenBuff = rc.BuffSize
	if r.ChosenBuff == 0 && e.be.Name() == BackendEmbedded {
		r.ChosenBuff = ccl.DefaultSimpleBuffSize
		if b := m.chosen.BuffSize; b > 0 && m.chosen.Proto == "Simple" {
			r.ChosenBuff = int64(b) // 4 MiB across hosts (ccl.NetSimpleBuffSize)
		}
	} else if r.ChosenBuff == 0 {
		r.ChosenBuff = 4 << 20 // NCCL's
	}
	if e.dev != nil {
		r.ChosenBuff = 0 // no buffers of the stack's: the kernel stores into the windows
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
	if e.dev != nil {
		fmt.Fprintf(e.out, "# Device implementation: -D %d %s: %s, %d coops per rank (-V%s), buffers in symmetric windows (-R 2)\n", o.DeviceImpl, e.dev.impl, e.dev.about, o.DeviceCTAs, e.dev.coopsNote())
	} else if o.Register == 2 && e.be.Name() == BackendEmbedded {
		fmt.Fprintln(e.out, "# Buffers: symmetric windows (-R 2: Comm.MemAlloc and WindowRegister on every rank)")
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
