package tuner

import (
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/gccl/gccl/lib/tuning"
	"github.com/gccl/gccl/results"
)

// runRecs returns the out-of-place records of runs separate runs of
// configuration algo/proto (auto/auto: the default) on a 2-rank allreduce
// at each size, times from us(size, run).
func runRecs(algo, proto string, sizes []int64, runs int, us func(size int64, run int) float64) []results.Record {
	var out []results.Record
	for run := 0; run < runs; run++ {
		for _, sz := range sizes {
			out = append(out, results.Record{Collective: "allreduce", NRanks: 2, NHosts: 1, Algorithm: algo, Protocol: proto,
				Placement: results.OutOfPlace, Size: sz, TimeUs: us(sz, run), Backend: "nccl-tests",
				Timestamp: time.Unix(int64(run), 0)}) // each run its own start time
		}
	}
	return out
}

var shape2 = ar2

// buildOnEvidence builds a table in evidence mode with noise n (nil:
// estimated from the records, else the prior).
func buildOnEvidence(t *testing.T, recs []results.Record, n *Noise) (*tuning.Table, []Decision) {
	t.Helper()
	series := Collect(recs)
	if n == nil {
		est, _ := EstimateNoiseOr(series, DefaultNoisePrior)
		n = &est
	}
	fits, _ := FitAll(series)
	tab, ds, err := BuildTable(series, fits, TableOptions{Noise: n})
	if err != nil {
		t.Fatal(err)
	}
	return tab, ds
}

// A configuration truly 5% faster wins with many repeats; the same
// configuration measured once does not, against the same run-to-run
// noise; one faster only through an outlier run never does.
func TestEvidenceRepeatsOutweighNoise(t *testing.T) {
	sizes := []int64{1 << 10, 1 << 12, 1 << 14, 1 << 16}
	rng := rand.New(rand.NewPCG(1, 2))
	jitter := func() float64 { return 12 * (rng.Float64() - 0.5) } // +-6 us between runs
	auto := func(int64, int) float64 { return 100 + jitter() }
	faster := func(int64, int) float64 { return 95 + jitter() }

	many := append(runRecs("auto", "auto", sizes, 40, auto), runRecs("Ring", "LL", sizes, 40, faster)...)
	tab, _ := buildOnEvidence(t, many, nil)
	if c, ok := tab.Lookup(tuning.AllReduce, 2, 1, 1<<14); !ok || c.Proto.String() != "LL" {
		t.Errorf("40 runs of a 5%%-faster config: no rule at 16K (%v)", tab.Rules)
	}

	// One run each, at the noise those repeats showed: a 5 us win is
	// inside it.
	est, ok := EstimateNoise(Collect(many))
	if !ok || est.At(100) < 5.5 || est.At(100) > 12 {
		t.Fatalf("noise estimate %v (%v) from +-6 us jitter", est, ok)
	}
	typical := append(runRecs("auto", "auto", sizes, 1, func(int64, int) float64 { return 100 }),
		runRecs("Ring", "LL", sizes, 1, func(int64, int) float64 { return 95 })...)
	if tab, _ := buildOnEvidence(t, typical, &est); len(tab.Rules) != 0 {
		t.Errorf("one run each made rules: %v", tab.Rules)
	}
	// With no repeats at all the prior stands, and a 5% win is not enough.
	if tab, _ := buildOnEvidence(t, typical, nil); len(tab.Rules) != 0 {
		t.Errorf("one run each under the prior made rules: %v", tab.Rules)
	}

	// Faster only through one outlier run in forty: the median is not.
	outlier := func(sz int64, run int) float64 {
		if run == 0 {
			return 40
		}
		return 100 + jitter()
	}
	lucky := append(runRecs("auto", "auto", sizes, 40, auto), runRecs("Ring", "LL", sizes, 40, outlier)...)
	if tab, _ := buildOnEvidence(t, lucky, nil); len(tab.Rules) != 0 {
		t.Errorf("an outlier made rules: %v", tab.Rules)
	}
}

// A rule holds over the measured sizes that showed the win and, past
// them, to where its margin over the default, interpolated in log size,
// meets the default's at the next measured size it lost; nothing reaches
// past the measured sizes.
func TestEvidenceBoundariesAtCrossovers(t *testing.T) {
	sizes := []int64{1 << 10, 1 << 11, 1 << 12, 1 << 13, 1 << 14, 1 << 15, 1 << 16}
	auto := func(int64, int) float64 { return 100 }
	ll := func(sz int64, _ int) float64 {
		if sz >= 1<<12 && sz <= 1<<14 {
			return 50 // wins by far at 4K, 8K, 16K: margin +100%
		}
		return 150 // margin -33.3%
	}
	recs := append(runRecs("auto", "auto", sizes, 1, auto), runRecs("Ring", "LL", sizes, 1, ll)...)
	n := Noise{AddUs: 10}
	tab, ds := buildOnEvidence(t, recs, &n)
	if len(tab.Rules) != 1 {
		t.Fatalf("rules %v", tab.Rules)
	}
	// The margin falls from +1 to -1/3 over one doubling: zero 3/4 of
	// the way, at 2^(11+1/4) below and 2^(14+3/4) above.
	lo, hi := int64(math.Round(math.Exp2(11.25))), int64(math.Round(math.Exp2(14.75)))
	if r := tab.Rules[0].Bytes; r.Min != lo || r.Max != hi {
		t.Errorf("rule over %d..%d, want %d..%d (the interpolated crossovers)", r.Min, r.Max, lo, hi)
	}
	for _, c := range []struct {
		bytes int64
		rule  bool
	}{{0, false}, {2048, false}, {lo - 1, false}, {lo, true}, {4096, true}, {12288, true}, {16384, true},
		{hi, true}, {hi + 1, false}, {1 << 15, false}, {1 << 30, false}} {
		if _, ok := tab.Lookup(tuning.AllReduce, 2, 1, c.bytes); ok != c.rule {
			t.Errorf("%d B: rule %v, want %v", c.bytes, ok, c.rule)
		}
	}
	// The rule's decision reports its margin over the default and the noise.
	for _, d := range ds {
		if d.Rule && (d.RunnerUp != (Key{Shape: shape2, Algo: "auto", Proto: "auto"}) || math.Abs(d.MarginPct-100) > 1e-9 || math.Abs(d.NoisePct-20) > 1e-9) {
			t.Errorf("rule decision: runner-up %s margin %.1f%% noise %.1f%%, want auto, 100%%, 20%%", d.RunnerUp.Config(), d.MarginPct, d.NoisePct)
		}
	}
}

// Between two different winners: the earlier extends to the later's size
// when it also beat the default there; else the default holds between.
func TestEvidenceBetweenTwoWinners(t *testing.T) {
	sizes := []int64{1000, 2000, 3000, 4000}
	auto := func(int64, int) float64 { return 100 }
	n := Noise{AddUs: 10}
	at := func(m map[int64]float64) func(int64, int) float64 {
		return func(sz int64, _ int) float64 { return m[sz] }
	}
	cases := []struct {
		name   string
		ll, s  func(int64, int) float64
		llTo   int64 // last byte of the LL rule
		sFrom  int64 // first byte of the Simple rule
		gapDef bool  // the default between them (at 2500 B)
	}{
		{"LL also wins at Simple's first size",
			at(map[int64]float64{1000: 50, 2000: 50, 3000: 60, 4000: 200}),
			at(map[int64]float64{1000: 200, 2000: 200, 3000: 40, 4000: 40}), 2999, 3000, false},
		{"Simple also wins at LL's last size",
			at(map[int64]float64{1000: 50, 2000: 50, 3000: 200, 4000: 200}),
			at(map[int64]float64{1000: 200, 2000: 60, 3000: 40, 4000: 40}), 2000, 2001, false},
		{"neither",
			at(map[int64]float64{1000: 50, 2000: 50, 3000: 200, 4000: 200}),
			at(map[int64]float64{1000: 200, 2000: 200, 3000: 40, 4000: 40}), 2000, 3000, true},
	}
	for _, c := range cases {
		recs := append(runRecs("auto", "auto", sizes, 1, auto), runRecs("Ring", "LL", sizes, 1, c.ll)...)
		recs = append(recs, runRecs("Ring", "Simple", sizes, 1, c.s)...)
		tab, _ := buildOnEvidence(t, recs, &n)
		var llTo, sFrom int64 = -2, -2
		for _, r := range tab.Rules {
			switch r.Choice.Proto.String() {
			case "LL":
				llTo = r.Bytes.Max
			case "Simple":
				sFrom = r.Bytes.Min
			}
		}
		if llTo != c.llTo || sFrom != c.sFrom {
			t.Errorf("%s: LL to %d, Simple from %d; want %d, %d (rules %v)", c.name, llTo, sFrom, c.llTo, c.sFrom, tab.Rules)
		}
		_, between := tab.Lookup(tuning.AllReduce, 2, 1, 2500)
		if between == c.gapDef {
			t.Errorf("%s: a rule at 2500 B: %v, want %v", c.name, between, !c.gapDef)
		}
	}
}

// Size-0 rows never become samples; a protocol-only run of a collective
// with one algorithm is a Ring run and makes rules.
func TestCollectZeroSizesAndProtocolOnly(t *testing.T) {
	recs := []results.Record{
		{Collective: "allgather", NRanks: 2, Protocol: "LL", Placement: results.OutOfPlace, Size: 0, TimeUs: 5},
		{Collective: "allgather", NRanks: 2, Protocol: "LL", Placement: results.OutOfPlace, Size: 64, TimeUs: 5},
		{Collective: "allgather", NRanks: 2, Protocol: "LL", Placement: results.InPlace, Size: 64, TimeUs: 7},
		{Collective: "allreduce", NRanks: 2, Protocol: "LL", Placement: results.OutOfPlace, Size: 64, TimeUs: 5},
	}
	series := Collect(recs)
	if len(series) != 2 {
		t.Fatalf("series %+v", series)
	}
	for _, s := range series {
		for _, m := range s.Samples {
			if m.Bytes == 0 {
				t.Errorf("%s: a size-0 sample", s.Key.Config())
			}
		}
		switch s.Key.Coll {
		case "allgather":
			if s.Key.Algo != "Ring" || s.Key.Proto != "LL" {
				t.Errorf("allgather protocol-only key %s, want Ring/LL", s.Key.Config())
			}
			if c, _ := tuning.ParseColl("allgather"); ruleless(c, s.Key) != "" {
				t.Errorf("allgather Ring/LL: %s", ruleless(c, s.Key))
			}
			if got := s.Samples[0].Runs; len(got) != 2 || got[0] != 5 || got[1] != 7 {
				t.Errorf("allgather runs %v, want both placements [5 7]", got)
			}
		case "allreduce": // two algorithms: a protocol alone is not a whole configuration
			if s.Key.Algo != "auto" {
				t.Errorf("allreduce protocol-only key %s, want auto/LL", s.Key.Config())
			}
		}
	}
}

func TestParseNoise(t *testing.T) {
	cases := []struct {
		in      string
		add     float64
		rel     float64
		wantErr string
	}{
		{"15us+1%", 15, 0.01, ""},
		{"15us", 15, 0, ""},
		{"2%", 0, 0.02, ""},
		{" 0.5ms + 0.02 ", 500, 0.02, ""},
		{"800ns", 0.8, 0, ""},
		{"", 0, 0, "empty"},
		{"fast", 0, 0, "invalid noise term"},
		{"-3us", 0, 0, "invalid noise term"},
		{"100%", 0, 0, "100%"},
	}
	for _, c := range cases {
		n, err := ParseNoise(c.in)
		if c.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), c.wantErr) {
				t.Errorf("%q: err %v, want %q", c.in, err, c.wantErr)
			}
			continue
		}
		if err != nil || math.Abs(n.AddUs-c.add) > 1e-9 || math.Abs(n.Rel-c.rel) > 1e-12 {
			t.Errorf("%q: %+v %v, want %gus+%g", c.in, n, err, c.add, c.rel)
		}
	}
}

// The envelope fitted to repeats of known spread covers them and is not
// far above them: additive spread at small times, relative at large.
func TestEstimateNoise(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	var recs []results.Record
	for run := 0; run < 6; run++ {
		for _, base := range []float64{10, 20, 50, 1000, 5000, 20000} {
			sz := int64(base * 100)
			t := base + 8*(rng.Float64()-0.5) + base*0.04*(rng.Float64()-0.5) // +-4 us, +-2%
			recs = append(recs, results.Record{Collective: "allreduce", NRanks: 2, Algorithm: "Ring", Protocol: "LL",
				Placement: results.OutOfPlace, Size: sz, TimeUs: t, Timestamp: time.Unix(int64(run), 0)})
		}
	}
	n, ok := EstimateNoise(Collect(recs))
	if !ok || n.Pairs != 6*15 {
		t.Fatalf("estimate %+v %v", n, ok)
	}
	// Pair differences reach 8 us + 4%: the envelope sits between half that and all of it.
	for _, tm := range []float64{10, 20000} {
		hi := 8 + 0.04*tm
		if got := n.At(tm); got < hi/3 || got > hi*1.6 {
			t.Errorf("noise at %g us: %.2f, want within [%.2f, %.2f] (%v)", tm, got, hi/3, hi*1.6, n)
		}
	}
	if _, ok := EstimateNoise(Collect(recs[:6])); ok {
		t.Error("one run: an estimate without repeats")
	}
}

// Validation times each configuration by its best run, compares the
// table and the default on common points, and reports the default's own
// spread.
func TestValidateBestObservedAndSpread(t *testing.T) {
	sizes := []int64{1000, 2000}
	auto := func(sz int64, run int) float64 { return []float64{100, 110, 130}[run] }
	ll := func(sz int64, run int) float64 { return []float64{105, 104, 120}[run] }
	recs := append(runRecs("auto", "auto", sizes, 3, auto), runRecs("Ring", "LL", sizes, 3, ll)...)
	series := Collect(recs)
	empty := &tuning.Table{Version: tuning.TableVersion, Rules: []tuning.Rule{}}
	rep, err := Validate(empty, series, nil)
	if err != nil {
		t.Fatal(err)
	}
	p := rep.Points[0]
	if p.BestUs != 100 || p.DefaultUs != 100 || p.Best.Proto != "auto" {
		t.Errorf("best %v %.0f us, default %.0f us; want auto's best run, 100 us", p.Best.Config(), p.BestUs, p.DefaultUs)
	}
	if math.Abs(p.DefaultSpread-0.10) > 1e-9 || rep.Spread.Points != 2 {
		t.Errorf("spread %.3f over %d points, want 0.10 (median 110 over best 100)", p.DefaultSpread, rep.Spread.Points)
	}
	if rep.Worse() {
		t.Error("an empty table is worse than the default")
	}
	ruleLL := &tuning.Table{Version: tuning.TableVersion, Rules: []tuning.Rule{{Coll: tuning.AllReduce,
		Ranks: tuning.Range{Min: 2, Max: 2}, Hosts: tuning.Range{Min: 1, Max: 1}, Bytes: tuning.Range{Min: 0, Max: -1},
		Choice: choiceOf(Key{Shape: shape2, Algo: "Ring", Proto: "LL"})}}}
	rep, err = Validate(ruleLL, series, nil)
	if err != nil {
		t.Fatal(err)
	}
	if !rep.Worse() || math.Abs(rep.BothTable.Geomean-0.04) > 1e-9 {
		t.Errorf("a table of the 4%%-slower LL: worse %v, geomean %.3f", rep.Worse(), rep.BothTable.Geomean)
	}
}

// A win at one measured size alone, measured once, makes no rule: it is
// one comparison among the many a sweep makes.
func TestEvidenceOneSizeIsNoRule(t *testing.T) {
	sizes := []int64{1000, 2000, 3000, 4000}
	auto := func(int64, int) float64 { return 100 }
	ll := func(sz int64, _ int) float64 { return map[int64]float64{1000: 200, 2000: 50, 3000: 200, 4000: 200}[sz] }
	n := Noise{AddUs: 10}
	if tab, _ := buildOnEvidence(t, append(runRecs("auto", "auto", sizes, 1, auto), runRecs("Ring", "LL", sizes, 1, ll)...), &n); len(tab.Rules) != 0 {
		t.Errorf("a one-size win made rules: %v", tab.Rules)
	}
}

// A win at one size stands alone when every separate run of the pick beat
// every run of the default by the noise; one run that did not undoes it.
// Its range reaches toward a neighbour where the pick was no slower up to
// just short of it, and toward one where it was slower to the crossover.
func TestEvidenceOneSizeRepeated(t *testing.T) {
	sizes := []int64{1000, 4000, 16000}
	auto := func(int64, int) float64 { return 100 }
	ll := func(sz int64, run int) float64 {
		return map[int64]float64{1000: 99, 4000: 50 + float64(run), 16000: 200}[sz]
	}
	n := Noise{AddUs: 10}
	tab, _ := buildOnEvidence(t, append(runRecs("auto", "auto", sizes, 3, auto), runRecs("Ring", "LL", sizes, 3, ll)...), &n)
	if len(tab.Rules) != 1 {
		t.Fatalf("a win in each of 3 runs at one size: rules %v, want one", tab.Rules)
	}
	// Below: LL no slower at 1000 (99 against 100), so from 1001. Above:
	// margin +0.96 at 4000 (100/51-1), -0.5 at 16000: zero at 4000 x
	// 4^(0.96/1.46).
	m := 100.0/51 - 1
	hi := int64(math.Round(4000 * math.Pow(4, m/(m+0.5))))
	if r := tab.Rules[0].Bytes; r.Min != 1001 || r.Max != hi {
		t.Errorf("rule over %d..%d, want 1001..%d", r.Min, r.Max, hi)
	}
	// One of the three runs without the win: no rule.
	flaky := func(sz int64, run int) float64 {
		if sz == 4000 && run == 2 {
			return 95
		}
		return ll(sz, run)
	}
	if tab, _ := buildOnEvidence(t, append(runRecs("auto", "auto", sizes, 3, auto), runRecs("Ring", "LL", sizes, 3, flaky)...), &n); len(tab.Rules) != 0 {
		t.Errorf("a lone win missing from one run made rules: %v", tab.Rules)
	}
}

// The two-H200 nccl-tests logs (NCCL's default, and NCCL_PROTO=Simple):
// a table built from every other size is no worse than the default on the
// sizes between, each configuration timed by its best column.
func TestEvidenceOnRealLogs(t *testing.T) {
	read := func(file, algo, proto string) []results.Record {
		recs, err := results.ReadFile("testdata/nccl-tests/" + file)
		if err != nil {
			t.Fatal(err)
		}
		for i := range recs {
			recs[i].Algorithm, recs[i].Protocol = algo, proto // the run's tag
		}
		return recs
	}
	all := append(read("h200x2_all_reduce_perf.txt", "auto", "auto"), read("h200x2_all_reduce_simple.txt", "Ring", "Simple")...)
	// The default's sizes (8 B x 4^k), alternately train and held out.
	var sizes []int64
	for _, r := range all {
		if r.Algorithm == "auto" && r.Placement == results.OutOfPlace && r.Size > 0 {
			sizes = append(sizes, r.Size)
		}
	}
	role := map[int64]int{}
	for i, sz := range sizes {
		role[sz] = 1 + i%2
	}
	var train, held []results.Record
	for _, r := range all {
		switch role[r.Size] {
		case 1:
			train = append(train, r)
		case 2:
			held = append(held, r)
		}
	}
	series := Collect(train)
	// One run per configuration: the placement columns share the run's
	// luck, so the prior stands (raised if the columns differ by more).
	n, estimated := EstimateNoiseOr(series, DefaultNoisePrior)
	if estimated || n.At(100) < DefaultNoisePrior.At(100) {
		t.Fatalf("noise %v (%s) from single runs", n, n.Source)
	}
	fits, _ := FitAll(series)
	tab, ds, err := BuildTable(series, fits, TableOptions{Noise: &n})
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range ds {
		if d.Skipped != "" {
			t.Errorf("skipped %s %s: %s", d.Shape, d.Key.Config(), d.Skipped)
		}
	}
	rep, err := Validate(tab, Collect(held), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("noise %v (%s); %d rules; held out: table geomean %.2f%% max %.2f%%, default geomean %.2f%% max %.2f%% on %d points",
		n, n.Source, len(tab.Rules), 100*rep.BothTable.Geomean, 100*rep.BothTable.Max, 100*rep.BothDefault.Geomean, 100*rep.BothDefault.Max, rep.BothTable.Points)
	if rep.BothTable.Points < 5 || rep.Worse() {
		t.Errorf("table worse than the default on held-out sizes (or too few points): %+v vs %+v", rep.BothTable, rep.BothDefault)
	}
}

// The two placement columns of one run share its luck: they alone never
// lower the noise below the prior, but raise it where they differ more.
func TestNoiseFromPlacementsOnly(t *testing.T) {
	var recs []results.Record
	for i, sz := range []int64{1 << 10, 1 << 12, 1 << 14, 1 << 16, 1 << 18, 1 << 20, 1 << 22, 1 << 24, 1 << 26} {
		for _, pl := range []string{results.OutOfPlace, results.InPlace} {
			t := 100.0
			if pl == results.InPlace {
				t += float64(i % 2) // columns 0-1 us apart
			}
			recs = append(recs, results.Record{Collective: "allreduce", NRanks: 2, Placement: pl, Size: sz, TimeUs: t, Source: "run.txt:" + fmt.Sprint(i)})
		}
	}
	series := Collect(recs)
	if _, ok := EstimateNoise(series); ok {
		t.Error("an estimate from one run's placement columns")
	}
	n, est := EstimateNoiseOr(series, DefaultNoisePrior)
	if est || n.AddUs != DefaultNoisePrior.AddUs || n.Rel != DefaultNoisePrior.Rel {
		t.Errorf("small placement differences moved the prior: %v (%s)", n, n.Source)
	}
	big := Noise{AddUs: 0.1}
	if n, _ := EstimateNoiseOr(series, big); n.At(100) < 0.9 {
		t.Errorf("placement differences of 1 us did not raise a 0.1 us prior: %v", n)
	}
}

// Any --noise text parses to a finite, non-negative noise or an error.
func FuzzParseNoise(f *testing.F) {
	for _, s := range []string{"15us+1%", "0.5ms+0.02", "2%", "", "+", "1e400us", "-0%", "NaN%"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		n, err := ParseNoise(s)
		if err != nil {
			return
		}
		if !(n.AddUs >= 0) || !(n.Rel >= 0) || n.Rel >= 1 || math.IsInf(n.AddUs, 0) {
			t.Fatalf("%q: %+v", s, n)
		}
	})
}
