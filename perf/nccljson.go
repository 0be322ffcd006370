package perf

import (
	"os"
	"time"

	"github.com/gccl/gccl/results"
)

// ncclJSON collects the run's records and writes nccl-tests' -J document
// (version 3, with real JSON booleans) when the run ends.
type ncclJSON struct {
	out     *output // its file
	o       *Options
	be      Backend
	started time.Time
	rc      RunConfig // the configuration of every row
	recs    []results.Record
}

func newNCCLJSON(out *output, o *Options, be Backend, started time.Time, rc RunConfig) *ncclJSON {
	return &ncclJSON{out: out, o: o, be: be, started: started, rc: rc}
}

func (j *ncclJSON) add(r results.Record) { j.recs = append(j.recs, r) }

func (j *ncclJSON) finish() error {
	o := j.o
	hdr, rows, foot := results.NCCLDocument(j.recs, append([]string{os.Args[0]}, o.args...))
	hdr.StartTime = j.started
	hdr.Env = o.recordEnv()
	hdr.GCCL = &results.NCCLRunConfig{Algorithm: j.rc.Algo.String(), Protocol: j.rc.Proto.String(), Channels: j.rc.NChannels, BuffSize: j.rc.BuffSize}
	if len(j.recs) > 0 {
		hdr.GCCL.DeviceImpl, hdr.GCCL.DeviceCTAs, hdr.GCCL.DeviceCoops = j.recs[0].DeviceImpl, j.recs[0].DeviceCTAs, j.recs[0].DeviceCoops
	}
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
	// The footer is this document's: its configuration's wrong elements
	// and average bus bandwidth (the whole run's when it is the only one).
	if minBw, checked := minBandwidth(); checked {
		ok := foot.AvgBusBw >= minBw*0.9
		foot.AvgBusBwOK = &ok
	}
	return results.WriteNCCLDocument(j.out.f, hdr, rows, foot)
}
