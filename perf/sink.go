package perf

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/gccl/gccl/results"
)

// sink writes the run's records to the files the flags asked for. An
// existing file is never overwritten unless --force is given.
type sink struct {
	// mu keeps abandon (a second Ctrl-C, on the interrupt watcher's
	// goroutine) from cutting a record in half.
	mu    sync.Mutex
	paths struct {
		jsonl, csv string
		json       []string // -J documents, in configuration order
	}
	files []*os.File
	jsonl *results.JSONLWriter
	csv   *results.CSVWriter
	// json holds one nccl-tests -J document per configuration, by
	// RunConfig.Label (jsonPaths says where each goes).
	json map[string]*ncclJSON
}

func openSink(o *Options, be Backend, started time.Time, configs []RunConfig) (*sink, error) {
	s := &sink{}
	create := results.Create
	if o.Force {
		create = results.CreateForce
	}
	open := func(path string) (*os.File, error) {
		f, err := create(path)
		if err != nil {
			// Leave nothing behind: a refused run must not block the next one.
			for _, g := range s.files {
				g.Close()
				os.Remove(g.Name())
			}
			s.files = nil
			if errors.Is(err, results.ErrExists) {
				err = fmt.Errorf("%w (pass --force to overwrite it)", err)
			}
			return nil, err
		}
		s.files = append(s.files, f)
		return f, nil
	}
	if o.Out != "" {
		f, err := open(o.Out)
		if err != nil {
			return nil, err
		}
		s.jsonl, s.paths.jsonl = results.NewJSONLWriter(f), o.Out
	}
	if o.CSV != "" {
		f, err := open(o.CSV)
		if err != nil {
			return nil, err
		}
		s.csv, s.paths.csv = results.NewCSVWriter(f), o.CSV
	}
	if o.JSONFile != "" {
		s.json = map[string]*ncclJSON{}
		for i, path := range jsonPaths(o.JSONFile, configs) {
			f, err := open(path)
			if err != nil {
				return nil, err
			}
			s.json[configs[i].Label()] = newNCCLJSON(f, o, be, started, configs[i])
			s.paths.json = append(s.paths.json, path)
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
	// Flushed per record: a run that is killed keeps what it measured
	// (tune sweep resumes from it).
	if s.jsonl != nil {
		errs = append(errs, s.jsonl.Write(r), s.jsonl.Flush())
	}
	if s.csv != nil {
		errs = append(errs, s.csv.Write(r), s.csv.Flush())
	}
	if j := s.json[rc.Label()]; j != nil {
		j.add(r)
	}
	return errors.Join(errs...)
}

// finish flushes every writer; close releases the files.
func (s *sink) finish() error {
	var errs []error
	if s.jsonl != nil {
		errs = append(errs, s.jsonl.Flush())
	}
	if s.csv != nil {
		errs = append(errs, s.csv.Flush())
	}
	for _, j := range s.json {
		errs = append(errs, j.finish())
	}
	return errors.Join(errs...)
}

// abandon removes the -J documents, which are written only at the end,
// and closes every file: the run is about to exit at once.
func (s *sink) abandon() {
	if s == nil {
		return
	}
	s.mu.Lock() // never released: nothing may write after this
	for _, p := range s.paths.json {
		os.Remove(p)
	}
	for _, f := range s.files {
		f.Close()
	}
}

func (s *sink) close() {
	for _, f := range s.files {
		f.Close()
	}
	s.files = nil
}
