package tuner

import (
	"math"
	"time"

	"github.com/gccl/gccl/results"
)

// Side-by-side runs as blocks.
//
// perf --interleave measures a shape's configurations on one set of
// communicators, round after round at each size. Such a run is a block of a
// randomized-block design: log t = config + run + noise, where the run term
// is the luck of that set of communicators (where its buffers and
// goroutines landed), shared by every configuration it measured. Comparing
// configurations inside a run cancels it; pooling runs does not, and one
// run's luck at a size can outweigh the differences the tuner must see.
//
// blockFactors estimates each run's term at each size and returns the
// factor that scales the run to the median run: the median, over the
// configurations every run measured at that size, of the configuration's
// time in the run over its median over the runs. A run's luck is thereby
// removed exactly when it scales every configuration alike, and one
// configuration that was unlucky on its own is outvoted by the others.
// Records of separate runs (not interleaved), and sizes where the runs share
// fewer than two configurations or there is a single run, keep factor 1.

// runID names one perf run: its start time and host (perf stamps every
// record of a run with both).
type runID struct {
	start time.Time
	host  string
}

// blockKey is one shape at one size: the unit whose runs are compared.
type blockKey struct {
	shape Shape
	bytes int64
}

// blockFactors returns, per record index of recs, the factor its times are
// multiplied by (absent: 1). times(i) is record i's median time, or <= 0 to
// leave it out.
func blockFactors(recs []results.Record, times func(i int) float64) map[int]float64 {
	type cell struct {
		run runID
		key Key
	}
	blocks := map[blockKey]map[cell][]int{} // records of each (run, config) per block
	for i, r := range recs {
		if !r.Interleaved || r.Placement != results.OutOfPlace || times(i) <= 0 {
			continue
		}
		k := KeyOf(r)
		b := blockKey{k.Shape, r.Size}
		if blocks[b] == nil {
			blocks[b] = map[cell][]int{}
		}
		c := cell{runID{r.Timestamp, r.Host}, k}
		blocks[b][c] = append(blocks[b][c], i)
	}
	out := map[int]float64{}
	for _, cells := range blocks {
		// log time of each config in each run (median of its records).
		logT := map[Key]map[runID]float64{}
		runs := map[runID]bool{}
		for c, idx := range cells {
			ts := make([]float64, len(idx))
			for j, i := range idx {
				ts[j] = times(i)
			}
			if logT[c.key] == nil {
				logT[c.key] = map[runID]float64{}
			}
			logT[c.key][c.run] = math.Log(median(ts))
			runs[c.run] = true
		}
		if len(runs) < 2 {
			continue
		}
		// The configurations every run measured, centred on their median run.
		dev := map[runID][]float64{}
		common := 0
		for _, byRun := range logT {
			if len(byRun) != len(runs) {
				continue
			}
			common++
			vals := make([]float64, 0, len(byRun))
			for _, v := range byRun {
				vals = append(vals, v)
			}
			mid := median(vals)
			for run, v := range byRun {
				dev[run] = append(dev[run], v-mid)
			}
		}
		if common < 2 {
			continue
		}
		for c, idx := range cells {
			f := math.Exp(-median(dev[c.run]))
			for _, i := range idx {
				out[i] = f
			}
		}
	}
	return out
}
