package plots

import (
	"math"
	"testing"
	"time"

	"github.com/gccl/gccl/results"
)

// rec builds an out-of-place allreduce record of 2 ranks on host "vm",
// embedded backend; opts adjust it.
func rec(size int64, busbw float64, opts ...func(*results.Record)) results.Record {
	r := results.Record{
		Schema: results.SchemaVersion, Tool: "gccl test", Backend: "embedded", Host: "vm",
		Timestamp: time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC),
		NRanks:    2, NHosts: 1, Collective: "allreduce", Type: "float", Op: "sum", Root: -1,
		Algorithm: "auto", Protocol: "auto", Placement: results.OutOfPlace,
		Size: size, Count: size / 4, TimeUs: 10, AlgBw: busbw, BusBw: busbw, RefCopyGBps: 10,
	}
	for _, o := range opts {
		o(&r)
	}
	return r
}

func cfg(algo, proto string, nch int) func(*results.Record) {
	return func(r *results.Record) { r.Algorithm, r.Protocol, r.Channels = algo, proto, nch }
}

func ranks(n int) func(*results.Record) { return func(r *results.Record) { r.NRanks = n } }

func coll(c string) func(*results.Record) { return func(r *results.Record) { r.Collective = c } }

func inPlace(r *results.Record) { r.Placement = results.InPlace }

func timeUs(us float64) func(*results.Record) { return func(r *results.Record) { r.TimeUs = us } }

// sweep builds the records of one configuration over sizes, busBW rising
// with size by bw per KiB and time = 5 + bytes/1000 us.
func sweep(sizes []int64, bw float64, opts ...func(*results.Record)) []results.Record {
	var out []results.Record
	for _, s := range sizes {
		r := rec(s, bw*float64(s)/1024, opts...)
		r.TimeUs = 5 + float64(s)/1000
		out = append(out, r)
	}
	return out
}

func pow2s(from, to int) []int64 {
	var out []int64
	for k := from; k <= to; k++ {
		out = append(out, int64(1)<<k)
	}
	return out
}

// faster returns recs measured f times faster: bandwidths times f, times
// over f.
func faster(recs []results.Record, f float64) []results.Record {
	out := make([]results.Record, len(recs))
	for i, r := range recs {
		r.AlgBw *= f
		r.BusBw *= f
		r.TimeUs /= f
		out[i] = r
	}
	return out
}

// judge stands in for the caller's gate (tune plot runs package ci): at
// every size both curves of a pair measured, the ratio of the
// candidate's metric to the baseline's, without an interval, a
// regression when it is worse than th allows and an improvement when it
// is better.
func judge(cmp *Comparison, th Threshold) {
	cmp.Threshold = th
	higher := cmp.Options.Metric.HigherIsBetter()
	for i := range cmp.Pairs {
		p := &cmp.Pairs[i]
		base := map[int64]float64{}
		for _, pt := range p.Base.Points {
			base[pt.Bytes] = pt.Y
		}
		p.Ratio = nil
		for _, pt := range p.Cand.Points {
			b, ok := base[pt.Bytes]
			f, covered := th.For(pt.Bytes)
			if !ok || !covered {
				continue
			}
			g := GatePoint{Bytes: pt.Bytes, Ratio: pt.Y / b, Lo: math.NaN(), Hi: math.NaN(), Threshold: f}
			worse := (g.Ratio < 1) == higher
			if math.Abs(g.Ratio-1) > f {
				g.Verdict = Improvement
				if worse {
					g.Verdict = Regression
				}
			}
			p.Ratio = append(p.Ratio, g)
		}
	}
}

// compareFig pairs two sets, judges them with th and draws them.
func compareFig(t *testing.T, base, cand Set, o Options, th Threshold) *Figure {
	t.Helper()
	cmp, err := PairSets(base, cand, o)
	if err != nil {
		t.Fatal(err)
	}
	judge(cmp, th)
	fig, err := CompareFigure(cmp)
	if err != nil {
		t.Fatal(err)
	}
	return fig
}
