package plots

import (
	"math"
	"reflect"
	"testing"

	"github.com/gccl/gccl/lib/proto"
	"github.com/gccl/gccl/lib/tuning"
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
	maps := Winners([]tuner.Series{
		series(ll, 0, 1, 8, 2, 64, 4, 512, 20),
		series(simple, 8, 5, 64, 3, 512, 10, 4096, 30),
		series(other, 8, 1),
	})
	if len(maps) != 2 || maps[0].Shape != shape2 || maps[1].Shape != other.Shape {
		t.Fatalf("maps %+v", maps)
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
		if w[i].Bytes != want.b || w[i].Key != want.k || !(math.Abs(w[i].MarginPct-want.margin) < 1e-9 || math.IsNaN(want.margin) && math.IsNaN(w[i].MarginPct)) {
			t.Errorf("win %d: %+v, want %d %s margin %v", i, w[i], want.b, want.k.Config(), want.margin)
		}
	}
	// Cells: 8 B owns [8/2^1.5, 8*2^1.5] (half way to 64 B, as far out the
	// other side); the three Simple sizes merge.
	cells := WinCells(w)
	want := []Cell{{X0: 1.5, X1: 4.5, Key: ll}, {X0: 4.5, X1: 13.5, Key: simple}}
	if !reflect.DeepEqual(cells, want) {
		t.Errorf("cells %+v, want %+v", cells, want)
	}
	if c := WinCells(w[:1]); len(c) != 1 || c[0].X0 != 2.5 || c[0].X1 != 3.5 {
		t.Errorf("one size: %+v", c)
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
	auto := tuner.Key{Shape: shape2, Algo: "auto", Proto: "auto"}
	got := TableBands(tab, shape2)
	want := []Band{
		{From: 0, To: 1023, Key: auto},
		{From: 1024, To: 65535, Key: key("Ring", "LL", 1)},
		{From: 65536, To: 1<<20 - 1, Key: auto},
		{From: 1 << 20, To: -1, Key: key("Ring", "Simple", 4)},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("bands\n%+v\nwant\n%+v", got, want)
	}
	m := ShapeMap{Table: got}
	if th := m.Thresholds(); !reflect.DeepEqual(th, []int64{1024, 65536, 1 << 20}) {
		t.Errorf("thresholds %v", th)
	}
	if got := TableBands(&tuning.Table{}, shape2); !reflect.DeepEqual(got, []Band{{From: 0, To: -1, Key: auto}}) {
		t.Errorf("empty table: %+v", got)
	}

	// Cells over 1 B to 1 M: the unbounded band is clipped to the axis,
	// and one past the axis is dropped.
	cells := BandCells(got, 0, 20)
	if len(cells) != 3 || cells[0] != (Cell{X0: 0, X1: 10, Key: auto}) || cells[1].X1 != 16 || cells[2].X1 != 20 {
		t.Errorf("cells %+v", cells)
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
	got := DecisionBands(ds, shape2)
	want := []Band{{From: 0, To: 99, Key: tuner.Key{Shape: shape2, Algo: "auto", Proto: "auto"}}, {From: 100, To: -1, Key: ll}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("bands %+v, want %+v", got, want)
	}
}
