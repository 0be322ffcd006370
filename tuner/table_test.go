package tuner

import (
	"math/bits"
	"testing"

	"github.com/gccl/gccl/lib/proto"
	"github.com/gccl/gccl/lib/tuning"
)

var ar2 = Shape{Coll: "allreduce", NRanks: 2, NHosts: 1}

// cfg is the key of a forced configuration of ar2: cfg("Ring/LL/2").
func cfg(algo, p string, nch int) Key { return Key{Shape: ar2, Algo: algo, Proto: p, NCh: nch} }

var (
	ringLL     = cfg("Ring", "LL", 1)
	ringSimple = cfg("Ring", "Simple", 1)
	treeLL128  = cfg("Tree", "LL128", 2)
	autoKey    = Key{Shape: ar2, Algo: "auto", Proto: "auto"}
)

// sizes4x is 8 B .. 64 MiB by 4x.
func sizes4x() []int64 {
	var s []int64
	for b := int64(8); b <= 64<<20; b *= 4 {
		s = append(s, b)
	}
	return s
}

// ab is the time of an alpha-beta model: alpha us + bytes / (beta GB/s).
func ab(alphaUs, betaGBs float64) func(int64) float64 {
	return func(b int64) float64 { return alphaUs + float64(b)/(betaGBs*1e3) }
}

// series builds a noiseless series of k: one sample per size, t(size).
func series(k Key, sizes []int64, t func(int64) float64) Series {
	s := Series{Key: k}
	for _, b := range sizes {
		us := t(b)
		s.Samples = append(s.Samples, Sample{Bytes: b, Us: us, Times: []float64{us}})
	}
	return s
}

// spread builds a series of k with n (odd) samples per size spaced evenly
// over t(size) x [1-width, 1+width]: the median is t(size) exactly, and the
// confidence interval of the median is about +-width/3 at n = 41.
func spread(k Key, sizes []int64, t func(int64) float64, n int, width float64) Series {
	s := Series{Key: k}
	for _, b := range sizes {
		times := make([]float64, n)
		for i := range times {
			times[n-1-i] = t(b) * (1 + width*(2*(float64(i)+0.5)/float64(n)-1))
		}
		s.Samples = append(s.Samples, Sample{Bytes: b, Us: t(b), Times: times})
	}
	return s
}

// handFit is the exact one-segment fit of an alpha-beta series.
func handFit(s Series, alphaUs, betaGBs float64) Fit {
	return Fit{Key: s.Key, Segments: []Segment{{AlphaUs: alphaUs, BetaGBs: betaGBs}},
		MinBytes: s.Samples[0].Bytes, MaxBytes: s.Samples[len(s.Samples)-1].Bytes}
}

func fitAll(t *testing.T, ss ...Series) []Fit {
	t.Helper()
	fits, errs := FitAll(ss)
	if len(errs) > 0 {
		t.Fatalf("FitAll: %v", errs)
	}
	return fits
}

type span struct {
	from, to int64
	key      Key
}

func spans(ds []Decision) []span {
	var out []span
	for _, d := range ds {
		if d.Skipped == "" {
			out = append(out, span{d.From, d.To, d.Key})
		}
	}
	return out
}

func checkSpans(t *testing.T, ds []Decision, want ...span) {
	t.Helper()
	got := spans(ds)
	if len(got) != len(want) {
		t.Fatalf("ranges %+v, want %+v", got, want)
	}
	for i := range got {
		if got[i] != want[i] {
			t.Errorf("range %d: %d..%d %s, want %d..%d %s", i, got[i].from, got[i].to, got[i].key.Config(),
				want[i].from, want[i].to, want[i].key.Config())
		}
	}
}

// The crossover of A (2 us, 1 GB/s) and B (10 us, 4 GB/s) is at
// 2 + x/1e3 = 10 + x/4e3, x = 10666.67: A up to 10666 bytes, B from 10667,
// whether the models are fitted or given.
func TestBuildTableExactCrossover(t *testing.T) {
	a := series(ringLL, sizes4x(), ab(2, 1))
	b := series(ringSimple, sizes4x(), ab(10, 4))
	for name, fits := range map[string][]Fit{
		"fitted": fitAll(t, a, b),
		"given":  {handFit(a, 2, 1), handFit(b, 10, 4)},
	} {
		t.Run(name, func(t *testing.T) {
			tab, ds, err := BuildTable([]Series{a, b}, fits, TableOptions{})
			if err != nil {
				t.Fatal(err)
			}
			checkSpans(t, ds, span{0, 10666, ringLL}, span{10667, -1, ringSimple})
			if len(tab.Rules) != 2 {
				t.Fatalf("%d rules, want 2", len(tab.Rules))
			}
			for _, c := range []struct {
				bytes int64
				want  tuning.Choice
			}{
				{0, tuning.Choice{Algo: tuning.Ring, Proto: proto.LL, NChannels: 1}},
				{10666, tuning.Choice{Algo: tuning.Ring, Proto: proto.LL, NChannels: 1}},
				{10667, tuning.Choice{Algo: tuning.Ring, Proto: proto.Simple, NChannels: 1}},
				{1 << 40, tuning.Choice{Algo: tuning.Ring, Proto: proto.Simple, NChannels: 1}},
			} {
				got, ok := tab.Lookup(tuning.AllReduce, 2, 1, c.bytes)
				if !ok || got != c.want {
					t.Errorf("Lookup(%d) = %v, %v; want %v", c.bytes, got, ok, c.want)
				}
			}
			if _, ok := tab.Lookup(tuning.AllReduce, 4, 1, 100); ok {
				t.Error("a rule for 2 ranks matches 4")
			}
			for _, d := range ds {
				if d.Tie() || !d.Rule || d.RunnerUp.Shape != ar2 || d.MarginPct <= 0 {
					t.Errorf("decision %+v: want a rule, no tie, a runner-up with a positive margin", d)
				}
			}
		})
	}
}

// Beyond the largest measured size the models decide: A (2 us, 1 GB/s)
// wins every size up to 1 MiB, B (1000 us, 4 GB/s) overtakes it at
// 2 + x/1e3 = 1000 + x/4e3, x = 1330666.67.
func TestBuildTableExtrapolates(t *testing.T) {
	var sz []int64
	for b := int64(8); b <= 1<<20; b *= 4 {
		sz = append(sz, b)
	}
	a := series(ringLL, sz, ab(2, 1))
	b := series(ringSimple, sz, ab(1000, 4))
	_, ds, err := BuildTable([]Series{a, b}, []Fit{handFit(a, 2, 1), handFit(b, 1000, 4)}, TableOptions{})
	if err != nil {
		t.Fatal(err)
	}
	checkSpans(t, ds, span{0, 1330666, ringLL}, span{1330667, -1, ringSimple})
	if ds[1].Sizes != 0 || ds[0].Sizes != len(sz) {
		t.Errorf("measured sizes per range %d, %d; want %d, 0", ds[0].Sizes, ds[1].Sizes, len(sz))
	}
	// Without models there is nothing to extrapolate with, and a series
	// without a model competes only where measured.
	_, ds, err = BuildTable([]Series{a, b}, nil, TableOptions{})
	if err != nil {
		t.Fatal(err)
	}
	checkSpans(t, ds, span{0, -1, ringLL})
}

// A series measured over part of the range competes only there: LL stops
// at 512 B; past it the others decide even though LL's model says it is
// fastest.
func TestBuildTableOnlyWhereMeasured(t *testing.T) {
	all := sizes4x()
	ll := series(ringLL, all[:4], ab(1, 100)) // 8..512, and a model that wins everywhere
	s := series(ringSimple, all, ab(10, 4))
	_, ds, err := BuildTable([]Series{ll, s}, []Fit{handFit(ll, 1, 100), handFit(s, 10, 4)}, TableOptions{})
	if err != nil {
		t.Fatal(err)
	}
	// The boundary between 512 and 2048, where the models do not cross:
	// the lines through the two endpoints' times do not either (LL has no
	// time at 2048), so it is the geometric midpoint, 1024.
	checkSpans(t, ds, span{0, 1023, ringLL}, span{1024, -1, ringSimple})
}

// Two configurations within 1% of each other everywhere, alternating
// which is faster: one range, marked a tie at every size; it goes to the
// default when there is one, else it keeps the first size's pick.
func TestBuildTableTiesWithinMargin(t *testing.T) {
	sz := sizes4x()
	base := ab(5, 2)
	odd := func(b int64) bool { return bits.TrailingZeros64(uint64(b))%4 == 3 } // 8, 128, 2048, ...
	a := series(ringLL, sz, func(b int64) float64 {
		if !odd(b) {
			return base(b) * 1.01
		}
		return base(b)
	})
	b := series(ringSimple, sz, func(b int64) float64 {
		if odd(b) {
			return base(b) * 1.01
		}
		return base(b)
	})
	fits := fitAll(t, a, b)

	// No default: the first size's pick (ringLL, faster at 8 B) stays.
	_, ds, err := BuildTable([]Series{a, b}, fits, TableOptions{})
	if err != nil {
		t.Fatal(err)
	}
	checkSpans(t, ds, span{0, -1, ringLL})
	if ds[0].TieSizes != len(sz) {
		t.Errorf("%d of %d sizes are ties", ds[0].TieSizes, len(sz))
	}

	// The default is ringSimple: it takes every size.
	def := func(Shape, int64) (Key, bool) { return ringSimple, true }
	_, ds, err = BuildTable([]Series{a, b}, fits, TableOptions{Default: def})
	if err != nil {
		t.Fatal(err)
	}
	checkSpans(t, ds, span{0, -1, ringSimple})
	if !ds[0].Tie() || ds[0].RunnerUp != ringLL || ds[0].MarginPct > 0 {
		t.Errorf("decision %+v: want a tie whose faster runner-up has a negative margin", ds[0])
	}

	// A margin below the gap turns the ties off (single samples: no
	// confidence intervals): the picks alternate.
	_, ds, err = BuildTable([]Series{a, b}, fits, TableOptions{TieMargin: 0.001, Default: def})
	if err != nil {
		t.Fatal(err)
	}
	if len(spans(ds)) != len(sz) {
		t.Errorf("with a 0.1%% margin, %d ranges; want one per size (%d)", len(spans(ds)), len(sz))
	}
}

// A 5% gap is a tie when the samples are too noisy to tell (wide
// intervals), and not one when they are tight.
func TestBuildTableTiesFromSamples(t *testing.T) {
	sz := sizes4x()
	def := func(Shape, int64) (Key, bool) { return ringSimple, true }
	fast, slow := ab(5, 2), func(b int64) float64 { return ab(5, 2)(b) * 1.05 }
	for _, c := range []struct {
		name  string
		width float64
		want  Key
		ties  int
	}{
		{"tight", 0.005, ringLL, 0},
		{"noisy", 0.40, ringSimple, len(sz)},
	} {
		t.Run(c.name, func(t *testing.T) {
			a := spread(ringLL, sz, fast, 41, c.width)
			b := spread(ringSimple, sz, slow, 41, c.width)
			_, ds, err := BuildTable([]Series{a, b}, fitAll(t, a, b), TableOptions{Default: def})
			if err != nil {
				t.Fatal(err)
			}
			checkSpans(t, ds, span{0, -1, c.want})
			if ds[0].TieSizes != c.ties {
				t.Errorf("%d tied sizes, want %d", ds[0].TieSizes, c.ties)
			}
		})
	}
}

// "auto" is a candidate like any other; a range it wins has no rule, so
// the stack's default decides there. Curves: A 2 + x/1e3, auto 6 + x/2e3,
// B 30 + x/8e3: A to 8000 (where A and auto are equal, A keeps it), auto
// 8001..64000, B from 64001.
func TestBuildTableAutoRangeHasNoRule(t *testing.T) {
	sz := sizes4x()
	a := series(ringLL, sz, ab(2, 1))
	au := series(autoKey, sz, ab(6, 2))
	b := series(treeLL128, sz, ab(30, 8))
	fits := []Fit{handFit(a, 2, 1), handFit(au, 6, 2), handFit(b, 30, 8)}
	tab, ds, err := BuildTable([]Series{a, au, b}, fits, TableOptions{})
	if err != nil {
		t.Fatal(err)
	}
	checkSpans(t, ds, span{0, 8000, ringLL}, span{8001, 64000, autoKey}, span{64001, -1, treeLL128})
	if ds[1].Rule || !ds[0].Rule || !ds[2].Rule {
		t.Errorf("rules written %v %v %v, want true false true", ds[0].Rule, ds[1].Rule, ds[2].Rule)
	}
	if err := tab.Validate(); err != nil {
		t.Fatal(err)
	}
	if len(tab.Rules) != 2 {
		t.Fatalf("%d rules, want 2", len(tab.Rules))
	}
	if _, ok := tab.Lookup(tuning.AllReduce, 2, 1, 10000); ok {
		t.Error("a rule covers auto's range")
	}
	got, ok := tab.Lookup(tuning.AllReduce, 2, 1, 64001)
	if want := (tuning.Choice{Algo: tuning.Tree, Proto: proto.LL128, NChannels: 2}); !ok || got != want {
		t.Errorf("Lookup(64001) = %v, %v; want %v", got, ok, want)
	}
}

// Collectives lib/tuning does not know, and configurations a rule cannot
// say, are reported and left out.
func TestBuildTableSkips(t *testing.T) {
	sz := sizes4x()
	a2a := Key{Shape: Shape{Coll: "alltoall", NRanks: 2, NHosts: 1}, Algo: "Ring", Proto: "LL", NCh: 1}
	partial := Key{Shape: ar2, Algo: "auto", Proto: "LL"}
	treeAG := Key{Shape: Shape{Coll: "allgather", NRanks: 2, NHosts: 1}, Algo: "Tree", Proto: "LL", NCh: 1}
	ss := []Series{series(a2a, sz, ab(1, 1)), series(partial, sz, ab(1, 1)), series(ringLL, sz, ab(2, 1)), series(treeAG, sz, ab(1, 1))}
	tab, ds, err := BuildTable(ss, nil, TableOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var skipped int
	for _, d := range ds {
		if d.Skipped != "" {
			skipped++
		}
	}
	if skipped != 3 {
		t.Errorf("%d skipped, want 3: %+v", skipped, ds)
	}
	checkSpans(t, ds, span{0, -1, ringLL})
	if len(tab.Rules) != 1 {
		t.Errorf("%d rules, want 1", len(tab.Rules))
	}
}

func TestMedianCI(t *testing.T) {
	if _, _, ok := medianCI([]float64{1, 2, 3, 4, 5}, 0.95); ok {
		t.Error("5 samples give a 95% interval; the least is 6")
	}
	lo, hi, ok := medianCI([]float64{6, 5, 4, 3, 2, 1}, 0.95)
	if !ok || lo != 1 || hi != 6 {
		t.Errorf("6 samples: [%v, %v] %v, want [1, 6]", lo, hi, ok)
	}
	// n = 100: benchmath's 95% interval is the 40th to 60th order
	// statistics (P(40 <= Bin(100, 1/2) <= 59) = 0.954; the symmetric
	// textbook choice, 40th to 61st, covers 0.965).
	xs := make([]float64, 100)
	for i := range xs {
		xs[i] = float64(100 - i)
	}
	lo, hi, ok = medianCI(xs, 0.95)
	if !ok || lo != 40 || hi != 60 {
		t.Errorf("100 samples: [%v, %v], want [40, 60]", lo, hi)
	}
}

func TestCrossing(t *testing.T) {
	x, ok := crossing(ab(2, 1), ab(10, 4), 8192, 32768)
	if !ok || x != 10667 {
		t.Errorf("crossing = %d, %v; want 10667", x, ok)
	}
	if _, ok := crossing(ab(10, 4), ab(2, 1), 8192, 32768); ok {
		t.Error("a crossing the wrong way round was accepted")
	}
	if m := geoMid(512, 2048); m != 1024 {
		t.Errorf("geoMid(512, 2048) = %d", m)
	}
	if m := geoMid(8, 9); m != 9 {
		t.Errorf("geoMid(8, 9) = %d, want 9 (in (lo, hi])", m)
	}
}

// With no preferred candidate among the tied, the pick is the tied one on
// the fewest channels, even where the previous size's pick (on more
// channels) is tied too; a clear win by more channels stands.
func TestBuildTableTiesGoToFewerChannels(t *testing.T) {
	sz := sizes4x()
	four := cfg("Tree", "Simple", 4)
	one := cfg("Ring", "Simple", 1)
	// four is 10% faster up to 512 B, then 1% slower: the previous-pick
	// rule would keep four from 2 KiB on; fewer channels take it instead.
	a := series(four, sz, func(b int64) float64 {
		if b <= 512 {
			return 9
		}
		return ab(5, 2)(b) * 1.01
	})
	b := series(one, sz, func(b int64) float64 {
		if b <= 512 {
			return 10
		}
		return ab(5, 2)(b)
	})
	_, ds, err := BuildTable([]Series{a, b}, fitAll(t, a, b), TableOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(ds) == 0 || ds[0].Key != four || ds[len(ds)-1].Key != one {
		t.Fatalf("ranges %+v: want four channels first (a clear win), one channel from the ties on", spans(ds))
	}
	if ds[0].TieSizes != 0 || !ds[len(ds)-1].Tie() {
		t.Errorf("ranges %+v: the first should have no tie, the last ties", ds)
	}
	if ds[0].To >= 2048 || ds[len(ds)-1].From > 2048 {
		t.Errorf("ranges %+v: one channel should hold from 2 KiB on", spans(ds))
	}
}
