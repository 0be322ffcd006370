package ci

import (
	"errors"
	"math"
	"testing"
)

func TestParseThresholds(t *testing.T) {
	for _, tc := range []struct {
		in     string
		want   string // canonical form
		probes map[int64]float64
	}{
		{"5%", "5%", map[int64]float64{0: 0.05, 1 << 40: 0.05}},
		{"0.05", "5%", map[int64]float64{8: 0.05}},
		{"8B-64K=15%,64K-=5%", "8-64K=15%,64K-=5%", map[int64]float64{8: 0.15, 64<<10 - 1: 0.15, 64 << 10: 0.05, 1 << 30: 0.05}},
		{"64K-=5%, 8-64KB=15%", "8-64K=15%,64K-=5%", map[int64]float64{1024: 0.15}},
		{"-4K=30%,10%", "0-4K=30%,10%", map[int64]float64{0: 0.3, 4095: 0.3, 4096: 0.1}},
		{"1KiB-1M=20%,4M-=5%,12.5%", "1K-1M=20%,4M-=5%,12.5%", map[int64]float64{2 << 20: 0.125, 512: 0.125}},
		{"0%", "0%", map[int64]float64{1: 0}},
	} {
		th, err := ParseThresholds(tc.in)
		if err != nil {
			t.Errorf("%q: %v", tc.in, err)
			continue
		}
		if th.String() != tc.want {
			t.Errorf("%q: reads as %q, want %q", tc.in, th, tc.want)
		}
		for size, want := range tc.probes {
			if got, ok := th.For(size); !ok || math.Abs(got-want) > 1e-12 {
				t.Errorf("%q: size %d: %v %v, want %v", tc.in, size, got, ok, want)
			}
		}
	}
	th, _ := ParseThresholds("8-64K=15%")
	if _, ok := th.For(1 << 20); ok {
		t.Error("a size beyond every band and no default has a threshold")
	}
}

func TestParseThresholdsErrors(t *testing.T) {
	for _, in := range []string{
		"", "5", "-5%", "100%", "abc", "5%,6%", "8-64K", "8-64K=", "64K-8=5%", "8-8=5%",
		"x-64K=5%", "8-1Q=5%", "8-64K=15%,32K-=5%", "-=5%,-1K=3%", "1e3%",
	} {
		if _, err := ParseThresholds(in); !errors.Is(err, ErrBadThreshold) {
			t.Errorf("%q: %v, want ErrBadThreshold", in, err)
		}
	}
}

func TestParseSize(t *testing.T) {
	for in, want := range map[string]int64{"": 0, "8": 8, "8B": 8, "1K": 1024, "1KB": 1024, "1KiB": 1024, "2M": 2 << 20, "1G": 1 << 30} {
		if got, err := ParseSize(in); err != nil || got != want {
			t.Errorf("%q: %d %v, want %d", in, got, err, want)
		}
	}
	for _, in := range []string{"x", "-1", "1Q"} {
		if _, err := ParseSize(in); err == nil {
			t.Errorf("%q parses", in)
		}
	}
}
