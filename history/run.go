package history

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/gccl/gccl/ci"
	"github.com/gccl/gccl/results"
)

// A Run is one run of the gate's sweep: which commit it measured, where
// and when.
type Run struct {
	ID      int64     // the store's id; set by Runs, ignored by Add
	Commit  string    // the commit measured; required
	Branch  string    // its branch, when known
	Time    time.Time // when it ran; kept in UTC to the nanosecond
	Machine string    // what measured it
	Tool    string    // the tool and its version: "gccl 0.1.0"
	// Meta is the records' provenance, by their JSON field names (tool,
	// git_rev, host, cpu, cores, go_version, backend, nccl_version,
	// cuda_version, launcher): distinct values joined by "; ". Never
	// their environment.
	Meta    map[string]string
	Records int // records stored; set by Runs, ignored by Add
}

// maxSamples bounds the per-iteration times kept per record: the gate's
// own bound (it thins to 100 order statistics), so a history loses nothing
// the gate would use.
const maxSamples = 100

// exportFormat is the version of an exported line.
const exportFormat = 1

// entry is a run as stored, hashed and exported: the run and what the gate
// compares of each record.
type entry struct {
	Format  int               `json:"format"`
	Commit  string            `json:"commit"`
	Branch  string            `json:"branch,omitempty"`
	Time    time.Time         `json:"time"`
	Machine string            `json:"machine,omitempty"`
	Tool    string            `json:"tool,omitempty"`
	Meta    map[string]string `json:"meta,omitempty"`
	Records []record          `json:"records"`
}

// record is one record as stored: its key and the gate's values.
type record struct {
	ci.Key
	TimeUs   float64   `json:"time_us"`
	MedianUs float64   `json:"median_us,omitempty"`
	BusBw    float64   `json:"busbw_gbps,omitempty"`
	RefCopy  float64   `json:"ref_copy_gbps,omitempty"`
	MinUs    float64   `json:"min_us,omitempty"`  // the fastest iteration; 0: not known
	Samples  []float64 `json:"samples,omitempty"` // per-iteration times, µs, ascending, at most maxSamples
}

// asRecord gives the record back as a results.Record holding what the
// gate reads (ci.ValueOf).
func (r record) asRecord() results.Record {
	return results.Record{
		Collective: r.Collective, Type: r.Type, Op: r.Op, Algorithm: r.Algorithm, Protocol: r.Protocol,
		Channels: r.Channels, BuffSize: r.BuffSize, NRanks: r.NRanks, NHosts: r.NHosts,
		Size: r.Size, Placement: r.Placement,
		TimeUs: r.TimeUs, MedianUs: r.MedianUs, MinUs: r.MinUs, BusBw: r.BusBw, RefCopyGBps: r.RefCopy, IterTimesUs: r.Samples,
	}
}

// entryOf makes the stored form of a run of records, filling what the run
// leaves zero from the records: Time from their earliest timestamp,
// Machine from their host when they name one, Tool from their tools, Meta
// from their provenance.
func entryOf(run Run, recs []results.Record) (entry, error) {
	e := entry{Format: exportFormat, Commit: run.Commit, Branch: run.Branch, Time: run.Time,
		Machine: run.Machine, Tool: run.Tool, Meta: run.Meta}
	if e.Time.IsZero() {
		for _, r := range recs {
			if !r.Timestamp.IsZero() && (e.Time.IsZero() || r.Timestamp.Before(e.Time)) {
				e.Time = r.Timestamp
			}
		}
	}
	if e.Machine == "" {
		if hosts := distinct(recs, func(r results.Record) string { return r.Host }); len(hosts) == 1 {
			e.Machine = hosts[0]
		}
	}
	if e.Tool == "" {
		e.Tool = strings.Join(distinct(recs, func(r results.Record) string { return r.Tool }), "; ")
	}
	if e.Meta == nil {
		e.Meta = metaOf(recs)
	}
	e.Records = make([]record, len(recs))
	for i, r := range recs {
		e.Records[i] = record{Key: ci.KeyOf(r), TimeUs: r.TimeUs, MedianUs: r.MedianUs, BusBw: r.BusBw,
			RefCopy: r.RefCopyGBps, MinUs: r.MinUs, Samples: r.IterTimesUs}
	}
	return e, e.normalize()
}

// Time bounds a run may have: what nanoseconds since 1970 in an int64 hold,
// with room.
var (
	minTime = time.Date(1970, 1, 1, 0, 0, 0, 0, time.UTC)
	maxTime = time.Date(2200, 1, 1, 0, 0, 0, 0, time.UTC)
)

// normalize checks an entry and puts it in its one stored form (UTC time,
// trimmed names, samples thinned and sorted, no empty meta), so that its
// hash is its content's.
func (e *entry) normalize() error {
	if e.Format != exportFormat {
		return fmt.Errorf("format %d: this gccl reads format %d", e.Format, exportFormat)
	}
	e.Commit, e.Branch = strings.TrimSpace(e.Commit), strings.TrimSpace(e.Branch)
	e.Machine, e.Tool = strings.TrimSpace(e.Machine), strings.TrimSpace(e.Tool)
	if e.Commit == "" {
		return errors.New("the run has no commit: every run names the commit it measured")
	}
	if e.Time.IsZero() {
		return errors.New("the run has no time, and its records carry no timestamp: give the run's time")
	}
	if e.Time.Before(minTime) || !e.Time.Before(maxTime) {
		return fmt.Errorf("run time %s: want a time between 1970 and 2200", e.Time.Format(time.RFC3339))
	}
	e.Time = time.Unix(0, e.Time.UnixNano()).UTC()
	if len(e.Meta) == 0 {
		e.Meta = nil
	}
	if len(e.Records) == 0 {
		return errors.New("the run has no records")
	}
	for i := range e.Records {
		if err := e.Records[i].normalize(); err != nil {
			return fmt.Errorf("record %d (%s): %w", i+1, e.Records[i].Key, err)
		}
	}
	return nil
}

func (r *record) normalize() error {
	k := r.Key
	switch {
	case k.Collective == "":
		return errors.New("no collective")
	case k.NRanks < 0 || k.Size < 0 || k.Channels < 0 || k.BuffSize < 0:
		return errors.New("negative nranks, size, channels or buffsize")
	case k.NHosts < 1:
		return fmt.Errorf("nhosts %d: want 1 or more", k.NHosts)
	case k.Algorithm == "" || k.Protocol == "":
		return errors.New(`no algorithm or protocol: "auto" when the stack chose`)
	}
	for _, v := range []struct {
		name string
		x    float64
	}{{"time_us", r.TimeUs}, {"median_us", r.MedianUs}, {"busbw_gbps", r.BusBw}, {"ref_copy_gbps", r.RefCopy}, {"min_us", r.MinUs}} {
		if math.IsNaN(v.x) || math.IsInf(v.x, 0) || v.x < 0 {
			return fmt.Errorf("%s is %v: want a finite number, 0 or more", v.name, v.x)
		}
	}
	r.Samples = results.Thin(r.Samples, maxSamples)
	if len(r.Samples) == 0 {
		r.Samples = nil
	}
	return nil
}

// hash is the run's identity: a SHA-256 of its canonical JSON (encoding/json
// sorts map keys and writes floats exactly), so the same run added twice,
// or exported and imported again, is found.
//
// min_us is left out: it came with schema version 3, and a run stored
// before it (min_us unknown) is the same run when its file is added again.
func (e entry) hash() (string, error) {
	recs := make([]record, len(e.Records))
	for i, r := range e.Records {
		r.MinUs = 0
		recs[i] = r
	}
	e.Records = recs
	b, err := json.Marshal(e)
	if err != nil {
		return "", err
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:]), nil
}

// metaFields are the provenance fields a run keeps of its records: what
// measured and with what, never the environment (Record.Env) nor file
// names (Record.Source).
var metaFields = []struct {
	name string
	get  func(results.Record) string
}{
	{"tool", func(r results.Record) string { return r.Tool }},
	{"git_rev", func(r results.Record) string { return r.GitRev }},
	{"host", func(r results.Record) string { return r.Host }},
	{"cpu", func(r results.Record) string { return r.CPU }},
	{"cores", func(r results.Record) string { return intText(r.Cores) }},
	{"go_version", func(r results.Record) string { return r.GoVersion }},
	{"backend", func(r results.Record) string { return r.Backend }},
	{"nccl_version", func(r results.Record) string { return r.NCCLVersion }},
	{"cuda_version", func(r results.Record) string { return r.CUDAVersion }},
	{"launcher", func(r results.Record) string { return r.Launcher }},
}

func intText(n int) string {
	if n == 0 {
		return ""
	}
	return strconv.Itoa(n)
}

// metaOf is the records' provenance: each field's distinct values, in
// order of appearance, joined by "; "; nil when the records say nothing.
func metaOf(recs []results.Record) map[string]string {
	var m map[string]string
	for _, f := range metaFields {
		if v := distinct(recs, f.get); len(v) > 0 {
			if m == nil {
				m = map[string]string{}
			}
			m[f.name] = strings.Join(v, "; ")
		}
	}
	return m
}

// distinct lists the non-empty values of a field, each once, in order.
func distinct(recs []results.Record, get func(results.Record) string) []string {
	var out []string
	for _, r := range recs {
		if v := strings.TrimSpace(get(r)); v != "" && !slices.Contains(out, v) {
			out = append(out, v)
		}
	}
	return out
}

// encodeSamples packs samples as little-endian float64s; nil for none.
func encodeSamples(v []float64) []byte {
	if len(v) == 0 {
		return nil
	}
	b := make([]byte, 8*len(v))
	for i, x := range v {
		binary.LittleEndian.PutUint64(b[8*i:], math.Float64bits(x))
	}
	return b
}

func decodeSamples(b []byte) ([]float64, error) {
	if len(b)%8 != 0 {
		return nil, fmt.Errorf("a samples blob of %d bytes: want a multiple of 8", len(b))
	}
	if len(b) == 0 {
		return nil, nil
	}
	v := make([]float64, len(b)/8)
	for i := range v {
		v[i] = math.Float64frombits(binary.LittleEndian.Uint64(b[8*i:]))
	}
	return v, nil
}
