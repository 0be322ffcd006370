package size

import "testing"

func TestParse(t *testing.T) {
	good := map[string]int64{
		"0": 0, "8": 8, "1K": 1024, "1k": 1024, "1.5K": 1536, "0.5M": 512 << 10, "64M": 64 << 20,
		"1G": 1 << 30, "2g": 2 << 30, "1.25k": 1280, "3.75": 3, " 16 ": 16, "1e3": 1000,
	}
	for in, want := range good {
		if got, err := Parse(in); err != nil || got != want {
			t.Errorf("Parse(%q) = %d, %v; want %d", in, got, err, want)
		}
	}
	for _, in := range []string{"", "12Q", "abc", "-1", "K", "1KB", "0x10", "1_000", "NaN", "Inf", "1.5.5", "1T", "9999999999G"} {
		if got, err := Parse(in); err == nil {
			t.Errorf("Parse(%q) = %d, want an error", in, got)
		}
	}
}
