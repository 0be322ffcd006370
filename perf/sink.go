package perf

import (
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/gccl/gccl/results"
)

// sink writes the run's records to the files the flags asked for. An
// existing file is never overwritten unless --force is given.
type sink struct {
	files []*os.File
	jsonl *results.JSONLWriter
	csv   *results.CSVWriter
	json  *ncclJSON
}

// footer is the run's summary, for nccl-tests' JSON.
type footer struct {
	wrong           int64
	avgBw           float64
	bwChecked, bwOK bool
}

func openSink(o *Options, be Backend, started time.Time) (*sink, error) {
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
		s.jsonl = results.NewJSONLWriter(f)
	}
	if o.CSV != "" {
		f, err := open(o.CSV)
		if err != nil {
			return nil, err
		}
		s.csv = results.NewCSVWriter(f)
	}
	if o.JSONFile != "" {
		f, err := open(o.JSONFile)
		if err != nil {
			return nil, err
		}
		s.json = newNCCLJSON(f, o, be, started)
	}
	return s, nil
}

func (s *sink) add(r results.Record) error {
	var errs []error
	// Flushed per record: a run that is killed keeps what it measured
	// (tune sweep resumes from it).
	if s.jsonl != nil {
		errs = append(errs, s.jsonl.Write(r), s.jsonl.Flush())
	}
	if s.csv != nil {
		errs = append(errs, s.csv.Write(r), s.csv.Flush())
	}
	if s.json != nil {
		s.json.add(r)
	}
	return errors.Join(errs...)
}

// finish flushes every writer; close releases the files.
func (s *sink) finish(f footer) error {
	var errs []error
	if s.jsonl != nil {
		errs = append(errs, s.jsonl.Flush())
	}
	if s.csv != nil {
		errs = append(errs, s.csv.Flush())
	}
	if s.json != nil {
		errs = append(errs, s.json.finish(f))
	}
	return errors.Join(errs...)
}

func (s *sink) close() {
	for _, f := range s.files {
		f.Close()
	}
	s.files = nil
}
