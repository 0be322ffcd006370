package tuner

import (
	"math"
	"slices"
	"sort"

	"github.com/gccl/gccl/lib/proto"
	"github.com/gccl/gccl/lib/tuning"
)

// Config is one forced configuration of a sweep.
type Config struct {
	Algo  tuning.Algo
	Proto proto.Protocol
	NCh   int // channels asked for
}

// ChoiceRow compares, at one size of one shape, the fastest measured
// configuration with the one the model picks among the measured ones.
type ChoiceRow struct {
	Coll           tuning.Coll
	NRanks, NHosts int
	Bytes          int64
	Best           Config  // fastest measured
	BestUs         float64 // its measured time
	Model          Config  // the model's pick (Choose, limited to the measured configurations)
	ModelUs        float64 // the measured time of the model's pick (NaN if not measured)
	PredictedUs    float64 // the model's time for its pick
}

// Regret is how much slower the model's pick ran than the best: t(pick) /
// t(best) - 1.
func (r ChoiceRow) Regret() float64 { return r.ModelUs/r.BestUs - 1 }

type shape struct {
	coll           tuning.Coll
	nRanks, nHosts int
	realHosts      bool
	bytes          int64
}

// CompareChoices builds one ChoiceRow per (collective, shape, size) of the
// points. The model chooses with the algorithms and protocols measured at
// that size and at most the largest channel count measured, the way the
// stack would on a communicator of that many channels.
func CompareChoices(c tuning.Constants, procs int, pts []Point) []ChoiceRow {
	bySize := map[shape]map[Config]float64{}
	for _, p := range pts {
		k := shape{p.Coll, p.NRanks, p.NHosts, p.RealHosts, p.Bytes}
		if bySize[k] == nil {
			bySize[k] = map[Config]float64{}
		}
		bySize[k][Config{p.Algo, p.Proto, p.ReqCh}] = p.Us
	}
	var rows []ChoiceRow
	for k, meas := range bySize {
		row := ChoiceRow{Coll: k.coll, NRanks: k.nRanks, NHosts: k.nHosts, Bytes: k.bytes, BestUs: math.Inf(1)}
		var lim tuning.Limits
		for cfg, us := range meas {
			if us < row.BestUs || (us == row.BestUs && less(cfg, row.Best)) {
				row.Best, row.BestUs = cfg, us
			}
			if !slices.Contains(lim.Algos, cfg.Algo) {
				lim.Algos = append(lim.Algos, cfg.Algo)
			}
			if !slices.Contains(lim.Protos, cfg.Proto) {
				lim.Protos = append(lim.Protos, cfg.Proto)
			}
			lim.MaxChannels = max(lim.MaxChannels, cfg.NCh)
		}
		m := tuning.Model{C: modelFor(c, procs, k.nHosts, k.realHosts)}
		ch, us := m.Choose(k.coll, k.nRanks, k.nHosts, k.bytes, lim)
		row.Model = Config{ch.Algo, ch.Proto, ch.NChannels}
		row.PredictedUs = us
		row.ModelUs = math.NaN()
		if t, ok := meas[row.Model]; ok {
			row.ModelUs = t
		}
		rows = append(rows, row)
	}
	sort.Slice(rows, func(i, j int) bool {
		a, b := rows[i], rows[j]
		if a.Coll != b.Coll {
			return a.Coll < b.Coll
		}
		if a.NRanks != b.NRanks {
			return a.NRanks < b.NRanks
		}
		if a.NHosts != b.NHosts {
			return a.NHosts < b.NHosts
		}
		return a.Bytes < b.Bytes
	})
	return rows
}

func less(a, b Config) bool {
	if a.Algo != b.Algo {
		return a.Algo < b.Algo
	}
	if a.Proto != b.Proto {
		return a.Proto < b.Proto
	}
	return a.NCh < b.NCh
}
