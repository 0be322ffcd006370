package plots

import (
	"errors"
	"math"
	"strings"
	"testing"

	"github.com/gccl/gccl/results"
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
	// Two alpha-beta segments: 2 us + 1 GB/s, then from 2 KiB 4 us + 2 GB/s.
	f := Model(func(b int64) float64 {
		if b < 2048 {
			return 2 + float64(b)/1e3
		}
		return 4 + float64(b)/2e3
	})
	for _, m := range []Metric{Time, AlgBW, BusBW, BusBWNorm} {
		ps, err := FitPoints(f, c, m, 4)
		if err != nil {
			t.Fatalf("%v: %v", m, err)
		}
		if len(ps) != 9 || ps[0].Bytes != 1024 || ps[8].Bytes != 4096 {
			t.Errorf("%v: %d points from %d to %d, want 9 from 1K to 4K", m, len(ps), ps[0].Bytes, ps[len(ps)-1].Bytes)
		}
		for _, p := range ps {
			us := f(p.Bytes)
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
	if _, err := FitPoints(nil, c, Time, 4); err == nil {
		t.Error("no model drew points")
	}
}

// The caller's ModelOf is asked once per curve, with the curve's records;
// the curves it finds no model for come back as warnings with their labels.
func TestCurveModels(t *testing.T) {
	recs := append(sweep(pow2s(3, 4), 1, cfg("Ring", "LL", 1)), sweep(pow2s(3, 4), 1, cfg("Ring", "Simple", 1))...)
	cs, _ := BuildCurves(recs, CurveOptions{})
	ll := Model(func(int64) float64 { return 1 })
	var asked [][]results.Record
	modelOf := func(rs []results.Record) (Model, error) {
		asked = append(asked, rs)
		if rs[0].Protocol != "LL" {
			return nil, errors.New("no model in the models file")
		}
		return ll, nil
	}
	got, warns := curveModels(cs, modelOf)
	if len(asked) != 2 || len(asked[0]) != 2 || asked[0][0].Protocol != "LL" || asked[1][0].Protocol != "Simple" {
		t.Errorf("asked for %v", asked)
	}
	if len(got) != 1 || got[0] == nil || len(warns) != 1 || warns[0] != "Simple: no model in the models file" {
		t.Errorf("matched %d, warnings %q", len(got), warns)
	}
}
