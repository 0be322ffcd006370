package perf

import (
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/gccl/gccl/results"
)

// sink writes the run's records to the files the flags asked for. An
// existing file is never overwritten unless --force is given. Every file
// is written under a temporary name beside it and put in place when
// settled (results.File): the path given holds a valid file or nothing.
type sink struct {
	// mu keeps abandon (a second Ctrl-C, on the interrupt watcher's
	// goroutine) from cutting a record in half or racing commit; it
	// guards everything below.
	mu   sync.Mutex
	outs []*output // every file, in flag order: --out, --csv, -J
	// jsonl and csv write --out and --csv; nil when not asked for.
	jsonl    *results.JSONLWriter
	csv      *results.CSVWriter
	jsonlOut *output
	csvOut   *output
	// json holds one nccl-tests -J document per configuration, by
	// RunConfig.Label (jsonPaths says where each goes).
	json map[string]*ncclJSON
	// complete: the run ended and commit wrote every file whole.
	complete bool
}

// output is one result file.
type output struct {
	f   *results.File
	doc bool // a -J document: written whole when the run ends, nothing before
	n   int  // records (rows) it holds
	// finish writes what is still buffered (-J: the whole document).
	finish func() error
	fate
}

// fate is what became of a result file.
type fate int

const (
	writing fate = iota // being written
	written             // committed: in place, valid
	empty               // not written: no record to hold
	dropped             // removed before it was written (a second Ctrl-C, an error)
)

func openSink(o *Options, be Backend, started time.Time, configs []RunConfig) (*sink, error) {
	s := &sink{}
	create := results.Create
	if o.Force {
		create = results.CreateForce
	}
	open := func(path string, doc bool) (*output, error) {
		f, err := create(path)
		if err != nil {
			// Leave nothing behind: a refused run must not block the next one.
			s.close()
			if errors.Is(err, results.ErrExists) {
				err = fmt.Errorf("%w (pass --force to overwrite it)", err)
			}
			return nil, err
		}
		out := &output{f: f, doc: doc}
		s.outs = append(s.outs, out)
		return out, nil
	}
	var err error
	if o.Out != "" {
		if s.jsonlOut, err = open(o.Out, false); err != nil {
			return nil, err
		}
		s.jsonl = results.NewJSONLWriter(s.jsonlOut.f)
		s.jsonlOut.finish = s.jsonl.Flush
	}
	if o.CSV != "" {
		if s.csvOut, err = open(o.CSV, false); err != nil {
			return nil, err
		}
		s.csv = results.NewCSVWriter(s.csvOut.f)
		s.csvOut.finish = s.csv.Flush
	}
	if o.JSONFile != "" {
		s.json = map[string]*ncclJSON{}
		for i, path := range jsonPaths(o.JSONFile, configs) {
			out, err := open(path, true)
			if err != nil {
				return nil, err
			}
			j := newNCCLJSON(out, o, be, started, configs[i])
			s.json[configs[i].Label()], out.finish = j, j.finish
		}
	}
	return s, nil
}

// jsonPaths is where -J writes each configuration's document. nccl-tests'
// JSON describes one sweep of one configuration, and the tools that read
// it (and nccl-tests' own layout: rows keyed by size) expect that, so a
// run of several configurations writes one valid document per
// configuration rather than an array no nccl-tests reader would take:
// "run.json" becomes "run.proto-LL.algo-Ring.nch-2.buff-default.json".
// One configuration writes exactly the path given.
func jsonPaths(path string, configs []RunConfig) []string {
	if len(configs) == 1 {
		return []string{path}
	}
	ext := filepath.Ext(path)
	stem := strings.TrimSuffix(path, ext)
	out := make([]string, len(configs))
	for i, rc := range configs {
		out[i] = stem + "." + rc.FileTag() + ext
	}
	return out
}

func (s *sink) add(rc RunConfig, r results.Record) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	var errs []error
	// Flushed per record: a second Ctrl-C puts the file in place with
	// every record finished (tune sweep resumes from it). A file that
	// failed a write may hold half a record: it is removed.
	put := func(o *output, write func(results.Record) error, flush func() error) {
		if o == nil || o.fate != writing {
			return
		}
		if err := errors.Join(write(r), flush()); err != nil {
			o.f.Abort()
			o.fate = dropped
			errs = append(errs, fmt.Errorf("writing %s: %w", o.f.Name(), err))
			return
		}
		o.n++
	}
	if s.jsonl != nil {
		put(s.jsonlOut, s.jsonl.Write, s.jsonl.Flush)
	}
	if s.csv != nil {
		put(s.csvOut, s.csv.Write, s.csv.Flush)
	}
	if j := s.json[rc.Label()]; j != nil {
		j.add(r)
		j.out.n++
	}
	return errors.Join(errs...)
}

// commit writes the -J documents and puts every file in place: the end
// of a run, or of one stopped in order (partial: a file with no record is
// not written, as no reader would take it).
func (s *sink) commit(partial bool) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	var errs []error
	for _, o := range s.outs {
		if o.fate != writing {
			continue
		}
		if partial && o.n == 0 {
			o.f.Abort()
			o.fate = empty
			continue
		}
		if err := o.finish(); err != nil {
			o.f.Abort()
			o.fate = dropped
			errs = append(errs, fmt.Errorf("writing %s: %w", o.f.Name(), err))
			continue
		}
		if err := o.f.Commit(); err != nil {
			o.fate = dropped
			errs = append(errs, err)
			continue
		}
		o.fate = written
	}
	s.complete = !partial
	return errors.Join(errs...)
}

// abandon settles the files of a run that cannot end in order (a failure,
// or a second Ctrl-C about to exit): the JSONL and CSV files, whose every
// record is whole and flushed, are put in place if they hold any; the -J
// documents, written only at the end, are removed with everything else.
func (s *sink) abandon() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.abandonLocked()
}

func (s *sink) abandonLocked() {
	for _, o := range s.outs {
		switch {
		case o.fate != writing:
		case o.doc:
			o.f.Abort()
			o.fate = dropped
		case o.n == 0:
			o.f.Abort()
			o.fate = empty
		case o.f.Commit() == nil:
			o.fate = written
		default:
			o.fate = dropped
		}
	}
}

// close removes every file not yet settled: the last word of every exit
// path, which a committed or abandoned sink passes unchanged.
func (s *sink) close() {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, o := range s.outs {
		if o.fate == writing {
			o.f.Abort()
			o.fate = dropped
		}
	}
}
