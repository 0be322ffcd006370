// table_validate.go: the tuning table's checks: every rule valid, and no two
// rules of a collective overlapping (the shape boxes they cover).

package tuning

import (
	"fmt"
	"sort"
	"strings"

	"github.com/gccl/gccl/lib/proto"
)

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
