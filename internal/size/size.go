// Package size reads byte counts as nccl-tests' size flags take them
// (-b, -e, -i, --sizes): the one parser the stack's GCCL_* variables, the
// perf binaries, the tuner and the regression gate share. It is a leaf (no
// gccl imports), so the embedded library (lib/ccl) can use it without
// depending on the harness's packages.
package size

import (
	"fmt"
	"strconv"
	"strings"
)

// Parse reads a byte count as nccl-tests does: a number, decimals
// allowed, with an optional binary K, M or G suffix: 512, 1.5K, 64M, 1G.
func Parse(s string) (int64, error) {
	t := strings.TrimSpace(s)
	mult := 1.0
	if n := len(t); n > 0 {
		switch t[n-1] {
		case 'k', 'K':
			mult = 1 << 10
		case 'm', 'M':
			mult = 1 << 20
		case 'g', 'G':
			mult = 1 << 30
		}
		if mult > 1 {
			t = t[:n-1]
		}
	}
	f, err := strconv.ParseFloat(t, 64)
	// ParseFloat also takes hex floats, "inf" and "nan": sizes are plain decimals.
	if err != nil || f < 0 || f*mult > 1<<50 || strings.ContainsAny(t, "xXpPiInN_") {
		return 0, fmt.Errorf("invalid size %q: want a non-negative number with an optional K, M or G suffix", s)
	}
	return int64(f * mult), nil
}
