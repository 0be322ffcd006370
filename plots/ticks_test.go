package plots

import (
	"math"
	"reflect"
	"testing"
)

func TestSizeLabel(t *testing.T) {
	for _, c := range []struct {
		in   int64
		want string
	}{
		{0, "0B"}, {8, "8B"}, {1000, "1000B"}, {1024, "1K"}, {64 << 10, "64K"}, {1 << 20, "1M"},
		{1 << 30, "1G"}, {3 << 29, "1.5G"}, {24953, "24.4K"}, {120991, "118K"}, {2644206, "2.52M"}, {1 << 40, "1T"},
	} {
		if got := SizeLabel(c.in); got != c.want {
			t.Errorf("SizeLabel(%d) = %q, want %q", c.in, got, c.want)
		}
	}
}

// labels returns the labelled ticks as value -> label.
func labels(ts []Tick) map[float64]string {
	out := map[float64]string{}
	for _, t := range ts {
		if t.Label != "" {
			out[t.Value] = t.Label
		}
	}
	return out
}

func TestSizeTicks(t *testing.T) {
	// 8 B to 64 K: 14 octaves, a label every octave fits in 14.
	ts := SizeTicks(3, 16, 14)
	if len(ts) != 14 || ts[0] != (Tick{3, "8B"}) || ts[7] != (Tick{10, "1K"}) || ts[13] != (Tick{16, "64K"}) {
		t.Errorf("SizeTicks(3, 16, 14) = %v", ts)
	}
	// 8 B to 1 G with at most 12 labels: every 5 octaves, so 1K, 1M and
	// 1G are labelled; every other octave is a minor tick.
	ts = SizeTicks(3, 30, 12)
	want := map[float64]string{5: "32B", 10: "1K", 15: "32K", 20: "1M", 25: "32M", 30: "1G"}
	if got := labels(ts); !reflect.DeepEqual(got, want) {
		t.Errorf("SizeTicks(3, 30, 12) labels %v, want %v", got, want)
	}
	if len(ts) != 28 {
		t.Errorf("%d ticks, want one per octave (28)", len(ts))
	}
	// Every two octaves when that fits.
	if got := labels(SizeTicks(10, 20, 6)); !reflect.DeepEqual(got, map[float64]string{10: "1K", 12: "4K", 14: "16K", 16: "64K", 18: "256K", 20: "1M"}) {
		t.Errorf("SizeTicks(10, 20, 6) labels %v", got)
	}
	// Fractional ends keep the whole octaves inside.
	if ts := SizeTicks(2.5, 4.5, 10); len(ts) != 2 || ts[0].Value != 3 || ts[1].Value != 4 {
		t.Errorf("SizeTicks(2.5, 4.5) = %v", ts)
	}
	if lo, hi := SizeRange(8, 1<<20); lo != 3 || hi != 20 {
		t.Errorf("SizeRange(8, 1M) = %v, %v", lo, hi)
	}
	if lo, hi := SizeRange(24953, 24953); !(lo < X(24953) && hi > X(24953)) {
		t.Errorf("SizeRange of one size %v, %v does not contain it", lo, hi)
	}
}

func TestTimeTicks(t *testing.T) {
	ts := TimeTicks(0, 3) // 1 us to 1 ms
	want := map[float64]string{0: "1us", 1: "10us", 2: "100us", 3: "1ms"}
	if got := labels(ts); !reflect.DeepEqual(got, want) {
		t.Errorf("TimeTicks(0, 3) labels %v, want %v", got, want)
	}
	if len(ts) != 28 { // 1..9 in three decades, and 1 ms
		t.Errorf("%d ticks, want 28", len(ts))
	}
	// Less than two decades: 2x and 5x are labelled too.
	got := labels(TimeTicks(math.Log10(3), math.Log10(80)))
	if got[1] != "10us" || got[math.Log10(5)] != "5us" || got[math.Log10(20)] != "20us" || got[math.Log10(50)] != "50us" {
		t.Errorf("TimeTicks(3us, 80us) labels %v", got)
	}
	if lo, hi := TimeRange(3, 2500); !(lo < math.Log10(3) && lo > 0.3 && hi > math.Log10(2500) && hi < 3.6) {
		t.Errorf("TimeRange(3, 2500) = %v, %v", lo, hi)
	}
	if lo, hi := TimeRange(10, 20); !(hi-lo >= 1 && lo < 1 && hi > math.Log10(20)) {
		t.Errorf("TimeRange(10, 20) = %v, %v: want a decade around them", lo, hi)
	}
	for us, want := range map[float64]string{0.5: "0.5us", 12: "12us", 1500: "1.5ms", 2e6: "2s"} {
		if got := TimeLabel(us); got != want {
			t.Errorf("TimeLabel(%v) = %q, want %q", us, got, want)
		}
	}
}

func TestLinearTicks(t *testing.T) {
	for _, c := range []struct {
		lo, hi float64
		max    int
		want   map[float64]string
	}{
		{0, 3.15, 7, map[float64]string{0: "0.0", 0.5: "0.5", 1: "1.0", 1.5: "1.5", 2: "2.0", 2.5: "2.5", 3: "3.0"}},
		{0, 330, 7, map[float64]string{0: "0", 50: "50", 100: "100", 150: "150", 200: "200", 250: "250", 300: "300"}},
		{0.2, 1.6, 5, map[float64]string{0.5: "0.5", 1: "1.0", 1.5: "1.5"}},
		{0, 0.1, 5, map[float64]string{0: "0.000", 0.025: "0.025", 0.05: "0.050", 0.075: "0.075", 0.1: "0.100"}},
		{0.9, 1.1, 5, map[float64]string{0.9: "0.90", 0.95: "0.95", 1: "1.00", 1.05: "1.05", 1.1: "1.10"}},
	} {
		got := labels(LinearTicks(c.lo, c.hi, c.max))
		if len(got) != len(c.want) {
			t.Errorf("LinearTicks(%v, %v, %d) = %v, want %v", c.lo, c.hi, c.max, got, c.want)
			continue
		}
		for v, l := range c.want {
			found := false
			for gv, gl := range got {
				if math.Abs(gv-v) < 1e-9 && gl == l {
					found = true
				}
			}
			if !found {
				t.Errorf("LinearTicks(%v, %v, %d) = %v, lacks %v %q", c.lo, c.hi, c.max, got, v, l)
			}
		}
	}
	if LinearTicks(1, 1, 5) != nil {
		t.Error("an empty range has ticks")
	}
}
