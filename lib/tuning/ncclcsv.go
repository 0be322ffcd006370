package tuning

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/gccl/gccl/lib/proto"
)

// NCCL's example tuner plugin (ext-tuner/example in the NCCL repository,
// loaded with NCCL_TUNER_CONFIG_FILE) reads one rule per line:
//
//	collective_type,min_bytes,max_bytes,algorithm,protocol,channels,nNodes,nRanks,numPipeOps,regBuff
//
// Facts of its parser this file relies on:
//   - lines starting with '#' and empty lines are skipped; fields are split
//     on ',' and trimmed of spaces and tabs; 8 to 10 fields (numPipeOps and
//     regBuff are optional, -1 when left out); lines are read with a
//     256-byte buffer, so a longer line is cut in two;
//   - names are compared exactly, in lower case, and an unknown one silently
//     becomes allreduce / ring / simple;
//   - min_bytes and max_bytes are read with strtoull into a size_t and the
//     range is inclusive: SIZE_MAX (18446744073709551615) bounds nothing,
//     and "-1" wraps to it;
//   - channels -1 keeps NCCL's count; nNodes, nRanks, numPipeOps and regBuff
//     -1 match any value, anything else only that exact value;
//   - the first matching line wins (one whose algorithm and protocol NCCL
//     can run on that communicator).

// ncclCSVColumns are the column names, in order.
var ncclCSVColumns = [...]string{"collective_type", "min_bytes", "max_bytes", "algorithm", "protocol",
	"channels", "nNodes", "nRanks", "numPipeOps", "regBuff"}

const (
	// ncclAnyBytes is max_bytes for "no upper bound": SIZE_MAX, the largest
	// value NCCL's strtoull-into-size_t reads, so every size matches.
	ncclAnyBytes = "18446744073709551615"
	// ncclCSVMaxLines bounds an export, whose rank and host ranges become
	// one line per (nNodes, nRanks) pair.
	ncclCSVMaxLines = 4096
	// ncclCSVMaxRules bounds an import, whose overlapping lines are split
	// into disjoint rules.
	ncclCSVMaxRules = 1 << 16
	// ncclCommentWidth keeps every comment line well inside NCCL's 256-byte
	// line buffer: the tail of a longer one would be parsed as a rule.
	ncclCommentWidth = 200
)

// ncclOnlyAlgos are algorithms NCCL's tuner knows that gccl does not run.
var ncclOnlyAlgos = []string{"collnet_direct", "collnet_chain", "nvls", "nvls_tree", "pat"}

// WriteNCCLCSV writes t as a configuration for NCCL's example tuner plugin,
// so a table made here can be handed to NCCL.
//
// NCCL matches nRanks and nNodes against one exact value or any (-1). A
// rule's range with Min == Max writes that value, [1,-1] writes -1, and any
// other bounded range becomes one line per (nNodes, nRanks) pair with
// nNodes <= nRanks (an unbounded host range ends at the rank range's max).
// A rank range like [4,-1] cannot be written and is an error, as is an
// export past 4096 lines. Unbounded max_bytes is written as
// 18446744073709551615 (SIZE_MAX, see above), channels 0 as -1, and
// numPipeOps and regBuff as -1. NCCL's format has no buffer size: a rule's
// BuffSize is left out, with a comment line saying so.
func (t *Table) WriteNCCLCSV(w io.Writer) error {
	if t == nil {
		return errors.New("tuning table: WriteNCCLCSV of a nil table")
	}
	if err := t.Validate(); err != nil {
		return err
	}
	var b bytes.Buffer
	b.WriteString("# NCCL example tuner configuration (ext-tuner/example; set NCCL_TUNER_CONFIG_FILE to this file),\n")
	fmt.Fprintf(&b, "# exported from a gccl tuning table (version %d).\n", t.Version)
	for _, l := range commentLines(t.Comment) {
		fmt.Fprintf(&b, "# %s\n", l)
	}
	b.WriteString("# Byte ranges are inclusive; max_bytes " + ncclAnyBytes + " (SIZE_MAX) is unbounded.\n")
	b.WriteString("# -1 keeps NCCL's channel count, and matches any nNodes, nRanks, numPipeOps or regBuff.\n")
	b.WriteString("# Warning: NCCL 2.28's example plugin sets 1 channel on every call it is asked about, matched\n")
	b.WriteString("# or not, and a -1 keeps that 1 (measured 13-94% slower on 2 H100s): use a plugin that leaves\n")
	b.WriteString("# the channel count alone unless a rule sets it.\n")
	b.WriteString("# " + strings.Join(ncclCSVColumns[:], ",") + "\n")
	lines := 0
	for i, r := range t.Rules {
		if r.Choice.Algo.OnBoard() {
			// gccl's own algorithms: NCCL has nothing to run for them, and
			// a size range without a line falls to NCCL's own choice.
			fmt.Fprintf(&b, "# rule %d: %s %v bytes left out (%s is gccl's own algorithm; NCCL chooses there)\n", i+1, r.Coll, r.Bytes, r.Choice.Algo)
			continue
		}
		ranks, err := ncclCounts(r.Ranks)
		if err != nil {
			return &TableError{Rule: i + 1, Field: "ranks", Err: err}
		}
		// Hosts never outnumber ranks, so [2,-1] hosts with at most 8 ranks
		// is [2,8], which NCCL's format can list.
		hr := r.Hosts
		if hr.Max == -1 && hr.Min > 1 && r.Ranks.Max != -1 {
			hr.Max = r.Ranks.Max
		}
		hosts, err := ncclCounts(hr)
		if err != nil {
			return &TableError{Rule: i + 1, Field: "hosts", Err: err}
		}
		type pair struct{ nodes, ranks int64 }
		var pairs []pair
		for _, rk := range ranks {
			for _, h := range hosts {
				if rk == -1 || h == -1 || h <= rk {
					pairs = append(pairs, pair{h, rk})
				}
			}
			if lines+len(pairs) > ncclCSVMaxLines {
				return &TableError{Rule: i + 1, Err: fmt.Errorf(
					"the NCCL export would pass %d lines: rank range %v x host range %v is one line per pair",
					ncclCSVMaxLines, r.Ranks, r.Hosts)}
			}
		}
		lines += len(pairs)
		if r.Choice.BuffSize != 0 {
			fmt.Fprintf(&b, "# rule %d: buffsize %d left out (NCCL's tuner cannot set a buffer size)\n", i+1, r.Choice.BuffSize)
		}
		maxBytes := ncclAnyBytes
		if r.Bytes.Max != -1 {
			maxBytes = strconv.FormatInt(r.Bytes.Max, 10)
		}
		channels := r.Choice.NChannels
		if channels == 0 {
			channels = -1
		}
		for _, p := range pairs {
			fmt.Fprintf(&b, "%s,%d,%s,%s,%s,%d,%d,%d,-1,-1\n", r.Coll, r.Bytes.Min, maxBytes,
				strings.ToLower(r.Choice.Algo.String()), strings.ToLower(r.Choice.Proto.String()),
				channels, p.nodes, p.ranks)
		}
	}
	_, err := w.Write(b.Bytes())
	return err
}

// ncclCounts lists the exact values NCCL needs for a rank or host range,
// -1 standing for any.
func ncclCounts(r Range) ([]int64, error) {
	switch {
	case r == anyCount:
		return []int64{-1}, nil
	case r.Min == r.Max:
		return []int64{r.Min}, nil
	case r.Max == -1:
		return nil, fmt.Errorf("range %v is unbounded above but does not start at 1: NCCL matches one count or any (-1), so it cannot be written", r)
	case r.Max-r.Min >= ncclCSVMaxLines:
		return nil, fmt.Errorf("range %v would need more than %d NCCL lines", r, ncclCSVMaxLines)
	}
	vs := make([]int64, 0, r.Max-r.Min+1)
	for v := r.Min; v <= r.Max; v++ {
		vs = append(vs, v)
	}
	return vs, nil
}

// commentLines splits a comment into '#' lines that fit NCCL's line buffer.
func commentLines(c string) []string {
	var out []string
	for _, l := range strings.Split(c, "\n") {
		l = strings.TrimRight(l, "\r")
		if l == "" {
			continue
		}
		for len(l) > ncclCommentWidth {
			cut := ncclCommentWidth
			for cut > 0 && !utf8.RuneStart(l[cut]) {
				cut--
			}
			out = append(out, l[:cut])
			l = l[cut:]
		}
		out = append(out, l)
	}
	return out
}

// ParseNCCLCSV reads a configuration of NCCL's example tuner plugin into a
// validated table that decides as NCCL would. name prefixes every error,
// which gives the line and column.
//
// It is stricter than NCCL's parser, which silently reads unknown names as
// allreduce / ring / simple and junk numbers as 0: names must be NCCL's
// exact lower-case ones; algorithms gccl does not run (collnet_*, nvls*,
// pat) are refused; every number must parse; a combination gccl cannot run
// (tree for allgather) is an error. numPipeOps and regBuff must be -1 (or
// left out), as gccl matches on neither.
//
// NCCL takes the first matching line; a gccl table has no overlaps. So each
// line keeps only the points no earlier line of its collective matches: its
// box of (nRanks, nNodes, bytes) minus the earlier lines' boxes, split into
// disjoint rules (a line entirely shadowed adds none). The usual file, where
// lines for one shape come before a catch-all with -1, thus reads as NCCL
// reads it. A split past 65536 rules is an error.
func ParseNCCLCSV(r io.Reader, name string) (*Table, error) {
	type csvLine struct {
		rule Rule
		line int
	}
	var parsed []csvLine
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 4096), 1<<20)
	n := 0
	for sc.Scan() {
		n++
		text := strings.TrimSpace(sc.Text())
		if text == "" || text[0] == '#' {
			continue
		}
		rule, field, err := parseNCCLLine(text)
		if err != nil {
			return nil, &TableError{File: name, Line: n, Field: field, Err: err}
		}
		parsed = append(parsed, csvLine{rule, n})
	}
	if err := sc.Err(); err != nil {
		return nil, &TableError{File: name, Line: n + 1, Err: err}
	}

	t := &Table{Version: TableVersion, Rules: []Rule{}}
	var lines []int
	for j, l := range parsed {
		pieces := []shapeBox{boxOf(l.rule)}
		for _, earlier := range parsed[:j] {
			if earlier.rule.Coll != l.rule.Coll {
				continue
			}
			var next []shapeBox
			for _, p := range pieces {
				next = append(next, p.minus(boxOf(earlier.rule))...)
			}
			pieces = next
			if len(pieces) == 0 || len(t.Rules)+len(pieces) > ncclCSVMaxRules {
				break
			}
		}
		if len(t.Rules)+len(pieces) > ncclCSVMaxRules {
			return nil, &TableError{File: name, Line: l.line, Err: fmt.Errorf(
				"splitting overlapping lines so the first match keeps precedence needs more than %d rules", ncclCSVMaxRules)}
		}
		for _, p := range pieces {
			r := l.rule
			r.Ranks, r.Hosts, r.Bytes = p.ranks, p.hosts, p.bytes
			t.Rules = append(t.Rules, r)
			lines = append(lines, l.line)
		}
	}
	// Each line was checked and the pieces are disjoint; this is a backstop.
	if err := t.validate(name, lines); err != nil {
		return nil, err
	}
	return t, nil
}

// minus returns the feasible points of b outside o, as disjoint boxes: for
// each dimension in turn, the slabs of b below and above o, after which b
// is narrowed to o in that dimension (at most 6 boxes).
func (b shapeBox) minus(o shapeBox) []shapeBox {
	if _, ok := b.meet(o); !ok {
		return []shapeBox{b}
	}
	var out []shapeBox
	cur := b
	dims := func(x *shapeBox) [3]*Range { return [3]*Range{&x.ranks, &x.hosts, &x.bytes} }
	for d := range 3 {
		lo, hi := dims(&cur)[d].Min, dims(&cur)[d].hi()
		olo, ohi := dims(&o)[d].Min, dims(&o)[d].hi()
		if lo < olo {
			p := cur
			*dims(&p)[d] = closedRange(lo, olo-1)
			if p.feasible() {
				out = append(out, p)
			}
			lo = olo
		}
		if hi > ohi {
			p := cur
			*dims(&p)[d] = closedRange(ohi+1, hi)
			if p.feasible() {
				out = append(out, p)
			}
			hi = ohi
		}
		*dims(&cur)[d] = closedRange(lo, hi)
	}
	return out
}

// parseNCCLLine reads one rule line; on error it names the column at fault.
func parseNCCLLine(text string) (Rule, string, error) {
	var r Rule
	cols := strings.Split(text, ",")
	if len(cols) < 8 || len(cols) > len(ncclCSVColumns) {
		return r, "", fmt.Errorf("%d columns, want 8 to 10: %s (the last two optional)",
			len(cols), strings.Join(ncclCSVColumns[:], ","))
	}
	for i := range cols {
		cols[i] = strings.Trim(cols[i], " \t")
		if cols[i] == "" {
			return r, ncclCSVColumns[i], errors.New("empty (NCCL's parser would skip it and shift the columns after it)")
		}
	}

	c := slices.Index(collNames[:], cols[0])
	if c < 0 {
		return r, ncclCSVColumns[0], fmt.Errorf("unknown collective %q (valid, in lower case as NCCL compares them: %s)",
			cols[0], strings.Join(collNames[:], ", "))
	}
	r.Coll = Coll(c)

	lo, err := strconv.ParseUint(cols[1], 10, 64)
	if err != nil || lo > math.MaxInt64 {
		return r, ncclCSVColumns[1], fmt.Errorf("%q is not a byte count from 0 to %d", cols[1], int64(math.MaxInt64))
	}
	hi := uint64(math.MaxUint64) // "-1": NCCL's strtoull wraps it to SIZE_MAX
	if cols[2] != "-1" {
		if hi, err = strconv.ParseUint(cols[2], 10, 64); err != nil {
			return r, ncclCSVColumns[2], fmt.Errorf("%q is not a byte count from 0 to %s", cols[2], ncclAnyBytes)
		}
	}
	if lo > hi {
		return r, ncclCSVColumns[2], fmt.Errorf("inverted byte range: min_bytes %d > max_bytes %d", lo, hi)
	}
	// Every size gccl can be asked for is an int64, so any max from
	// MaxInt64 up means unbounded.
	r.Bytes = closedRange(int64(lo), int64(min(hi, math.MaxInt64)))

	switch a := cols[3]; {
	case a == "ring":
		r.Choice.Algo = Ring
	case a == "tree":
		r.Choice.Algo = Tree
	case slices.Contains(ncclOnlyAlgos, a):
		return r, ncclCSVColumns[3], fmt.Errorf("gccl does not run %s (valid: ring, tree)", a)
	default:
		return r, ncclCSVColumns[3], fmt.Errorf("unknown algorithm %q (valid: ring, tree)", a)
	}
	p := slices.IndexFunc(proto.All(), func(p proto.Protocol) bool { return strings.ToLower(p.String()) == cols[4] })
	if p < 0 {
		return r, ncclCSVColumns[4], fmt.Errorf("unknown protocol %q (valid: ll, ll128, simple)", cols[4])
	}
	r.Choice.Proto = proto.All()[p]

	ch, err := strconv.Atoi(cols[5])
	switch {
	case err != nil || ch == 0 || ch < -1 || ch > maxRuleChannels:
		return r, ncclCSVColumns[5], fmt.Errorf("%q is not a channel count: want 1..%d, or -1 to keep NCCL's", cols[5], maxRuleChannels)
	case ch > 0:
		r.Choice.NChannels = ch
	}
	if r.Hosts, err = ncclCount(cols[6]); err != nil {
		return r, ncclCSVColumns[6], err
	}
	if r.Ranks, err = ncclCount(cols[7]); err != nil {
		return r, ncclCSVColumns[7], err
	}
	for i := 8; i < len(cols); i++ {
		if cols[i] != "-1" {
			return r, ncclCSVColumns[i], fmt.Errorf("%q is not supported: gccl matches any %s, so only -1 is", cols[i], ncclCSVColumns[i])
		}
	}
	if field, err := r.check(); err != nil {
		return r, ncclColumnOf[field], err
	}
	return r, "", nil
}

// ncclColumnOf maps a rule's JSON field to its CSV column.
var ncclColumnOf = map[string]string{"coll": "collective_type", "ranks": "nRanks", "hosts": "nNodes",
	"bytes": "max_bytes", "algo": "algorithm", "proto": "protocol", "channels": "channels"}

// ncclCount reads nNodes or nRanks: -1 is any, else one exact count.
func ncclCount(s string) (Range, error) {
	v, err := strconv.ParseInt(s, 10, 32)
	switch {
	case err == nil && v == -1:
		return anyCount, nil
	case err == nil && v >= 1:
		return Range{Min: v, Max: v}, nil
	}
	return Range{}, fmt.Errorf("%q is not a count: want 1 or more, or -1 for any", s)
}
