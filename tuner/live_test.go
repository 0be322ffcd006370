package tuner

import (
	"math"
	"reflect"
	"strings"
	"testing"

	"github.com/gccl/gccl/lib/tuning"
)

func TestLiveJudge(t *testing.T) {
	pt := func(b int64, def, tab []float64) LivePoint { return LivePoint{Bytes: b, Default: def, Table: tab} }
	cases := []struct {
		name    string
		claimed float64
		points  []LivePoint
		want    LiveVerdict
		why     string
	}{
		{"no points", 0.2, nil, LiveUnmeasured, "no held-out size"},
		{"a point never measured", 0.2, []LivePoint{pt(64, []float64{10}, nil)}, LiveUnmeasured, "no held-out size"},
		{"pays its claim", 0.2, []LivePoint{pt(64, []float64{12, 12.1, 11.9}, []float64{10, 10.1, 9.9})}, LivePays, "of the +20.0% claimed"},
		{"pays, no claim known", math.NaN(), []LivePoint{pt(64, []float64{12, 12, 12}, []float64{10, 10, 10})}, LivePays, "beyond the noise"},
		{"less than half the claim", 0.5, []LivePoint{pt(64, []float64{12, 12, 12}, []float64{10, 10, 10})}, LiveUnpaid, "less than half"},
		{"inside the noise", 0.2, []LivePoint{pt(64, []float64{10, 14, 12}, []float64{10, 11, 11.5})}, LiveUnpaid, "inside the noise"},
		// One size slower beyond the noise sinks the rule, whatever the others gained.
		{"slower at one size", 0.2, []LivePoint{
			pt(64, []float64{20, 20, 20}, []float64{10, 10, 10}),
			pt(128, []float64{10, 10, 10}, []float64{12, 12.1, 12})}, LiveSlower, "128 B took 1.20x"},
		{"slower inside the noise is not slower", math.NaN(), []LivePoint{pt(64, []float64{10, 12, 11}, []float64{11.5, 11.4, 11.6})}, LiveUnpaid, "inside the noise"},
	}
	for _, c := range cases {
		r := LiveRule{Claimed: c.claimed, Points: c.points}
		r.Judge(0.01)
		if r.Verdict != c.want || !strings.Contains(r.Why, c.why) {
			t.Errorf("%s: %s (%s), want %s (%q)", c.name, r.Verdict, r.Why, c.want, c.why)
		}
	}
	// Where the default already ran the rule's choice, a gain is the runs'
	// luck: unpaid, whatever it measured.
	same := LiveRule{Claimed: 0.2, Points: []LivePoint{{Bytes: 64, Default: []float64{12, 12, 12}, Table: []float64{10, 10, 10}, DefaultRan: "Ring/LL", TableRan: "Ring/LL"}}}
	same.Judge(0.01)
	if same.Verdict != LiveUnpaid || !strings.Contains(same.Why, "already ran Ring/LL") {
		t.Errorf("the same choice both ways: %s (%s), want unpaid", same.Verdict, same.Why)
	}
	// The gain is the geometric mean of the points' ratios, minus 1.
	r := LiveRule{Claimed: math.NaN(), Points: []LivePoint{pt(8, []float64{20}, []float64{10}), pt(16, []float64{10}, []float64{20})}}
	r.Judge(0.01)
	if math.Abs(r.Gain) > 1e-12 || r.Verdict != LiveSlower {
		t.Errorf("2x faster and 2x slower: gain %v %s, want 0 and slower", r.Gain, r.Verdict)
	}
}

func TestLivePointNoise(t *testing.T) {
	p := LivePoint{Default: []float64{10, 11, 12}, Table: []float64{5, 5, 5}}
	if got := p.Noise(0.01); math.Abs(got-2.0/11) > 1e-12 {
		t.Errorf("noise %v, want the default's spread 2/11", got)
	}
	if got := p.Noise(0.5); got != 0.5 {
		t.Errorf("noise %v, want the floor 0.5", got)
	}
	if got := (LivePoint{Default: []float64{10}, Table: []float64{5}}).Noise(0.03); got != 0.03 {
		t.Errorf("one pass: noise %v, want the floor", got)
	}
}

func TestHeldOutSizes(t *testing.T) {
	same := func(b int64) int64 { return b }
	trained := []int64{8, 32, 128, 512, 2048, 8192}
	cases := []struct {
		name    string
		r       tuning.Range
		trained []int64
		k       int
		round   func(int64) int64
		want    []int64
	}{
		// Midpoints of the trained sizes: 16, 64, 256, 1024, 4096.
		{"midpoints inside", tuning.Range{Min: 32, Max: 2048}, trained, 5, same, []int64{64, 256, 1024}},
		{"k of them, first to last", tuning.Range{Min: 0, Max: -1}, trained, 3, same, []int64{16, 256, 4096}},
		{"one", tuning.Range{Min: 0, Max: -1}, trained, 1, same, []int64{16}},
		{"none between", tuning.Range{Min: 128, Max: 200}, trained, 3, same, nil},
		// No sweep given: log-spaced strictly inside.
		{"log-spaced", tuning.Range{Min: 16, Max: 4096}, nil, 3, same, []int64{64, 256, 1024}},
		{"unbounded ends at max", tuning.Range{Min: 1024, Max: -1}, nil, 1, same, []int64{32768}},
		// Rounding to whole elements per rank: onto a trained size or out of range is dropped.
		{"rounded onto trained", tuning.Range{Min: 8, Max: 64}, trained, 3, func(b int64) int64 { return 32 }, nil},
		{"rounded out of range", tuning.Range{Min: 8, Max: 64}, trained, 3, func(b int64) int64 { return b * 100 }, nil},
		{"rounded", tuning.Range{Min: 8, Max: 8192}, trained, 5, func(b int64) int64 { return b / 24 * 24 }, []int64{48, 240, 1008, 4080}},
	}
	for _, c := range cases {
		got := HeldOutSizes(c.r, c.trained, c.k, 1<<20, c.round)
		if !reflect.DeepEqual(got, c.want) {
			t.Errorf("%s: %v, want %v", c.name, got, c.want)
		}
	}
}

func TestClaimedMargin(t *testing.T) {
	sh := Shape{Coll: "allreduce", NRanks: 4, NHosts: 1}
	choice := tuning.Choice{Algo: tuning.Ring, NChannels: 2}
	pick := keyOfChoice(sh, choice)
	auto := Key{Shape: sh, Algo: "auto", Proto: "auto"}
	series := []Series{
		{Key: auto, Samples: []Sample{{Bytes: 8, Us: 20}, {Bytes: 64, Us: 10}, {Bytes: 512, Us: 100}}},
		{Key: pick, Samples: []Sample{{Bytes: 8, Us: 10}, {Bytes: 64, Us: 5}, {Bytes: 512, Us: 1}}},
	}
	rule := tuning.Rule{Bytes: tuning.Range{Min: 0, Max: 100}, Choice: choice}
	if got := ClaimedMargin(series, sh, rule); math.Abs(got-1) > 1e-12 {
		t.Errorf("claimed %v, want +100%% (2x at 8 and 64 B; 512 B is outside the rule)", got)
	}
	if got := ClaimedMargin(series[:1], sh, rule); !math.IsNaN(got) {
		t.Errorf("without the choice's series: %v, want NaN", got)
	}
}
