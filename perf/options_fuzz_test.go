package perf

import (
	"bytes"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/gccl/gccl/lib/ccl"
	"github.com/gccl/gccl/lib/tuning"
)

// FuzzConfigs fuzzes --configs, directly and through parseOptions. On any
// input: no panic; a refusal is a usage error naming --configs and what is
// valid; an accepted list has one valid configuration per comma-separated
// entry, and written back as ALGO/PROTO/CHANNELS it parses to itself.
func FuzzConfigs(f *testing.F) {
	for _, s := range []string{"auto", "Ring/LL/1,Tree/Simple/4", "ring/ll128/auto, AUTO/auto/64",
		"Ring/LL", "Ring/LL64/1", "Mesh/LL/1", "Ring/LL/0", "Ring/LL/65", "Tree/LL/+1", "", " , ", "a/b/c/d"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		cfgs, err := parseConfigList(s)
		if _, perr := parseOptions("all_reduce_perf", []string{"--configs", s}, &bytes.Buffer{}); (perr == nil) != (err == nil) {
			t.Fatalf("%q: parseConfigList says %v, parseOptions %v", s, err, perr)
		}
		if err != nil {
			var ue *usageError
			if !errors.As(err, &ue) || !strings.Contains(ue.msg, "--configs") || !strings.Contains(ue.msg, "want ALGO/PROTO/CHANNELS") {
				t.Fatalf("%q: refused with %v, want a usage error naming --configs and the valid form", s, err)
			}
			return
		}
		if strings.TrimSpace(s) == "" {
			if cfgs != nil {
				t.Fatalf("%q: %v, want no list", s, cfgs)
			}
			return
		}
		if len(cfgs) != strings.Count(s, ",")+1 {
			t.Fatalf("%q: %d configurations from %d entries", s, len(cfgs), strings.Count(s, ",")+1)
		}
		var back []string
		for _, c := range cfgs {
			r := tuning.Request{Algo: c.Algo, Proto: c.Proto, NChannels: c.NChannels}
			if a, ok := c.Algo.Get(); ok && (a < 0 || a >= tuning.NumAlgos) || r.CheckAlgoProto() != nil ||
				c.NChannels < 0 || c.NChannels > ccl.MaxChannels {
				t.Fatalf("%q: invalid configuration accepted: %+v", s, c)
			}
			if p, ok := c.Proto.Get(); ok && !p.Valid() {
				t.Fatalf("%q: invalid protocol accepted: %+v", s, c)
			}
			back = append(back, r.String())
		}
		again, err := parseConfigList(strings.Join(back, ","))
		if err != nil || !slices.Equal(again, cfgs) {
			t.Fatalf("%q written as %q parses to %+v, %v; want %+v", s, strings.Join(back, ","), again, err, cfgs)
		}
	})
}
