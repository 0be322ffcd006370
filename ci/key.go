package ci

import (
	"cmp"
	"fmt"
	"strings"

	"github.com/gccl/gccl/results"
)

// A Key is what a baseline and a candidate record must share to be compared:
// what ran, with which configuration, on how many ranks and hosts, at which
// size and placement. Names are canonical (see KeyOf) so that "" and "auto"
// match, and a log that says 0 hosts matches one that says 1.
type Key struct {
	Collective string `json:"collective"`
	Type       string `json:"type"`
	Op         string `json:"op"`
	Algorithm  string `json:"algorithm"` // "auto" when the stack chose
	Protocol   string `json:"protocol"`  // "auto" when the stack chose
	Channels   int    `json:"channels"`  // 0: auto
	BuffSize   int64  `json:"buffsize"`  // 0: the stack's default
	NRanks     int    `json:"nranks"`
	NHosts     int    `json:"nhosts"` // >= 1
	Size       int64  `json:"size"`
	Placement  string `json:"placement"`
}

// KeyOf returns the key of a record.
func KeyOf(r results.Record) Key {
	auto := func(s string) string {
		if s = strings.TrimSpace(s); s == "" || strings.EqualFold(s, "auto") {
			return "auto"
		}
		return s
	}
	coll := strings.TrimSpace(r.Collective)
	if r.Backend != results.BackendGoBench {
		coll = strings.ToLower(coll) // a Go benchmark's name is case-sensitive
	}
	return Key{
		Collective: coll,
		Type:       strings.TrimSpace(r.Type),
		Op:         strings.ToLower(strings.TrimSpace(r.Op)),
		Algorithm:  auto(r.Algorithm),
		Protocol:   auto(r.Protocol),
		Channels:   r.Channels,
		BuffSize:   r.BuffSize,
		NRanks:     r.NRanks,
		NHosts:     max(r.NHosts, 1),
		Size:       r.Size,
		Placement:  strings.TrimSpace(r.Placement),
	}
}

// Config is the configuration part of the key: "Ring/LL/2ch", with
// "auto" where the stack chose and the buffer size when one was forced.
func (k Key) Config() string {
	ch := "auto"
	if k.Channels > 0 {
		ch = fmt.Sprintf("%dch", k.Channels)
	}
	s := k.Algorithm + "/" + k.Protocol + "/" + ch
	if k.BuffSize > 0 {
		s += "/buff=" + results.SizeLabel(k.BuffSize)
	}
	return s
}

// Group is the key without size and placement: "allreduce float sum
// Ring/LL/2ch 2 ranks" (hosts when more than one); for a key of no ranks
// (a Go benchmark), its name alone.
func (k Key) Group() string {
	if k.bench() {
		return k.Collective
	}
	s := fmt.Sprintf("%s %s %s %s %d ranks", k.Collective, k.Type, k.Op, k.Config(), k.NRanks)
	if k.NHosts > 1 {
		s += fmt.Sprintf(" %d hosts", k.NHosts)
	}
	return s
}

// Point is the size and placement: "8K out-of-place"; "-" for a Go
// benchmark, which has neither.
func (k Key) Point() string {
	if k.bench() {
		return "-"
	}
	return results.SizeLabel(k.Size) + " " + k.Placement
}

func (k Key) String() string {
	if k.bench() {
		return k.Group()
	}
	return k.Group() + " " + k.Point()
}

// bench reports a key with no ranks, size or placement: not a collective
// run but a Go benchmark (results.GoBenchReader).
func (k Key) bench() bool { return k.NRanks == 0 && k.Size == 0 && k.Placement == "" }

// compareKeys orders keys by group fields, then placement, then size.
func compareKeys(a, b Key) int { return a.Compare(b) }

// Compare orders keys as the gate's tables list them: by group, then
// placement, then size (-1, 0 or +1).
func (k Key) Compare(o Key) int {
	return cmp.Or(
		cmp.Compare(k.Collective, o.Collective),
		cmp.Compare(k.Type, o.Type),
		cmp.Compare(k.Op, o.Op),
		cmp.Compare(k.Algorithm, o.Algorithm),
		cmp.Compare(k.Protocol, o.Protocol),
		cmp.Compare(k.Channels, o.Channels),
		cmp.Compare(k.BuffSize, o.BuffSize),
		cmp.Compare(k.NRanks, o.NRanks),
		cmp.Compare(k.NHosts, o.NHosts),
		cmp.Compare(k.Placement, o.Placement),
		cmp.Compare(k.Size, o.Size),
	)
}

// keyFields names the key's fields and reads them as text, for explaining
// why two sides have no key in common.
var keyFields = []struct {
	name string
	get  func(Key) string
}{
	{"collective", func(k Key) string { return k.Collective }},
	{"type", func(k Key) string { return k.Type }},
	{"op", func(k Key) string { return k.Op }},
	{"algorithm", func(k Key) string { return k.Algorithm }},
	{"protocol", func(k Key) string { return k.Protocol }},
	{"channels", func(k Key) string { return fmt.Sprint(k.Channels) }},
	{"buffsize", func(k Key) string { return fmt.Sprint(k.BuffSize) }},
	{"nranks", func(k Key) string { return fmt.Sprint(k.NRanks) }},
	{"nhosts", func(k Key) string { return fmt.Sprint(k.NHosts) }},
	{"size", func(k Key) string { return fmt.Sprint(k.Size) }},
	{"placement", func(k Key) string { return k.Placement }},
}
