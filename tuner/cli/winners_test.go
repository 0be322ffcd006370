package cli

import (
	"math"
	"reflect"
	"strings"
	"testing"

	"github.com/gccl/gccl/lib/proto"
	"github.com/gccl/gccl/lib/tuning"
	"github.com/gccl/gccl/plots"
	"github.com/gccl/gccl/results"
	"github.com/gccl/gccl/tuner"
)

var shape2 = tuner.Shape{Coll: "allreduce", NRanks: 2, NHosts: 1}

func key(algo, proto string, nch int) tuner.Key {
	return tuner.Key{Shape: shape2, Algo: algo, Proto: proto, NCh: nch}
}

func series(k tuner.Key, bytesUs ...float64) tuner.Series {
	s := tuner.Series{Key: k}
	for i := 0; i+1 < len(bytesUs); i += 2 {
		s.Samples = append(s.Samples, tuner.Sample{Bytes: int64(bytesUs[i]), Us: bytesUs[i+1]})
	}
	return s
}

func TestWinners(t *testing.T) {
	ll, simple := key("Ring", "LL", 1), key("Ring", "Simple", 1)
	other := tuner.Key{Shape: tuner.Shape{Coll: "allgather", NRanks: 2, NHosts: 1}, Algo: "Ring", Proto: "LL", NCh: 1}
	maps, shapes := winnerMaps([]tuner.Series{
		series(ll, 0, 1, 8, 2, 64, 4, 512, 20),
		series(simple, 8, 5, 64, 3, 512, 10, 4096, 30),
		series(other, 8, 1),
	})
	if len(maps) != 2 || !reflect.DeepEqual(shapes, []tuner.Shape{shape2, other.Shape}) ||
		maps[0].Shape != (plots.Shape{Coll: "allreduce", NRanks: 2, NHosts: 1}) || maps[1].Shape.Coll != "allgather" {
		t.Fatalf("maps %+v, shapes %+v", maps, shapes)
	}
	w := maps[0].Wins
	if len(w) != 4 { // size 0 left out
		t.Fatalf("wins %+v", w)
	}
	for i, want := range []struct {
		b      int64
		k      tuner.Key
		margin float64
	}{{8, ll, 150}, {64, simple, 100.0 / 3}, {512, simple, 100}, {4096, simple, math.NaN()}} {
		if w[i].Bytes != want.b || w[i].Config != want.k.Config() || !(math.Abs(w[i].MarginPct-want.margin) < 1e-9 || math.IsNaN(want.margin) && math.IsNaN(w[i].MarginPct)) {
			t.Errorf("win %d: %+v, want %d %s margin %v", i, w[i], want.b, want.k.Config(), want.margin)
		}
	}
	if w[0].RunnerUp != simple.Config() || w[3].RunnerUp != "" {
		t.Errorf("runners-up %q, %q", w[0].RunnerUp, w[3].RunnerUp)
	}
}

func TestTableBands(t *testing.T) {
	choice := func(p proto.Protocol, nch int) tuning.Choice {
		return tuning.Choice{Algo: tuning.Ring, Proto: p, NChannels: nch}
	}
	rule := func(lo, hi int64, ranks tuning.Range, c tuning.Choice) tuning.Rule {
		return tuning.Rule{Coll: tuning.AllReduce, Ranks: ranks, Hosts: tuning.Range{Min: 1, Max: 1}, Bytes: tuning.Range{Min: lo, Max: hi}, Choice: c}
	}
	two := tuning.Range{Min: 2, Max: 2}
	tab := &tuning.Table{Rules: []tuning.Rule{
		rule(1024, 4095, two, choice(proto.LL, 1)),
		rule(0, 1023, tuning.Range{Min: 4, Max: 8}, choice(proto.Simple, 2)), // other ranks
		rule(4096, 65535, two, choice(proto.LL, 1)),                          // continues the first
		rule(1<<20, -1, two, choice(proto.Simple, 4)),
	}}
	const auto = "auto"
	got := tableBands(tab, shape2)
	want := []plots.Band{
		{From: 0, To: 1023, Config: auto},
		{From: 1024, To: 65535, Config: "Ring/LL/1ch"},
		{From: 65536, To: 1<<20 - 1, Config: auto},
		{From: 1 << 20, To: -1, Config: "Ring/Simple/4ch"},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("bands\n%+v\nwant\n%+v", got, want)
	}
	m := plots.ShapeMap{Table: got}
	if th := m.Thresholds(); !reflect.DeepEqual(th, []int64{1024, 65536, 1 << 20}) {
		t.Errorf("thresholds %v", th)
	}
	if got := tableBands(&tuning.Table{}, shape2); !reflect.DeepEqual(got, []plots.Band{{From: 0, To: -1, Config: auto}}) {
		t.Errorf("empty table: %+v", got)
	}
}

func TestDecisionBands(t *testing.T) {
	ll := key("Ring", "LL", 1)
	ds := []tuner.Decision{
		{Shape: shape2, From: 0, To: 99, Key: tuner.Key{Shape: shape2, Algo: "auto", Proto: "auto"}},
		{Shape: shape2, From: 100, To: 199, Key: ll},
		{Shape: shape2, From: 200, To: -1, Key: ll},
		{Shape: shape2, Key: key("Tree", "LL", 1), Skipped: "no tree"},
		{Shape: tuner.Shape{Coll: "allgather", NRanks: 2, NHosts: 1}, From: 0, To: -1, Key: ll},
	}
	got := decisionBands(ds, shape2)
	want := []plots.Band{{From: 0, To: 99, Config: "auto"}, {From: 100, To: -1, Config: ll.Config()}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("bands %+v, want %+v", got, want)
	}
}

// A curve's model is the fit of its records' one key; a curve of several
// keys, or of a key without a fit, has none, and says why.
func TestFitModels(t *testing.T) {
	rec := func(proto string, nch int) results.Record {
		return results.Record{Collective: "allreduce", NRanks: 2, NHosts: 1, Algorithm: "ring", Protocol: proto, Channels: nch}
	}
	ll := tuner.Fit{Key: key("Ring", "LL", 1), Segments: []tuner.Segment{{AlphaUs: 1, BetaGBs: 1}}}
	modelOf := fitModels([]tuner.Fit{ll})
	m, err := modelOf([]results.Record{rec("ll", 1), rec("LL", 1)})
	if err != nil || m == nil || m(1000) != ll.Predict(1000) {
		t.Errorf("LL curve: model %v, %v", m != nil, err)
	}
	if _, err := modelOf([]results.Record{rec("Simple", 1)}); err == nil || err.Error() != "no model in the models file for allreduce 2 ranks/1 hosts Ring/Simple/1ch" {
		t.Errorf("Simple curve: %v", err)
	}
	if _, err := modelOf([]results.Record{rec("LL", 1), rec("LL", 2)}); err == nil || !strings.Contains(err.Error(), "several configurations") {
		t.Errorf("merged curve: %v", err)
	}
}
