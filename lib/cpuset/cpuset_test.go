package cpuset

import "testing"

// This machine: the processors listed once each, in order; their cores
// each counted once, no more than the processors.
func TestAffinityAndCores(t *testing.T) {
	cpus := Affinity()
	if cpus == nil {
		t.Skip("affinity unknown on this system")
	}
	for i := 1; i < len(cpus); i++ {
		if cpus[i] <= cpus[i-1] {
			t.Fatalf("Affinity() = %v: not increasing", cpus)
		}
	}
	ids := CoreIDs(cpus)
	if ids == nil {
		t.Skip("no sysfs topology")
	}
	if n := CountCores(ids); n < 1 || n > len(cpus) {
		t.Errorf("CountCores over %d processors = %d, want 1..%d", len(cpus), n, len(cpus))
	}
}

func TestCountCores(t *testing.T) {
	for _, c := range []struct {
		ids  []int
		want int
	}{{nil, 0}, {[]int{0}, 1}, {[]int{0, 0, 1, 1}, 2}, {[]int{1 << 16, 0}, 2}} {
		if got := CountCores(c.ids); got != c.want {
			t.Errorf("CountCores(%v) = %d, want %d", c.ids, got, c.want)
		}
	}
	if CoreIDs(nil) != nil {
		t.Error("CoreIDs(nil) != nil")
	}
}
