package ci

import (
	"errors"
	"strings"
	"testing"

	"github.com/gccl/gccl/results"
)

const (
	realRuns = "testdata/embedded_n5.jsonl"          // allreduce_perf -t 2 --precision 2% -N 5 on the 2-core CI machine, iterations thinned to 20
	realNCCL = "testdata/h200x2_all_reduce_perf.txt" // nccl-tests all_reduce_perf on 2 H200: one run, no repeats
	// realSweep is the project's committed tuning sweep: forced
	// configurations, one run each with 10-50 per-iteration samples.
	realSweep = "../docs/data/tuning/pass2_n2_per1.jsonl.gz"
)

func TestIdenticalSetsPass(t *testing.T) {
	for _, file := range []string{realRuns, realNCCL} {
		recs := read(t, file)
		for _, m := range []Metric{BusBW, Time} {
			opt := DefaultOptions()
			opt.Metric = m
			rep := mustCompare(t, recs, recs, opt)
			if !rep.Pass() || rep.ExitCode() != ExitPass {
				t.Errorf("%s %s: identical sets fail", file, m)
			}
			for _, c := range rep.Comparisons {
				if c.Verdict != Unchanged || c.Ratio != 1 {
					t.Errorf("%s %s: %s: verdict %s, ratio %v", file, m, c.Key, c.Verdict, c.Ratio)
				}
			}
			if len(rep.OnlyBaseline)+len(rep.OnlyCandidate) > 0 {
				t.Errorf("%s: keys on one side only: %v %v", file, rep.OnlyBaseline, rep.OnlyCandidate)
			}
		}
	}
}

// A 20% slowdown injected into some keys of a copy of a real results file
// fails, naming exactly those keys; every way the gate can judge them
// (runs, per-iteration samples, the plain ratio) catches it.
func TestInjectedSlowdownFailsNamingExactlyThoseKeys(t *testing.T) {
	firstCycle := func(recs []results.Record) []results.Record {
		seen := map[Key]bool{}
		var out []results.Record
		for _, r := range recs {
			if k := KeyOf(r); !seen[k] {
				seen[k] = true
				out = append(out, r)
			}
		}
		return out
	}
	everyThird := func(i int, r results.Record) bool { return i%3 == 1 }
	for _, tc := range []struct {
		name   string
		recs   []results.Record
		inject func(i int, r results.Record) bool // i counts distinct keys in file order
		unit   string                             // how the slowed keys are judged; "" the plain ratio
	}{
		// Run-to-run spread in this file is up to 40% below 32K (see the
		// next test), so the slowdown goes where 5 runs can show it.
		{"5 runs per key", read(t, realRuns), func(_ int, r results.Record) bool { return r.Size >= 256<<10 }, UnitRuns},
		{"one run per key with per-iteration samples", firstCycle(read(t, realRuns)), everyThird, UnitIterations},
		// Some of its records have 10 samples with heavy tails, where 20% is
		// not significant: the slowdown goes into keys with 20 or more.
		{"a tuning sweep: 264 configurations, per-iteration samples", readSweep(t),
			func(i int, r results.Record) bool { return i%7 == 3 && len(r.IterTimesUs) >= 20 }, UnitIterations},
		{"nccl-tests log, no repeats", read(t, realNCCL), everyThird, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			index := map[Key]int{}
			want := map[Key]bool{}
			var cand []results.Record
			for _, r := range tc.recs {
				k := KeyOf(r)
				if _, ok := index[k]; !ok {
					index[k] = len(index)
				}
				if r.BusBw > 0 && tc.inject(index[k], r) {
					r = slower(r, 1.2)
					want[k] = true
				}
				cand = append(cand, r)
			}
			for _, m := range []Metric{BusBW, Time} {
				opt := DefaultOptions()
				opt.Metric = m
				rep := mustCompare(t, tc.recs, cand, opt)
				if rep.Pass() || rep.ExitCode() != ExitRegression {
					t.Fatalf("%s: a 20%% slowdown passes", m)
				}
				for _, c := range rep.Comparisons {
					if (c.Verdict == Regression) != want[c.Key] {
						t.Errorf("%s: %s: verdict %s (p %.2g, %s), injected %v", m, c.Key, c.Verdict, c.P, samples(c), want[c.Key])
					}
					if want[c.Key] {
						if c.Tested != (tc.unit != "") || (tc.unit != "" && c.Unit != tc.unit) {
							t.Errorf("%s: %s judged on %s (tested %v), want %q", m, c.Key, c.Unit, c.Tested, tc.unit)
						}
						if w := map[Metric]float64{BusBW: 1 / 1.2, Time: 1.2}[m]; !near(c.Ratio, w, 1e-9) {
							t.Errorf("%s: %s ratio %v, want %v", m, c.Key, c.Ratio, w)
						}
					}
				}
				if rep.Count(Regression) != len(want) || len(want) < 2 {
					t.Errorf("%s: %d regressions, injected %d", m, rep.Count(Regression), len(want))
				}
			}
		})
	}
}

// On the real 5-run file, 64 B runs spread from 1.54 to 2.67 us: a 20%
// slowdown there is beyond the threshold but not significant, so it passes
// with a note rather than failing on what noise alone could produce.
func TestRealRunSpreadHidesASmallSlowdown(t *testing.T) {
	base := read(t, realRuns)
	var cand []results.Record
	for _, r := range base {
		if r.Size == 64 {
			r = slower(r, 1.2)
		}
		cand = append(cand, r)
	}
	rep := mustCompare(t, base, cand, DefaultOptions())
	for _, c := range rep.Comparisons {
		if want := map[bool]Verdict{true: Noisy, false: Unchanged}[c.Key.Size == 64]; c.Verdict != want {
			t.Errorf("%s: %s (p %.2g), want %s", c.Key, c.Verdict, c.P, want)
		}
	}
	if !rep.Pass() {
		t.Error("fails")
	}
}

func TestNoiseWithinThresholdPasses(t *testing.T) {
	var base, cand []results.Record
	for i, s := range []int64{8, 1 << 10, 1 << 20} {
		base = append(base, runs(s, 1, jitter(uint64(i), 10, 100, 0.03)...)...)
		cand = append(cand, runs(s, 1, jitter(uint64(i+10), 10, 103, 0.03)...)...) // 3% slower, 3% noise
	}
	rep := mustCompare(t, base, cand, DefaultOptions())
	if !rep.Pass() || rep.Count(Unchanged) != 3 {
		t.Errorf("noise within the 5%% threshold: %v", verdicts(rep))
	}
	// The real runs against themselves slowed by 3%: significant, but within the threshold.
	real := read(t, realRuns)
	var c3 []results.Record
	for _, r := range real {
		c3 = append(c3, slower(r, 1.03))
	}
	if rep := mustCompare(t, real, c3, DefaultOptions()); !rep.Pass() || rep.Count(Unchanged) != len(rep.Comparisons) {
		t.Errorf("3%% slowdown, 5%% threshold: %v", verdicts(rep))
	}
}

func TestSignificanceIsHonoured(t *testing.T) {
	const size = 1 << 20
	t.Run("large but noisy, few samples: passes with a note", func(t *testing.T) {
		base := runs(size, 1, 100, 60, 150, 90, 110)
		cand := runs(size, 1, 140, 70, 160, 125, 95) // median 110 -> 125 us: busbw -12%
		rep := mustCompare(t, base, cand, DefaultOptions())
		c := rep.Comparisons[0]
		if !rep.Pass() || c.Verdict != Noisy || !c.Tested || c.P < 0.05 {
			t.Fatalf("verdict %s, p %v, pass %v", c.Verdict, c.P, rep.Pass())
		}
		if c.Delta() > -0.05 {
			t.Fatalf("the test case is not beyond the threshold: %v", c.Delta())
		}
		if len(c.Notes) == 0 || !strings.Contains(c.Notes[0], "not significant") {
			t.Errorf("no note: %q", c.Notes)
		}
	})
	t.Run("small but consistent beyond the threshold: fails", func(t *testing.T) {
		base := runs(size, 1, jitter(1, 10, 100, 0.005)...)
		cand := runs(size, 1, jitter(2, 10, 107.5, 0.005)...) // busbw -7%
		rep := mustCompare(t, base, cand, DefaultOptions())
		c := rep.Comparisons[0]
		if rep.Pass() || c.Verdict != Regression || c.P >= 0.05 {
			t.Fatalf("verdict %s, p %v", c.Verdict, c.P)
		}
		if !(c.RatioLo < c.Ratio && c.Ratio < c.RatioHi && c.RatioHi < 0.95) {
			t.Errorf("ratio %v, interval [%v, %v]: should exclude the threshold", c.Ratio, c.RatioLo, c.RatioHi)
		}
	})
	t.Run("significant but within the threshold: passes", func(t *testing.T) {
		base := runs(size, 1, jitter(1, 10, 100, 0.005)...)
		cand := runs(size, 1, jitter(2, 10, 103, 0.005)...)
		if c := mustCompare(t, base, cand, DefaultOptions()).Comparisons[0]; c.Verdict != Unchanged || c.P >= 0.05 {
			t.Errorf("verdict %s, p %v", c.Verdict, c.P)
		}
	})
	t.Run("too few samples for any test: the plain ratio, said so", func(t *testing.T) {
		for _, n := range [][2]int{{1, 1}, {2, 2}, {3, 1}} {
			base := runs(size, 1, jitter(1, n[0], 100, 0.001)...)
			cand := runs(size, 1, jitter(2, n[1], 120, 0.001)...)
			rep := mustCompare(t, base, cand, DefaultOptions())
			c := rep.Comparisons[0]
			if c.Verdict != Regression || c.Tested || len(c.Notes) == 0 || !strings.Contains(c.Notes[0], "plain ratio") {
				t.Errorf("%v: verdict %s, tested %v, notes %q", n, c.Verdict, c.Tested, c.Notes)
			}
			if !strings.Contains(strings.Join(rep.Notes, "\n"), "plain ratio") {
				t.Errorf("%v: the report does not say keys were judged on the plain ratio: %q", n, rep.Notes)
			}
		}
	})
	t.Run("an improvement is reported, and passes", func(t *testing.T) {
		base := runs(size, 1, jitter(1, 10, 100, 0.01)...)
		cand := runs(size, 1, jitter(2, 10, 80, 0.01)...)
		rep := mustCompare(t, base, cand, DefaultOptions())
		if c := rep.Comparisons[0]; c.Verdict != Improvement || !rep.Pass() {
			t.Errorf("verdict %s", c.Verdict)
		}
	})
}

// A uniformly slower machine (every time 1.3x, copy bandwidth 1/1.3)
// fails without normalisation and passes with --normalize copy.
func TestNormalizationRemovesMachineSpeed(t *testing.T) {
	base := readSweep(t)
	var cand []results.Record
	for _, r := range base {
		r = slower(r, 1.3)
		r.RefCopyGBps /= 1.3
		cand = append(cand, r)
	}
	for _, m := range []Metric{BusBW, Time} {
		opt := DefaultOptions()
		opt.Metric = m
		// A few keys have 10 noisy samples: 30% is not significant there.
		if rep := mustCompare(t, base, cand, opt); rep.Count(Regression) < len(rep.Comparisons)*9/10 {
			t.Errorf("%s, not normalised: %d of %d keys regress", m, rep.Count(Regression), len(rep.Comparisons))
		}
		opt.Normalize = NormCopy
		rep := mustCompare(t, base, cand, opt)
		if !rep.Pass() {
			t.Errorf("%s, normalised: %v", m, verdicts(rep))
		}
		for _, c := range rep.Comparisons {
			if !near(c.Ratio, 1, 1e-9) {
				t.Errorf("%s, normalised: %s ratio %v", m, c.Key, c.Ratio)
			}
		}
	}
}

func TestThresholdBands(t *testing.T) {
	var base, cand []results.Record
	for i, s := range []int64{8, 4 << 10, 1 << 20} {
		base = append(base, runs(s, 1, jitter(uint64(i), 10, 100, 0.005)...)...)
		cand = append(cand, runs(s, 1, jitter(uint64(i+5), 10, 110, 0.005)...)...) // busbw -9%
	}
	opt := DefaultOptions()
	var err error
	if opt.Thresholds, err = ParseThresholds("8B-64K=15%,64K-=5%"); err != nil {
		t.Fatal(err)
	}
	rep := mustCompare(t, base, cand, opt)
	for k, v := range verdicts(rep) {
		if want := map[bool]Verdict{true: Unchanged, false: Regression}[k.Size < 64<<10]; v != want {
			t.Errorf("%s: %s, want %s", k, v, want)
		}
	}
	opt.MinSize = 64 << 10
	if rep := mustCompare(t, base, cand, opt); len(rep.Comparisons) != 1 || rep.Comparisons[0].Key.Size != 1<<20 {
		t.Errorf("--min-size 64K: %v", verdicts(rep))
	}
	opt.MinSize = 0
	opt.Thresholds, _ = ParseThresholds("64K-=5%")
	if _, err := Compare(base, cand, opt); !errors.Is(err, ErrNoThreshold) {
		t.Errorf("a size in no band: %v", err)
	}
}

func TestKeysOnOneSide(t *testing.T) {
	base := append(runs(8, 1, 1, 1, 1), runs(16, 1, 2, 2, 2)...)
	cand := append(runs(8, 1, 1, 1, 1), runs(32, 1, 3, 3, 3)...)
	rep := mustCompare(t, base, cand, DefaultOptions())
	if !rep.Pass() || len(rep.OnlyBaseline) != 1 || rep.OnlyBaseline[0].Size != 16 || len(rep.OnlyCandidate) != 1 || rep.OnlyCandidate[0].Size != 32 {
		t.Fatalf("pass %v, only baseline %v, only candidate %v", rep.Pass(), rep.OnlyBaseline, rep.OnlyCandidate)
	}
	opt := DefaultOptions()
	opt.RequireAll = true
	if rep := mustCompare(t, base, cand, opt); rep.Pass() || rep.ExitCode() != ExitRegression {
		t.Errorf("--require-all passes with keys on one side only")
	}
}

func TestBadInput(t *testing.T) {
	good := runs(8, 1, 1, 1, 1)
	other := runs(8, 1, 1, 1, 1)
	for i := range other {
		other[i].Collective, other[i].Algorithm = "broadcast", "Ring"
	}
	noRef := runs(8, 0, 1, 1, 1)
	noTime := runs(8, 1, 1)
	noTime[0].TimeUs, noTime[0].MedianUs, noTime[0].BusBw = 0, 0, 0
	bad := DefaultOptions()
	bad.Alpha = 1.5
	for _, tc := range []struct {
		name       string
		base, cand []results.Record
		opt        Options
		err        error
		msg        string
	}{
		{"empty baseline", nil, good, DefaultOptions(), ErrNoRecords, "baseline has no records"},
		{"no keys in common", good, other, DefaultOptions(), ErrNoCommonKeys, "collective: baseline {allreduce}, candidate {broadcast}; algorithm: baseline {auto}, candidate {Ring}"},
		{"no reference to normalise", good, noRef, Options{Metric: BusBW, Normalize: NormCopy, Thresholds: Uniform(0.05), Alpha: 0.05, Confidence: 0.95}, ErrNoReference, "3 of the 3 candidate records have no ref_copy_gbps"},
		{"no usable metric", good, noTime, DefaultOptions(), ErrNoRecords, "none of the 1 candidate records has a busbw"},
		{"all below min-size", good, good, Options{Thresholds: Uniform(0.05), Alpha: 0.05, Confidence: 0.95, MinSize: 1024}, ErrNoRecords, "below --min-size 1K"},
		{"bad alpha", good, good, bad, ErrBadOption, "alpha 1.5"},
	} {
		_, err := Compare(tc.base, tc.cand, tc.opt)
		if !errors.Is(err, tc.err) || !strings.Contains(err.Error(), tc.msg) {
			t.Errorf("%s: got %v, want %v containing %q", tc.name, err, tc.err, tc.msg)
		}
	}
}
