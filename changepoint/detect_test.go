package changepoint

import (
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
)

// TestCurveMatchesDefinition: curve's prefix-sum Q equals the statistic
// computed from its definition, at every split.
func TestCurveMatchesDefinition(t *testing.T) {
	x := gauss(1, 23, 10, 0.3)
	x[15] = 40 // something to find
	direct := func(tau int) float64 {
		l, r := x[:tau], x[tau:]
		var between, wl, wr float64
		for _, a := range l {
			for _, b := range r {
				between += math.Abs(a - b)
			}
		}
		for i := range l {
			for j := i + 1; j < len(l); j++ {
				wl += math.Abs(l[i] - l[j])
			}
		}
		for i := range r {
			for j := i + 1; j < len(r); j++ {
				wr += math.Abs(r[i] - r[j])
			}
		}
		m, k := float64(len(l)), float64(len(r))
		return m * k / (m + k) * (2*between/(m*k) - wl/(m*(m-1)/2) - wr/(k*(k-1)/2))
	}
	var s scratch
	for _, minSize := range []int{2, 3, 5} {
		bestQ, bestTau := math.Inf(-1), -1
		for tau := minSize; tau <= len(x)-minSize; tau++ {
			want := direct(tau)
			_, _, got := s.curve(x, minSize, tau)
			if math.Abs(got-want) > 1e-9*math.Abs(want)+1e-12 {
				t.Errorf("minSize %d: Q(%d) = %v, want %v", minSize, tau, got, want)
			}
			if want > bestQ {
				bestQ, bestTau = want, tau
			}
		}
		tau, q, _ := s.curve(x, minSize, -1)
		if tau != bestTau || math.Abs(q-bestQ) > 1e-9*bestQ {
			t.Errorf("minSize %d: best split %d (Q %v), want %d (Q %v)", minSize, tau, q, bestTau, bestQ)
		}
	}
}

// TestPermTestUniform: on series with no change, the permutation p-value is
// roughly uniform (a loose check of its calibration: each decile holds a
// plausible share of 300 series).
func TestPermTestUniform(t *testing.T) {
	var s scratch
	const series, perms = 300, 199
	var deciles [10]int
	for i := range series {
		x := gauss(uint64(100+i), 40, 50, 0.1)
		_, q, _ := s.curve(x, 3, -1)
		p := s.permTest(x, q, 3, perms, 1)
		if p <= 0 || p > 1 {
			t.Fatalf("series %d: p-value %v outside (0, 1]", i, p)
		}
		deciles[min(int(p*10), 9)]++
	}
	for d, c := range deciles {
		// 30 expected; a binomial(300, 0.1) lies in [12, 50] with
		// probability above 0.9999.
		if c < 12 || c > 50 {
			t.Errorf("p-values in [%.1f, %.1f): %d of %d, want about %d (all deciles: %v)", float64(d)/10, float64(d+1)/10, c, series, series/10, deciles)
		}
	}
}

// TestPermTestEarlyStop: a stretch with no change stops long before its
// permutations run out, and its p-value is still above alpha; a clear step
// runs them all and reaches the smallest p-value.
func TestPermTestEarlyStop(t *testing.T) {
	var s scratch
	x := gauss(3, 50, 100, 0.05)
	_, q, _ := s.curve(x, 3, -1)
	if p := s.permTest(x, q, 3, 1999, 0.001); p <= 0.001 {
		t.Errorf("no change: p = %v, want above 0.001", p)
	}
	y := steps(4, 0.01, []int{30, 20}, []float64{100, 120})
	_, q, _ = s.curve(y, 3, -1)
	if p := s.permTest(y, q, 3, 1999, 0.001); p != 1.0/2000 {
		t.Errorf("clear step: p = %v, want 1/2000", p)
	}
}

func TestNoChangeOnNoise(t *testing.T) {
	for seed := uint64(0); seed < 20; seed++ {
		x := gauss(seed, 200, 100, 0.05)
		if cps := mustDetect(t, x, Options{}); len(cps) != 0 {
			t.Errorf("seed %d: %d change points in pure noise: %+v", seed, len(cps), cps)
		}
	}
}

func TestCleanStep(t *testing.T) {
	for _, at := range []int{3, 10, 25, 40, 47} {
		x := make([]float64, 50)
		for i := range x {
			x[i] = 100
			if i >= at {
				x[i] = 110
			}
		}
		cps := mustDetect(t, x, Options{})
		if len(cps) != 1 || cps[0].Index != at {
			t.Fatalf("step at %d: got %v", at, indexes(cps))
		}
		c := cps[0]
		if c.Before != 100 || c.After != 110 || math.Abs(c.Change-0.1) > 1e-12 || c.PValue > 0.001 {
			t.Errorf("step at %d: %+v, want before 100, after 110, change +10%%, p <= 0.001", at, c)
		}
	}
}

func TestNoisyStepAtIndex(t *testing.T) {
	for seed := uint64(0); seed < 10; seed++ {
		x := steps(seed, 0.01, []int{60, 40}, []float64{100, 90})
		cps := mustDetect(t, x, Options{})
		if len(cps) != 1 || cps[0].Index != 60 {
			t.Fatalf("seed %d: got %v, want [60]", seed, indexes(cps))
		}
		if c := cps[0]; math.Abs(c.Change+0.1) > 0.01 || !c.Regression(true) || c.Regression(false) {
			t.Errorf("seed %d: %+v: want a change near -10%%, a regression for a bandwidth", seed, c)
		}
	}
}

func TestTwoSteps(t *testing.T) {
	x := steps(5, 0.01, []int{40, 30, 50}, []float64{100, 108, 95})
	cps := mustDetect(t, x, Options{})
	if got := indexes(cps); !slices.Equal(got, []int{40, 70}) {
		t.Fatalf("got %v, want [40 70]", got)
	}
	if cps[0].Change < 0.07 || cps[1].Change > -0.1 {
		t.Errorf("changes %v, %v: want about +8%% then -12%%", cps[0].Change, cps[1].Change)
	}
}

// TestNewStepAfterLongHistory: 300 stable runs do not drown a step among the
// newest 5 (the windows).
func TestNewStepAfterLongHistory(t *testing.T) {
	x := steps(6, 0.01, []int{300, 5}, []float64{100, 106})
	cps := mustDetect(t, x, Options{})
	if got := indexes(cps); !slices.Equal(got, []int{300}) {
		t.Fatalf("got %v, want [300]", got)
	}
	if r := Regressions(cps, len(x), 5, false); len(r) != 1 {
		t.Errorf("Regressions(newest 5, time): %v, want the step at 300", r)
	}
}

// TestOutliersAreNotSteps: one or two wild runs, at the end or inside, are
// not change points (MinSize 3).
func TestOutliersAreNotSteps(t *testing.T) {
	x := gauss(7, 80, 100, 0.01)
	x[30] = 200
	x[79] = 180
	x[78] = 170
	if cps := mustDetect(t, x, Options{}); len(cps) != 0 {
		t.Errorf("outliers: got %+v, want none", cps)
	}
}

func TestConstantAndShort(t *testing.T) {
	for name, x := range map[string][]float64{
		"empty":    nil,
		"one":      {5},
		"five":     {1, 1, 1, 9, 9},
		"constant": slices.Repeat([]float64{3.5}, 100),
	} {
		cps, err := Detect(x, Options{})
		if err != nil || len(cps) != 0 {
			t.Errorf("%s: %v, %v; want no change points and no error", name, cps, err)
		}
	}
}

func TestBadValues(t *testing.T) {
	for name, bad := range map[string]float64{"NaN": math.NaN(), "+Inf": math.Inf(1), "-Inf": math.Inf(-1), "zero": 0, "negative": -1} {
		x := gauss(8, 30, 100, 0.01)
		x[17] = bad
		_, err := Detect(x, Options{})
		if err == nil || !strings.Contains(err.Error(), "value 17 of 30") {
			t.Errorf("%s: err = %v, want one naming value 17 of 30", name, err)
		}
		if _, err := EstimateNoise(x, nil); err == nil {
			t.Errorf("EstimateNoise with %s: no error", name)
		}
	}
}

func TestBadOptions(t *testing.T) {
	x := gauss(9, 30, 100, 0.01)
	for _, c := range []struct {
		o    Options
		want string
	}{
		{Options{PValue: -0.1}, "p-value"},
		{Options{PValue: 1.5}, "p-value"},
		{Options{PValue: math.NaN()}, "p-value"},
		{Options{MinSize: 1}, "minimum segment size"},
		{Options{Window: 5}, "window 5"},
		{Options{Permutations: -3}, "permutations"},
		{Options{Permutations: 99}, "want at least 999"},
		{Options{PValue: 0.05, Permutations: 10}, "want at least 19"},
		{Options{MinChange: -0.1}, "minimum change"},
		{Options{MinChange: math.Inf(1)}, "minimum change"},
	} {
		_, err := Detect(x, c.o)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: err = %v, want one saying %q", c.o, err, c.want)
		}
	}
}

// TestMinChange: a significant 3% step survives MinChange 0.02, not 0.05.
func TestMinChange(t *testing.T) {
	x := steps(10, 0.002, []int{40, 40}, []float64{100, 103})
	if got := indexes(mustDetect(t, x, Options{MinChange: 0.02})); !slices.Equal(got, []int{40}) {
		t.Errorf("MinChange 2%%: got %v, want [40]", got)
	}
	if got := mustDetect(t, x, Options{MinChange: 0.05}); len(got) != 0 {
		t.Errorf("MinChange 5%%: got %v, want none", got)
	}
}

// TestDeterministic: one series, one answer, however often it is asked, and
// whatever came before in the process.
func TestDeterministic(t *testing.T) {
	x := steps(11, 0.04, []int{70, 30}, []float64{100, 104})
	first := mustDetect(t, x, Options{})
	mustDetect(t, gauss(12, 100, 1, 0.2), Options{})
	for range 3 {
		if again := mustDetect(t, x, Options{}); !slices.Equal(again, first) {
			t.Fatalf("second answer %+v differs from the first %+v", again, first)
		}
	}
}

// TestInvariants: on random series with random steps, every change point
// leaves MinSize points each side, the indexes increase, the p-values are at
// most PValue and Change is After/Before - 1.
func TestInvariants(t *testing.T) {
	rng := rand.New(rand.NewPCG(13, 13))
	for i := range 40 {
		n := 10 + rng.IntN(200)
		x := gauss(uint64(200+i), n, 100, 0.05*rng.Float64())
		for range rng.IntN(4) {
			at, f := rng.IntN(n), 0.8+0.4*rng.Float64()
			for j := at; j < n; j++ {
				x[j] *= f
			}
		}
		o := Options{MinSize: 2 + rng.IntN(4)}
		cps := mustDetect(t, x, o)
		last := 0
		for _, c := range cps {
			if c.Index-last < o.MinSize || n-c.Index < o.MinSize {
				t.Errorf("series %d (n %d): change point at %d leaves fewer than %d points (previous %d)", i, n, c.Index, o.MinSize, last)
			}
			if c.PValue > DefaultPValue || math.Abs(c.Change-(c.After/c.Before-1)) > 1e-12 {
				t.Errorf("series %d: %+v", i, c)
			}
			last = c.Index
		}
	}
}

func TestRegressions(t *testing.T) {
	cps := []ChangePoint{{Index: 10, Change: -0.1}, {Index: 50, Change: 0.2}, {Index: 95, Change: -0.05}, {Index: 97, Change: 0.07}}
	cases := []struct {
		newest int
		higher bool
		want   []int
	}{
		{5, true, []int{95}},
		{5, false, []int{97}},
		{3, true, nil},
		{60, false, []int{50, 97}},
		{100, true, []int{10, 95}},
	}
	for _, c := range cases {
		if got := indexes(Regressions(cps, 100, c.newest, c.higher)); !slices.Equal(got, c.want) {
			t.Errorf("newest %d, higher is better %v: %v, want %v", c.newest, c.higher, got, c.want)
		}
	}
}

func TestEstimateNoise(t *testing.T) {
	x := steps(14, 0.02, []int{100, 100}, []float64{100, 80})
	cps := mustDetect(t, x, Options{})
	if got := indexes(cps); !slices.Equal(got, []int{100}) {
		t.Fatalf("change points %v, want [100]", got)
	}
	n, err := EstimateNoise(x, cps)
	if err != nil {
		t.Fatal(err)
	}
	if n.Rel < 0.016 || n.Rel > 0.024 || math.Abs(n.Level-80) > 1 || n.N != 200 {
		t.Errorf("noise %+v: want Rel about 0.02, Level about 80, N 200", n)
	}
	// Without its change point the step counts as noise.
	if whole, _ := EstimateNoise(x, nil); whole.Rel < 3*n.Rel {
		t.Errorf("noise ignoring the step %+v: want far above %v", whole, n.Rel)
	}
	if z := n.Z(80*1.1, false); math.Abs(z-5) > 1.5 {
		t.Errorf("a time 10%% above the level: z = %v, want about 5", z)
	}
	if z := n.Z(80*1.1, true); z > -3 {
		t.Errorf("a bandwidth 10%% above the level: z = %v, want an improvement (negative)", z)
	}
	flat := Noise{Level: 10}
	if z := flat.Z(11, false); !math.IsInf(z, 1) {
		t.Errorf("no spread, slower: z = %v, want +Inf", z)
	}
	if z := flat.Z(10, false); z != 0 {
		t.Errorf("no spread, equal: z = %v, want 0", z)
	}
}

func TestEstimateNoiseErrors(t *testing.T) {
	x := gauss(15, 20, 100, 0.01)
	for _, c := range []struct {
		x   []float64
		cps []ChangePoint
	}{
		{x[:2], nil},
		{x, []ChangePoint{{Index: 0}}},
		{x, []ChangePoint{{Index: 20}}},
		{x, []ChangePoint{{Index: 10}, {Index: 5}}},
		{x, []ChangePoint{{Index: 10}, {Index: 10}}},
	} {
		if _, err := EstimateNoise(c.x, c.cps); err == nil {
			t.Errorf("EstimateNoise(%d values, %v): no error", len(c.x), indexes(c.cps))
		}
	}
}

func FuzzDetect(f *testing.F) {
	f.Add([]byte{1, 2, 3, 4, 5, 6, 7, 8, 9}, uint8(3))
	f.Add([]byte{9, 9, 9, 9, 9, 1, 1, 1, 1, 1, 1}, uint8(2))
	f.Fuzz(func(t *testing.T, b []byte, minSize uint8) {
		x := make([]float64, len(b))
		for i, v := range b {
			x[i] = float64(v) + 1
		}
		o := Options{MinSize: 2 + int(minSize%5), Permutations: 999}
		cps, err := Detect(x, o)
		if err != nil {
			t.Fatal(err)
		}
		last := 0
		for _, c := range cps {
			if c.Index-last < o.MinSize || len(x)-c.Index < o.MinSize || c.PValue > DefaultPValue {
				t.Fatalf("%v: bad change point %+v", x, c)
			}
			last = c.Index
		}
	})
}

// TestMachineFactors: five keys, the machine 3x slower in runs 10-19 and
// one key 20% slower from run 30 on its own: the factors follow the
// machine, and the normalised series keep the key's own step only.
func TestMachineFactors(t *testing.T) {
	const runs = 40
	series := make([][]float64, 5)
	for k := range series {
		series[k] = gauss(uint64(30+k), runs, float64(10*(k+1)), 0.01)
		for r := 10; r < 20; r++ {
			series[k][r] *= 3
		}
	}
	for r := 30; r < runs; r++ {
		series[2][r] *= 1.2
	}
	series[4][5] = math.NaN() // key 4 missed run 5
	g, err := MachineFactors(series)
	if err != nil {
		t.Fatal(err)
	}
	for r, f := range g {
		want := 1.0
		if r >= 10 && r < 20 {
			want = 3
		}
		if math.Abs(f/want-1) > 0.03 {
			t.Errorf("run %d: factor %v, want about %v", r, f, want)
		}
	}
	for k, s := range series {
		n := make([]float64, 0, runs)
		for r, v := range s {
			if !math.IsNaN(v) {
				n = append(n, v/g[r])
			}
		}
		want := []int{}
		if k == 2 {
			want = []int{30}
		}
		if got := indexes(mustDetect(t, n, Options{})); !slices.Equal(got, want) {
			t.Errorf("key %d normalised: change points %v, want %v", k, got, want)
		}
	}
}

func TestMachineFactorsErrors(t *testing.T) {
	ok := func() [][]float64 { return [][]float64{{1, 2}, {3, 4}, {5, 6}} }
	for name, c := range map[string]struct {
		series [][]float64
		want   string
	}{
		"two keys":     {[][]float64{{1}, {2}}, "at least 3"},
		"ragged":       {append(ok(), []float64{1}), "key 3 has 1 runs"},
		"zero":         {append(ok(), []float64{0, 1}), "key 3, run 0 is 0"},
		"infinite":     {append(ok(), []float64{1, math.Inf(1)}), "key 3, run 1 is +Inf"},
		"key missing":  {append(ok(), []float64{math.NaN(), math.NaN()}), "key 3 has no value"},
		"run missing":  {[][]float64{{1, math.NaN()}, {3, math.NaN()}, {5, math.NaN()}}, "run 1 has no value"},
		"negative key": {append(ok(), []float64{-1, 1}), "key 3, run 0 is -1"},
	} {
		if _, err := MachineFactors(c.series); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: err = %v, want one saying %q", name, err, c.want)
		}
	}
}

// TestStallDoesNotHideStep: a run stalled 20x (a rank descheduled) among
// the few runs after a step, and another in the history, do not hide the
// step (the stretch is clipped to 5 robust standard deviations).
func TestStallDoesNotHideStep(t *testing.T) {
	for seed := uint64(0); seed < 10; seed++ {
		x := steps(40+seed, 0.01, []int{50, 6}, []float64{100, 110})
		x[20] *= 20
		x[52] *= 20
		if got := indexes(mustDetect(t, x, Options{})); !slices.Equal(got, []int{50}) {
			t.Errorf("seed %d: change points %v, want [50]", seed, got)
		}
	}
}

// RunNoise: 0 for a constant series and for a clean step (the rolling
// median follows it); the mean deviation of normal noise (0.8 of its
// spread); a series flipping between two quantised values is not quiet
// (a median of deviations would call it 0); a stall counts at most the cap.
func TestRunNoise(t *testing.T) {
	step := make([]float64, 60)
	for i := range step {
		step[i] = 1 + float64(i/30)
	}
	flip := make([]float64, 60)
	for i := range flip {
		flip[i] = 0.11 + 0.01*float64(i%2)
	}
	rng := rand.New(rand.NewPCG(1, 2))
	normal := make([]float64, 4000)
	for i := range normal {
		normal[i] = 1 + 0.02*rng.NormFloat64()
	}
	stall := slices.Repeat([]float64{1}, 40)
	stall[20] = 20
	for _, c := range []struct {
		name   string
		v      []float64
		lo, hi float64
	}{
		{"constant", slices.Repeat([]float64{3}, 20), 0, 0},
		{"clean step", step, 0, 0},
		{"normal 2%", normal, 0.014, 0.017}, // 0.02 x sqrt(2/pi), less the rolling median's own error
		{"flip", flip, 0.05, 0.1},
		{"one stall", stall, noiseCap / 40, noiseCap / 40},
	} {
		got, err := RunNoise(c.v)
		if err != nil || got < c.lo-1e-12 || got > c.hi+1e-12 {
			t.Errorf("%s: RunNoise %v (%v), want %v..%v", c.name, got, err, c.lo, c.hi)
		}
	}
	for _, bad := range [][]float64{{1, 2}, {1, 0, 2}, {1, math.NaN(), 1}} {
		if _, err := RunNoise(bad); err == nil {
			t.Errorf("RunNoise(%v): no error", bad)
		}
	}
}
