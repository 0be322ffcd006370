// The run's configurations: the product of the sweep axes, the groups
// --interleave measures together, and what each one forces.

package perf

import (
	"github.com/gccl/gccl/lib/ccl"
	"github.com/gccl/gccl/lib/tuning"
)

// configs is the cartesian product of the sweep axes ("auto" where unset).
func (o *Options) configs() []RunConfig {
	protos := []tuning.ProtoReq{{}} // auto
	if len(o.Protos) > 0 {
		protos = nil
		for _, p := range o.Protos {
			protos = append(protos, tuning.ForceProto(p))
		}
	}
	algos := []tuning.AlgoReq{{}} // auto
	if len(o.Algos) > 0 {
		algos = nil
		for _, a := range o.Algos {
			algos = append(algos, tuning.ForceAlgo(a))
		}
	}
	chans, buffs := o.Channels, o.BuffSizes
	if len(chans) == 0 {
		chans = []int{0}
	}
	if len(buffs) == 0 {
		buffs = []int64{0}
	}
	var out []RunConfig
	add := func(rc RunConfig) {
		rc.Timeout, rc.RanksPerHost = o.timeout(), o.RanksPerHost
		out = append(out, o.resolve(rc))
	}
	if len(o.ConfigList) > 0 {
		for _, rc := range o.ConfigList {
			for _, b := range buffs {
				add(RunConfig{Proto: rc.Proto, Algo: rc.Algo, NChannels: rc.NChannels, BuffSize: b})
			}
		}
		return out
	}
	for _, p := range protos {
		for _, a := range algos {
			for _, c := range chans {
				r := tuning.Request{Algo: a, Proto: p}
				if x, ok := a.Get(); ok && x.OnBoard() && (r.CheckAlgoProto() != nil || c > 1) {
					continue // it runs LL on one channel: no such configuration
				}
				for _, b := range buffs {
					add(RunConfig{Proto: p, Algo: a, NChannels: c, BuffSize: b})
				}
			}
		}
	}
	return out
}

func (o *Options) hasAxes() bool {
	return len(o.Protos)+len(o.Algos)+len(o.Channels)+len(o.BuffSizes)+len(o.ConfigList) > 0
}

// interleaveGroups splits configs into the sets --interleave measures on one
// set of communicators: those that share a buffer size (a communicator's
// FIFOs have one), in order of first appearance.
func interleaveGroups(configs []RunConfig) [][]RunConfig {
	var groups [][]RunConfig
	at := map[int64]int{}
	for _, rc := range configs {
		i, ok := at[rc.BuffSize]
		if !ok {
			i = len(groups)
			at[rc.BuffSize] = i
			groups = append(groups, nil)
		}
		groups[i] = append(groups[i], rc)
	}
	return groups
}

// forcedOf is what a rank is forced to for configuration rc on a
// communicator started for several: an auto channel count is capped at the
// stack's default, so "auto" decides as a communicator of its own would.
func forcedOf(rc RunConfig) ccl.Forced {
	f := ccl.Forced{Algo: rc.Algo, Proto: rc.Proto, NChannels: rc.NChannels}
	if rc.NChannels == 0 {
		f.MaxNChannels = ccl.DefaultMaxNChannels()
	}
	return f
}
