// table.go: the tuning table's types (Table, Rule, Range, TableError) and
// its lookups (Selector). Parsing and writing are in table_json.go, the
// checks in table_validate.go.

package tuning

import (
	"fmt"
	"math"
	"sort"
	"strings"
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
