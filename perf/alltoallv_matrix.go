package perf

import (
	"fmt"
	"io"
	"math"
	"os"
	"strconv"
	"strings"
)

// maxPeerBytes bounds one matrix cell, far above any buffer, so that sums
// over a row cannot overflow.
const maxPeerBytes = 1 << 48

// readTrafficMatrix reads an alltoallv traffic matrix file: one row per
// line, whitespace-separated byte counts, cell [i][j] the bytes rank i
// sends rank j; blank lines are skipped. Each cell is multiplied by scale
// and rounded down to a multiple of 16 bytes, as nccl-tests does.
func readTrafficMatrix(path string, scale float64) ([][]int64, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, usagef("%s: %v", envMatrix, err)
	}
	defer f.Close()
	m, err := parseTrafficMatrix(f, scale)
	if err != nil {
		return nil, usagef("%s %s: %v", envMatrix, path, err)
	}
	return m, nil
}

// parseTrafficMatrix is readTrafficMatrix on an open file; errors name the
// line and column (1-based).
func parseTrafficMatrix(r io.Reader, scale float64) ([][]int64, error) {
	text, err := io.ReadAll(r)
	if err != nil {
		return nil, err
	}
	var m [][]int64
	for ln, line := range strings.Split(string(text), "\n") {
		fields := strings.Fields(line)
		if len(fields) == 0 {
			continue
		}
		if len(m) > 0 && len(fields) != len(m[0]) {
			return nil, fmt.Errorf("line %d has %d values, the first row %d: every row needs the same number", ln+1, len(fields), len(m[0]))
		}
		row := make([]int64, len(fields))
		for c, s := range fields {
			v, err := strconv.ParseFloat(s, 64)
			if err != nil || v < 0 || math.IsNaN(v) {
				return nil, fmt.Errorf("line %d column %d: %q is not a byte count (want a number >= 0)", ln+1, c+1, s)
			}
			b := v * scale
			if !(b < maxPeerBytes) { // NaN too (0 x Inf)
				return nil, fmt.Errorf("line %d column %d: %s bytes (scale %g) is too large (want less than %d)", ln+1, c+1, s, scale, int64(maxPeerBytes))
			}
			row[c] = int64(b) &^ 15
		}
		m = append(m, row)
	}
	if len(m) == 0 {
		return nil, fmt.Errorf("no values: want a square matrix of byte counts, one row per line")
	}
	if len(m) != len(m[0]) {
		return nil, fmt.Errorf("%d rows of %d values: the matrix must be square", len(m), len(m[0]))
	}
	return m, nil
}
