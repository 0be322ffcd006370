package report

import (
	"bytes"
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"testing"
	"time"
)

// synthPage is a page of keys series of runs each: busBW around 10 GB/s
// with 3% noise; every fifth key steps down 8% two thirds of the way in
// (its change point given), every seventh steps up 6% (given too); two
// curve charts of three configurations.
func synthPage(keys, runs int) Page {
	rng := rand.New(rand.NewPCG(1, uint64(keys*1000+runs)))
	t0 := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	p := Page{
		Title:     "synthetic history",
		Generated: t0.Add(time.Duration(runs) * time.Hour),
		Meta: []Meta{
			{"commits", "c000000000 .. c" + fmt.Sprintf("%09d", runs-1)},
			{"machine", "Intel(R) Xeon(R), 2 cores"},
			{"tool", "gccl 0.1.0"},
		},
	}
	for k := range keys {
		s := KeySeries{Key: fmt.Sprintf("allreduce float sum Ring/LL/%dch %d ranks %dK out-of-place", k%4+1, 2+k/20, 1<<(k%10)), Unit: "GB/s"}
		base := 10.0 + float64(k%10)
		step, at := 1.0, runs*2/3
		switch {
		case k%5 == 0:
			step = 0.92
		case k%7 == 0:
			step = 1.06
		}
		for r := range runs {
			v := base * (1 + 0.03*rng.NormFloat64())
			if r >= at {
				v *= step
			}
			s.Points = append(s.Points, RunPoint{Commit: fmt.Sprintf("c%09d", r), Time: t0.Add(time.Duration(r) * time.Hour), Value: v})
		}
		if step != 1 && at > 0 && at < runs {
			s.Changes = []ChangePoint{{Index: at, Before: base, After: base * step, PValue: 0.0005}}
		}
		p.Series = append(p.Series, s)
	}
	for _, coll := range []string{"allreduce", "allgather"} {
		c := Curve{Title: coll + " float sum, 4 ranks", YLabel: "busBW (GB/s)"}
		for k, cfg := range []string{"Ring/LL/1ch", "Ring/Simple/2ch", "auto"} {
			cs := CurveSeries{Name: cfg}
			for b := int64(8); b <= 64<<20; b *= 4 {
				cs.Points = append(cs.Points, SizePoint{Bytes: b, Value: float64(k+1) * 20 * (1 - math.Exp(-float64(b)/(1<<20)))})
			}
			c.Series = append(c.Series, cs)
		}
		p.Curves = append(p.Curves, c)
	}
	return p
}

// render writes p and returns the page, failing the test on an error.
func render(t testing.TB, p Page) string {
	t.Helper()
	var b bytes.Buffer
	if err := Write(&b, p); err != nil {
		t.Fatalf("Write: %v", err)
	}
	return b.String()
}

// svgClasses counts the page's <svg> elements by class.
func svgClasses(page string) map[string]int {
	out := map[string]int{}
	for _, part := range strings.Split(page, "<svg ")[1:] {
		class, _, _ := strings.Cut(strings.TrimPrefix(part, `class="`), `"`)
		out[class]++
	}
	return out
}
