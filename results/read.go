package results

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strings"
)

// A Scanner yields Records one at a time; every reader in this package is
// one. Scan advances (false at the end or on a fatal error), Record returns
// the current record, Err returns the errors met (nil if none). Syntax
// errors are positioned (*SyntaxError, file:line) and non-fatal: the bad
// line is skipped and scanning goes on.
type Scanner interface {
	Scan() bool
	Record() Record
	Err() error
}

// Format is a result file format, as Detect tells it from content.
type Format int

const (
	FormatUnknown  Format = iota
	FormatJSONL           // gccl JSON Lines (JSONLWriter)
	FormatCSV             // gccl CSV (CSVWriter)
	FormatNCCLJSON        // nccl-tests -J JSON (NCCLJSONWriter)
	FormatNCCLText        // nccl-tests text output
	FormatGoBench         // go test -bench output (GoBenchReader)
)

func (f Format) String() string {
	switch f {
	case FormatJSONL:
		return "gccl JSONL"
	case FormatCSV:
		return "gccl CSV"
	case FormatNCCLJSON:
		return "nccl-tests JSON"
	case FormatNCCLText:
		return "nccl-tests text"
	case FormatGoBench:
		return "Go benchmark"
	}
	return "unknown"
}

// ReadFile reads all records of the result file at path, whatever its
// format (see Detect). See Read for the error contract.
func ReadFile(path string) ([]Record, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	return Read(path, bytes.NewReader(data))
}

// Read reads all records from r, detecting the format from the content;
// name (a file name) positions errors. On syntax errors it returns the
// records it could read together with the joined, positioned errors; an
// input of no known format, an empty input or a schema newer than this
// build reads is an error (ErrUnknownFormat, ErrEmpty, ErrSchemaTooNew).
func Read(name string, r io.Reader) ([]Record, error) {
	sc, _, err := NewScanner(name, r)
	if err != nil {
		return nil, err
	}
	var recs []Record
	for sc.Scan() {
		recs = append(recs, sc.Record())
	}
	return recs, sc.Err()
}

// NewScanner reads r whole, detects its format and returns the matching
// reader over it.
func NewScanner(name string, r io.Reader) (Scanner, Format, error) {
	data, err := io.ReadAll(r)
	if err != nil {
		return nil, FormatUnknown, fmt.Errorf("%s: %w", name, err)
	}
	// A gzip stream (results kept compressed, e.g. sweep.jsonl.gz) is read
	// through: the format is its content's.
	if bytes.HasPrefix(data, []byte{0x1f, 0x8b}) {
		zr, err := gzip.NewReader(bytes.NewReader(data))
		if err == nil {
			data, err = io.ReadAll(zr)
		}
		if err != nil {
			return nil, FormatUnknown, fmt.Errorf("%s: gzip: %w", name, err)
		}
	}
	f, err := Detect(name, data)
	if err != nil {
		return nil, f, err
	}
	br := bytes.NewReader(data)
	switch f {
	case FormatJSONL:
		return NewJSONLReader(name, br), f, nil
	case FormatCSV:
		return NewCSVReader(name, br), f, nil
	case FormatNCCLJSON:
		return NewNCCLJSONReader(name, br), f, nil
	case FormatGoBench:
		return NewGoBenchReader(name, br), f, nil
	default:
		return NewNCCLTextReader(name, br), f, nil
	}
}

var utf8BOM = []byte("\ufeff")

// Detect tells the format of a result file from its content, never its
// name:
//
//   - gccl JSONL: the first non-blank line is a JSON object with "schema";
//   - nccl-tests JSON: a JSON object with "version" and "results" (or
//     "nccl_version"/"config": a run that stopped early), or a truncated
//     document starting {"version";
//   - gccl CSV: the first line is a CSV header naming at least two of our
//     columns (CSVColumns);
//   - nccl-tests text: a line starting "# nccl-tests", "# Collective test
//     starting" or "# nThread", or a first non-comment line that is a data
//     row (size and count integers, at least 13 fields);
//   - Go benchmark output: a line that parses as a benchmark result,
//     "BenchmarkName N value unit ...", as benchstat reads them.
//
// Anything else is an error wrapping ErrUnknownFormat (ErrEmpty when there is
// nothing but white space) that names the file.
func Detect(name string, data []byte) (Format, error) {
	data = bytes.TrimPrefix(data, utf8BOM)
	trimmed := bytes.TrimSpace(data)
	if len(trimmed) == 0 {
		return FormatUnknown, &SyntaxError{File: name, Err: ErrEmpty}
	}
	first := firstLine(trimmed)
	if trimmed[0] == '{' {
		if f, ok := detectJSON(trimmed, first); ok {
			return f, nil
		}
		return FormatUnknown, &SyntaxError{File: name, Err: ErrUnknownFormat,
			Msg: `a JSON object, but neither a gccl JSONL record (no "schema") nor an nccl-tests -J document (no "version" and "results")`}
	}
	if isCSVHeader(first) {
		return FormatCSV, nil
	}
	if isNCCLText(trimmed) {
		return FormatNCCLText, nil
	}
	if isGoBench(data) {
		return FormatGoBench, nil
	}
	return FormatUnknown, &SyntaxError{File: name, Err: ErrUnknownFormat,
		Msg: "not gccl JSONL or CSV, nccl-tests -J JSON or text output, nor go test -bench output"}
}

func firstLine(b []byte) []byte {
	line, _, _ := bytes.Cut(b, []byte("\n"))
	return bytes.TrimSpace(line)
}

// detectJSON tells JSONL from nccl-tests JSON.
func detectJSON(trimmed, first []byte) (Format, bool) {
	var m map[string]json.RawMessage
	if json.Unmarshal(first, &m) == nil {
		if _, ok := m["schema"]; ok {
			return FormatJSONL, true
		}
	} else if firstKeyIs(first, "schema") {
		return FormatJSONL, true // a broken first record; the reader says where
	}
	m = nil
	if json.NewDecoder(bytes.NewReader(trimmed)).Decode(&m) == nil {
		_, version := m["version"]
		_, results := m["results"]
		_, ncclVersion := m["nccl_version"]
		_, config := m["config"]
		if version && (results || ncclVersion || config) {
			return FormatNCCLJSON, true
		}
		return FormatUnknown, false
	}
	if firstKeyIs(trimmed, "version") {
		return FormatNCCLJSON, true // truncated; the reader says where
	}
	return FormatUnknown, false
}

// firstKeyIs reports whether b starts with '{' and then the key.
func firstKeyIs(b []byte, key string) bool {
	b, ok := bytes.CutPrefix(b, []byte("{"))
	return ok && bytes.HasPrefix(bytes.TrimSpace(b), []byte(`"`+key+`"`))
}

func isCSVHeader(line []byte) bool {
	cells, err := csv.NewReader(bytes.NewReader(line)).Read()
	if err != nil || len(cells) < 2 {
		return false
	}
	known := map[string]bool{}
	for _, c := range csvColumns {
		known[c.name] = true
	}
	n := 0
	for _, c := range cells {
		if known[strings.TrimSpace(c)] {
			n++
		}
	}
	return n >= 2
}

func isNCCLText(data []byte) bool {
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(nil, 1<<20)
	checkedRow := false
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if body, ok := strings.CutPrefix(line, "#"); ok {
			body = strings.TrimSpace(body)
			if strings.HasPrefix(body, "nccl-tests") || strings.HasPrefix(body, "Collective test starting") ||
				strings.HasPrefix(body, "nThread ") {
				return true
			}
			continue
		}
		if line == "" || checkedRow {
			continue
		}
		checkedRow = true
		f := strings.Fields(line)
		if len(f) >= 13 && isDigits(f[0]) && isDigits(f[1]) {
			return true
		}
	}
	return false
}
