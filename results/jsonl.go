package results

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
)

// A JSONLWriter writes Records as JSON Lines: one object per line, fields in
// the order of the Record struct. It buffers; call Flush at the end.
type JSONLWriter struct {
	w *bufio.Writer
}

// NewJSONLWriter returns a writer of JSON Lines to w.
func NewJSONLWriter(w io.Writer) *JSONLWriter {
	return &JSONLWriter{w: bufio.NewWriter(w)}
}

// Write writes one record on its own line. A zero Schema is stamped with
// SchemaVersion; Env is reduced to the variables KeepEnv keeps. Non-finite
// floats (NaN, Inf) are an error: JSON cannot carry them.
func (w *JSONLWriter) Write(r Record) error {
	r = normalizeForWrite(r)
	b, err := json.Marshal(r)
	if err != nil {
		return fmt.Errorf("results: encoding record %s %d: %w", r.Collective, r.Size, err)
	}
	b = append(b, '\n')
	_, err = w.w.Write(b)
	return err
}

// Flush writes any buffered data to the underlying writer.
func (w *JSONLWriter) Flush() error { return w.w.Flush() }

// normalizeForWrite applies what every writer guarantees about a Record.
func normalizeForWrite(r Record) Record {
	if r.Schema == 0 {
		r.Schema = SchemaVersion
	}
	r.Env = filterEnvMap(r.Env)
	return r
}

// A JSONLReader reads Records from JSON Lines, one per Scan, in the manner
// of bufio.Scanner:
//
//	for rd.Scan() {
//		use(rd.Record())
//	}
//	if err := rd.Err(); err != nil { ... }
//
// A line that does not parse is skipped and reported by Err as a
// *SyntaxError naming file:line (non-fatal; scanning goes on). A record with
// a schema newer than SchemaVersion stops scanning. Blank lines are skipped.
type JSONLReader struct {
	name string
	r    *bufio.Reader
	line int
	rec  Record
	errs errList
	done bool
}

// NewJSONLReader reads JSON Lines from r; name (a file name) positions errors.
func NewJSONLReader(name string, r io.Reader) *JSONLReader {
	return &JSONLReader{name: name, r: bufio.NewReader(r)}
}

// Scan advances to the next record; false at the end or on a fatal error.
func (rd *JSONLReader) Scan() bool {
	for !rd.done {
		b, err := rd.r.ReadBytes('\n')
		if err != nil {
			rd.done = true
			if !errors.Is(err, io.EOF) {
				rd.errs.fatal = fmt.Errorf("%s: %w", rd.name, err)
				return false
			}
			if len(b) == 0 {
				return false
			}
		}
		rd.line++
		b = bytes.TrimSpace(b)
		if len(b) == 0 {
			continue
		}
		var rec Record
		if err := json.Unmarshal(b, &rec); err != nil {
			msg := "malformed JSON record"
			if rd.done {
				msg = "truncated or malformed JSON record (last line, no newline)"
			}
			rd.errs.add(&SyntaxError{File: rd.name, Line: rd.line, Col: jsonCol(err), Msg: msg, Err: err})
			continue
		}
		if rec.Schema == 0 {
			rd.errs.add(&SyntaxError{File: rd.name, Line: rd.line, Msg: `record has no "schema" field`})
			continue
		}
		if err := checkSchema(rd.name, rd.line, rec.Schema); err != nil {
			rd.errs.fatal = err
			rd.done = true
			return false
		}
		rec.Env = filterEnvMap(rec.Env) // an old file may hold more
		rd.rec = rec
		return true
	}
	return false
}

// Record returns the record read by the last successful Scan.
func (rd *JSONLReader) Record() Record { return rd.rec }

// Err returns the errors met so far (joined), or nil.
func (rd *JSONLReader) Err() error { return rd.errs.err() }

// jsonCol returns the 1-based byte column of a JSON decoding error within a
// single line, or 0.
func jsonCol(err error) int {
	var se *json.SyntaxError
	var te *json.UnmarshalTypeError
	switch {
	case errors.As(err, &se):
		return int(se.Offset)
	case errors.As(err, &te):
		return int(te.Offset)
	}
	return 0
}
