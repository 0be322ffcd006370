package perf

import (
	"io"
	"os"
	"time"

	"github.com/gccl/gccl/results"
)

// ncclJSON collects the run's records and writes nccl-tests' -J document
// (version 3, with real JSON booleans) when the run ends.
type ncclJSON struct {
	w       io.Writer
	o       *Options
	be      Backend
	started time.Time
	recs    []results.Record
}

func newNCCLJSON(w io.Writer, o *Options, be Backend, started time.Time) *ncclJSON {
	return &ncclJSON{w: w, o: o, be: be, started: started}
}

func (j *ncclJSON) add(r results.Record) { j.recs = append(j.recs, r) }

func (j *ncclJSON) finish(f footer) error {
	o := j.o
	hdr, rows, foot := results.NCCLDocument(j.recs, append([]string{os.Args[0]}, o.args...))
	hdr.StartTime = j.started
	hdr.Env = o.recordEnv()
	c := &hdr.Config
	c.NThreads, c.NGPUs = o.Threads, o.RanksPerThread
	c.MinBytes, c.MaxBytes = o.MinBytes, o.MaxBytes
	c.StepFactor, c.StepBytes = o.StepFactor, o.StepBytes
	c.WarmupIters, c.Iterations, c.AggIters = o.Warmup, o.Iters, o.AggIters
	c.Validation, c.Graph = o.Check, o.Graph
	c.Blocking, c.PerIterTiming, c.ParallelInit = o.Blocking != 0, o.PerIter != 0, o.ParallelInit != 0
	host, _ := os.Hostname()
	// nccl-tests lists one device per process: its first rank's.
	bus, desc := j.be.Device(0)
	c.Devices = []results.NCCLDevice{{Rank: 0, Pid: os.Getpid(), Hostname: host, Device: 0, DeviceHex: bus, DeviceInfo: desc}}
	foot.OutOfBounds = int(f.wrong)
	foot.AvgBusBw = f.avgBw
	if f.bwChecked {
		ok := f.bwOK
		foot.AvgBusBwOK = &ok
	}
	return results.WriteNCCLDocument(j.w, hdr, rows, foot)
}
