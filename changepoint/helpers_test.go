package changepoint

import (
	"math/rand/v2"
	"testing"
)

// gauss returns n values around level with relative normal noise sd, from a
// fixed seed.
func gauss(seed uint64, n int, level, sd float64) []float64 {
	rng := rand.New(rand.NewPCG(seed, 7))
	out := make([]float64, n)
	for i := range out {
		out[i] = level * (1 + sd*rng.NormFloat64())
	}
	return out
}

// steps concatenates segments of gauss noise: levels[i] for lens[i] points.
func steps(seed uint64, sd float64, lens []int, levels []float64) []float64 {
	var out []float64
	for i, n := range lens {
		out = append(out, gauss(seed+uint64(i)*1000, n, levels[i], sd)...)
	}
	return out
}

// indexes lists the change points' indexes.
func indexes(cps []ChangePoint) []int {
	out := make([]int, len(cps))
	for i, c := range cps {
		out[i] = c.Index
	}
	return out
}

func mustDetect(t *testing.T, x []float64, o Options) []ChangePoint {
	t.Helper()
	cps, err := Detect(x, o)
	if err != nil {
		t.Fatalf("Detect: %v", err)
	}
	return cps
}
