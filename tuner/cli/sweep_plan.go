// sweep_plan.go: a sweep's plan: its blocks (collective, ranks, configuration,
// sizes), the expansion of the sweep's axes into them, and the parsing of
// the axis flags.

package cli

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/gccl/gccl/internal/size"
	"github.com/gccl/gccl/lib/proto"
	"github.com/gccl/gccl/lib/tuning"
	"github.com/gccl/gccl/perf"
	"github.com/gccl/gccl/tuner"
)

// block is one perf run of a sweep: a collective on a rank count with one
// configuration over a size range.
type block struct {
	test    *perf.Test
	nRanks  int
	perHost int // 0: one host
	hosts   int // --hosts: the processes are this many hosts (0: perHost decides)
	cfg     sweepConfig
	sizes   []int64 // the sizes still to measure
}

// sweepConfig is one point of the configuration axes; zero values are
// auto.
type sweepConfig struct {
	proto tuning.ProtoReq
	algo  tuning.AlgoReq
	nch   int
	buff  int64
}

func (c sweepConfig) auto() bool { return c == sweepConfig{} }

// spec is the configuration as perf's --configs names it (the buffer size
// goes separately).
func (c sweepConfig) spec() string {
	if c.proto.IsAuto() && c.algo.IsAuto() && c.nch == 0 {
		return tuning.Auto
	}
	return tuning.Request{Algo: c.algo, Proto: c.proto, NChannels: c.nch}.String()
}

// rowSize is the size perf records for a requested size: the data of the
// elements that fit (nccl-tests rounds down to whole elements per rank),
// in the float type sweeps use.
func (b block) rowSize(size int64) int64 {
	_, row := b.test.Counts(size, 4, b.nRanks)
	return row
}

// key is the tuner.Key the block's records will have.
func (b block) key() tuner.Key {
	hosts := 1
	switch {
	case b.hosts > 0:
		hosts = b.hosts
	case b.perHost > 0:
		hosts = (b.nRanks + b.perHost - 1) / b.perHost
	}
	return tuner.Key{Shape: tuner.Shape{Coll: b.test.Collective, NRanks: b.nRanks, NHosts: hosts},
		Algo: b.cfg.algo.String(), Proto: b.cfg.proto.String(), NCh: b.cfg.nch, BuffSize: b.cfg.buff}
}

// planSweep expands the axes into runs, each with its full size list.
func planSweep(colls, ranks, perHost, protos, algos, chans, buffs string, auto bool, minB, maxB string, factor int64) ([]block, error) {
	lo, err := size.Parse(minB)
	if err != nil {
		return nil, fmt.Errorf("-b: %v", err)
	}
	hi, err := size.Parse(maxB)
	if err != nil {
		return nil, fmt.Errorf("-e: %v", err)
	}
	if lo < 1 || hi < lo || factor < 2 {
		return nil, fmt.Errorf("sizes: want 1 <= -b <= -e and -f >= 2 (got %d, %d, %d)", lo, hi, factor)
	}
	var sizes []int64
	for s := lo; s <= hi; s *= factor {
		sizes = append(sizes, s)
	}
	var tests []*perf.Test
	for _, c := range splitList(colls) {
		t := testByName(c)
		if t == nil {
			var names []string
			for _, t := range perf.Tests {
				names = append(names, t.Collective)
			}
			return nil, fmt.Errorf("--colls: unknown collective %q (valid: %s)", c, strings.Join(names, ", "))
		}
		tests = append(tests, t)
	}
	rankList, err := intList("--ranks", ranks, 1)
	if err != nil {
		return nil, err
	}
	perList, err := intList("--ranks-per-host", perHost, 0)
	if err != nil {
		return nil, err
	}
	protoList, err := reqList("--proto", protos, protoNames(), tuning.ParseProtoReq)
	if err != nil {
		return nil, err
	}
	algoList, err := reqList("--algo", algos, tuning.AlgoNames(), tuning.ParseAlgoReq)
	if err != nil {
		return nil, err
	}
	// "auto" leaves the channel count to the stack (NCCL's own, or the
	// embedded stack's), with algorithm and protocol forced.
	chList, err := intList("--nchannels", strings.ReplaceAll(strings.ToLower(chans), "auto", "0"), 0)
	if err != nil {
		return nil, err
	}
	var buffList []int64
	for _, b := range splitList(buffs) {
		n, err := size.Parse(b)
		if err != nil {
			return nil, fmt.Errorf("--buffsize: %v", err)
		}
		buffList = append(buffList, n)
	}
	if len(buffList) == 0 {
		buffList = []int64{0}
	}
	var plan []block
	for _, t := range tests {
		for _, n := range rankList {
			// A size too small for one float per rank measures nothing.
			var fit []int64
			for _, s := range sizes {
				if p, _ := t.Counts(s, 4, n); p > 0 {
					fit = append(fit, s)
				}
			}
			sizes := fit
			if len(sizes) == 0 {
				continue
			}
			for _, per := range perList {
				if auto {
					plan = append(plan, block{test: t, nRanks: n, perHost: per, sizes: sizes})
				}
				for _, a := range algoList {
					if tc, err := tuning.ParseColl(t.Collective); err == nil && !tuning.Supports(tc, algoOf(a)) {
						continue // no such algorithm for this collective (Tree, TwoShot: allreduce only)
					}
					for _, p := range protoList {
						for _, ch := range chList {
							if pp, _ := p.Get(); algoOf(a).OnBoard() && (pp != proto.LL || ch > 1) {
								continue // LL on one channel only
							}
							for _, b := range buffList {
								cfg := sweepConfig{proto: p, algo: a, nch: ch, buff: b}
								plan = append(plan, block{test: t, nRanks: n, perHost: per, cfg: cfg, sizes: sizes})
							}
						}
					}
				}
			}
		}
	}
	return plan, nil
}

func testByName(c string) *perf.Test {
	for _, t := range perf.Tests {
		if strings.EqualFold(t.Collective, c) {
			return t
		}
	}
	return nil
}

func splitList(s string) []string {
	var out []string
	for _, f := range strings.Split(s, ",") {
		if f = strings.TrimSpace(f); f != "" {
			out = append(out, f)
		}
	}
	return out
}

func intList(flag, s string, least int) ([]int, error) {
	var out []int
	for _, f := range splitList(s) {
		n, err := strconv.Atoi(f)
		if err != nil || n < least {
			return nil, fmt.Errorf("%s: %q is not an integer >= %d", flag, f, least)
		}
		out = append(out, n)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%s: empty list", flag)
	}
	return out, nil
}

// withoutOneShot drops the configurations of the one-shot board (OneShot,
// TwoShot) a run cannot have (NCCL has no such algorithm; processes on
// several hosts share no board): silently for --algo all, with an error
// when it was asked for by name.
func withoutOneShot(plan []block, algos string, hosts int, backend perf.BackendName) ([]block, error) {
	var keep []block
	for _, b := range plan {
		why := ""
		a := b.cfg.algo
		switch {
		case !algoOf(a).OnBoard():
		case backend == perf.BackendNCCL:
			why = fmt.Sprintf("with --backend nccl: %s is gccl's own algorithm, NCCL has none", a)
		case hosts > 1:
			why = fmt.Sprintf("with --hosts %d: %s needs every rank on one host (its board is memory they share)", hosts, a)
		}
		if why == "" {
			keep = append(keep, b)
		} else if !strings.EqualFold(strings.TrimSpace(algos), "all") {
			return nil, fmt.Errorf("--algo %s %s (valid there: Ring, Tree)", a, why)
		}
	}
	return keep, nil
}

// algoOf is the algorithm a sweep forces (auto: -1, none).
func algoOf(r tuning.AlgoReq) tuning.Algo {
	if a, ok := r.Get(); ok {
		return a
	}
	return -1
}

// protoNames are the protocols' names, in proto.Protocol order.
func protoNames() []string {
	var names []string
	for _, p := range proto.All() {
		names = append(names, p.String())
	}
	return names
}

// reqList reads a flag's comma-separated names with parse, each forcing
// one value ("all": every name in valid). "auto" is not a sweep axis
// value: --auto runs the stack's own choice.
func reqList[R interface{ IsAuto() bool }](flag, s string, valid []string, parse func(string) (R, error)) ([]R, error) {
	names := splitList(s)
	if strings.EqualFold(strings.TrimSpace(s), "all") {
		names = valid
	}
	var out []R
	for _, f := range names {
		r, err := parse(f)
		if err != nil || r.IsAuto() {
			return nil, fmt.Errorf("%s: unknown value %q (valid: %s, all)", flag, f, strings.Join(valid, ", "))
		}
		out = append(out, r)
	}
	return out, nil
}
