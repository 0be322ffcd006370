package results

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"time"
)

// NCCLHeader is what an nccl-tests -J document says before its results.
type NCCLHeader struct {
	StartTime   time.Time         // start_time, written in local time; zero: now
	Args        []string          // args: the command line, program first
	Env         map[string]string // env: only the variables KeepEnv keeps are written
	NCCLVersion int               // nccl_version: NCCL's version code; 0 for gccl
	Config      NCCLConfig
	// GCCL is the configuration the document's rows ran with, written as
	// "gccl_config" (a key of ours: nccl-tests' readers skip it; ours label
	// the records with it); nil writes none.
	GCCL *NCCLRunConfig
}

// NCCLRunConfig is "gccl_config": the forced algorithm, protocol, channel
// count and Simple buffer of a document's rows ("auto" and 0: the stack's
// own choice).
type NCCLRunConfig struct {
	Algorithm string `json:"algorithm"`
	Protocol  string `json:"protocol"`
	Channels  int    `json:"channels"`
	BuffSize  int64  `json:"buffsize"`
	// DeviceImpl, DeviceCTAs and DeviceCoops are Record's: the -D kernel,
	// its -V and the coops that ran.
	DeviceImpl  string `json:"device_impl,omitempty"`
	DeviceCTAs  int    `json:"device_ctas,omitempty"`
	DeviceCoops int    `json:"device_coops,omitempty"`
}

// NCCLConfig is the "config" object: the sweep and how it ran.
type NCCLConfig struct {
	NThreads, NGPUs    int
	MinBytes, MaxBytes int64
	StepFactor         int64 // > 1: written as step_factor; otherwise StepBytes as step_bytes
	StepBytes          int64
	WarmupIters        int
	Iterations         int
	AggIters           int // aggregated_iterations
	Validation         int // number of checks; 0: off
	Graph              int
	Blocking           bool
	PerIterTiming      bool
	PerIterSkip        int
	ParallelInit       bool
	Devices            []NCCLDevice // nccl-tests lists one per process
}

// NCCLDevice is one entry of config.devices.
type NCCLDevice struct {
	Rank, Group, Pid int
	Hostname         string
	Device           int
	DeviceHex        string // "0000:00:06"
	DeviceInfo       string // "NVIDIA H200"
}

// NCCLRowKey is the start of a result row: what was measured.
type NCCLRowKey struct {
	Size, Count    int64
	Type, RedOp    string
	Root           int
	ActualIters    int
	ExperimentName string // nccl-tests: "" except for trace replay; we write the testColl name
}

// NCCLRowResult is one placement of a result row.
type NCCLRowResult struct {
	TimeUs, AlgBw, BusBw float64
	Wrong                int64        // -1: not checked, written as null
	PerIter              *NCCLPerIter // nil: no per-iteration timing
}

// NCCLPerIter is a placement's per-iteration report (-I). Zero statistics
// are taken as unknown and left out.
type NCCLPerIter struct {
	Skipped                                  int
	MinUs, MaxUs, AvgUs, P50Us, P95Us, P99Us float64
	StdevUs, CVPct                           float64
	TimesUs                                  []float64
}

// NCCLFooter is what follows the results.
type NCCLFooter struct {
	OutOfBounds int       // out_of_bounds.count; okay is count == 0
	AvgBusBw    float64   // average_bus_bandwidth.bandwidth
	AvgBusBwOK  *bool     // average_bus_bandwidth.okay; nil: not checked, written as null
	EndTime     time.Time // zero: now
}

// An NCCLJSONWriter writes an nccl-tests -J document (version 3)
// incrementally, so a harness can emit rows as it measures them:
//
//	w, err := NewNCCLJSONWriter(f, hdr) // header, up to "results":[
//	err = w.AddRow(key, out, in)        // one row per size, flushed
//	err = w.Close(footer)               // "]", footer, end_time, "}"
//
// Until Close the output is an unterminated document, as nccl-tests leaves
// it when a run dies; the reader reports it as truncated and keeps the rows.
//
// Differences from nccl-tests, on purpose: booleans are JSON true/false,
// not the strings "true"/"false"; "env" holds only the variables KeepEnv keeps,
// not the whole environment; nwrong is an integer (null when not checked);
// average_bus_bandwidth.okay is null when not checked (nccl-tests:
// "unchecked"); non-finite doubles are "nan"/"inf"/"-inf". Each result row
// is on its own line so that positions (Record.Source) mean something.
type NCCLJSONWriter struct {
	w    *bufio.Writer
	rows int
	done bool
}

// NewNCCLJSONWriter writes hdr to w and returns a writer for the rows.
func NewNCCLJSONWriter(w io.Writer, hdr NCCLHeader) (*NCCLJSONWriter, error) {
	c := hdr.Config
	cfg := ncclConfigJSON{
		NThreads: c.NThreads, NGPUs: c.NGPUs, MinBytes: c.MinBytes, MaxBytes: c.MaxBytes,
		WarmupIters: c.WarmupIters, Iterations: c.Iterations, AggIters: c.AggIters,
		Validation: c.Validation, Graph: c.Graph, Blocking: jsonBool(c.Blocking),
		PerIterTiming: jsonBool(c.PerIterTiming), PerIterSkip: c.PerIterSkip,
		ParallelInit: jsonBool(c.ParallelInit), Devices: []ncclDeviceJSON{},
	}
	if c.StepFactor > 1 {
		cfg.StepFactor = &c.StepFactor
	} else {
		cfg.StepBytes = &c.StepBytes
	}
	for _, d := range c.Devices {
		cfg.Devices = append(cfg.Devices, ncclDeviceJSON(d))
	}
	start := hdr.StartTime
	if start.IsZero() {
		start = time.Now()
	}
	args := hdr.Args
	if args == nil {
		args = []string{}
	}
	nw := &NCCLJSONWriter{w: bufio.NewWriter(w)}
	var err error
	put := func(key string, v any) {
		if err != nil {
			return
		}
		var b []byte
		if b, err = json.Marshal(v); err == nil {
			_, err = fmt.Fprintf(nw.w, "%q:%s,", key, b)
		}
	}
	nw.w.WriteString("{")
	put("version", NCCLJSONVersion)
	put("start_time", start.Local().Format(ncclTimeLayout))
	put("args", args)
	put("env", envList(hdr.Env))
	put("nccl_version", hdr.NCCLVersion)
	put("config", cfg)
	if hdr.GCCL != nil {
		put("gccl_config", hdr.GCCL)
	}
	if err != nil {
		return nil, fmt.Errorf("results: nccl-tests JSON header: %w", err)
	}
	nw.w.WriteString(`"results":[`)
	return nw, nw.w.Flush()
}

// AddRow writes one result row and flushes it. out may be nil (nccl-tests
// writes "out_of_place":null for trace replay); so may in.
func (w *NCCLJSONWriter) AddRow(key NCCLRowKey, out, in *NCCLRowResult) error {
	if w.done {
		return errors.New("results: AddRow after Close")
	}
	row := ncclRowJSON{
		Size: key.Size, Count: key.Count, Type: key.Type, RedOp: key.RedOp,
		Root:             json.RawMessage(fmt.Sprintf(`"%6d"`, key.Root)),
		ActualIterations: &key.ActualIters, ExperimentName: key.ExperimentName,
	}
	row.OutOfPlace, row.OutOfPlacePerIter = placeJSON(out)
	row.InPlace, row.InPlacePerIter = placeJSON(in)
	b, err := json.Marshal(row)
	if err != nil {
		return fmt.Errorf("results: nccl-tests JSON row %d: %w", key.Size, err)
	}
	if w.rows > 0 {
		w.w.WriteByte(',')
	}
	w.rows++
	w.w.WriteByte('\n')
	w.w.Write(b)
	return w.w.Flush()
}

func placeJSON(r *NCCLRowResult) (*ncclPlaceJSON, *ncclPerIterJSON) {
	if r == nil {
		return nil, nil
	}
	t := jsonFloat(r.TimeUs)
	p := &ncclPlaceJSON{Time: &t, AlgBw: jsonFloat(r.AlgBw), BusBw: jsonFloat(r.BusBw)}
	if r.Wrong >= 0 {
		w := jsonFloat(r.Wrong)
		p.NWrong = &w
	}
	if r.PerIter == nil {
		return p, nil
	}
	s := r.PerIter
	pi := &ncclPerIterJSON{
		Skipped: s.Skipped, MinUs: jsonFloat(s.MinUs), MaxUs: jsonFloat(s.MaxUs),
		AvgUs: jsonFloat(s.AvgUs), P50Us: jsonFloat(s.P50Us), P95Us: jsonFloat(s.P95Us),
		P99Us: jsonFloat(s.P99Us), StdevUs: jsonFloat(s.StdevUs), CVPct: jsonFloat(s.CVPct),
	}
	for _, t := range s.TimesUs {
		pi.TimesUs = append(pi.TimesUs, jsonFloat(t))
	}
	return p, pi
}

// Close writes the footer and end_time and ends the document. It does not
// close the underlying writer.
func (w *NCCLJSONWriter) Close(f NCCLFooter) error {
	if w.done {
		return errors.New("results: Close called twice")
	}
	w.done = true
	end := f.EndTime
	if end.IsZero() {
		end = time.Now()
	}
	oob, err1 := json.Marshal(ncclCheckJSON{Count: f.OutOfBounds, Okay: f.OutOfBounds == 0})
	avg, err2 := json.Marshal(ncclAvgBwJSON{Bandwidth: jsonFloat(f.AvgBusBw), Okay: f.AvgBusBwOK})
	ts, err3 := json.Marshal(end.Local().Format(ncclTimeLayout))
	if err := errors.Join(err1, err2, err3); err != nil {
		return fmt.Errorf("results: nccl-tests JSON footer: %w", err)
	}
	if w.rows > 0 {
		w.w.WriteByte('\n')
	}
	fmt.Fprintf(w.w, `],"out_of_bounds":%s,"average_bus_bandwidth":%s,"end_time":%s}`+"\n", oob, avg, ts)
	return w.w.Flush()
}
