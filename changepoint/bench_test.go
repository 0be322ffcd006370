package changepoint

import (
	"fmt"
	"testing"
)

// BenchmarkDetect: a series of 100 and of 300 runs at 3% noise, with no
// step and with a 5% step 5 runs before the end (the case CI cares about);
// and the 100 real runs of testdata/noise.json's 2 MiB key.
func BenchmarkDetect(b *testing.B) {
	for _, n := range []int{100, 300} {
		for _, step := range []bool{false, true} {
			x := gauss(21, n, 100, 0.03)
			if step {
				x = steps(21, 0.03, []int{n - 5, 5}, []float64{100, 105})
			}
			b.Run(fmt.Sprintf("n=%d/step=%v", n, step), func(b *testing.B) {
				for b.Loop() {
					if _, err := Detect(x, Options{}); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
	s := loadNoise(b, "testdata/noise.json").Sets[0]
	x := s.Series[len(s.Series)-1].MedianUs
	b.Run(fmt.Sprintf("n=%d/real", len(x)), func(b *testing.B) {
		for b.Loop() {
			if _, err := Detect(x, Options{}); err != nil {
				b.Fatal(err)
			}
		}
	})
}
