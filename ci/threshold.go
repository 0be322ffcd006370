package ci

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/gccl/gccl/internal/size"
	"github.com/gccl/gccl/results"
)

// A Band is a size range [Lo, Hi) with its threshold.
type Band struct {
	Lo   int64   // inclusive
	Hi   int64   // exclusive; 0: no upper bound
	Frac float64 // the largest change in the worse direction that passes: 0.05 is 5%
}

func (b Band) contains(size int64) bool { return size >= b.Lo && (b.Hi == 0 || size < b.Hi) }

func (b Band) String() string {
	hi := ""
	if b.Hi > 0 {
		hi = results.SizeLabel(b.Hi)
	}
	return fmt.Sprintf("%s-%s=%s", results.SizeLabel(b.Lo), hi, pct(b.Frac))
}

// Thresholds maps a message size to the change that passes: bands first,
// then the default. Small messages are latency-noisy and usually get a
// wider band.
type Thresholds struct {
	Bands   []Band  // sorted, disjoint
	Default float64 // for sizes in no band; NaN: none (such a size is an error)
}

// Uniform is one threshold for every size.
func Uniform(frac float64) Thresholds { return Thresholds{Default: frac} }

// For returns the threshold of a size; false when no band covers it and
// there is no default.
func (t Thresholds) For(size int64) (float64, bool) {
	for _, b := range t.Bands {
		if b.contains(size) {
			return b.Frac, true
		}
	}
	return t.Default, !math.IsNaN(t.Default)
}

func (t Thresholds) String() string {
	var parts []string
	for _, b := range t.Bands {
		parts = append(parts, b.String())
	}
	if !math.IsNaN(t.Default) {
		parts = append(parts, pct(t.Default))
	}
	return strings.Join(parts, ",")
}

// ParseThresholds reads "5%", "0.05", or size bands with an optional default:
// "8B-64K=15%,64K-=5%" or "-4K=30%,10%". A band LO-HI covers sizes from LO
// (inclusive) up to HI (exclusive); an empty LO is 0, an empty HI unbounded.
// Sizes take K, M, G (binary) and an optional B. Bands must not overlap.
func ParseThresholds(s string) (Thresholds, error) {
	t := Thresholds{Default: math.NaN()}
	if strings.TrimSpace(s) == "" {
		return t, fmt.Errorf("%w: empty", ErrBadThreshold)
	}
	for _, item := range strings.Split(s, ",") {
		item = strings.TrimSpace(item)
		rng, val, isBand := strings.Cut(item, "=")
		if !isBand {
			f, err := parseFrac(item)
			if err != nil {
				return t, fmt.Errorf("%w %q: %v", ErrBadThreshold, item, err)
			}
			if !math.IsNaN(t.Default) {
				return t, fmt.Errorf("%w %q: two thresholds without a size band (%s and %s)", ErrBadThreshold, s, pct(t.Default), item)
			}
			t.Default = f
			continue
		}
		lo, hi, ok := strings.Cut(rng, "-")
		if !ok {
			return t, fmt.Errorf("%w %q: a band is LO-HI=PCT (e.g. 8B-64K=15%%; either bound may be empty)", ErrBadThreshold, item)
		}
		var b Band
		var err error
		if b.Lo, err = parseSize(lo, 0); err != nil {
			return t, fmt.Errorf("%w %q: %v", ErrBadThreshold, item, err)
		}
		if b.Hi, err = parseSize(hi, 0); err != nil {
			return t, fmt.Errorf("%w %q: %v", ErrBadThreshold, item, err)
		}
		if b.Hi != 0 && b.Hi <= b.Lo {
			return t, fmt.Errorf("%w %q: the band is empty (its upper bound is exclusive and must be above the lower)", ErrBadThreshold, item)
		}
		if b.Frac, err = parseFrac(val); err != nil {
			return t, fmt.Errorf("%w %q: %v", ErrBadThreshold, item, err)
		}
		t.Bands = append(t.Bands, b)
	}
	slices.SortFunc(t.Bands, func(a, b Band) int { return cmp.Compare(a.Lo, b.Lo) })
	for i := 1; i < len(t.Bands); i++ {
		if p := t.Bands[i-1]; p.Hi == 0 || p.Hi > t.Bands[i].Lo {
			return t, fmt.Errorf("%w %q: bands %s and %s overlap", ErrBadThreshold, s, p, t.Bands[i])
		}
	}
	return t, nil
}

// parseFrac reads "5%" or "0.05".
func parseFrac(s string) (float64, error) {
	v, err := results.ParseFraction(s)
	if err != nil || v < 0 || v >= 1 {
		return 0, fmt.Errorf("want a change from 0 to below 100%%, such as 5%% or 0.05")
	}
	return v, nil
}

// parseSize reads a size with an optional B after the unit ("8B", "64K",
// "64KB", "64KiB"); empty is def.
func parseSize(s string, def int64) (int64, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return def, nil
	}
	t := s
	for _, suf := range []string{"iB", "ib", "B", "b"} {
		if strings.HasSuffix(t, suf) {
			t = strings.TrimSuffix(t, suf)
			break
		}
	}
	return size.Parse(t)
}

// ParseSize reads a size as the gate's flags take it: "1K", "64KB", "8B".
func ParseSize(s string) (int64, error) { return parseSize(s, 0) }

func pct(f float64) string {
	return strconv.FormatFloat(100*f, 'f', -1, 64) + "%"
}
