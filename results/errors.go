package results

import (
	"errors"
	"fmt"
	"strings"
)

// Sentinel errors; match them with errors.Is.
var (
	// ErrUnknownFormat: the content is none of the formats this package reads.
	ErrUnknownFormat = errors.New("unrecognized result format")
	// ErrEmpty: the input holds nothing but white space.
	ErrEmpty = errors.New("empty file")
	// ErrSchemaTooNew: a record was written by a newer build (Schema > SchemaVersion).
	ErrSchemaTooNew = errors.New("schema version too new")
	// ErrExists: Create refused to overwrite an existing file.
	ErrExists = errors.New("file exists")
	// ErrNoResults: an nccl-tests log or -J file holds no result rows.
	ErrNoResults = errors.New("no result rows")
)

// A SyntaxError is a positioned problem in one input: a line that does not
// parse, a missing column, a truncated document. Readers skip the offending
// line and go on (the error is non-fatal) unless they say otherwise.
type SyntaxError struct {
	File string // name given to the reader
	Line int    // 1-based; 0 when the problem concerns the whole input
	Col  int    // 1-based column (CSV field or JSON byte); 0 when unknown
	Msg  string
	Err  error // underlying error, if any (errors.Is/As see it)
}

func (e *SyntaxError) Error() string {
	var b strings.Builder
	b.WriteString(e.File)
	if e.Line > 0 {
		fmt.Fprintf(&b, ":%d", e.Line)
		if e.Col > 0 {
			fmt.Fprintf(&b, ":%d", e.Col)
		}
	}
	b.WriteString(": ")
	b.WriteString(e.Msg)
	if e.Err != nil {
		if e.Msg != "" {
			b.WriteString(": ")
		}
		b.WriteString(e.Err.Error())
	}
	return b.String()
}

func (e *SyntaxError) Unwrap() error { return e.Err }

// maxErrs bounds how many syntax errors a reader keeps; the rest are counted.
const maxErrs = 10

// errList collects a reader's non-fatal errors and its one fatal error.
type errList struct {
	errs    []error
	dropped int
	fatal   error
}

func (l *errList) add(err error) {
	if len(l.errs) < maxErrs {
		l.errs = append(l.errs, err)
		return
	}
	l.dropped++
}

// err joins everything collected; nil when nothing went wrong.
func (l *errList) err() error {
	all := append([]error(nil), l.errs...)
	if l.dropped > 0 {
		all = append(all, fmt.Errorf("... and %d more errors", l.dropped))
	}
	if l.fatal != nil {
		all = append(all, l.fatal)
	}
	return errors.Join(all...)
}

// checkSchema refuses records written by a newer build.
func checkSchema(file string, line, schema int) error {
	if schema > SchemaVersion {
		return &SyntaxError{File: file, Line: line, Err: ErrSchemaTooNew,
			Msg: fmt.Sprintf("record has schema version %d; this build reads schema version %d and older (upgrade gccl to read it)", schema, SchemaVersion)}
	}
	return nil
}
