package plots

import (
	"math"
	"reflect"
	"testing"
)

// Cells: 8 B owns [8/2^1.5, 8*2^1.5] (half way to 64 B, as far out the
// other side); the three Simple sizes merge.
func TestWinCells(t *testing.T) {
	const ll, simple = "Ring/LL/1ch", "Ring/Simple/1ch"
	w := []Win{
		{Bytes: 8, Config: ll, MarginPct: 150},
		{Bytes: 64, Config: simple, MarginPct: 100.0 / 3},
		{Bytes: 512, Config: simple, MarginPct: 100},
		{Bytes: 4096, Config: simple, MarginPct: math.NaN()},
	}
	cells := WinCells(w)
	want := []Cell{{X0: 1.5, X1: 4.5, Config: ll}, {X0: 4.5, X1: 13.5, Config: simple}}
	if !reflect.DeepEqual(cells, want) {
		t.Errorf("cells %+v, want %+v", cells, want)
	}
	if c := WinCells(w[:1]); len(c) != 1 || c[0].X0 != 2.5 || c[0].X1 != 3.5 {
		t.Errorf("one size: %+v", c)
	}
}

func TestBandCells(t *testing.T) {
	bands := []Band{
		{From: 0, To: 1023, Config: "auto"},
		{From: 1024, To: 65535, Config: "Ring/LL/1ch"},
		{From: 65536, To: 1<<20 - 1, Config: "auto"},
		{From: 1 << 20, To: -1, Config: "Ring/Simple/4ch"},
	}
	m := ShapeMap{Table: bands}
	if th := m.Thresholds(); !reflect.DeepEqual(th, []int64{1024, 65536, 1 << 20}) {
		t.Errorf("thresholds %v", th)
	}
	// Cells over 1 B to 1 M: the unbounded band is clipped to the axis,
	// and one past the axis is dropped.
	cells := BandCells(bands, 0, 20)
	if len(cells) != 3 || cells[0] != (Cell{X0: 0, X1: 10, Config: "auto"}) || cells[1].X1 != 16 || cells[2].X1 != 20 {
		t.Errorf("cells %+v", cells)
	}
}
