package changepoint

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
)

// The targets, measured: steps injected into series bootstrapped from
// real run-to-run noise (testdata/noise.json, README.md there says how it was
// made), and a real history with a slowdown injected (testdata/replay.json).

type noiseDoc struct {
	Note string     `json:"note"`
	Sets []noiseSet `json:"sets"`
}

// A noiseSet is one set of runs of one binary: per run its copy bandwidth,
// per key the runs' median and minimum times.
type noiseSet struct {
	Name   string        `json:"name"`
	Runs   int           `json:"runs"`
	Ref    []float64     `json:"ref_copy_gbps"`
	Series []noiseSeries `json:"series"`
}

type noiseSeries struct {
	Key      string    `json:"key"`
	MedianUs []float64 `json:"median_us"`
	MinUs    []float64 `json:"min_us"`
	P5Us     []float64 `json:"p5_us,omitempty"` // absent in sets made before it was kept
}

func loadNoise(t testing.TB, path string) noiseDoc {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var d noiseDoc
	if err := json.Unmarshal(b, &d); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	if len(d.Sets) == 0 {
		t.Fatalf("%s: no sets of runs", path)
	}
	for _, s := range d.Sets {
		for _, k := range s.Series {
			if len(k.MedianUs) != s.Runs || len(k.MinUs) != s.Runs || len(s.Ref) != s.Runs || (k.P5Us != nil && len(k.P5Us) != s.Runs) {
				t.Fatalf("%s: set %s key %s: want %d runs everywhere", path, s.Name, k.Key, s.Runs)
			}
		}
	}
	return d
}

// A pipeline turns a set's runs into the series Detect sees, one per key.
type pipeline struct {
	name   string
	series func(s noiseSet) ([][]float64, error)
}

// asMeasured: each key's median times, as the gate compares them;
// machineNormalised: the same over each run's MachineFactors; fastest and
// low, each key's fastest iterations and 5th percentiles, machine-
// normalised or not; and auto, per key whichever of the median, the 5th
// percentile and the fastest series has the least RunNoise (tune history
// changes --stat auto).
var (
	asMeasured        = pipeline{"median time", column(func(k noiseSeries) []float64 { return k.MedianUs })}
	machineNormalised = pipeline{"median time / machine factor", machineOf(asMeasured)}
	fastest           = pipeline{"fastest iteration", column(func(k noiseSeries) []float64 { return k.MinUs })}
	fastestMachine    = pipeline{"fastest iteration / machine factor", machineOf(fastest)}
	low               = pipeline{"5th percentile", column(func(k noiseSeries) []float64 { return k.P5Us })}
	lowMachine        = pipeline{"5th percentile / machine factor", machineOf(low)}
	autoStat          = pipeline{"auto: median, p5 or min", autoOf(asMeasured, low, fastest)}
	autoStatMachine   = pipeline{"auto: median, p5 or min, each / machine factor", autoOf(machineNormalised, lowMachine, fastestMachine)}
)

// column is every key's series of one value.
func column(get func(noiseSeries) []float64) func(noiseSet) ([][]float64, error) {
	return func(s noiseSet) ([][]float64, error) {
		out := make([][]float64, len(s.Series))
		for i, k := range s.Series {
			out[i] = get(k)
		}
		return out, nil
	}
}

// machineOf divides p's series by each run's MachineFactors.
func machineOf(p pipeline) func(noiseSet) ([][]float64, error) {
	return func(s noiseSet) ([][]float64, error) {
		raw, err := p.series(s)
		if err != nil {
			return nil, err
		}
		g, err := MachineFactors(raw)
		if err != nil {
			return nil, err
		}
		out := make([][]float64, len(raw))
		for i, v := range raw {
			out[i] = make([]float64, len(v))
			for r := range v {
				out[i][r] = v[r] / g[r]
			}
		}
		return out, nil
	}
}

// autoOf takes, per key, the series of the pipeline with the least
// RunNoise (the first on a tie); a pipeline with no series for a set (a
// value the set did not keep) is passed over.
func autoOf(ps ...pipeline) func(noiseSet) ([][]float64, error) {
	return func(s noiseSet) ([][]float64, error) {
		var out [][]float64
		var best []float64
		for _, p := range ps {
			series, err := p.series(s)
			if err != nil {
				if out == nil {
					return nil, err
				}
				continue // e.g. machine factors of a value the set lacks
			}
			if out == nil {
				out, best = make([][]float64, len(series)), make([]float64, len(series))
			}
			for i, v := range series {
				if len(v) == 0 {
					continue
				}
				n, err := RunNoise(v)
				if err != nil {
					return nil, err
				}
				if out[i] == nil || n < best[i] {
					out[i], best[i] = v, n
				}
			}
		}
		return out, nil
	}
}

// factors are a series' runs relative to the median of the rollWidth runs
// around each: the run-to-run noise, as factors. The rolling median takes
// out the shared machine's swings (other jobs coming and going for
// minutes), which are changes of level, not noise; what stays is how one run
// differs from its neighbours, stalls and all.
func factors(v []float64) []float64 {
	out := make([]float64, len(v))
	for i, x := range v {
		lo := max(0, min(i-rollWidth/2, len(v)-rollWidth))
		out[i] = x / median(v[lo:min(len(v), lo+rollWidth)])
	}
	return out
}

const rollWidth = 11

// bootstrapBlock is the moving-block bootstrap's block length: runs next to
// each other are alike, and blocks keep that.
const bootstrapBlock = 5

// bootstrap draws n noise factors from f: blocks of bootstrapBlock
// consecutive runs starting at random places, end to end.
func bootstrap(rng *rand.Rand, f []float64, n int) []float64 {
	out := make([]float64, 0, n+bootstrapBlock)
	for len(out) < n {
		at := rng.IntN(len(f) - bootstrapBlock + 1)
		out = append(out, f[at:at+bootstrapBlock]...)
	}
	return out[:n]
}

// gaussian draws n factors of normal noise of relative spread sd.
func gaussian(sd float64) func(rng *rand.Rand, n int) []float64 {
	return func(rng *rand.Rand, n int) []float64 {
		out := make([]float64, n)
		for i := range out {
			out[i] = 1 + sd*rng.NormFloat64()
		}
		return out
	}
}

// Detection: history runs, then a step, then runs after it; Detect on the
// series up to d runs after the step (d in delays) must put a change point
// at the step, give or take slack.
const (
	history = 60
	slack   = 2
)

// delays: how many runs after the step Detect sees; the target is 5.
var delays = []int{5, 10, 20}

// stepSizes are the issue's.
var stepSizes = []float64{0.03, 0.05, 0.10}

type keyEval struct {
	key    string
	noise  float64 // the robust relative spread of its noise
	trials int
	found  map[float64][]int // per step size, per delay: series where the step was found
	// stray: change points away from the step in the detections at the
	// first delay.
	stray int
	// nullRuns runs of no step: change points Detect finds in the whole
	// series (static), and distinct ones it reports as the series grows
	// run by run (streaming: what CI sees).
	nullRuns, falseStatic, falseStream int
}

// evalKey measures detection on trials series of draw's noise per step size
// (half of them slowdowns, half speedups), and false alarms on one series of
// nullRuns runs with no step.
func evalKey(key string, draw func(*rand.Rand, int) []float64, trials, nullRuns int, seed uint64) keyEval {
	rng := rand.New(rand.NewPCG(seed, 99))
	e := keyEval{key: key, trials: trials, found: map[float64][]int{}, nullRuns: nullRuns}
	e.noise = madScale * median(absDev(draw(rng, 1000)))
	last := delays[len(delays)-1]
	for _, size := range stepSizes {
		e.found[size] = make([]int, len(delays))
		for i := range trials {
			x := draw(rng, history+last)
			step := 1 + size
			if i%2 == 1 {
				step = 1 - size
			}
			for j := history; j < len(x); j++ {
				x[j] *= step
			}
			for di, d := range delays {
				hit, stray := found(x[:history+d])
				if hit {
					e.found[size][di]++
				}
				if di == 0 {
					e.stray += stray
				}
			}
		}
	}
	x := draw(rng, nullRuns)
	cps, err := Detect(x, Options{})
	if err != nil {
		panic(err)
	}
	e.falseStatic = len(cps)
	e.falseStream = streamAlarms(x)
	return e
}

func absDev(f []float64) []float64 {
	out := make([]float64, len(f))
	for i, x := range f {
		out[i] = max(x-1, 1-x)
	}
	return out
}

// found runs Detect on x, whose step is at history: whether it found it,
// and how many change points it put elsewhere.
func found(x []float64) (hit bool, stray int) {
	cps, err := Detect(x, Options{})
	if err != nil {
		panic(err)
	}
	for _, c := range cps {
		if abs(c.Index-history) <= slack {
			hit = true
		} else {
			stray++
		}
	}
	return hit, stray
}

// streamAlarms replays a series run by run as CI would: after each run,
// Detect on the newest 2 windows' runs; every change point it ever reports
// counts once (one within MinSize of an earlier one is that one).
func streamAlarms(x []float64) int {
	var raised []int
	for n := 2 * DefaultMinSize; n <= len(x); n++ {
		lo := max(0, n-2*DefaultWindow)
		cps, err := Detect(x[lo:n], Options{})
		if err != nil {
			panic(err)
		}
		for _, c := range cps {
			at := lo + c.Index
			if !slices.ContainsFunc(raised, func(r int) bool { return abs(r-at) < DefaultMinSize }) {
				raised = append(raised, at)
			}
		}
	}
	return len(raised)
}

func abs(x int) int { return max(x, -x) }

// A source of noise to evaluate: a name and a draw.
type source struct {
	key  string
	draw func(*rand.Rand, int) []float64
}

// realSources are the keys of a noise set through a pipeline, each drawn by
// the block bootstrap of its factors.
func realSources(t *testing.T, s noiseSet, p pipeline) []source {
	series, err := p.series(s)
	if err != nil {
		t.Fatal(err)
	}
	var out []source
	for i, v := range series {
		f := factors(v)
		out = append(out, source{s.Name + " " + s.Series[i].Key, func(rng *rand.Rand, n int) []float64 { return bootstrap(rng, f, n) }})
	}
	return out
}

// evalAll runs evalKey on every source, on half the processors (at least
// one): go test runs other packages beside this one, and some of them time
// spinning ranks that a busy machine slows 100x.
func evalAll(srcs []source, trials, nullRuns int) []keyEval {
	// out[i] is written by the one worker that took i from next, and read
	// after wg.Wait.
	out := make([]keyEval, len(srcs))
	next := make(chan int)
	var wg sync.WaitGroup
	for range max(1, runtime.GOMAXPROCS(0)/2) {
		wg.Go(func() {
			for i := range next {
				out[i] = evalKey(srcs[i].key, srcs[i].draw, trials, nullRuns, uint64(i+1))
			}
		})
	}
	for i := range srcs {
		next <- i
	}
	close(next)
	wg.Wait()
	return out
}

// totals sums the evaluations of several keys.
func totals(es []keyEval) keyEval {
	tot := keyEval{key: "all", found: map[float64][]int{}}
	for _, e := range es {
		for s, f := range e.found {
			if tot.found[s] == nil {
				tot.found[s] = make([]int, len(f))
			}
			for i, n := range f {
				tot.found[s][i] += n
			}
		}
		tot.trials += e.trials
		tot.stray += e.stray
		tot.nullRuns += e.nullRuns
		tot.falseStatic += e.falseStatic
		tot.falseStream += e.falseStream
	}
	return tot
}

// rate is the share of series in which a step of size was found within
// delays[di] runs.
func (e keyEval) rate(size float64, di int) float64 {
	return float64(e.found[size][di]) / float64(e.trials)
}

// per1000 is false change points per 1000 runs of no step.
func per1000(n, runs int) float64 { return 1000 * float64(n) / float64(runs) }

// table renders the evaluation: a line a key, then the totals.
func table(title string, es []keyEval) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s: %% of %d series per key and step size where the step was found within %v runs; false change points\n", title, es[0].trials, delays)
	fmt.Fprintf(&b, "%-34s %6s", "key", "noise")
	for _, s := range stepSizes {
		fmt.Fprintf(&b, " %14s", fmt.Sprintf("%g%%", 100*s))
	}
	fmt.Fprintf(&b, " %6s %6s %6s\n", "stray", "static", "stream")
	tot := totals(es)
	for _, e := range append(es, tot) {
		fmt.Fprintf(&b, "%-34s", e.key)
		if e.key == "all" {
			fmt.Fprintf(&b, " %6s", "")
		} else {
			fmt.Fprintf(&b, " %5.1f%%", 100*e.noise)
		}
		for _, s := range stepSizes {
			var cells []string
			for di := range delays {
				cells = append(cells, fmt.Sprintf("%3.0f", 100*e.rate(s, di)))
			}
			fmt.Fprintf(&b, " %14s", strings.Join(cells, " "))
		}
		fmt.Fprintf(&b, " %6d %6d %6d\n", e.stray, e.falseStatic, e.falseStream)
	}
	fmt.Fprintf(&b, "false change points per 1000 runs of no step, per key: static %.2f, streaming %.2f (%d keys x %d runs)\n",
		per1000(tot.falseStatic, tot.nullRuns), per1000(tot.falseStream, tot.nullRuns), len(es), es[0].nullRuns)
	return b.String()
}

// skipLong skips the long evaluations under -short, and under the race
// detector, which makes them 10x slower and has little to check in them
// (the one shared thing, evalAll's results, is written by index before
// wg.Wait).
func skipLong(t *testing.T, what string) {
	t.Helper()
	switch {
	case testing.Short():
		t.Skip(what + " (-short)")
	case raceEnabled:
		t.Skip(what + " (too slow under -race; go test without -race runs it)")
	}
}

// TestTargetsRealNoise measures the targets on this project's own
// runs (the CI gate's sweep, 8 processes a run as CI adds them to a
// history) on two machines: the shared 2-vCPU VM and a 16-core Xeon host.
// It asserts what holds on both: at most 1 false change point per 1000
// runs per key, statically and streaming. The detection targets (5% steps
// within 5 runs in 95% of series, 10% always) need run-to-run noise of
// about 1%: on the Xeon, with --stat auto (median, 5th percentile or
// fastest iteration, per key) normalised by the machine factor, 10% steps
// are found within 5 runs in every series and 5% steps in 90%; on the VM
// less (logged). The floors asserted guard what was measured, about 10
// points below it, and that auto finds at least as much as the medians.
func TestTargetsRealNoise(t *testing.T) {
	skipLong(t, "replays bootstrapped real noise through Detect some 80000 times")
	d := loadNoise(t, "testdata/noise.json")
	type floor struct {
		p pipeline
		// found within 5 and within 20 runs, 5% and 10% steps, over all keys
		within5, within20 [2]float64
	}
	floors := map[string][]floor{
		"vm": {
			{asMeasured, [2]float64{0, 0}, [2]float64{0, 0.10}},
			{machineNormalised, [2]float64{0, 0.15}, [2]float64{0.10, 0.65}},
			{autoStat, [2]float64{0.20, 0.55}, [2]float64{0.60, 0.85}},
			{autoStatMachine, [2]float64{0.40, 0.80}, [2]float64{0.80, 0.90}},
		},
		"xeon16": {
			{asMeasured, [2]float64{0.20, 0.65}, [2]float64{0.60, 0.85}},
			{machineNormalised, [2]float64{0.60, 0.75}, [2]float64{0.70, 0.90}},
			{autoStat, [2]float64{0.30, 0.85}, [2]float64{0.80, 0.90}},
			// the 10% target: found within 5 runs in every series (100% measured)
			{autoStatMachine, [2]float64{0.80, 0.98}, [2]float64{0.90, 0.98}},
		},
	}
	for _, s := range d.Sets {
		fs, ok := floors[s.Name]
		if !ok {
			t.Fatalf("noise set %q: no floors for it", s.Name)
		}
		rate := map[string][2][2]float64{} // pipeline -> [within 5, within 20][5%, 10%]
		for _, f := range fs {
			es := evalAll(realSources(t, s, f.p), 60, 1000)
			t.Logf("\n%s, %s", s.Name, table(f.p.name, es))
			for _, e := range es {
				if e.falseStatic > 1 {
					t.Errorf("%s, %s, %s: %d false change points in %d runs with no step, want at most 1 per 1000", s.Name, f.p.name, e.key, e.falseStatic, e.nullRuns)
				}
			}
			tot := totals(es)
			if got := per1000(tot.falseStream, tot.nullRuns); got > 1.5 {
				t.Errorf("%s, %s: %.2f false change points per 1000 runs streaming, want at most 1.5", s.Name, f.p.name, got)
			}
			last := len(delays) - 1
			r := [2][2]float64{{tot.rate(0.05, 0), tot.rate(0.10, 0)}, {tot.rate(0.05, last), tot.rate(0.10, last)}}
			rate[f.p.name] = r
			for i, fl := range [2][2]float64{f.within5, f.within20} {
				if r[i][0] < fl[0] || r[i][1] < fl[1] {
					t.Errorf("%s, %s: steps found within %d runs: 5%% in %.0f%%, 10%% in %.0f%% of series; want at least %.0f%% and %.0f%%",
						s.Name, f.p.name, delays[i*last], 100*r[i][0], 100*r[i][1], 100*fl[0], 100*fl[1])
				}
			}
		}
		for _, pair := range [][2]pipeline{{asMeasured, autoStat}, {machineNormalised, autoStatMachine}} {
			med, auto := rate[pair[0].name], rate[pair[1].name]
			if auto[1][0] < med[1][0]-0.05 || auto[1][1] < med[1][1]-0.05 {
				t.Errorf("%s: %s finds 5%%/10%% steps within 20 runs in %.0f/%.0f%% of series, %s in %.0f/%.0f%%: auto should not find less",
					s.Name, pair[1].name, 100*auto[1][0], 100*auto[1][1], pair[0].name, 100*med[1][0], 100*med[1][1])
			}
		}
	}
}

// TestTargetsGaussian: where run-to-run noise is 1% (independent, normal),
// the targets hold: 5% steps found within 5 runs in at least 95% of
// series, 10% steps always, at most 1 false change point per 1000 runs per
// key, statically and streaming. At 2% they would not (logged).
func TestTargetsGaussian(t *testing.T) {
	skipLong(t, "runs Detect some 30000 times")
	for _, sd := range []float64{0.01, 0.02} {
		var srcs []source
		for k := range 4 {
			srcs = append(srcs, source{fmt.Sprintf("normal %g%% #%d", 100*sd, k), gaussian(sd)})
		}
		es := evalAll(srcs, 100, 1000)
		t.Logf("\n%s", table(fmt.Sprintf("normal noise, sd %g%%", 100*sd), es))
		if sd > 0.01 {
			continue
		}
		tot := totals(es)
		if r5, r10 := tot.rate(0.05, 0), tot.rate(0.10, 0); r5 < 0.95 || r10 < 1 {
			t.Errorf("sd %g: within 5 runs, 5%% steps found in %.1f%%, 10%% in %.1f%% of series; want at least 95%% and 100%%", sd, 100*r5, 100*r10)
		}
		for _, e := range es {
			if e.falseStatic > 1 || e.falseStream > 1 {
				t.Errorf("sd %g, %s: %d false change points in %d runs (streaming %d), want at most 1", sd, e.key, e.falseStatic, e.nullRuns, e.falseStream)
			}
		}
	}
}

// TestReplay: real histories of 45 runs of the CI sweep, the last 15 with
// GCCL_BUFFSIZE a sixteenth of its default. On the VM (one process a run,
// 2026-11-28) it slows Ring/Simple at 256 KiB and 2 MiB; the VM swung
// between two speeds 3x apart every few runs, so only a series normalised
// by the machine factor shows the change (run 30) in those keys and nothing
// else in any key; as measured it shows nothing. On the 16-core Xeon (8
// processes a run) it slows 2 MiB only (256 KiB runs another protocol
// there); as measured, and with --stat auto either way, the change is
// there and nothing else (the machine-normalised medians also flag a -3%
// change at 4 KiB).
func TestReplay(t *testing.T) {
	d := loadNoise(t, "testdata/replay.json")
	const slowFrom = 30
	cases := map[string]struct {
		affected map[string]float64 // key -> the least slowdown to see
		exact    []pipeline         // these find exactly the change
	}{
		"vm":     {map[string]float64{"allreduce 256K out-of-place": 0.2, "allreduce 2M out-of-place": 0.3}, []pipeline{machineNormalised, autoStatMachine}},
		"xeon16": {map[string]float64{"allreduce 2M out-of-place": 0.15}, []pipeline{asMeasured, autoStat, autoStatMachine}},
	}
	for _, s := range d.Sets {
		c, ok := cases[s.Name]
		if !ok {
			t.Fatalf("replay set %q: no expectations for it", s.Name)
		}
		for _, p := range []pipeline{asMeasured, machineNormalised, autoStat, autoStatMachine} {
			series, err := p.series(s)
			if err != nil {
				t.Fatal(err)
			}
			exact := slices.ContainsFunc(c.exact, func(e pipeline) bool { return e.name == p.name })
			for i, v := range series {
				key := s.Series[i].Key
				cps := mustDetect(t, v, Options{})
				t.Logf("%s, %s, %s: %+v", s.Name, p.name, key, cps)
				if !exact {
					continue
				}
				least, slowed := c.affected[key]
				switch {
				case slowed && (len(cps) != 1 || cps[0].Index != slowFrom || cps[0].Change < least):
					t.Errorf("%s, %s, %s: change points %+v, want one at run %d, at least %.0f%% slower", s.Name, p.name, key, cps, slowFrom, 100*least)
				case !slowed && len(cps) != 0:
					t.Errorf("%s, %s, %s: change points %+v, want none (the slowdown does not reach this key)", s.Name, p.name, key, cps)
				}
			}
		}
	}
}
