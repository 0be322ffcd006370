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
	"sort"
	"strconv"
	"strings"

	"github.com/gccl/gccl/lib/proto"
)

// TableVersion is the only JSON table format version this package reads and
// writes. A future format bumps it, so an old binary refuses a new file
// instead of misreading it.
const TableVersion = 1

// maxRuleChannels bounds a rule's channel count (NCCL's MAXCHANNELS, the same
// bound as ccl.MaxChannels, which this package cannot import).
const maxRuleChannels = 64

// Table is a tuning table: rules that pin how an operation runs, consulted
// after explicit overrides (env, flags) and before the cost model. An
// operation that no rule covers falls back to the model.
//
// Invariant (checked by Validate, and so by ParseTable): for one collective,
// no two rules match the same (ranks, hosts, bytes) point, so the order of
// Rules never matters.
type Table struct {
	Version int // TableVersion
	Comment string
	Rules   []Rule
}

// Rule says that operations of collective Coll on a communicator whose rank
// and host counts lie in Ranks and Hosts, moving a byte count in Bytes, run
// with Choice.
type Rule struct {
	Coll   Coll
	Ranks  Range // rank counts, Min >= 1
	Hosts  Range // host counts, Min >= 1
	Bytes  Range // operation sizes in bytes, Min >= 0
	Choice Choice
}

// Range is an inclusive range [Min, Max]. Max == -1 means unbounded: every
// value from Min up.
type Range struct{ Min, Max int64 }

// anyCount is the range of every rank or host count.
var anyCount = Range{Min: 1, Max: -1}

// Contains reports whether v lies in r.
func (r Range) Contains(v int64) bool { return v >= r.Min && (r.Max == -1 || v <= r.Max) }

func (r Range) String() string { return fmt.Sprintf("[%d,%d]", r.Min, r.Max) }

// hi is r's upper end with unbounded as MaxInt64, which is the same set of
// int64 values.
func (r Range) hi() int64 {
	if r.Max == -1 {
		return math.MaxInt64
	}
	return r.Max
}

// closedRange builds a range from inclusive ends, MaxInt64 meaning unbounded.
func closedRange(lo, hi int64) Range {
	if hi == math.MaxInt64 {
		hi = -1
	}
	return Range{Min: lo, Max: hi}
}

// intersect returns r ∩ o and whether it is non-empty.
func (r Range) intersect(o Range) (Range, bool) {
	lo, hi := max(r.Min, o.Min), min(r.hi(), o.hi())
	return closedRange(lo, hi), lo <= hi
}

// TableError is one problem in a tuning table, located as precisely as the
// source allows.
type TableError struct {
	File  string // name given to ParseTable or ParseNCCLCSV; "" for a table built in code
	Line  int    // 1-based line of the rule or syntax error; 0 when unknown
	Rule  int    // 1-based rule index; 0 for the table as a whole or a CSV line
	Field string // the JSON field or CSV column at fault; "" when none
	Err   error
}

func (e *TableError) Error() string {
	var b strings.Builder
	if e.File != "" {
		b.WriteString(e.File)
	} else {
		b.WriteString("tuning table")
	}
	if e.Line > 0 {
		fmt.Fprintf(&b, ":%d", e.Line)
	}
	if e.Rule > 0 {
		fmt.Fprintf(&b, ": rule %d", e.Rule)
	}
	if e.Field != "" {
		fmt.Fprintf(&b, ": field %q", e.Field)
	}
	fmt.Fprintf(&b, ": %v", e.Err)
	return b.String()
}

func (e *TableError) Unwrap() error { return e.Err }

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

// Validate checks every rule and that no two rules overlap. Errors are
// *TableError values naming the rule (1-based) and field. A nil table is
// valid: it has no rules.
func (t *Table) Validate() error {
	if t == nil {
		return nil
	}
	return t.validate("", nil)
}

// validate checks t; lines[i], when given, is the line rule i+1 starts on.
func (t *Table) validate(name string, lines []int) error {
	lineOf := func(i int) int {
		if i < len(lines) {
			return lines[i]
		}
		return 0
	}
	if t.Version != TableVersion {
		return &TableError{File: name, Field: "version",
			Err: fmt.Errorf("version %d is not supported (valid versions: %d)", t.Version, TableVersion)}
	}
	for i, r := range t.Rules {
		if field, err := r.check(); err != nil {
			return &TableError{File: name, Line: lineOf(i), Rule: i + 1, Field: field, Err: err}
		}
	}
	// Rules sorted by collective and byte start, so each is only compared
	// with the rules of its collective that start at or before its end.
	order := make([]int, len(t.Rules))
	for i := range order {
		order[i] = i
	}
	sort.Slice(order, func(a, b int) bool {
		ra, rb := t.Rules[order[a]], t.Rules[order[b]]
		if ra.Coll != rb.Coll {
			return ra.Coll < rb.Coll
		}
		return ra.Bytes.Min < rb.Bytes.Min
	})
	// Report the overlap whose later rule comes first in the file, and name
	// the earliest rule it overlaps, so the message does not depend on the
	// sort.
	bestI, bestJ := -1, -1
	for a, i := range order {
		for _, j := range order[a+1:] {
			ri, rj := t.Rules[i], t.Rules[j]
			if rj.Coll != ri.Coll || rj.Bytes.Min > ri.Bytes.hi() {
				break
			}
			if _, ok := overlap(ri, rj); !ok {
				continue
			}
			lo, hi := min(i, j), max(i, j)
			if bestJ < 0 || hi < bestJ || (hi == bestJ && lo < bestI) {
				bestI, bestJ = lo, hi
			}
		}
	}
	if bestJ >= 0 {
		ri, rj := t.Rules[bestI], t.Rules[bestJ]
		b, _ := overlap(ri, rj)
		at := ""
		if l := lineOf(bestI); l > 0 {
			at = fmt.Sprintf(" (line %d)", l)
		}
		return &TableError{File: name, Line: lineOf(bestJ), Rule: bestJ + 1, Err: fmt.Errorf(
			"overlaps rule %d%s: both match %s with ranks %v, hosts %v, bytes %v",
			bestI+1, at, rj.Coll, b.ranks, b.hosts, b.bytes)}
	}
	return nil
}

// check validates one rule on its own, returning the field at fault.
func (r Rule) check() (string, error) {
	if r.Coll < 0 || r.Coll >= NumColls {
		return "coll", fmt.Errorf("unknown collective %v (valid: %s)", r.Coll, strings.Join(collNames[:], ", "))
	}
	if err := checkRuleRange(r.Ranks, 1); err != nil {
		return "ranks", err
	}
	if err := checkRuleRange(r.Hosts, 1); err != nil {
		return "hosts", err
	}
	if r.Ranks.Max != -1 && r.Hosts.Min > r.Ranks.Max {
		return "hosts", fmt.Errorf("at least %d hosts but at most %d ranks: no communicator has more hosts than ranks",
			r.Hosts.Min, r.Ranks.Max)
	}
	if err := checkRuleRange(r.Bytes, 0); err != nil {
		return "bytes", err
	}
	c := r.Choice
	if c.Algo < 0 || c.Algo >= NumAlgos {
		return "algo", fmt.Errorf("unknown algorithm %v (valid: %s)", c.Algo, strings.Join(algoNames[:], ", "))
	}
	if !Supports(r.Coll, c.Algo) {
		return "algo", fmt.Errorf("%s has no %s implementation (valid for %s: %s)",
			r.Coll, c.Algo, r.Coll, strings.Join(AlgoNamesFor(r.Coll), ", "))
	}
	if !c.Proto.Valid() {
		return "proto", fmt.Errorf("unknown protocol %v (valid: LL, LL128, Simple)", c.Proto)
	}
	if !SupportsProto(c.Algo, c.Proto) {
		return "proto", fmt.Errorf("%s runs on LL only, not %v", c.Algo, c.Proto)
	}
	if c.NChannels < 0 || c.NChannels > maxRuleChannels {
		return "channels", fmt.Errorf("%d is out of range: want 1..%d, or 0 to let the stack choose",
			c.NChannels, maxRuleChannels)
	}
	if c.BuffSize != 0 {
		if err := proto.ValidateBuffSize(c.Proto, c.BuffSize); err != nil {
			return "buffsize", fmt.Errorf("%w (or 0 to keep the communicator's)", err)
		}
	}
	return "", nil
}

func checkRuleRange(r Range, lo int64) error {
	switch {
	case r.Min < lo:
		return fmt.Errorf("range %v: min %d is below %d", r, r.Min, lo)
	case r.Max < -1:
		return fmt.Errorf("range %v: max %d is invalid (use -1 for unbounded)", r, r.Max)
	case r.Max != -1 && r.Max < r.Min:
		return fmt.Errorf("inverted range %v: min > max", r)
	}
	return nil
}

// shapeBox is the set of (ranks, hosts, bytes) points a rule matches.
type shapeBox struct{ ranks, hosts, bytes Range }

func boxOf(r Rule) shapeBox { return shapeBox{r.Ranks, r.Hosts, r.Bytes} }

// feasible reports whether b holds a point some communicator can have:
// every host holds at least one rank, so hosts <= ranks.
func (b shapeBox) feasible() bool { return b.hosts.Min <= b.ranks.hi() }

// meet returns b ∩ o and whether it holds a feasible point.
func (b shapeBox) meet(o shapeBox) (shapeBox, bool) {
	var m shapeBox
	var ok1, ok2, ok3 bool
	m.ranks, ok1 = b.ranks.intersect(o.ranks)
	m.hosts, ok2 = b.hosts.intersect(o.hosts)
	m.bytes, ok3 = b.bytes.intersect(o.bytes)
	return m, ok1 && ok2 && ok3 && m.feasible()
}

// overlap returns the points two rules of the same collective both match.
func overlap(a, b Rule) (shapeBox, bool) {
	if a.Coll != b.Coll {
		return shapeBox{}, false
	}
	return boxOf(a).meet(boxOf(b))
}

// Selector answers lookups for one communicator shape. It is immutable, so
// any number of goroutines may use it.
type Selector struct {
	// byColl[c] holds the rules of collective c that match the shape, sorted
	// by Bytes.Min. Invariant (from a valid table): their byte ranges are
	// disjoint, so the only candidate for a size is the last one starting
	// at or below it.
	byColl [NumColls][]selEntry
}

type selEntry struct {
	bytes  Range
	choice Choice
}

// For pre-filters the rules that apply to a communicator of nRanks ranks on
// nHosts hosts, once per communicator, so that a lookup per operation is a
// binary search. t should be valid (ParseTable and Validate ensure it); on
// an invalid one a lookup still returns some matching rule or none. A nil
// table gives a nil Selector, which matches nothing.
func (t *Table) For(nRanks, nHosts int) *Selector {
	if t == nil {
		return nil
	}
	s := &Selector{}
	for _, r := range t.Rules {
		if r.Coll < 0 || r.Coll >= NumColls || !r.Ranks.Contains(int64(nRanks)) || !r.Hosts.Contains(int64(nHosts)) {
			continue
		}
		s.byColl[r.Coll] = append(s.byColl[r.Coll], selEntry{bytes: r.Bytes, choice: r.Choice})
	}
	for _, es := range s.byColl {
		sort.SliceStable(es, func(i, j int) bool { return es[i].bytes.Min < es[j].bytes.Min })
	}
	return s
}

// Lookup returns the choice of the rule covering an operation of collective
// c on bytes bytes, or false when no rule does (the cost model decides).
func (s *Selector) Lookup(c Coll, bytes int64) (Choice, bool) {
	if s == nil || c < 0 || c >= NumColls {
		return Choice{}, false
	}
	es := s.byColl[c]
	i := sort.Search(len(es), func(i int) bool { return es[i].bytes.Min > bytes }) - 1
	if i >= 0 && es[i].bytes.Contains(bytes) {
		return es[i].choice, true
	}
	return Choice{}, false
}

// Lookup is For(nRanks, nHosts).Lookup(c, bytes), for one-off questions;
// per-operation callers keep the Selector.
func (t *Table) Lookup(c Coll, nRanks, nHosts int, bytes int64) (Choice, bool) {
	return t.For(nRanks, nHosts).Lookup(c, bytes)
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
