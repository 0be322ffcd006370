package cli

import (
	"math"
	"strings"
	"testing"
	"time"

	"github.com/gccl/gccl/ci"
	"github.com/gccl/gccl/plots"
	"github.com/gccl/gccl/results"
)

// gateSweep is one configuration of 2 ranks measured at 8 B to 1 MiB:
// time 5 + bytes/1000 us, busBW from it, twenty iterations spread 4%
// around it so that the gate can test them; slower scales the times.
func gateSweep(algo, proto string, slower float64) []results.Record {
	var out []results.Record
	for k := 3; k <= 20; k++ {
		size := int64(1) << k
		us := (5 + float64(size)/1000) * slower
		r := results.Record{
			Schema: results.SchemaVersion, Tool: "gccl test", Backend: "embedded", Host: "vm",
			Timestamp: time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC),
			NRanks:    2, NHosts: 1, Collective: "allreduce", Type: "float", Op: "sum", Root: -1,
			Algorithm: algo, Protocol: proto, Channels: 1, Placement: results.OutOfPlace,
			Size: size, Count: size / 4, TimeUs: us, AlgBw: float64(size) / us / 1e3, RefCopyGBps: 10,
		}
		r.BusBw = r.AlgBw
		for i := 0; i < 20; i++ {
			r.IterTimesUs = append(r.IterTimesUs, us*(0.98+0.002*float64(i)))
		}
		out = append(out, r)
	}
	return out
}

// pairSets pairs two record sets as tune plot does.
func pairSets(t *testing.T, base, cand []results.Record, m plots.Metric) *plots.Comparison {
	t.Helper()
	cmp, err := plots.PairSets(plots.Set{Name: "base", Records: base}, plots.Set{Name: "cand", Records: cand}, plots.Options{CurveOptions: plots.CurveOptions{Metric: m}})
	if err != nil {
		t.Fatal(err)
	}
	return cmp
}

// The ratio panel is the gate's: its points are ci.Compare's ratios with
// their intervals and verdicts, key by key, in the metric's direction and
// with the threshold of each size band; a point beyond its band is one
// the gate calls beyond the threshold.
func TestPlotGateAgreesWithCompare(t *testing.T) {
	th, err := ci.ParseThresholds("8B-64K=15%,64K-=5%")
	if err != nil {
		t.Fatal(err)
	}
	base := gateSweep("Ring", "LL", 1)
	cand := gateSweep("Ring", "LL", 1.1) // 10% slower everywhere
	for _, m := range []plots.Metric{plots.BusBW, plots.Time, plots.BusBWNorm} {
		cmp := pairSets(t, base, cand, m)
		if err := gateComparison(cmp, th); err != nil || len(cmp.Warnings) != 0 {
			t.Fatalf("%v: %v %q", m, err, cmp.Warnings)
		}
		if got := cmp.Threshold.String(); got != th.String() {
			t.Errorf("%v: the panel's threshold %q, the gate's %q", m, got, th)
		}
		rep, err := ci.Compare(base, cand, gateOptions(m, th))
		if err != nil {
			t.Fatal(err)
		}
		want := map[int64]ci.Comparison{}
		for _, c := range rep.Comparisons {
			want[c.Key.Size] = c
		}
		rs := cmp.Pairs[0].Ratio
		if len(rs) != len(want) || len(rs) != 18 {
			t.Fatalf("%v: %d points, the gate compared %d keys", m, len(rs), len(want))
		}
		for _, r := range rs {
			c := want[r.Bytes]
			if r.Ratio != c.Ratio || r.Lo != c.RatioLo || r.Hi != c.RatioHi || r.Verdict.String() != c.Verdict.String() || r.Threshold != c.Threshold {
				t.Errorf("%v %d B: plot %+v, gate %+v", m, r.Bytes, r, c)
			}
			// 10% slower: within 15% below 64K, a significant regression from 64K.
			wantV := plots.Unchanged
			if r.Bytes >= 64<<10 {
				wantV = plots.Regression
			}
			outside := math.Abs(r.Ratio-1) > r.Threshold
			if r.Verdict != wantV || outside != (wantV == plots.Regression) {
				t.Errorf("%v %d B: ratio %.3f, band ±%g, verdict %v; want %v", m, r.Bytes, r.Ratio, r.Threshold, r.Verdict, wantV)
			}
			if m == plots.Time && r.Ratio < 1 || m != plots.Time && r.Ratio > 1 {
				t.Errorf("%v %d B: ratio %.3f points the wrong way for a slowdown", m, r.Bytes, r.Ratio)
			}
			if !(r.Lo <= r.Ratio && r.Ratio <= r.Hi) || math.IsInf(r.Lo, 0) || math.IsInf(r.Hi, 0) {
				t.Errorf("%v %d B: interval [%v, %v] around %v", m, r.Bytes, r.Lo, r.Hi, r.Ratio)
			}
		}
	}

	// A size no threshold covers is the gate's error, as in tune gate.
	narrow, _ := ci.ParseThresholds("8B-64K=15%")
	if err := gateComparison(pairSets(t, base, base, plots.BusBW), narrow); err == nil || !strings.Contains(err.Error(), "no threshold") {
		t.Errorf("uncovered size: %v", err)
	}
}

// A run against a log without its configuration (one curve a side) is
// gated as one configuration; a pair with no size in common is a note.
func TestPlotGateAcrossConfigurations(t *testing.T) {
	ours := gateSweep("Ring", "Simple", 2)
	log := gateSweep("", "", 1)
	for i := range log {
		log[i].Backend, log[i].NRanks = "nccl-tests", 2
	}
	cmp := pairSets(t, log, ours, plots.BusBW)
	if err := gateComparison(cmp, ci.Uniform(0.05)); err != nil || len(cmp.Warnings) != 0 {
		t.Fatalf("%v, %q", err, cmp.Warnings)
	}
	rs := cmp.Pairs[0].Ratio
	if len(rs) != 18 || math.Abs(rs[0].Ratio-0.5) > 1e-9 || rs[0].Verdict != plots.Regression {
		t.Errorf("one a side: %+v", rs)
	}

	small := gateSweep("Ring", "LL", 1)[:3] // 8 to 32 B
	large := gateSweep("Ring", "LL", 1)[3:]
	cmp = pairSets(t, small, large, plots.BusBW)
	if err := gateComparison(cmp, ci.Uniform(0.05)); err != nil {
		t.Fatal(err)
	}
	if len(cmp.Pairs[0].Ratio) != 0 || len(cmp.Warnings) != 1 || !strings.Contains(cmp.Warnings[0], "no size measured in both sets") {
		t.Errorf("disjoint sizes: %+v, %q", cmp.Pairs[0].Ratio, cmp.Warnings)
	}
}

// Sizes the gate cannot compare (no time and no bandwidth: a busBW
// printed as 0.00 alone would be derived from the time) are left out of
// the ratio panel, and said so.
func TestPlotGateZeroBandwidth(t *testing.T) {
	base := gateSweep("Ring", "LL", 1)[:4]
	base[0].BusBw, base[0].AlgBw, base[0].TimeUs, base[0].IterTimesUs = 0, 0, 0, nil
	cmp := pairSets(t, base, gateSweep("Ring", "LL", 1)[:4], plots.BusBW)
	if err := gateComparison(cmp, ci.Uniform(0.05)); err != nil {
		t.Fatal(err)
	}
	if rs := cmp.Pairs[0].Ratio; len(rs) != 3 || rs[0].Bytes != 16 {
		t.Fatalf("ratios %+v", rs)
	}
	if len(cmp.Warnings) != 1 || !strings.Contains(cmp.Warnings[0], "1 of the 4 sizes both sides measured have no ratio") {
		t.Errorf("warnings %q", cmp.Warnings)
	}
}

// The adapter hands plots the gate's verdicts and thresholds unchanged.
func TestPlotGateAdapter(t *testing.T) {
	for _, v := range []ci.Verdict{ci.Unchanged, ci.Regression, ci.Noisy, ci.Improvement} {
		if got := plotVerdict(v); got.String() != v.String() {
			t.Errorf("%v became %v", v, got)
		}
	}
	for _, s := range []string{"5%", "0.1", "8B-64K=15%,64K-=5%", "-4K=30%,10%", "8-1K=30%,1K-64K=15%,2.5%", "1M-=3%"} {
		th, err := ci.ParseThresholds(s)
		if err != nil {
			t.Fatal(err)
		}
		pt := plotThreshold(th)
		if pt.String() != th.String() {
			t.Errorf("%s: plots writes %q, the gate %q", s, pt, th)
		}
		for k := 0; k <= 31; k++ {
			size := int64(1)<<k + int64(k%3) - 1
			f, ok := th.For(size)
			g, gok := pt.For(size)
			if ok != gok || ok && f != g {
				t.Errorf("%s: %d B: plots %v %v, the gate %v %v", s, size, g, gok, f, ok)
			}
		}
	}
	c := ci.Comparison{Key: ci.Key{Size: 4096}, Ratio: 0.9, RatioLo: 0.85, RatioHi: 0.95, Threshold: 0.05, Verdict: ci.Noisy}
	if g := gatePoint(c); g != (plots.GatePoint{Bytes: 4096, Ratio: 0.9, Lo: 0.85, Hi: 0.95, Threshold: 0.05, Verdict: plots.Noisy}) {
		t.Errorf("gate point %+v", g)
	}
}
