package results

import "testing"

func TestParseFraction(t *testing.T) {
	for s, want := range map[string]float64{"5%": 0.05, " 0.05 ": 0.05, "2 %": 0.02, "0": 0, "150%": 1.5, "-1%": -0.01} {
		if got, err := ParseFraction(s); err != nil || got != want {
			t.Errorf("ParseFraction(%q) = %v, %v; want %v", s, got, err, want)
		}
	}
	for _, s := range []string{"", "%", "five", "NaN", "5%%", "0.05x"} {
		if _, err := ParseFraction(s); err == nil {
			t.Errorf("ParseFraction(%q) succeeded", s)
		}
	}
}
