// table_json.go: the tuning table's JSON format: reading it with the line
// of every problem (ParseTable, LoadTable), writing it (WriteJSON), and the
// JSON helpers both use.

package tuning

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"slices"
	"strconv"
	"strings"

	"github.com/gccl/gccl/lib/proto"
)

// LoadTable reads and validates the JSON tuning table at path.
func LoadTable(path string) (*Table, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("tuning table: %w", err)
	}
	return ParseTable(data, path)
}

// Field names of the JSON format, in the order WriteJSON writes them.
var (
	tableFields = []string{"version", "comment", "rules"}
	ruleFields  = []string{"coll", "ranks", "hosts", "bytes", "algo", "proto", "channels", "buffsize"}
)

// ParseTable reads a JSON tuning table and validates it; name (usually the
// file name) prefixes every error. The format is
//
//	{"version": 1, "comment": "...", "rules": [
//	  {"coll":"allreduce","ranks":[2,8],"hosts":[1,1],"bytes":[0,65535],"algo":"Tree","proto":"LL","channels":2,"buffsize":0}
//	]}
//
// Ranges are inclusive [min,max] with max -1 unbounded. "ranks" and "hosts"
// may be left out (any count); "channels" 0 or left out lets the stack
// choose; "buffsize" 0 or left out keeps the communicator's. Names are
// case-insensitive. Unknown fields are errors.
func ParseTable(data []byte, name string) (*Table, error) {
	// fail reports a problem of the table as a whole, at byte off.
	fail := func(off int64, field string, format string, args ...any) error {
		return &TableError{File: name, Line: tableLineAt(data, off), Field: field, Err: fmt.Errorf(format, args...)}
	}
	// A syntax check of the whole input first gives the error's true offset;
	// after it, the streaming below only meets well-formed JSON.
	var whole json.RawMessage
	if err := json.Unmarshal(data, &whole); err != nil {
		var se *json.SyntaxError
		if errors.As(err, &se) {
			// Offset counts the bad byte, except at the end of the input.
			off := se.Offset
			if off < int64(len(data)) {
				off = max(off-1, 0)
			}
			return nil, fail(off, "", "not valid JSON: %v", se)
		}
		return nil, fail(0, "", "not valid JSON: %v", err)
	}
	top, ok := jsonObject(data, 0)
	if !ok {
		return nil, fail(0, "", "a tuning table is a JSON object {\"version\":%d,\"rules\":[...]}", TableVersion)
	}
	fields := map[string]jsonMember{}
	for _, m := range top {
		if !slices.Contains(tableFields, m.key) {
			return nil, fail(m.keyOff, m.key, "unknown field (valid: %s)", strings.Join(tableFields, ", "))
		}
		if _, dup := fields[m.key]; dup {
			return nil, fail(m.keyOff, m.key, "duplicate field")
		}
		fields[m.key] = m
	}

	// The version comes first: a file of another version may mean something
	// else by the same fields.
	t := &Table{}
	v, ok := fields["version"]
	if !ok {
		return nil, fail(0, "version", "missing (valid versions: %d)", TableVersion)
	}
	n, err := jsonInt(v.val)
	if err != nil {
		return nil, fail(v.valOff, "version", "%v (valid versions: %d)", err, TableVersion)
	}
	if n != TableVersion {
		return nil, fail(v.valOff, "version", "version %d is not supported (valid versions: %d)", n, TableVersion)
	}
	t.Version = TableVersion
	if c, ok := fields["comment"]; ok {
		if t.Comment, err = jsonString(c.val); err != nil {
			return nil, fail(c.valOff, "comment", "%v", err)
		}
	}
	r, ok := fields["rules"]
	if !ok {
		return nil, fail(0, "rules", "missing: want an array of rule objects ([] for none)")
	}
	elems, ok := jsonArray(r.val, r.valOff)
	if !ok {
		return nil, fail(r.valOff, "rules", "want an array of rule objects, got %s", jsonKind(r.val))
	}
	t.Rules = make([]Rule, 0, len(elems))
	lines := make([]int, 0, len(elems))
	for i, e := range elems {
		line := tableLineAt(data, e.valOff)
		rule, field, err := parseRule(e.val)
		if err != nil {
			return nil, &TableError{File: name, Line: line, Rule: i + 1, Field: field, Err: err}
		}
		t.Rules = append(t.Rules, rule)
		lines = append(lines, line)
	}
	if err := t.validate(name, lines); err != nil {
		return nil, err
	}
	return t, nil
}

// parseRule reads one rule object; on error it names the field at fault.
// Values are only read here: their meaning is checked by validate, the same
// code that checks tables built in code.
func parseRule(raw json.RawMessage) (Rule, string, error) {
	r := Rule{Ranks: anyCount, Hosts: anyCount}
	members, ok := jsonObject(raw, 0)
	if !ok {
		return r, "", fmt.Errorf("want a rule object {\"coll\":...}, got %s", jsonKind(raw))
	}
	seen := map[string]bool{}
	for _, m := range members {
		if !slices.Contains(ruleFields, m.key) {
			return r, m.key, fmt.Errorf("unknown field (valid: %s)", strings.Join(ruleFields, ", "))
		}
		if seen[m.key] {
			return r, m.key, errors.New("duplicate field")
		}
		seen[m.key] = true
		var err error
		switch m.key {
		case "coll":
			err = parseName(m.val, func(s string) (err error) { r.Coll, err = ParseColl(s); return })
		case "algo":
			err = parseName(m.val, func(s string) (err error) { r.Choice.Algo, err = ParseAlgo(s); return })
		case "proto":
			err = parseName(m.val, func(s string) (err error) { r.Choice.Proto, err = proto.Parse(s); return })
		case "ranks":
			r.Ranks, err = jsonRange(m.val)
		case "hosts":
			r.Hosts, err = jsonRange(m.val)
		case "bytes":
			r.Bytes, err = jsonRange(m.val)
		case "channels":
			r.Choice.NChannels, err = jsonSmallInt(m.val)
		case "buffsize":
			r.Choice.BuffSize, err = jsonSmallInt(m.val)
		}
		if err != nil {
			return r, m.key, err
		}
	}
	for _, f := range []string{"coll", "bytes", "algo", "proto"} {
		if !seen[f] {
			return r, f, errors.New("missing")
		}
	}
	return r, "", nil
}

func parseName(raw json.RawMessage, set func(string) error) error {
	s, err := jsonString(raw)
	if err != nil {
		return err
	}
	return set(s)
}

// WriteJSON writes t in the format ParseTable reads, one rule per line, with
// canonical names. It refuses an invalid table, so what it writes loads.
func (t *Table) WriteJSON(w io.Writer) error {
	if t == nil {
		return errors.New("tuning table: WriteJSON of a nil table")
	}
	if err := t.Validate(); err != nil {
		return err
	}
	var b bytes.Buffer
	fmt.Fprintf(&b, "{\n  \"version\": %d,\n", t.Version)
	if t.Comment != "" {
		fmt.Fprintf(&b, "  \"comment\": %s,\n", jsonQuote(t.Comment))
	}
	b.WriteString("  \"rules\": [")
	for i, r := range t.Rules {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, "\n    {\"coll\":%s,\"ranks\":[%d,%d],\"hosts\":[%d,%d],\"bytes\":[%d,%d],\"algo\":%s,\"proto\":%s,\"channels\":%d",
			jsonQuote(r.Coll.String()), r.Ranks.Min, r.Ranks.Max, r.Hosts.Min, r.Hosts.Max, r.Bytes.Min, r.Bytes.Max,
			jsonQuote(r.Choice.Algo.String()), jsonQuote(r.Choice.Proto.String()), r.Choice.NChannels)
		if r.Choice.BuffSize != 0 {
			fmt.Fprintf(&b, ",\"buffsize\":%d", r.Choice.BuffSize)
		}
		b.WriteByte('}')
	}
	if len(t.Rules) > 0 {
		b.WriteString("\n  ")
	}
	b.WriteString("]\n}\n")
	_, err := w.Write(b.Bytes())
	return err
}

// JSON helpers. The input has passed a syntax check, so a decoder error
// below can only mean a value of the wrong kind.

// jsonMember is an object member or array element with the offsets, in the
// whole file, of its key and of its value's first byte.
type jsonMember struct {
	key            string
	keyOff, valOff int64
	val            json.RawMessage
}

// jsonObject splits the object raw, which starts at offset base of the
// file, into its members in order; ok is false when raw is not an object.
func jsonObject(raw []byte, base int64) ([]jsonMember, bool) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return nil, false
	}
	var ms []jsonMember
	for dec.More() {
		keyOff := skipSep(raw, dec.InputOffset())
		tok, err := dec.Token()
		key, isKey := tok.(string)
		if err != nil || !isKey {
			return nil, false
		}
		valOff := skipSep(raw, dec.InputOffset())
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return nil, false
		}
		ms = append(ms, jsonMember{key: key, keyOff: base + keyOff, valOff: base + valOff, val: v})
	}
	return ms, true
}

// jsonArray splits the array raw, which starts at offset base of the file,
// into its elements; ok is false when raw is not an array.
func jsonArray(raw []byte, base int64) ([]jsonMember, bool) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('[') {
		return nil, false
	}
	var es []jsonMember
	for dec.More() {
		off := skipSep(raw, dec.InputOffset())
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return nil, false
		}
		es = append(es, jsonMember{valOff: base + off, val: v})
	}
	return es, true
}

// skipSep moves off past the whitespace, commas and colons between tokens,
// to the first byte of the next one (InputOffset stops before them).
func skipSep(raw []byte, off int64) int64 {
	for off < int64(len(raw)) && strings.IndexByte(" \t\r\n,:", raw[off]) >= 0 {
		off++
	}
	return off
}

func tableLineAt(data []byte, off int64) int {
	off = min(max(off, 0), int64(len(data)))
	return 1 + bytes.Count(data[:off], []byte{'\n'})
}

func jsonKind(raw json.RawMessage) string {
	if len(raw) == 0 {
		return "nothing"
	}
	switch raw[0] {
	case '{':
		return "an object"
	case '[':
		return "an array"
	case '"':
		return "a string"
	case 't', 'f':
		return "a boolean"
	case 'n':
		return "null"
	}
	return "a number"
}

// jsonInt reads an integer that is a JSON number, not a string, float or null.
func jsonInt(raw json.RawMessage) (int64, error) {
	if jsonKind(raw) != "a number" {
		return 0, fmt.Errorf("want an integer, got %s", jsonKind(raw))
	}
	n, err := strconv.ParseInt(string(raw), 10, 64)
	if err != nil {
		return 0, fmt.Errorf("want an integer, got %s", raw)
	}
	return n, nil
}

// jsonSmallInt is jsonInt for fields that become an int: a value past int32
// is out of every valid range, and refusing it here keeps it from wrapping.
func jsonSmallInt(raw json.RawMessage) (int, error) {
	n, err := jsonInt(raw)
	if err == nil && (n < math.MinInt32 || n > math.MaxInt32) {
		err = fmt.Errorf("%d is out of range", n)
	}
	return int(n), err
}

func jsonString(raw json.RawMessage) (string, error) {
	var s string
	if jsonKind(raw) != "a string" {
		return "", fmt.Errorf("want a string, got %s", jsonKind(raw))
	}
	err := json.Unmarshal(raw, &s)
	return s, err
}

// jsonRange reads [min,max].
func jsonRange(raw json.RawMessage) (Range, error) {
	bad := fmt.Errorf("want [min,max], two integers (max -1 = unbounded), got %s", raw)
	var two []json.RawMessage
	if jsonKind(raw) != "an array" || json.Unmarshal(raw, &two) != nil || len(two) != 2 {
		return Range{}, bad
	}
	lo, err1 := jsonInt(two[0])
	hi, err2 := jsonInt(two[1])
	if err1 != nil || err2 != nil {
		return Range{}, bad
	}
	return Range{Min: lo, Max: hi}, nil
}

// jsonQuote writes s as a JSON string without HTML escaping, so a comment
// reads as written.
func jsonQuote(s string) string {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(s) // a string always encodes
	return strings.TrimSuffix(b.String(), "\n")
}
