package plots

import (
	"bytes"
	"image/color"
	"image/png"
	"math"
	"strings"
	"testing"

	"github.com/gccl/gccl/results"
)

func iters(us ...float64) func(*results.Record) {
	return func(r *results.Record) { r.IterTimesUs = us }
}

func minMax(lo, hi float64) func(*results.Record) {
	return func(r *results.Record) { r.MinUs, r.MaxUs = lo, hi }
}

// The spread of a point: the interquartile range of its iterations'
// metric, bandwidths from the times (a slow iteration is a low
// bandwidth); else the fastest to the slowest iteration; else none.
func TestSpread(t *testing.T) {
	near := func(a, b float64) bool { return math.Abs(a-b) < 1e-9 }
	it := []results.Record{rec(1024, 4, timeUs(10), iters(12, 8, 10, 11, 9))}
	cs, err := BuildCurves(it, CurveOptions{Metric: BusBW})
	if err != nil {
		t.Fatal(err)
	}
	if s := cs[0].Points[0].Spread; cs[0].Spread != SpreadIQR || s == nil || !near(s.Lo, 4*10.0/11) || !near(s.Hi, 4*10.0/9) {
		t.Errorf("busBW IQR %v %+v, want %v..%v", cs[0].Spread, s, 4*10.0/11, 4*10.0/9)
	}
	cs, _ = BuildCurves(it, CurveOptions{Metric: Time})
	if s := cs[0].Points[0].Spread; s == nil || !near(s.Lo, 9) || !near(s.Hi, 11) {
		t.Errorf("time IQR %+v, want 9..11", s)
	}

	mm := []results.Record{rec(1024, 4, timeUs(10), minMax(5, 20)), rec(1024, 4, timeUs(10), minMax(8, 40))}
	cs, _ = BuildCurves(mm, CurveOptions{Metric: AlgBW})
	if s := cs[0].Points[0].Spread; cs[0].Spread != SpreadMinMax || s == nil || !near(s.Lo, 1) || !near(s.Hi, 8) {
		t.Errorf("algBW min-max %v %+v, want 1..8 (pooled over both records)", cs[0].Spread, s)
	}

	cs, _ = BuildCurves([]results.Record{rec(1024, 4)}, CurveOptions{Metric: BusBW})
	if cs[0].Spread != NoSpread || cs[0].Points[0].Spread != nil {
		t.Errorf("no statistics: %v %+v", cs[0].Spread, cs[0].Points[0].Spread)
	}
}

// The band is drawn, and named, when the records hold their iterations,
// and not when they do not.
func TestSpreadBand(t *testing.T) {
	plain := sweep(pow2s(10, 20), 1, cfg("Ring", "Simple", 1))
	var spread []results.Record
	for _, r := range plain {
		r.IterTimesUs = []float64{r.TimeUs * 0.7, r.TimeUs * 0.8, r.TimeUs, r.TimeUs * 1.3, r.TimeUs * 1.5}
		spread = append(spread, r)
	}
	// The band's colour: the curve's at alpha 0x33 over white.
	c := color.RGBAModel.Convert(curveColor(0)).(color.RGBA)
	blend := func(v uint8) int { return (int(v)*0x33 + 255*(255-0x33) + 127) / 255 }
	shade := [3]int{blend(c.R), blend(c.G), blend(c.B)}
	for _, tc := range []struct {
		recs []results.Record
		band bool
	}{{spread, true}, {plain, false}} {
		fig, err := CurvesFigure(tc.recs, Options{})
		if err != nil {
			t.Fatal(err)
		}
		named := false
		for _, e := range fig.legend {
			named = named || strings.Contains(e.name, "interquartile range of iterations")
		}
		img, err := png.Decode(bytes.NewReader(render(t, fig, "png", small)))
		if err != nil {
			t.Fatal(err)
		}
		n := 0
		b := img.Bounds()
		for y := b.Min.Y; y < b.Max.Y; y++ {
			for x := b.Min.X; x < b.Max.X; x++ {
				p := color.RGBAModel.Convert(img.At(x, y)).(color.RGBA)
				if abs(int(p.R)-shade[0]) <= 2 && abs(int(p.G)-shade[1]) <= 2 && abs(int(p.B)-shade[2]) <= 2 {
					n++
				}
			}
		}
		if tc.band && (n < 500 || !named) {
			t.Errorf("with iterations: %d pixels of the band's shade, legend names it: %v", n, named)
		}
		if !tc.band && (n > 50 || named) {
			t.Errorf("without iterations: %d pixels of the band's shade, legend names it: %v", n, named)
		}
	}
}

func abs(x int) int {
	if x < 0 {
		return -x
	}
	return x
}
