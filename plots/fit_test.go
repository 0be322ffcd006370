package plots

import (
	"math"
	"strings"
	"testing"

	"github.com/gccl/gccl/results"
	"github.com/gccl/gccl/tuner"
)

// A fitted model in every metric: its time, bytes over time, times the
// curve's bus factor (read off the records), over the copy bandwidth.
func TestFitPoints(t *testing.T) {
	recs := sweep(pow2s(10, 12), 1, cfg("Ring", "Simple", 1), func(r *results.Record) {
		r.AlgBw, r.BusBw, r.RefCopyGBps = 2, 3, 4 // bus factor 1.5
	})
	cs, err := BuildCurves(recs, CurveOptions{Metric: BusBW})
	if err != nil {
		t.Fatal(err)
	}
	c := cs[0]
	if c.BusFactor != 1.5 || c.RefCopy != 4 {
		t.Fatalf("bus factor %v, copy %v", c.BusFactor, c.RefCopy)
	}
	f := tuner.Fit{Key: c.Key, Segments: []tuner.Segment{{FromBytes: 0, AlphaUs: 2, BetaGBs: 1}, {FromBytes: 2048, AlphaUs: 4, BetaGBs: 2}}}
	for _, m := range []Metric{Time, AlgBW, BusBW, BusBWNorm} {
		ps, err := FitPoints(f, c, m, 4)
		if err != nil {
			t.Fatalf("%v: %v", m, err)
		}
		if len(ps) != 9 || ps[0].Bytes != 1024 || ps[8].Bytes != 4096 {
			t.Errorf("%v: %d points from %d to %d, want 9 from 1K to 4K", m, len(ps), ps[0].Bytes, ps[len(ps)-1].Bytes)
		}
		for _, p := range ps {
			us := f.Predict(p.Bytes)
			want := map[Metric]float64{Time: us, AlgBW: float64(p.Bytes) / us / 1e3,
				BusBW: 1.5 * float64(p.Bytes) / us / 1e3, BusBWNorm: 1.5 * float64(p.Bytes) / us / 1e3 / 4}[m]
			if math.Abs(p.Y-want) > 1e-12*want {
				t.Errorf("%v at %d: %v, want %v", m, p.Bytes, p.Y, want)
			}
		}
	}
	// 1K: 2 + 1024/1000 us; 2K: the second segment, 4 + 2048/2000.
	ps, _ := FitPoints(f, c, Time, 1)
	if len(ps) != 3 || math.Abs(ps[0].Y-3.024) > 1e-12 || math.Abs(ps[1].Y-5.024) > 1e-12 {
		t.Errorf("times %v", ps)
	}

	noBus := c
	noBus.BusFactor = 0
	if _, err := FitPoints(f, noBus, BusBW, 4); err == nil || !strings.Contains(err.Error(), "busBW/algBW") {
		t.Errorf("no bus factor: %v", err)
	}
	if _, err := FitPoints(tuner.Fit{}, c, Time, 4); err == nil {
		t.Error("a fit without segments drew points")
	}
}

func TestMatchFits(t *testing.T) {
	recs := append(sweep(pow2s(3, 4), 1, cfg("Ring", "LL", 1)), sweep(pow2s(3, 4), 1, cfg("Ring", "Simple", 1))...)
	cs, _ := BuildCurves(recs, CurveOptions{})
	ll := tuner.Fit{Key: cs[0].Key, Segments: []tuner.Segment{{AlphaUs: 1, BetaGBs: 1}}}
	got, warns := MatchFits(cs, []tuner.Fit{ll})
	if len(got) != 1 || got[0].Key != ll.Key || len(warns) != 1 || !strings.Contains(warns[0], "Simple") {
		t.Errorf("matched %v, warnings %q", got, warns)
	}
	merged, _ := BuildCurves(recs, CurveOptions{By: []Field{FieldColl}})
	got, warns = MatchFits(merged, []tuner.Fit{ll})
	if len(got) != 0 || len(warns) != 1 || !strings.Contains(warns[0], "several configurations") {
		t.Errorf("merged curve: matched %v, warnings %q", got, warns)
	}
}
