package plots

import (
	"fmt"
	"math"
	"strconv"
	"strings"
)

// Tick is one mark on an axis, at Value in the axis' own coordinates
// (log2 bytes on a size axis, log10 us on a time axis). An empty Label is
// a minor tick.
type Tick struct {
	Value float64
	Label string
}

// X is the size axis coordinate of a byte count: log2(bytes), with sizes
// below one byte drawn at 0.
func X(bytes int64) float64 {
	if bytes < 1 {
		return 0
	}
	return math.Log2(float64(bytes))
}

// SizeLabel writes a byte count short, in binary units: 8B, 1K, 64K, 1M,
// 1G, and 24.4K or 1.5M when it does not divide evenly.
func SizeLabel(bytes int64) string {
	units := []struct {
		shift uint
		name  string
	}{{40, "T"}, {30, "G"}, {20, "M"}, {10, "K"}}
	for _, u := range units {
		if bytes >= 1<<u.shift {
			v := float64(bytes) / float64(int64(1)<<u.shift)
			if bytes%(1<<u.shift) == 0 {
				return fmt.Sprintf("%d%s", bytes>>u.shift, u.name)
			}
			return trimFloat(v) + u.name
		}
	}
	return fmt.Sprintf("%dB", bytes)
}

// trimFloat writes v with 3 significant digits and no trailing zeros.
func trimFloat(v float64) string {
	if v <= 0 || math.IsNaN(v) || math.IsInf(v, 0) {
		return strconv.FormatFloat(v, 'g', 3, 64)
	}
	s := strconv.FormatFloat(v, 'f', max(0, 2-int(math.Floor(math.Log10(v)))), 64)
	if strings.Contains(s, ".") {
		s = strings.TrimRight(strings.TrimRight(s, "0"), ".")
	}
	return s
}

// sizeSteps are the octave steps major size ticks may take: each divides
// 10, so the ticks hit 1K, 1M and 1G whatever the step.
var sizeSteps = []int{1, 2, 5, 10}

// SizeTicks marks a size axis from lo to hi (log2 bytes): a major tick
// every step octaves, at multiples of step, with the smallest step that
// leaves at most maxMajor labels, and a minor tick at every other octave.
func SizeTicks(lo, hi float64, maxMajor int) []Tick {
	a, b := int(math.Ceil(lo-1e-9)), int(math.Floor(hi+1e-9))
	if b < a {
		return nil
	}
	maxMajor = max(maxMajor, 2)
	step := sizeSteps[len(sizeSteps)-1]
	for _, s := range sizeSteps {
		if countMultiples(a, b, s) <= maxMajor {
			step = s
			break
		}
	}
	var out []Tick
	for k := a; k <= b; k++ {
		t := Tick{Value: float64(k)}
		if k%step == 0 {
			t.Label = SizeLabel(int64(1) << uint(max(k, 0)))
		}
		out = append(out, t)
	}
	return out
}

// countMultiples counts the multiples of s in [a, b].
func countMultiples(a, b, s int) int {
	n := 0
	for k := a; k <= b; k++ {
		if k%s == 0 {
			n++
		}
	}
	return n
}

// SizeRange is the size axis range for sizes from lo to hi bytes: whole
// octaves around them, with at least one octave of room.
func SizeRange(lo, hi int64) (float64, float64) {
	a, b := math.Floor(X(lo)), math.Ceil(X(hi))
	if b-a < 1 {
		a, b = a-0.5, b+0.5
	}
	return a, b
}

// TimeLabel writes a time in microseconds with its unit: 0.1us, 10us,
// 1ms, 1s.
func TimeLabel(us float64) string {
	switch {
	case us >= 1e6:
		return trimFloat(us/1e6) + "s"
	case us >= 1e3:
		return trimFloat(us/1e3) + "ms"
	}
	return trimFloat(us) + "us"
}

// TimeTicks marks a time axis from lo to hi (log10 us): a labelled tick at
// every decade, minor ticks at 2..9 times each; when fewer than two
// decades fall in the range, 2x and 5x are labelled too.
func TimeTicks(lo, hi float64) []Tick {
	a, b := int(math.Floor(lo)), int(math.Ceil(hi))
	majors := 0
	for d := a; d <= b; d++ {
		if v := float64(d); v >= lo-1e-9 && v <= hi+1e-9 {
			majors++
		}
	}
	var out []Tick
	for d := a; d <= b; d++ {
		for m := 1; m <= 9; m++ {
			us := float64(m) * math.Pow(10, float64(d))
			v := math.Log10(us)
			if v < lo-1e-9 || v > hi+1e-9 {
				continue
			}
			t := Tick{Value: v}
			if m == 1 || (majors < 2 && (m == 2 || m == 5)) {
				t.Label = TimeLabel(us)
			}
			out = append(out, t)
		}
	}
	return out
}

// TimeRange is the time axis range (log10 us) for times from lo to hi us:
// the data with 4% of room either side, and at least one decade.
func TimeRange(lo, hi float64) (float64, float64) {
	a, b := math.Log10(lo), math.Log10(hi)
	a, b = clampRange(a, b, 1)
	pad := 0.04 * (b - a)
	return a - pad, b + pad
}

// LinearTicks marks a linear axis from lo to hi: labelled ticks at
// multiples of a step of 1, 2, 2.5 or 5 times a power of ten, the smallest
// such step that leaves at most maxMajor of them, and unlabelled ticks
// halfway between.
func LinearTicks(lo, hi float64, maxMajor int) []Tick {
	if !(hi > lo) || !finite(lo) || !finite(hi) {
		return nil
	}
	maxMajor = max(maxMajor, 2)
	step := 0.0
	for p := math.Floor(math.Log10((hi-lo)/float64(maxMajor))) - 1; step == 0; p++ {
		for _, m := range []float64{1, 2, 2.5, 5} {
			s := m * math.Pow(10, p)
			if math.Floor(hi/s)-math.Ceil(lo/s)+1 <= float64(maxMajor) {
				step = s
				break
			}
		}
	}
	// Digits after the point that the step needs (2.5 needs one more).
	digits := max(0, -int(math.Floor(math.Log10(step)+1e-9)))
	if m := step / math.Pow(10, math.Floor(math.Log10(step)+1e-9)); math.Abs(m-2.5) < 1e-9 {
		digits++
	}
	var out []Tick
	for k := math.Ceil(lo/step - 1e-9); k*step <= hi+step*1e-9; k++ {
		v := k * step
		if math.Abs(v) < step*1e-9 {
			v = 0
		}
		out = append(out, Tick{Value: v, Label: strconv.FormatFloat(v, 'f', digits, 64)})
		if h := v + step/2; h <= hi {
			out = append(out, Tick{Value: h})
		}
	}
	if first := math.Ceil(lo/step-1e-9) * step; first-step/2 >= lo {
		out = append([]Tick{{Value: first - step/2}}, out...)
	}
	return out
}
