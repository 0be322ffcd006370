package plots

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/gccl/gccl/lib/tuning"
	"github.com/gccl/gccl/results"
)

// Field is a record attribute that curves are grouped by (--by) and
// records filtered on (--where).
type Field string

// The fields, in the order labels name them.
const (
	FieldColl      Field = "coll"
	FieldRanks     Field = "ranks"
	FieldHosts     Field = "hosts"
	FieldAlgo      Field = "algo"
	FieldProto     Field = "proto"
	FieldNCh       Field = "nch"
	FieldBuff      Field = "buff"
	FieldChosen    Field = "chosen" // what the stack ran: chosen algo/proto/channels
	FieldBackend   Field = "backend"
	FieldHost      Field = "host"
	FieldType      Field = "type"
	FieldOp        Field = "op"
	FieldRoot      Field = "root"
	FieldPlacement Field = "placement"
)

// fieldDef says how a field reads a record and how its value reads in a
// curve label.
type fieldDef struct {
	name    Field
	aliases []string
	config  bool // part of the configuration: joined with '/' in labels
	numeric bool // values sort as numbers
	value   func(r results.Record) string
	label   func(v string) string
}

func same(v string) string { return v }

// fields is keyed by name; its order is the order of labels and groups.
var fields = []fieldDef{
	{name: FieldColl, aliases: []string{"collective"}, value: func(r results.Record) string { return r.Collective }, label: same},
	{name: FieldRanks, aliases: []string{"nranks"}, numeric: true,
		value: func(r results.Record) string { return strconv.Itoa(r.NRanks) },
		label: func(v string) string { return plural(v, "rank") }},
	{name: FieldHosts, aliases: []string{"nhosts"}, numeric: true,
		value: func(r results.Record) string { return strconv.Itoa(max(r.NHosts, 1)) },
		label: func(v string) string { return plural(v, "host") }},
	{name: FieldAlgo, aliases: []string{"algorithm"}, config: true,
		value: func(r results.Record) string { a, _ := recordedChoice(r); return a }, label: same},
	{name: FieldProto, aliases: []string{"protocol"}, config: true,
		value: func(r results.Record) string { _, p := recordedChoice(r); return p }, label: same},
	{name: FieldNCh, aliases: []string{"channels", "nchannels"}, config: true, numeric: true,
		value: func(r results.Record) string {
			if r.Channels <= 0 {
				return "auto"
			}
			return strconv.Itoa(r.Channels)
		},
		label: func(v string) string {
			if v == "auto" {
				return "auto-ch"
			}
			return v + "ch"
		}},
	{name: FieldBuff, aliases: []string{"buffsize"}, config: true, numeric: true,
		value: func(r results.Record) string {
			if r.BuffSize <= 0 {
				return "auto"
			}
			return strconv.FormatInt(r.BuffSize, 10)
		},
		label: func(v string) string {
			if v == "auto" {
				return "" // the default buffer goes unsaid, as in the tuner's configuration names
			}
			n, _ := strconv.ParseInt(v, 10, 64)
			return "buff=" + results.SizeLabel(n)
		}},
	{name: FieldChosen, aliases: []string{"ran"},
		value: func(r results.Record) string {
			if r.ChosenAlgo == "" && r.ChosenProto == "" {
				return "unknown"
			}
			return fmt.Sprintf("%s/%s/%dch", r.ChosenAlgo, r.ChosenProto, r.ChosenCh)
		},
		label: func(v string) string { return "ran " + v }},
	{name: FieldBackend, value: func(r results.Record) string { return r.Backend }, label: same},
	{name: FieldHost, aliases: []string{"machine"}, value: func(r results.Record) string { return r.Host }, label: same},
	{name: FieldType, aliases: []string{"datatype", "dtype"}, value: func(r results.Record) string { return r.Type }, label: same},
	{name: FieldOp, aliases: []string{"redop"}, value: func(r results.Record) string { return r.Op },
		label: func(v string) string {
			if v == "none" {
				return "" // a collective that does not reduce
			}
			return v
		}},
	{name: FieldRoot, numeric: true, value: func(r results.Record) string { return strconv.Itoa(r.Root) },
		label: func(v string) string { return "root " + v }},
	{name: FieldPlacement, value: func(r results.Record) string { return r.Placement }, label: same},
}

// recordedChoice is the algorithm and protocol r's run forced, named as
// the tuner names them (canonical; Ring for a protocol-only run of a
// collective that has Ring alone).
func recordedChoice(r results.Record) (algo, proto string) {
	return tuning.RecordedChoice(r.Collective, r.Algorithm, r.Protocol, r.ChosenAlgo)
}

func plural(v, unit string) string {
	if v == "1" {
		return v + " " + unit
	}
	return v + " " + unit + "s"
}

// DefaultBy is the grouping of curves when none is given: every field that
// makes two measurements different configurations. Only the fields whose
// values differ between curves appear in their labels.
var DefaultBy = []Field{FieldColl, FieldRanks, FieldHosts, FieldAlgo, FieldProto, FieldNCh, FieldBuff, FieldBackend, FieldHost, FieldType, FieldOp}

// CompareBy is the default grouping of a comparison: DefaultBy less the
// fields that name where a set was measured (backend, host), so that the
// same configuration on both sides pairs up.
var CompareBy = []Field{FieldColl, FieldRanks, FieldHosts, FieldAlgo, FieldProto, FieldNCh, FieldBuff, FieldType, FieldOp}

func defOf(f Field) (fieldDef, bool) {
	for _, d := range fields {
		if d.name == f {
			return d, true
		}
	}
	return fieldDef{}, false
}

// FieldNames lists the valid field names.
func FieldNames() string {
	names := make([]string, len(fields))
	for i, d := range fields {
		names[i] = string(d.name)
	}
	return strings.Join(names, ", ")
}

// ParseField reads a field name or alias, case-insensitively.
func ParseField(s string) (Field, error) {
	t := strings.ToLower(strings.TrimSpace(s))
	for _, d := range fields {
		if t == string(d.name) {
			return d.name, nil
		}
		for _, a := range d.aliases {
			if t == a {
				return d.name, nil
			}
		}
	}
	return "", fmt.Errorf("unknown field %q (valid: %s)", s, FieldNames())
}

// ParseFields reads a comma list of fields ("proto,algo,nch"), keeping the
// fields in the canonical order whatever order they are given in.
func ParseFields(s string) ([]Field, error) {
	seen := map[Field]bool{}
	for _, part := range strings.Split(s, ",") {
		if strings.TrimSpace(part) == "" {
			continue
		}
		f, err := ParseField(part)
		if err != nil {
			return nil, err
		}
		seen[f] = true
	}
	if len(seen) == 0 {
		return nil, fmt.Errorf("no fields in %q (valid: %s)", s, FieldNames())
	}
	var out []Field
	for _, d := range fields {
		if seen[d.name] {
			out = append(out, d.name)
		}
	}
	return out, nil
}

// Value returns field f of record r as grouping compares it: names
// canonical ("ring" -> "Ring", "" -> "auto"), counts in decimal.
func Value(f Field, r results.Record) string {
	d, ok := defOf(f)
	if !ok {
		return ""
	}
	return d.value(r)
}

// A Filter keeps the records whose fields have the given values (all of
// them; a field given twice keeps either value).
type Filter map[Field][]string

// ParseFilter reads "coll=allreduce,ranks=2,proto=LL|Simple".
func ParseFilter(s string) (Filter, error) {
	out := Filter{}
	for _, kv := range strings.Split(s, ",") {
		if strings.TrimSpace(kv) == "" {
			continue
		}
		k, v, ok := strings.Cut(kv, "=")
		if !ok || strings.TrimSpace(v) == "" {
			return nil, fmt.Errorf("filter %q: want field=value (fields: %s)", kv, FieldNames())
		}
		f, err := ParseField(k)
		if err != nil {
			return nil, fmt.Errorf("filter %q: %w", kv, err)
		}
		for _, alt := range strings.Split(v, "|") {
			out[f] = append(out[f], strings.TrimSpace(alt))
		}
	}
	return out, nil
}

// Keep reports whether r passes the filter; values compare as Value
// returns them, case-insensitively.
func (flt Filter) Keep(r results.Record) bool {
	for f, vals := range flt {
		got, ok := Value(f, r), false
		for _, v := range vals {
			if strings.EqualFold(got, v) {
				ok = true
			}
		}
		if !ok {
			return false
		}
	}
	return true
}

// Apply returns the records that pass the filter.
func (flt Filter) Apply(recs []results.Record) []results.Record {
	if len(flt) == 0 {
		return recs
	}
	var out []results.Record
	for _, r := range recs {
		if flt.Keep(r) {
			out = append(out, r)
		}
	}
	return out
}
