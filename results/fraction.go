package results

import (
	"fmt"
	"math"
	"strconv"
	"strings"
)

// ParseFraction reads a fraction written as a number (0.05) or as a
// percentage (5%), the way every threshold, precision and margin flag of
// the harness takes one. Callers check the range they accept.
func ParseFraction(s string) (float64, error) {
	t := strings.TrimSpace(s)
	scale := 1.0
	if strings.HasSuffix(t, "%") {
		t, scale = strings.TrimSpace(strings.TrimSuffix(t, "%")), 0.01
	}
	v, err := strconv.ParseFloat(t, 64)
	if err != nil || math.IsNaN(v) {
		return 0, fmt.Errorf("%q is neither a number nor a percentage", s)
	}
	return v * scale, nil
}
