package perf

import (
	"io"
	"time"

	"github.com/gccl/gccl/results"
)

// ncclJSON collects the rows for nccl-tests' -J output. (Wired to the
// results package's writer.)
type ncclJSON struct {
	w       io.Writer
	o       *Options
	started time.Time
	recs    []results.Record
}

func newNCCLJSON(w io.Writer, o *Options, started time.Time) *ncclJSON {
	return &ncclJSON{w: w, o: o, started: started}
}

func (j *ncclJSON) add(r results.Record) { j.recs = append(j.recs, r) }

func (j *ncclJSON) finish(f footer) error { return nil }
