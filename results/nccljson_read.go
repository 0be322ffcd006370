package results

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"math"
	"time"
)

// An NCCLJSONReader reads an nccl-tests -J document (versions 1 to 3, and
// what NCCLJSONWriter writes) and yields two Records per result row,
// out-of-place then in-place (a null placement yields none). The whole
// document is read at the first Scan.
//
// Mapping: Collective from experiment_name when set, else from the program
// in args[0] ("all_reduce_perf"), else from the file name; Op "none" for
// collectives that do not reduce; NRanks = nthreads x ngpus x len(devices)
// (one device entry per process); Iterations = actual_iterations (or
// config.iterations); Wrong = nwrong, -1 when null; Timestamp = start_time in
// local time; Env = the entries of "env" KeepEnv keeps; Algorithm,
// Protocol, Channels and BuffSize from NCCL_ALGO/GCCL_ALGO, NCCL_PROTO/
// GCCL_PROTO, GCCL_NCHANNELS or equal NCCL_MIN_/MAX_NCHANNELS, and
// NCCL_BUFFSIZE/GCCL_BUFFSIZE; when "env" is a whole environment (as
// nccl-tests writes it) an unset ALGO/PROTO means "auto"; a "gccl_config"
// (gccl's -J) sets all four and wins. Backend and Tool are "nccl-tests";
// Source is file:line:column of the row.
//
// A row that does not decode is skipped and reported (non-fatal). A
// truncated document (a run that died) yields the complete rows before the
// cut and a fatal error positioned at the end.
type NCCLJSONReader struct {
	name   string
	r      io.Reader
	data   []byte
	parsed bool
	recs   []Record
	rec    Record
	errs   errList
}

// NewNCCLJSONReader reads an nccl-tests -J document from r; name (a file
// name) positions errors and Sources.
func NewNCCLJSONReader(name string, r io.Reader) *NCCLJSONReader {
	return &NCCLJSONReader{name: name, r: r}
}

// Scan advances to the next record; false at the end.
func (rd *NCCLJSONReader) Scan() bool {
	if !rd.parsed {
		rd.parsed = true
		data, err := io.ReadAll(rd.r)
		if err != nil {
			rd.errs.fatal = fmt.Errorf("%s: %w", rd.name, err)
			return false
		}
		rd.data = data
		rd.parse()
	}
	if len(rd.recs) == 0 {
		return false
	}
	rd.rec, rd.recs = rd.recs[0], rd.recs[1:]
	return true
}

// Record returns the record read by the last successful Scan.
func (rd *NCCLJSONReader) Record() Record { return rd.rec }

// Err returns the errors met so far (joined), or nil.
func (rd *NCCLJSONReader) Err() error { return rd.errs.err() }

// at positions an error at a byte offset of the document.
func (rd *NCCLJSONReader) at(off int64, err error, msg string, args ...any) *SyntaxError {
	line, col := lineCol(rd.data, off)
	return &SyntaxError{File: rd.name, Line: line, Col: col, Msg: fmt.Sprintf(msg, args...), Err: err}
}

// rawAt is a JSON value and the offset where it starts.
type rawAt struct {
	off int64
	raw json.RawMessage
}

// scanDoc walks the top-level object, keeping each member and each results
// element with its offset. On a syntax error or truncation it returns what
// it has and a positioned error.
func (rd *NCCLJSONReader) scanDoc() (top map[string]rawAt, rows []rawAt, err error) {
	dec := json.NewDecoder(bytes.NewReader(rd.data))
	top = map[string]rawAt{}
	fail := func(err error) error {
		off := dec.InputOffset()
		var se *json.SyntaxError
		switch {
		case errors.As(err, &se):
			off = se.Offset
		case errors.Is(err, io.ErrUnexpectedEOF), errors.Is(err, io.EOF):
			return rd.at(int64(len(rd.data)), nil, "truncated nccl-tests JSON (did the run finish?)")
		}
		return rd.at(off, err, "malformed nccl-tests JSON")
	}
	value := func() (rawAt, error) {
		off := rd.valueStart(dec.InputOffset())
		var raw json.RawMessage
		if err := dec.Decode(&raw); err != nil {
			return rawAt{}, fail(err)
		}
		return rawAt{off: off, raw: raw}, nil
	}
	if tok, err := dec.Token(); err != nil {
		return nil, nil, fail(err)
	} else if tok != json.Delim('{') {
		return nil, nil, rd.at(0, nil, "nccl-tests JSON is not an object")
	}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return top, rows, fail(err)
		}
		key, _ := tok.(string)
		if key != "results" {
			v, err := value()
			if err != nil {
				return top, rows, err
			}
			top[key] = v
			continue
		}
		top[key] = rawAt{off: rd.valueStart(dec.InputOffset())}
		tok, err = dec.Token()
		if err != nil {
			return top, rows, fail(err)
		}
		if tok != json.Delim('[') {
			continue // null: no results
		}
		for dec.More() {
			v, err := value()
			if err != nil {
				return top, rows, err
			}
			rows = append(rows, v)
		}
		if _, err := dec.Token(); err != nil {
			return top, rows, fail(err)
		}
	}
	if _, err := dec.Token(); err != nil {
		return top, rows, fail(err)
	}
	return top, rows, nil
}

// valueStart skips white space and a ',' or ':' from off to the next value.
func (rd *NCCLJSONReader) valueStart(off int64) int64 {
	for off < int64(len(rd.data)) {
		switch rd.data[off] {
		case ' ', '\t', '\r', '\n', ',', ':':
			off++
		default:
			return off
		}
	}
	return off
}

// ncclHead is the part of the document every record shares.
type ncclHead struct {
	version   int
	start     time.Time
	args      []string
	env       map[string]string
	fullEnv   bool
	config    ncclConfigJSON
	gccl      *NCCLRunConfig // "gccl_config", when the document has one
	hosts     map[string]bool
	firstHost string
}

func (rd *NCCLJSONReader) parse() {
	top, rows, scanErr := rd.scanDoc()
	if scanErr != nil && len(rows) == 0 && top["version"].raw == nil {
		rd.errs.fatal = scanErr
		return
	}
	head, ok := rd.parseHead(top)
	if !ok {
		return
	}
	for _, row := range rows {
		recs, err := rd.parseRow(head, row)
		if err != nil {
			rd.errs.add(err)
			continue
		}
		if rd.errs.fatal != nil {
			return
		}
		rd.recs = append(rd.recs, recs...)
	}
	if scanErr != nil {
		rd.errs.fatal = scanErr
	} else if len(rows) == 0 {
		rd.errs.fatal = &SyntaxError{File: rd.name, Err: ErrNoResults,
			Msg: "nccl-tests JSON without a single result row (did the test run?)"}
	}
}

func (rd *NCCLJSONReader) parseHead(top map[string]rawAt) (ncclHead, bool) {
	var h ncclHead
	decode := func(key string, dst any) bool {
		v, ok := top[key]
		if !ok || v.raw == nil {
			return true
		}
		if err := json.Unmarshal(v.raw, dst); err != nil {
			rd.errs.fatal = rd.at(v.off+int64(jsonCol(err)), err, "nccl-tests JSON %q", key)
			return false
		}
		return true
	}
	var start string
	var env []string
	if !decode("version", &h.version) || !decode("start_time", &start) || !decode("args", &h.args) ||
		!decode("env", &env) || !decode("config", &h.config) || !decode("gccl_config", &h.gccl) {
		return h, false
	}
	if _, ok := top["version"]; !ok {
		rd.errs.fatal = rd.at(0, nil, `nccl-tests JSON without "version"`)
		return h, false
	}
	if h.version < 1 || h.version > NCCLJSONVersion {
		rd.errs.fatal = rd.at(top["version"].off, nil,
			"nccl-tests JSON version %d; this build reads versions 1 to %d", h.version, NCCLJSONVersion)
		return h, false
	}
	if start != "" {
		t, err := time.ParseInLocation(ncclTimeLayout, start, time.Local)
		if err != nil {
			rd.errs.add(rd.at(top["start_time"].off, err, "start_time"))
		}
		h.start = t
	}
	h.env = FilterEnv(env)
	for _, kv := range env {
		if k, _, ok := bytes.Cut([]byte(kv), []byte("=")); ok && !KeepEnv(string(k)) {
			h.fullEnv = true
			break
		}
	}
	for _, d := range h.config.Devices {
		if h.hosts == nil {
			h.hosts, h.firstHost = map[string]bool{}, d.Hostname
		}
		h.hosts[d.Hostname] = true
	}
	return h, true
}

func (rd *NCCLJSONReader) parseRow(h ncclHead, at rawAt) ([]Record, error) {
	var row ncclRowJSON
	if err := json.Unmarshal(at.raw, &row); err != nil {
		return nil, rd.at(at.off+int64(jsonCol(err)), err, "result row")
	}
	var root jsonInt = -1
	if len(row.Root) > 0 {
		if err := json.Unmarshal(row.Root, &root); err != nil {
			return nil, rd.at(at.off, err, "result row: root")
		}
	}
	test, ok := testOrUnknown(row.ExperimentName, false)
	if !ok && len(h.args) > 0 {
		test, ok = testOrUnknown(h.args[0], true)
	}
	if !ok {
		test, ok = testInText(rd.name)
	}
	if !ok {
		prog := ""
		if len(h.args) > 0 {
			prog = h.args[0]
		}
		rd.errs.fatal = rd.at(at.off, nil, "cannot tell which collective ran: experiment_name %q, program %q", row.ExperimentName, prog)
		return nil, nil
	}
	line, col := lineCol(rd.data, at.off)
	iters := h.config.Iterations
	if row.ActualIterations != nil {
		iters = *row.ActualIterations
	}
	base := Record{
		Schema:     SchemaVersion,
		Tool:       "nccl-tests",
		Timestamp:  h.start,
		Host:       h.firstHost,
		Backend:    "nccl-tests",
		Source:     fmt.Sprintf("%s:%d:%d", rd.name, line, col),
		NRanks:     h.config.NThreads * h.config.NGPUs * max(len(h.config.Devices), 1),
		NProcs:     len(h.config.Devices),
		NHosts:     len(h.hosts),
		Collective: test.collective,
		Type:       row.Type,
		Op:         normalizeOp(test, row.RedOp),
		Root:       int(root),
		Size:       row.Size,
		Count:      row.Count,
		Iterations: iters,
		AggIters:   h.config.AggIters,
		Env:        h.env,
	}
	configFromEnv(&base, h.env, h.fullEnv)
	if g := h.gccl; g != nil { // what ran, as gccl wrote it, beats what the env suggests
		base.Algorithm, base.Protocol, base.Channels, base.BuffSize = g.Algorithm, g.Protocol, g.Channels, g.BuffSize
		base.DeviceImpl, base.DeviceCTAs, base.DeviceCoops = g.DeviceImpl, g.DeviceCTAs, g.DeviceCoops
	}
	var recs []Record
	for _, p := range []struct {
		name    string
		place   *ncclPlaceJSON
		perIter *ncclPerIterJSON
	}{{OutOfPlace, row.OutOfPlace, row.OutOfPlacePerIter}, {InPlace, row.InPlace, row.InPlacePerIter}} {
		if p.place == nil {
			continue
		}
		r := base
		r.Env = maps.Clone(h.env)
		r.Placement = p.name
		t := p.place.Time
		if t == nil {
			t = p.place.CPUTime
		}
		if t == nil {
			return nil, rd.at(at.off, nil, "result row: %s has no time", p.name)
		}
		r.TimeUs, r.AlgBw, r.BusBw = float64(*t), float64(p.place.AlgBw), float64(p.place.BusBw)
		r.Wrong = -1
		if w := p.place.NWrong; w != nil && *w >= 0 && !math.IsInf(float64(*w), 0) {
			r.Wrong = int64(*w) // NaN fails >= 0
		}
		if pi := p.perIter; pi != nil {
			r.MinUs, r.MaxUs = float64(pi.MinUs), float64(pi.MaxUs)
			r.MedianUs, r.P99Us = float64(pi.P50Us), float64(pi.P99Us)
			for _, v := range pi.TimesUs {
				r.IterTimesUs = append(r.IterTimesUs, float64(v))
			}
		}
		recs = append(recs, r)
	}
	return recs, nil
}

// lineCol turns a byte offset into a 1-based line and column.
func lineCol(data []byte, off int64) (line, col int) {
	off = min(max(off, 0), int64(len(data)))
	before := data[:off]
	line = 1 + bytes.Count(before, []byte("\n"))
	col = int(off) - (bytes.LastIndexByte(before, '\n') + 1) + 1
	return line, col
}
