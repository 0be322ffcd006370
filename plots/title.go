package plots

import (
	"sort"
	"strconv"
	"strings"

	"github.com/gccl/gccl/results"
)

// Title describes the records of a figure: collective(s), ranks (and
// hosts when more than one), machine and backend, and the date(s) of the
// runs: "allreduce, 2 ranks, vm (embedded), 2026-11-21". Each part lists
// every distinct value ("allgather+allreduce", "2,4 ranks"); parts no
// record knows are left out.
func Title(recs []results.Record) string {
	colls := distinct(recs, func(r results.Record) string { return r.Collective })
	ranks := distinctInts(recs, func(r results.Record) int { return r.NRanks })
	hosts := distinctInts(recs, func(r results.Record) int { return max(r.NHosts, 1) })
	machines := distinct(recs, func(r results.Record) string { return r.Host })
	backends := distinct(recs, func(r results.Record) string { return r.Backend })
	dates := distinct(recs, func(r results.Record) string {
		if r.Timestamp.IsZero() {
			return ""
		}
		return r.Timestamp.UTC().Format("2006-01-02")
	})
	var parts []string
	if len(colls) > 0 {
		parts = append(parts, strings.Join(colls, "+"))
	}
	if len(ranks) > 0 {
		parts = append(parts, joinInts(ranks)+" ranks")
		if len(ranks) == 1 && ranks[0] == 1 {
			parts[len(parts)-1] = "1 rank"
		}
	}
	if len(hosts) > 1 || (len(hosts) == 1 && hosts[0] > 1) {
		parts = append(parts, joinInts(hosts)+" hosts")
	}
	where := strings.Join(machines, "+")
	if len(backends) > 0 {
		b := strings.Join(backends, "+")
		if where == "" {
			where = b
		} else {
			where += " (" + b + ")"
		}
	}
	if where != "" {
		parts = append(parts, where)
	}
	switch len(dates) {
	case 0:
	case 1:
		parts = append(parts, dates[0])
	default:
		parts = append(parts, dates[0]+".."+dates[len(dates)-1])
	}
	return strings.Join(parts, ", ")
}

// distinct returns the sorted distinct non-empty values of f.
func distinct(recs []results.Record, f func(results.Record) string) []string {
	seen := map[string]bool{}
	var out []string
	for _, r := range recs {
		if v := f(r); v != "" && !seen[v] {
			seen[v] = true
			out = append(out, v)
		}
	}
	sort.Strings(out)
	return out
}

// distinctInts returns the sorted distinct positive values of f.
func distinctInts(recs []results.Record, f func(results.Record) int) []int {
	seen := map[int]bool{}
	var out []int
	for _, r := range recs {
		if v := f(r); v > 0 && !seen[v] {
			seen[v] = true
			out = append(out, v)
		}
	}
	sort.Ints(out)
	return out
}

func joinInts(xs []int) string {
	s := make([]string, len(xs))
	for i, x := range xs {
		s[i] = strconv.Itoa(x)
	}
	return strings.Join(s, ",")
}
