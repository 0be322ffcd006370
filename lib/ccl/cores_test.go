package ccl

import (
	"runtime"
	"testing"
)

// The model's cores are GOMAXPROCS or the fewer physical cores under them,
// never more and never none.
func TestModelCores(t *testing.T) {
	for _, procs := range []int{1, 2, runtime.NumCPU(), 4 * runtime.NumCPU()} {
		got := modelCores(procs)
		if got < 1 || got > procs {
			t.Errorf("modelCores(%d) = %d, want 1..%d", procs, got, procs)
		}
		if phys := physicalCores(); phys > 0 && phys < procs && got != phys {
			t.Errorf("modelCores(%d) = %d, want the %d physical cores", procs, got, phys)
		}
	}
}
