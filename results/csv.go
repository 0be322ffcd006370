package results

import (
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"reflect"
	"strconv"
	"strings"
	"time"
)

// CSV layout: a header row of column names, then one row per Record. The
// columns are Record's fields in struct order, named by their JSON names
// (schema, tool, ..., busbw_gbps, wrong, iter_times_us, ..., env), so every
// field of the contract is a column, including ones added later. Cells:
//
//   - integers in decimal; floats in Go's shortest round-trip form ('g');
//   - timestamp in RFC 3339 with nanoseconds, empty for the zero time;
//   - iter_times_us as floats joined by ';';
//   - env as "K=V;K=V", keys sorted, only the variables KeepEnv keeps; a ';' or
//     '\' inside a value is escaped with '\'.
//
// The reader is driven by the header: columns may come in any order, unknown
// columns are ignored, absent ones leave their fields zero. collective, size
// and one of time_us / busbw_gbps are required. An empty cell is the zero
// value; an empty or absent schema means SchemaVersion.

// csvColumn maps one column to one Record field.
type csvColumn struct {
	name  string
	field int // index into Record's fields
}

var (
	recordType = reflect.TypeFor[Record]()
	timeType   = reflect.TypeFor[time.Time]()
	csvColumns = buildCSVColumns()
)

// CSVColumns returns the column names the CSV writer writes, in order.
func CSVColumns() []string {
	names := make([]string, len(csvColumns))
	for i, c := range csvColumns {
		names[i] = c.name
	}
	return names
}

func buildCSVColumns() []csvColumn {
	var cols []csvColumn
	for i := 0; i < recordType.NumField(); i++ {
		f := recordType.Field(i)
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if name == "" || name == "-" {
			continue
		}
		cols = append(cols, csvColumn{name: name, field: i})
	}
	return cols
}

// formatCell renders one field as a CSV cell.
func formatCell(v reflect.Value) string {
	if v.Type() == timeType {
		t := v.Interface().(time.Time)
		if t.IsZero() {
			return ""
		}
		return t.Format(time.RFC3339Nano)
	}
	switch v.Kind() {
	case reflect.String:
		return v.String()
	case reflect.Int, reflect.Int64:
		return strconv.FormatInt(v.Int(), 10)
	case reflect.Float64:
		return strconv.FormatFloat(v.Float(), 'g', -1, 64)
	case reflect.Bool:
		if !v.Bool() {
			return "" // like omitempty
		}
		return "true"
	case reflect.Slice: // []float64
		parts := make([]string, v.Len())
		for i := range parts {
			parts[i] = strconv.FormatFloat(v.Index(i).Float(), 'g', -1, 64)
		}
		return strings.Join(parts, ";")
	case reflect.Map: // map[string]string
		return formatEnvCell(v.Interface().(map[string]string))
	}
	panic("results: no CSV cell format for " + v.Type().String())
}

// parseCell sets one field from a CSV cell; "" leaves the zero value.
func parseCell(v reflect.Value, s string) error {
	if s == "" {
		return nil
	}
	if v.Type() == timeType {
		t, err := time.Parse(time.RFC3339Nano, s)
		if err != nil {
			return &cellError{msg: fmt.Sprintf("invalid RFC 3339 time %q", s)}
		}
		v.Set(reflect.ValueOf(t))
		return nil
	}
	switch v.Kind() {
	case reflect.String:
		v.SetString(s)
	case reflect.Int, reflect.Int64:
		n, err := strconv.ParseInt(strings.TrimSpace(s), 10, 64)
		if err != nil || v.OverflowInt(n) {
			return &cellError{msg: fmt.Sprintf("invalid integer %q", s)}
		}
		v.SetInt(n)
	case reflect.Float64:
		f, err := strconv.ParseFloat(strings.TrimSpace(s), 64)
		if err != nil {
			return &cellError{msg: fmt.Sprintf("invalid number %q", s)}
		}
		v.SetFloat(f)
	case reflect.Bool:
		b, err := strconv.ParseBool(strings.TrimSpace(s))
		if err != nil {
			return &cellError{msg: fmt.Sprintf("invalid boolean %q (want true or false)", s)}
		}
		v.SetBool(b)
	case reflect.Slice:
		parts := strings.Split(s, ";")
		fs := make([]float64, len(parts))
		for i, p := range parts {
			f, err := strconv.ParseFloat(strings.TrimSpace(p), 64)
			if err != nil {
				return &cellError{msg: fmt.Sprintf("invalid number %q in list", p)}
			}
			fs[i] = f
		}
		v.Set(reflect.ValueOf(fs))
	case reflect.Map:
		m, err := parseEnvCell(s)
		if err != nil {
			return err
		}
		v.Set(reflect.ValueOf(m))
	default:
		panic("results: no CSV cell parser for " + v.Type().String())
	}
	return nil
}

// A CSVWriter writes Records as CSV with a header row. It buffers; call
// Flush at the end (Flush writes the header even when no record came).
type CSVWriter struct {
	w      *csv.Writer
	header bool // header written
	row    []string
}

// NewCSVWriter returns a writer of CSV to w.
func NewCSVWriter(w io.Writer) *CSVWriter {
	return &CSVWriter{w: csv.NewWriter(w), row: make([]string, len(csvColumns))}
}

func (w *CSVWriter) writeHeader() error {
	if w.header {
		return nil
	}
	w.header = true
	return w.w.Write(CSVColumns())
}

// Write writes one record as a row (after the header, the first time). A
// zero Schema is stamped with SchemaVersion; Env keeps what KeepEnv keeps.
func (w *CSVWriter) Write(r Record) error {
	if err := w.writeHeader(); err != nil {
		return err
	}
	r = normalizeForWrite(r)
	v := reflect.ValueOf(r)
	for i, c := range csvColumns {
		w.row[i] = formatCell(v.Field(c.field))
	}
	return w.w.Write(w.row)
}

// Flush writes the header if not yet written and any buffered data.
func (w *CSVWriter) Flush() error {
	if err := w.writeHeader(); err != nil {
		return err
	}
	w.w.Flush()
	return w.w.Error()
}

// A CSVReader reads Records from CSV written by CSVWriter (or by hand, or by
// a spreadsheet) one per Scan; see the layout above. A missing required
// column stops reading with an error naming file, line and column; a row
// that does not parse is skipped and reported by Err as a *SyntaxError
// (file:line:column). A schema newer than SchemaVersion stops reading.
type CSVReader struct {
	name  string
	r     *csv.Reader
	cols  []int // cols[i]: index into csvColumns of CSV column i, or -1
	width int   // fields per row
	rec   Record
	errs  errList
	done  bool
}

// NewCSVReader reads CSV from r; name (a file name) positions errors.
func NewCSVReader(name string, r io.Reader) *CSVReader {
	cr := csv.NewReader(r)
	cr.FieldsPerRecord = -1 // the reader checks widths itself, per row
	cr.ReuseRecord = true
	return &CSVReader{name: name, r: cr}
}

// csvRequired lists required columns; an entry with alternatives needs one.
var csvRequired = [][]string{{"collective"}, {"size"}, {"time_us", "busbw_gbps"}}

func (rd *CSVReader) readHeader() bool {
	hdr, err := rd.r.Read()
	if err != nil {
		rd.done = true
		if errors.Is(err, io.EOF) {
			rd.errs.fatal = &SyntaxError{File: rd.name, Msg: "no CSV header row", Err: ErrEmpty}
		} else {
			rd.errs.fatal = rd.csvErr(err)
		}
		return false
	}
	line, _ := rd.r.FieldPos(0)
	byName := make(map[string]int, len(csvColumns))
	for i, c := range csvColumns {
		byName[c.name] = i
	}
	rd.width = len(hdr)
	rd.cols = make([]int, len(hdr))
	seen := make(map[string]bool, len(hdr))
	for i, h := range hdr {
		h = strings.TrimSpace(strings.TrimPrefix(h, "\ufeff"))
		rd.cols[i] = -1
		if j, ok := byName[h]; ok && !seen[h] {
			rd.cols[i] = j
			seen[h] = true
		}
	}
	for _, alts := range csvRequired {
		ok := false
		for _, a := range alts {
			ok = ok || seen[a]
		}
		if !ok {
			rd.done = true
			quoted := make([]string, len(alts))
			for i, a := range alts {
				quoted[i] = strconv.Quote(a)
			}
			rd.errs.fatal = &SyntaxError{File: rd.name, Line: line,
				Msg: "CSV header lacks required column " + strings.Join(quoted, " or ")}
			return false
		}
	}
	return true
}

// Scan advances to the next record; false at the end or on a fatal error.
func (rd *CSVReader) Scan() bool {
	if rd.done {
		return false
	}
	if rd.cols == nil && !rd.readHeader() {
		return false
	}
	for {
		row, err := rd.r.Read()
		if errors.Is(err, io.EOF) {
			rd.done = true
			return false
		}
		if err != nil {
			var pe *csv.ParseError
			if errors.As(err, &pe) {
				rd.errs.add(rd.csvErr(err))
				continue
			}
			rd.done = true
			rd.errs.fatal = fmt.Errorf("%s: %w", rd.name, err)
			return false
		}
		line, _ := rd.r.FieldPos(0)
		if len(row) != rd.width {
			rd.errs.add(&SyntaxError{File: rd.name, Line: line,
				Msg: fmt.Sprintf("row has %d fields, header has %d (truncated line?)", len(row), rd.width)})
			continue
		}
		rec, ok := rd.parseRow(row, line)
		if !ok {
			continue
		}
		if rec.Schema == 0 {
			rec.Schema = SchemaVersion
		}
		if err := checkSchema(rd.name, line, rec.Schema); err != nil {
			rd.done = true
			rd.errs.fatal = err
			return false
		}
		rd.rec = rec
		return true
	}
}

func (rd *CSVReader) parseRow(row []string, line int) (Record, bool) {
	var rec Record
	v := reflect.ValueOf(&rec).Elem()
	for i, cell := range row {
		if rd.cols[i] < 0 {
			continue
		}
		c := csvColumns[rd.cols[i]]
		if err := parseCell(v.Field(c.field), cell); err != nil {
			_, col := rd.r.FieldPos(i)
			rd.errs.add(&SyntaxError{File: rd.name, Line: line, Col: col,
				Msg: fmt.Sprintf("column %q: %v", c.name, err)})
			return Record{}, false
		}
	}
	return rec, true
}

func (rd *CSVReader) csvErr(err error) error {
	var pe *csv.ParseError
	if errors.As(err, &pe) {
		return &SyntaxError{File: rd.name, Line: pe.Line, Col: pe.Column, Msg: "malformed CSV", Err: pe.Err}
	}
	return fmt.Errorf("%s: %w", rd.name, err)
}

// Record returns the record read by the last successful Scan.
func (rd *CSVReader) Record() Record { return rd.rec }

// Err returns the errors met so far (joined), or nil.
func (rd *CSVReader) Err() error { return rd.errs.err() }
