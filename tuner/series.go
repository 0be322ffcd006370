package tuner

import (
	"fmt"
	"sort"
	"strings"

	"github.com/gccl/gccl/lib/tuning"
	"github.com/gccl/gccl/results"
)

// Shape is what a tuning decision is made for: a collective on a
// communicator of NRanks ranks over NHosts hosts.
type Shape struct {
	Coll   string // results' collective name: allreduce, allgather, ...
	NRanks int
	NHosts int
}

func (s Shape) String() string {
	return fmt.Sprintf("%s %d ranks/%d hosts", s.Coll, s.NRanks, s.NHosts)
}

// Key is one measured configuration of one shape. Algo and Proto are as
// recorded ("Ring", "Tree", "LL", "LL128", "Simple"), or "auto" for a run
// that left the choice to the stack (NCCL's or gccl's default); NCh 0 and
// BuffSize 0 are "auto"/default too.
type Key struct {
	Shape
	Algo, Proto string
	NCh         int
	BuffSize    int64
}

// Auto reports whether the configuration is the stack's own choice.
func (k Key) Auto() bool {
	return k.Algo == "auto" && k.Proto == "auto" && k.NCh == 0 && k.BuffSize == 0
}

// Config names the configuration: "Ring/Simple/2ch", "Tree/LL/auto-ch",
// "auto", with "/buff=4M" when a buffer size was set.
func (k Key) Config() string {
	if k.Auto() {
		return "auto"
	}
	ch := "auto-ch"
	if k.NCh > 0 {
		ch = fmt.Sprintf("%dch", k.NCh)
	}
	s := fmt.Sprintf("%s/%s/%s", k.Algo, k.Proto, ch)
	if k.BuffSize > 0 {
		s += "/buff=" + results.SizeLabel(k.BuffSize)
	}
	return s
}

// Sample is one size of one configuration: the median time and the times
// it was taken from (per-iteration times when recorded, else one time per
// record; several records of the same size and key are pooled).
type Sample struct {
	Bytes int64
	// Us is the median of Times for one record; for several records (runs)
	// of the same key and size, the median of their medians, so that one
	// run in a bad state is outvoted rather than pooled in.
	Us    float64
	Times []float64 // the samples, us
	// Runs is one time per record: each run's median, both placements of
	// a run counted apart (they measure the same configuration). Repeats
	// give the noise estimate (EstimateNoise) and validation's best time.
	Runs []float64
	// RunIDs names the run each of Runs came from (its file and start
	// time): two placements of one run are one run, not two.
	RunIDs  []string
	Sources []string // where the records came from (file:line when known)
	// Chosen is what the stack said it ran at this size ("Ring/LL"), the
	// most frequent over the records, "" when they do not say (an "auto"
	// series' records carry it: NCCL's TUNING log, gccl's own choice).
	Chosen string
}

// Series is the measurements of one configuration, by increasing size.
type Series struct {
	Key     Key
	Samples []Sample
}

// KeyOf returns the key of a record, its algorithm and protocol named as
// tuning.RecordedChoice reads them: canonical ("ring" -> "Ring", "" ->
// "auto"), and Ring for a run that forced the protocol only of a
// collective that has Ring alone.
func KeyOf(r results.Record) Key {
	algo, proto := tuning.RecordedChoice(r.Collective, r.Algorithm, r.Protocol, r.ChosenAlgo)
	return Key{
		Shape: Shape{Coll: r.Collective, NRanks: r.NRanks, NHosts: max(r.NHosts, 1)},
		Algo:  algo, Proto: proto,
		NCh: r.Channels, BuffSize: r.BuffSize,
	}
}

// Collect groups records into series, one per key, pooling records of the
// same key and size: out-of-place records, and in-place ones of separate
// (not interleaved) runs, a second sample of the same configuration.
// Records with no time, and size-0 rows (nothing moved), are skipped. The
// times of side-by-side (interleaved) runs are first scaled to their
// shape's median run at each size (see blockFactors), so that a run's luck
// does not pass for a difference between configurations.
func Collect(recs []results.Record) []Series {
	type sk struct {
		k Key
		b int64
	}
	// Each record's times: per-iteration when recorded, else its median.
	own := make([][]float64, len(recs))
	for i, r := range recs {
		if r.Size <= 0 || (r.Placement != results.OutOfPlace && (r.Interleaved || r.Placement != results.InPlace)) {
			continue
		}
		own[i] = r.IterTimesUs
		if t := recordUs(r); len(own[i]) == 0 && t > 0 {
			own[i] = []float64{t}
		}
	}
	factors := blockFactors(recs, func(i int) float64 {
		if len(own[i]) == 0 {
			return 0
		}
		return median(own[i])
	})
	pooled := map[sk]*Sample{}
	runMedians := map[sk][]float64{}
	chosen := map[sk]map[string]int{}
	for i, r := range recs {
		times := own[i]
		if len(times) == 0 {
			continue
		}
		if f, ok := factors[i]; ok {
			scaled := make([]float64, len(times))
			for j, t := range times {
				scaled[j] = t * f
			}
			times = scaled
		}
		k := sk{KeyOf(r), r.Size}
		s := pooled[k]
		if s == nil {
			s = &Sample{Bytes: r.Size}
			pooled[k] = s
		}
		s.Times = append(s.Times, times...)
		runMedians[k] = append(runMedians[k], median(times))
		s.Runs = append(s.Runs, median(times))
		s.RunIDs = append(s.RunIDs, runOf(r))
		if r.ChosenAlgo != "" && r.ChosenProto != "" {
			if chosen[k] == nil {
				chosen[k] = map[string]int{}
			}
			chosen[k][r.ChosenAlgo+"/"+r.ChosenProto]++
		}
		if r.Source != "" {
			s.Sources = append(s.Sources, r.Source)
		}
	}
	byKey := map[Key]*Series{}
	for k, s := range pooled {
		s.Us = median(runMedians[k])
		best := 0
		for c, n := range chosen[k] {
			if n > best || (n == best && c < s.Chosen) {
				s.Chosen, best = c, n
			}
		}
		se := byKey[k.k]
		if se == nil {
			se = &Series{Key: k.k}
			byKey[k.k] = se
		}
		se.Samples = append(se.Samples, *s)
	}
	out := make([]Series, 0, len(byKey))
	for _, se := range byKey {
		sort.Slice(se.Samples, func(i, j int) bool { return se.Samples[i].Bytes < se.Samples[j].Bytes })
		out = append(out, *se)
	}
	sort.Slice(out, func(i, j int) bool { return keyLess(out[i].Key, out[j].Key) })
	return out
}

// runOf names the run a record came from: its file (a Source's part
// before ":line") and its start time and host, which perf stamps on every
// record of a run; nccl-tests logs have a file per run.
func runOf(r results.Record) string {
	file := r.Source
	if i := strings.LastIndexByte(file, ':'); i > 0 {
		file = file[:i]
	}
	return fmt.Sprintf("%s|%s|%s", file, r.Timestamp.Format("2006-01-02T15:04:05.000000000"), r.Host)
}

func keyLess(a, b Key) bool {
	if a.Coll != b.Coll {
		return a.Coll < b.Coll
	}
	if a.NRanks != b.NRanks {
		return a.NRanks < b.NRanks
	}
	if a.NHosts != b.NHosts {
		return a.NHosts < b.NHosts
	}
	return a.Config() < b.Config()
}
