package ci

import (
	"fmt"
	"strings"
)

// A Metric is the quantity compared.
type Metric int

const (
	BusBW Metric = iota // bus bandwidth, GB/s: higher is better
	Time                // time per operation, microseconds: lower is better
)

// ParseMetric reads "busbw" or "time".
func ParseMetric(s string) (Metric, error) {
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "busbw", "bw":
		return BusBW, nil
	case "time", "us":
		return Time, nil
	}
	return 0, fmt.Errorf("%w: metric %q: want busbw or time", ErrBadOption, s)
}

func (m Metric) String() string {
	if m == Time {
		return "time"
	}
	return "busbw"
}

// HigherIsBetter says which direction is an improvement.
func (m Metric) HigherIsBetter() bool { return m == BusBW }

// A Normalization divides out the speed of the machine that measured.
type Normalization int

const (
	NormNone Normalization = iota
	// NormCopy divides bus bandwidth by the run's ref_copy_gbps (the
	// machine's copy() bandwidth measured in the same process), and
	// multiplies time by it, so that a baseline recorded on one machine
	// gates a run on a machine of another speed.
	NormCopy
)

// ParseNormalization reads "", "none" or "copy".
func ParseNormalization(s string) (Normalization, error) {
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "", "none":
		return NormNone, nil
	case "copy":
		return NormCopy, nil
	}
	return 0, fmt.Errorf("%w: normalization %q: want copy or none", ErrBadOption, s)
}

func (n Normalization) String() string {
	if n == NormCopy {
		return "copy"
	}
	return "none"
}

// Unit is how values of the metric under the normalization are labelled.
func Unit(m Metric, n Normalization) string {
	switch {
	case m == BusBW && n == NormCopy:
		return "busbw/copy"
	case m == BusBW:
		return "GB/s"
	case n == NormCopy:
		return "us×copy GB/s"
	}
	return "us"
}
