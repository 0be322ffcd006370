package tuner

import (
	"errors"
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/gccl/gccl/results"
)

var fitTestKey = Key{Shape: Shape{Coll: "allreduce", NRanks: 4, NHosts: 1}, Algo: "Ring", Proto: "Simple", NCh: 2}

// synthSeries returns a series over 8 B..64 MiB by 2x with times t(bytes)
// times a uniform multiplicative noise of +-noise (fixed seed).
func synthSeries(t func(bytes float64) float64, noise float64, seed uint64) Series {
	rng := rand.New(rand.NewPCG(seed, 1))
	s := Series{Key: fitTestKey}
	for b := int64(8); b <= 64<<20; b *= 2 {
		us := t(float64(b)) * (1 + noise*(2*rng.Float64()-1))
		s.Samples = append(s.Samples, Sample{Bytes: b, Us: us, Times: []float64{us}})
	}
	return s
}

// abTime is t = alpha + bytes/beta, alpha in us, beta in GB/s.
func abTime(alpha, beta float64) func(float64) float64 {
	return func(b float64) float64 { return alpha + b/(beta*1e3) }
}

func withinRel(got, want, tol float64) bool { return math.Abs(got/want-1) <= tol }

func TestFitRecoversAlphaBeta(t *testing.T) {
	for seed := uint64(1); seed <= 5; seed++ {
		f, err := FitSeries(synthSeries(abTime(5, 10), 0.03, seed))
		if err != nil {
			t.Fatal(err)
		}
		if len(f.Segments) != 1 {
			t.Fatalf("seed %d: %d segments (break %d), want 1: %+v", seed, len(f.Segments), f.Break(), f.Segments)
		}
		s := f.Segments[0]
		if !withinRel(s.AlphaUs, 5, 0.10) || !withinRel(s.BetaGBs, 10, 0.03) {
			t.Errorf("seed %d: alpha %.3f us beta %.3f GB/s, want 5 and 10", seed, s.AlphaUs, s.BetaGBs)
		}
		if f.Points != 24 || f.MinBytes != 8 || f.MaxBytes != 64<<20 || f.Key != fitTestKey {
			t.Errorf("seed %d: points %d bytes %d..%d key %+v", seed, f.Points, f.MinBytes, f.MaxBytes, f.Key)
		}
		if f.MaxRelErr > 0.07 || f.MedianRelErr > 0.03 || f.R2 < 0.99 || f.Flagged {
			t.Errorf("seed %d: quality median %.3f max %.3f R2 %.4f flagged %v", seed, f.MedianRelErr, f.MaxRelErr, f.R2, f.Flagged)
		}
	}
}

func TestFitExactDataIsExact(t *testing.T) {
	f, err := FitSeries(synthSeries(abTime(2.5, 40), 0, 1))
	if err != nil {
		t.Fatal(err)
	}
	s := f.Segments[0]
	if len(f.Segments) != 1 || !withinRel(s.AlphaUs, 2.5, 1e-9) || !withinRel(s.BetaGBs, 40, 1e-9) || f.MaxRelErr > 1e-9 || f.R2 < 1-1e-12 {
		t.Errorf("fit %+v", f)
	}
}

func TestFitFindsTheCacheKnee(t *testing.T) {
	knee := func(b float64) float64 {
		if b >= 4<<20 {
			return abTime(5, 4)(b)
		}
		return abTime(5, 10)(b)
	}
	for seed := uint64(1); seed <= 5; seed++ {
		f, err := FitSeries(synthSeries(knee, 0.03, seed))
		if err != nil {
			t.Fatal(err)
		}
		if len(f.Segments) != 2 || f.Break() != 4<<20 {
			t.Fatalf("seed %d: segments %+v, want two with the break at 4 MiB", seed, f.Segments)
		}
		if b := f.Segments[0].BetaGBs; !withinRel(b, 10, 0.05) {
			t.Errorf("seed %d: first beta %.3f GB/s, want 10", seed, b)
		}
		if b := f.Segments[1].BetaGBs; !withinRel(b, 4, 0.05) {
			t.Errorf("seed %d: second beta %.3f GB/s, want 4", seed, b)
		}
		if f.Flagged {
			t.Errorf("seed %d: flagged with max error %.3f", seed, f.MaxRelErr)
		}
	}
}

// A continuous knee (the slow line takes over where the fast one ends)
// has a negative intercept; the second segment is allowed one.
func TestFitContinuousKnee(t *testing.T) {
	const at = 1 << 20
	knee := func(b float64) float64 {
		if b >= at {
			return abTime(5, 10)(at) + (b-at)/(2*1e3)
		}
		return abTime(5, 10)(b)
	}
	f, err := FitSeries(synthSeries(knee, 0.01, 7))
	if err != nil {
		t.Fatal(err)
	}
	if len(f.Segments) != 2 || !withinRel(f.Segments[1].BetaGBs, 2, 0.05) || f.Segments[1].AlphaUs >= 0 {
		t.Fatalf("segments %+v", f.Segments)
	}
	// The break lies at one of the sizes around the knee.
	if b := f.Break(); b < at/2 || b > 2*at {
		t.Errorf("break %d, want about %d", b, at)
	}
}

func TestFitIgnoresAnOutlier(t *testing.T) {
	for seed := uint64(1); seed <= 5; seed++ {
		clean := synthSeries(abTime(5, 10), 0.03, seed)
		noisy := synthSeries(abTime(5, 10), 0.03, seed)
		noisy.Samples[0].Us *= 3 // the 8 B point
		fc, err := FitSeries(clean)
		if err != nil {
			t.Fatal(err)
		}
		fn, err := FitSeries(noisy)
		if err != nil {
			t.Fatal(err)
		}
		if len(fn.Segments) != 1 {
			t.Fatalf("seed %d: the outlier made %d segments: %+v", seed, len(fn.Segments), fn.Segments)
		}
		if !withinRel(fn.Segments[0].BetaGBs, fc.Segments[0].BetaGBs, 0.02) {
			t.Errorf("seed %d: beta %.3f with the outlier, %.3f without", seed, fn.Segments[0].BetaGBs, fc.Segments[0].BetaGBs)
		}
		if !withinRel(fn.Segments[0].AlphaUs, 5, 0.10) {
			t.Errorf("seed %d: alpha %.3f with the outlier", seed, fn.Segments[0].AlphaUs)
		}
		if !fn.Flagged || !withinRel(fn.MaxRelErr, 2.0/3, 0.1) {
			t.Errorf("seed %d: the outlier's error %.3f is not reported (flagged %v)", seed, fn.MaxRelErr, fn.Flagged)
		}
	}
}

func TestFitConstraints(t *testing.T) {
	flat := Series{Key: fitTestKey}
	for i, b := range []int64{8, 16, 32, 64, 128} {
		flat.Samples = append(flat.Samples, Sample{Bytes: b, Us: 10 - 0.1*float64(i)}) // time falls with size
	}
	f, err := FitSeries(flat)
	if err != nil {
		t.Fatal(err)
	}
	if s := f.Segments[0]; s.BetaGBs != MaxBetaGBs || !withinRel(s.AlphaUs, 9.8, 0.02) {
		t.Errorf("flat series: %+v, want beta capped at %g and alpha about 9.8", s, MaxBetaGBs)
	}
	// Pure bandwidth with a little excess time at the small end would
	// give a negative alpha unconstrained.
	bw := Series{Key: fitTestKey}
	for _, b := range []int64{1 << 20, 2 << 20, 4 << 20, 8 << 20} {
		bw.Samples = append(bw.Samples, Sample{Bytes: b, Us: float64(b)/1e4 - 20})
	}
	f, err = FitSeries(bw)
	if err != nil {
		t.Fatal(err)
	}
	if s := f.Segments[0]; s.AlphaUs != 0 || s.BetaGBs <= 0 {
		t.Errorf("negative-intercept series: %+v, want alpha 0", s)
	}
}

func TestFitErrors(t *testing.T) {
	for name, s := range map[string]Series{
		"empty":      {Key: fitTestKey},
		"one size":   {Key: fitTestKey, Samples: []Sample{{Bytes: 8, Us: 3}}},
		"same size":  {Key: fitTestKey, Samples: []Sample{{Bytes: 8, Us: 3}, {Bytes: 8, Us: 4}}},
		"zero time":  {Key: fitTestKey, Samples: []Sample{{Bytes: 8, Us: 0}, {Bytes: 16, Us: 4}}},
		"unsorted":   {Key: fitTestKey, Samples: []Sample{{Bytes: 16, Us: 3}, {Bytes: 8, Us: 4}}},
		"NaN median": {Key: fitTestKey, Samples: []Sample{{Bytes: 8, Us: math.NaN()}, {Bytes: 16, Us: 4}}},
	} {
		_, err := FitSeries(s)
		if err == nil {
			t.Errorf("%s: no error", name)
			continue
		}
		if want := "allreduce 4 ranks/1 hosts Ring/Simple/2ch"; !strings.Contains(err.Error(), want) {
			t.Errorf("%s: error %q does not name %q", name, err, want)
		}
	}
	if _, err := FitSeries(Series{Key: fitTestKey, Samples: []Sample{{Bytes: 8, Us: 3}}}); !errors.Is(err, ErrTooFewSizes) {
		t.Errorf("one size: %v, want ErrTooFewSizes", err)
	}
	fits, errs := FitAll([]Series{{Key: fitTestKey}, synthSeries(abTime(5, 10), 0, 1)})
	if len(fits) != 1 || len(errs) != 1 {
		t.Errorf("FitAll: %d fits, %d errors, want 1 and 1", len(fits), len(errs))
	}
}

// The nccl-tests fixtures are real NCCL 2.28 on 2x H200, NCCL's default
// configuration (one series each).
func TestFitNCCLFixtures(t *testing.T) {
	for _, tc := range []struct {
		file           string
		coll           string
		minBeta        float64 // GB/s, algorithm bandwidth
		maxBeta        float64
		maxMedianError float64
	}{
		{"h200x2_all_reduce_perf.txt", "allreduce", 150, 600, 0.20},
		{"h200x2_all_reduce_simple.txt", "allreduce", 150, 600, 0.20},
		{"h200x2_sendrecv_perf.txt", "sendrecv", 100, 1000, 0.20},
	} {
		path := "testdata/nccl-tests/" + tc.file
		recs, err := results.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		for i := range recs {
			recs[i].Algorithm, recs[i].Protocol = "auto", "auto" // the tag: NCCL's default
		}
		series := Collect(recs)
		if len(series) != 1 {
			t.Fatalf("%s: %d series, want 1", tc.file, len(series))
		}
		k := series[0].Key
		if k.Coll != tc.coll || k.NRanks != 2 || !k.Auto() {
			t.Errorf("%s: key %+v", tc.file, k)
		}
		f, err := FitSeries(series[0])
		if err != nil {
			t.Fatal(err)
		}
		last := f.Segments[len(f.Segments)-1]
		if last.BetaGBs < tc.minBeta || last.BetaGBs > tc.maxBeta || f.MedianRelErr >= tc.maxMedianError {
			t.Errorf("%s: %+v median error %.3f", tc.file, f.Segments, f.MedianRelErr)
		}
		if a := f.Segments[0].AlphaUs; a < 5 || a > 30 {
			t.Errorf("%s: latency %.1f us, want the ~13-17 us of the smallest sizes", tc.file, a)
		}
		t.Logf("%s: %d points, segments %+v, R2 %.4f, median %.1f%%, max %.1f%%", tc.file, f.Points, f.Segments, f.R2, 100*f.MedianRelErr, 100*f.MaxRelErr)
	}
}
