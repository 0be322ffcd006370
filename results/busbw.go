package results

import "strings"

// busFactors is, per collective, nccl-tests' busBw / (size / time) on n
// ranks: the bus-bandwidth factor times the share of the size column that
// algBw counts (all of it, except hypercube's n-1 of n blocks). The perf
// binaries compute the same (perf.Test.BusBw; a test checks they agree).
var busFactors = map[string]func(n float64) float64{
	"allreduce":     func(n float64) float64 { return 2 * (n - 1) / n },
	"allgather":     func(n float64) float64 { return (n - 1) / n },
	"reducescatter": func(n float64) float64 { return (n - 1) / n },
	"alltoall":      func(n float64) float64 { return (n - 1) / n },
	"gather":        func(n float64) float64 { return (n - 1) / n },
	"scatter":       func(n float64) float64 { return (n - 1) / n },
	"hypercube":     func(n float64) float64 { return (n - 1) / n },
	"broadcast":     func(float64) float64 { return 1 },
	"reduce":        func(float64) float64 { return 1 },
	"sendrecv":      func(float64) float64 { return 1 },
}

// BusBwFromTime returns the bus bandwidth, GB/s, of a size-byte row of
// collective on nRanks ranks that took us microseconds, by nccl-tests'
// formula. A log prints busBw with two decimals (0.00 for every small
// size on a slow stack) but the time with four significant digits or
// more, so this is the precise figure. ok is false for a collective whose
// formula is not known (tests outside nccl-tests' standard set), for no
// rank count, and for a size or time that is not positive.
func BusBwFromTime(collective string, nRanks int, size int64, us float64) (gbps float64, ok bool) {
	f, known := busFactors[strings.ToLower(strings.TrimSpace(collective))]
	if !known || nRanks < 1 || size <= 0 || !(us > 0) {
		return 0, false
	}
	return f(float64(nRanks)) * float64(size) / us / 1e3, true
}
