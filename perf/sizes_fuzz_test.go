package perf

import (
	"bytes"
	"errors"
	"strconv"
	"strings"
	"testing"
)

// FuzzSizes runs the size flags (-b, -e, -i, -f) through parseOptions, as a
// user's command line does, and the sweep they give through sizeList. On
// any input: no panic; a refusal is a usage error naming the flag; accepted
// sizes are bytes from 0 to 1 PiB; the sweep starts at -b, stays within
// [-b, -e], rises, and ends, even where size x -f overflows int64 (seed
// factor_overflows: -f 2^62 once swept 8, 1).
func FuzzSizes(f *testing.F) {
	f.Add("8", "128M", "1M", int64(2))
	f.Add("1.5K", "1.5K", "0", int64(1))
	f.Add("0", "64", "8", int64(1))
	f.Add("0", "1G", "1", int64(4))
	f.Add("1e3", "9999999999G", "-1", int64(0))
	f.Add(" 16 ", "0x10", "1_000", int64(-3))
	f.Fuzz(func(t *testing.T, minS, maxS, stepS string, factor int64) {
		args := []string{"-b", minS, "-e", maxS, "-i", stepS, "-f", strconv.FormatInt(factor, 10)}
		o, err := parseOptions("all_reduce_perf", args, &bytes.Buffer{})
		if err != nil {
			var ue *usageError
			if !errors.As(err, &ue) || !strings.Contains(ue.msg, "invalid") {
				t.Fatalf("%q: refused with %v, want a usage error saying what is invalid", args, err)
			}
			return
		}
		for _, n := range []int64{o.MinBytes, o.MaxBytes, o.StepBytes} {
			if n < 0 || n > 1<<50 {
				t.Fatalf("%q: size %d accepted, want 0 to 1 PiB", args, n)
			}
		}
		sizes := sizeList(o.MinBytes, o.MaxBytes, o.StepBytes, o.StepFactor)
		if len(sizes) == 0 || len(sizes) > 1<<16+1 || sizes[0] != o.MinBytes {
			t.Fatalf("%q: %d sizes starting %v", args, len(sizes), sizes[:min(len(sizes), 3)])
		}
		for i, s := range sizes {
			if s < o.MinBytes || s > o.MaxBytes || (i > 0 && s <= sizes[i-1]) {
				t.Fatalf("%q: size %d at %d of %v", args, s, i, sizes[:min(len(sizes), 8)])
			}
		}
	})
}
