package cli

import (
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gccl/gccl/ci"
	"github.com/gccl/gccl/results"
)

// stepSizes are the sizes of the series historyWithStep makes; those from
// 256K on slow down.
var stepSizes = map[int64]bool{8: true, 4096: true, 256 << 10: true, 2 << 20: true}

// stepRecords is the baseline's out-of-place records of its first
// collective at stepSizes, every time scaled by scale(size) and by 1%
// noise of run i (a fixed seed: the same every time).
func stepRecords(t *testing.T, i int, scale func(size int64) float64) []results.Record {
	return sizedRecords(t, i, stepSizes, scale)
}

// sizedRecords is stepRecords at the given sizes.
func sizedRecords(t *testing.T, i int, sizes map[int64]bool, scale func(size int64) float64) []results.Record {
	t.Helper()
	base, err := results.ReadFile(reportBase)
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(uint64(i), 7))
	var recs []results.Record
	for _, r := range base {
		if r.Collective != base[0].Collective || r.Placement != "out-of-place" || !sizes[r.Size] {
			continue
		}
		f := scale(r.Size) * (1 + 0.01*rng.NormFloat64())
		r.TimeUs, r.MedianUs, r.MinUs, r.BusBw, r.AlgBw = r.TimeUs*f, r.MedianUs*f, r.MinUs*f, r.BusBw/f, r.AlgBw/f
		r.IterTimesUs = nil
		r.GitRev = fmt.Sprintf("c%02d", i)
		r.Timestamp = time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC).Add(time.Duration(i) * time.Hour)
		recs = append(recs, r)
	}
	return recs
}

// slowFrom scales sizes from 256K on by slow, the others not at all.
func slowFrom(slow float64) func(int64) float64 {
	return func(size int64) float64 {
		if size >= 256<<10 {
			return slow
		}
		return 1
	}
}

// historyWithStep adds n runs to a new history: from run step on, the
// sizes from 256K take 10% longer.
func historyWithStep(t *testing.T, dir string, n, step int) string {
	t.Helper()
	db := filepath.Join(dir, "history.db")
	for i := range n {
		slow := 1.0
		if i >= step {
			slow = 1.1
		}
		file := writeRecords(t, dir, fmt.Sprintf("run%02d.jsonl", i), stepRecords(t, i, slowFrom(slow)))
		if code, _, stderr := runCLI("history", "add", "--db", db, "--commit", fmt.Sprintf("c%02d", i), file); code != exitOK {
			t.Fatalf("history add run %d: exit %d: %s", i, code, stderr)
		}
	}
	return db
}

// TestHistoryChanges: the 10% step of the sizes from 256K is found at the
// run it starts, in those keys only; --fail-on-change fails when the step
// lies within --newest runs and passes when it is older.
func TestHistoryChanges(t *testing.T) {
	dir := t.TempDir()
	db := historyWithStep(t, dir, 30, 20)
	code, stdout, stderr := runCLI("history", "changes", "--db", db, "--json")
	if code != exitOK {
		t.Fatalf("history changes: exit %d: %s", code, stderr)
	}
	lines := strings.Split(strings.TrimSpace(stdout), "\n")
	if len(lines) != 2 {
		t.Fatalf("%d change points, want 2 (256K and 2M):\n%s", len(lines), stdout)
	}
	for _, l := range lines {
		if !strings.Contains(l, `"from_commit":"c19","to_commit":"c20"`) || !strings.Contains(l, `"regression":true`) ||
			!(strings.Contains(l, "256K") || strings.Contains(l, "2M")) {
			t.Errorf("change point %s: want the step from c19 to c20 at 256K or 2M, a regression", l)
		}
	}
	if code, stdout, _ = runCLI("history", "changes", "--db", db); code != exitOK || !strings.Contains(stdout, "c19..c20") || !strings.Contains(stdout, "2 change points, 0 regressions within the newest 5 runs") {
		t.Errorf("history changes (table): exit %d\n%s", code, stdout)
	}
	if code, _, stderr = runCLI("history", "changes", "--db", db, "--fail-on-change"); code != exitOK {
		t.Errorf("--fail-on-change with the step 10 runs old: exit %d, want 0: %s", code, stderr)
	}
	if code, _, stderr = runCLI("history", "changes", "--db", db, "--fail-on-change", "--newest", "10"); code != ci.ExitRegression || !strings.Contains(stderr, "2 regressions within the newest 10 runs") {
		t.Errorf("--fail-on-change --newest 10: exit %d, want 1: %s", code, stderr)
	}
	if code, stdout, _ = runCLI("history", "changes", "--db", db, "--min-change", "20%", "--json"); code != exitOK || stdout != "" {
		t.Errorf("--min-change 20%%: exit %d, want no change point:\n%s", code, stdout)
	}
}

// TestGateHistory: a candidate judged against the history's series: at
// its newest level it passes; 10% slower than that from 256K, those keys
// regress (exit 1); a key the history lacks is listed, not judged.
func TestGateHistory(t *testing.T) {
	dir := t.TempDir()
	db := historyWithStep(t, dir, 30, 20)
	same := writeRecords(t, dir, "same.jsonl", stepRecords(t, 100, slowFrom(1.1)))
	code, stdout, stderr := runCLI("gate", "--history", db, "--candidate", same)
	if code != ci.ExitPass || !strings.Contains(stdout, "PASS: 4 keys") {
		t.Errorf("gate --history, the newest level: exit %d\n%s%s", code, stdout, stderr)
	}
	slower := writeRecords(t, dir, "slower.jsonl", stepRecords(t, 101, slowFrom(1.1*1.1)))
	js := filepath.Join(dir, "verdicts.jsonl")
	code, stdout, stderr = runCLI("gate", "--history", db, "--candidate", slower, "--json", js)
	if code != ci.ExitRegression || strings.Count(stdout, "REGRESSION") != 2 || !strings.Contains(stdout, "2 regressions") {
		t.Errorf("gate --history, 10%% slower from 256K: exit %d, want 1 and 2 regressions\n%s%s", code, stdout, stderr)
	}
	if b, err := os.ReadFile(js); err != nil || strings.Count(string(b), `"verdict":"REGRESSION"`) != 2 {
		t.Errorf("--json: %v\n%s", err, b)
	}
	// a floor above the change: no regression
	if code, stdout, _ = runCLI("gate", "--history", db, "--candidate", slower, "--threshold", "15%"); code != ci.ExitPass {
		t.Errorf("gate --history --threshold 15%%: exit %d, want 0\n%s", code, stdout)
	}
	short := historyWithStep(t, t.TempDir(), 4, 99)
	if code, stdout, _ = runCLI("gate", "--history", short, "--candidate", slower); code != ci.ExitPass || strings.Count(stdout, "no history (4 of 6 runs)") != 4 {
		t.Errorf("gate --history with 4 runs: exit %d, want 0 and every key unjudged\n%s", code, stdout)
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--history", db}, "needs --candidate"},
		{[]string{"--history", db, "--candidate", same, "--baseline", same}, "drop --baseline"},
		{[]string{"--history", db, "--candidate", same, "--z", "0"}, "--z 0"},
		{[]string{"--history", db, "--candidate", same, "--threshold", "8K-=5%"}, "--threshold"},
		{[]string{"--history", db, "--candidate", same, "--markdown", filepath.Join(dir, "m.md")}, "use --json"},
		{[]string{"--history", filepath.Join(dir, "none.db"), "--candidate", same}, "none.db"},
	} {
		if code, _, stderr := runCLI(append([]string{"gate"}, c.args...)...); code != ci.ExitBadInput || !strings.Contains(stderr, c.want) {
			t.Errorf("gate %v: exit %d, %q; want 2 and %q", c.args, code, stderr, c.want)
		}
	}
}

// TestReportFromHistory: tune report --db draws every key's series from
// the history with its change points, and refuses a missing history.
func TestReportFromHistory(t *testing.T) {
	dir := t.TempDir()
	db := historyWithStep(t, dir, 30, 20)
	out := filepath.Join(dir, "report.html")
	code, stdout, stderr := runCLI("report", "--db", db, "--output", out)
	if code != exitOK || !strings.Contains(stdout, "30 runs, 4 keys") {
		t.Fatalf("report --db: exit %d, %q %q", code, stdout, stderr)
	}
	page, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(string(page), "1 change point (dashed"); n != 2 {
		t.Errorf("the page describes %d series with one change point, want 2 (256K and 2M)", n)
	}
	if code, _, stderr = runCLI("report", "--db", filepath.Join(dir, "none.db"), "--output", filepath.Join(dir, "r2.html")); code != exitBad || !strings.Contains(stderr, "none.db") {
		t.Errorf("report --db of a missing file: exit %d, %q", code, stderr)
	}
}

// TestHistoryChangesMachine: moving to a machine 30% slower shows as a
// change point in every key as measured; with --normalize machine (and
// --min-change 2%: the median over keys shifts a little when 2 of 7 keys
// step) only the real step of the 2 keys remains.
func TestHistoryChangesMachine(t *testing.T) {
	dir := t.TempDir()
	db := filepath.Join(dir, "history.db")
	all := map[int64]bool{8: true, 64: true, 512: true, 4096: true, 32768: true, 256 << 10: true, 2 << 20: true}
	for i := range 40 {
		machine := 1.0
		if i >= 10 {
			machine = 1.3
		}
		step := 1.0
		if i >= 28 {
			step = 1.1
		}
		file := writeRecords(t, dir, fmt.Sprintf("run%02d.jsonl", i), sizedRecords(t, i, all, func(size int64) float64 { return machine * slowFrom(step)(size) }))
		if code, _, stderr := runCLI("history", "add", "--db", db, "--commit", fmt.Sprintf("c%02d", i), file); code != exitOK {
			t.Fatalf("history add run %d: exit %d: %s", i, code, stderr)
		}
	}
	code, stdout, stderr := runCLI("history", "changes", "--db", db, "--json")
	if code != exitOK || strings.Count(stdout, `"to_commit":"c10"`) != 7 {
		t.Errorf("as measured: exit %d, want the slower machine at c10 in all 7 keys: %s\n%s", code, stderr, stdout)
	}
	code, stdout, stderr = runCLI("history", "changes", "--db", db, "--json", "--normalize", "machine", "--min-change", "2%")
	lines := strings.Split(strings.TrimSpace(stdout), "\n")
	if code != exitOK || len(lines) != 2 || strings.Count(stdout, `"to_commit":"c28"`) != 2 {
		t.Errorf("--normalize machine: exit %d, want only the step at c28 in 256K and 2M: %s\n%s", code, stderr, stdout)
	}
	if code, _, stderr = runCLI("history", "changes", "--db", db, "--normalize", "cpu"); code != exitBad || !strings.Contains(stderr, "or machine") {
		t.Errorf("--normalize cpu: exit %d, %q", code, stderr)
	}
}

// TestHistoryChangesStat: when the runs' medians swing up to 3x (a shared
// host's neighbours) and their fastest iterations do not, a 10% step from
// 256K is lost in the medians and found in the fastest iterations: --stat
// min and auto (which picks the quieter series per key) find it, --stat
// median does not. A history without min_us has no min series: auto falls
// back to the medians, --stat min says why it cannot.
func TestHistoryChangesStat(t *testing.T) {
	dir := t.TempDir()
	db := filepath.Join(dir, "history.db")
	noMin := filepath.Join(dir, "nomin.db")
	swing := rand.New(rand.NewPCG(3, 4))
	for i := range 30 {
		slow := 1.0
		if i >= 20 {
			slow = 1.1
		}
		recs := stepRecords(t, i, slowFrom(slow))
		f := 1 + 2*swing.Float64() // the whole run: the host's state
		for j := range recs {
			recs[j].TimeUs, recs[j].MedianUs, recs[j].BusBw = recs[j].TimeUs*f, recs[j].MedianUs*f, recs[j].BusBw/f
		}
		file := writeRecords(t, dir, fmt.Sprintf("run%02d.jsonl", i), recs)
		for j := range recs {
			recs[j].MinUs = 0
		}
		bare := writeRecords(t, dir, fmt.Sprintf("bare%02d.jsonl", i), recs)
		for _, add := range [][]string{{db, file}, {noMin, bare}} {
			if code, _, stderr := runCLI("history", "add", "--db", add[0], "--commit", fmt.Sprintf("c%02d", i), add[1]); code != exitOK {
				t.Fatalf("history add run %d: exit %d: %s", i, code, stderr)
			}
		}
	}
	for _, c := range []struct {
		db, stat string
		want     int // change points at c20, in 256K and 2M, as min
	}{
		{db, "auto", 2}, {db, "min", 2}, {db, "median", 0}, {noMin, "auto", 0},
	} {
		code, stdout, stderr := runCLI("history", "changes", "--db", c.db, "--json", "--stat", c.stat)
		if code != exitOK {
			t.Fatalf("--stat %s: exit %d: %s", c.stat, code, stderr)
		}
		found := strings.Count(stdout, `"stat":"min","from_commit":"c19","to_commit":"c20"`)
		if found != c.want || strings.Count(stdout, "\n") != c.want {
			t.Errorf("%s --stat %s: want %d change points at c20 in the min series, and nothing else:\n%s", filepath.Base(c.db), c.stat, c.want, stdout)
		}
	}
	// gate --history reads the candidate as it reads the series: 10% slower
	// than the newest level from 256K, in the fastest iterations
	cand := stepRecords(t, 200, slowFrom(1.1*1.1))
	for j := range cand {
		cand[j].TimeUs, cand[j].MedianUs, cand[j].BusBw = cand[j].TimeUs*2, cand[j].MedianUs*2, cand[j].BusBw/2
	}
	candFile := writeRecords(t, dir, "cand.jsonl", cand)
	if code, stdout, stderr := runCLI("gate", "--history", db, "--candidate", candFile); code != ci.ExitRegression || strings.Count(stdout, "REGRESSION") != 2 || strings.Count(stdout, "│ min  │") != 4 {
		t.Errorf("gate --history (auto): exit %d, want 1 with 2 regressions, every key judged on min:\n%s%s", code, stdout, stderr)
	}
	if code, stdout, stderr := runCLI("gate", "--history", db, "--candidate", candFile, "--stat", "median"); code != ci.ExitPass {
		t.Errorf("gate --history --stat median: exit %d, want 0 (the medians' noise hides 10%%):\n%s%s", code, stdout, stderr)
	}
	if code, stdout, _ := runCLI("history", "changes", "--db", db, "--stat", "min"); code != exitOK || !strings.Contains(stdout, "│ min  │") {
		t.Errorf("the table names the stat: exit %d\n%s", code, stdout)
	}
	if code, _, stderr := runCLI("gate", "--history", noMin, "--candidate", candFile, "--stat", "min"); code != ci.ExitBadInput || !strings.Contains(stderr, "min_us") {
		t.Errorf("gate --history --stat min on a history without min_us: exit %d, %q", code, stderr)
	}
	if code, _, stderr := runCLI("history", "changes", "--db", noMin, "--stat", "min"); code != exitBad || !strings.Contains(stderr, "min_us") {
		t.Errorf("--stat min on a history without min_us: exit %d, %q", code, stderr)
	}
	if code, _, stderr := runCLI("history", "changes", "--db", db, "--stat", "mean"); code != exitBad || !strings.Contains(stderr, "want median, p5, min or auto") {
		t.Errorf("--stat mean: exit %d, %q", code, stderr)
	}
}

// TestHistoryChangesP5: when the medians swing up to 3x with the host and
// the fastest iteration is one lucky one anywhere from 0.2x to 0.9x, but
// the run's 5th percentile holds (a tenth of its iterations at the code's
// own pace), a 10% step from 256K shows only there: --stat p5 and auto
// find it, median and min do not. Without per-iteration samples, --stat
// p5 says what it needs.
func TestHistoryChangesP5(t *testing.T) {
	dir := t.TempDir()
	db := filepath.Join(dir, "history.db")
	rng := rand.New(rand.NewPCG(5, 6))
	// run i: the sizes from 256K slow by slow; the host by f
	run := func(i int, slow, f float64) []results.Record {
		recs := stepRecords(t, i, slowFrom(slow))
		lucky := map[int64]bool{}
		for j := range recs {
			r := &recs[j]
			pace := slowFrom(slow)(r.Size) * (2 + float64(r.Size)/1e3) * (1 + 0.002*rng.NormFloat64()) // the code's own pace
			r.IterTimesUs = make([]float64, 100)
			for s := range r.IterTimesUs {
				x := pace * (1 + 0.0001*float64(s))
				if s >= 10 {
					x *= f
				}
				r.IterTimesUs[s] = x
			}
			if !lucky[r.Size] { // the run's one lucky iteration of the key
				lucky[r.Size] = true
				r.IterTimesUs[0] = pace * (0.2 + 0.7*rng.Float64())
			}
			r.MinUs = r.IterTimesUs[0]
			r.MedianUs = pace * f
			r.TimeUs = pace * f
			r.BusBw /= f
		}
		return recs
	}
	for i := range 30 {
		slow := 1.0
		if i >= 20 {
			slow = 1.1
		}
		recs := run(i, slow, 1+2*rng.Float64())
		file := writeRecords(t, dir, fmt.Sprintf("run%02d.jsonl", i), recs)
		if code, _, stderr := runCLI("history", "add", "--db", db, "--commit", fmt.Sprintf("c%02d", i), file); code != exitOK {
			t.Fatalf("history add run %d: exit %d: %s", i, code, stderr)
		}
	}
	for _, c := range []struct {
		stat string
		want int // change points at c20, in 256K and 2M, in the p5 series
	}{
		{"auto", 2}, {"p5", 2}, {"median", 0}, {"min", 0},
	} {
		code, stdout, stderr := runCLI("history", "changes", "--db", db, "--json", "--stat", c.stat)
		if code != exitOK {
			t.Fatalf("--stat %s: exit %d: %s", c.stat, code, stderr)
		}
		found := strings.Count(stdout, `"stat":"p5","from_commit":"c19","to_commit":"c20"`)
		if found != c.want || strings.Count(stdout, "\n") != c.want {
			t.Errorf("--stat %s: want %d change points at c20 in the p5 series, and nothing else:\n%s", c.stat, c.want, stdout)
		}
	}
	// gate --history reads the candidate's 5th percentile too: 10% slower
	// than the newest level from 256K
	cand := writeRecords(t, dir, "cand.jsonl", run(200, 1.1*1.1, 2))
	if code, stdout, stderr := runCLI("gate", "--history", db, "--candidate", cand); code != ci.ExitRegression || strings.Count(stdout, "REGRESSION") != 2 || !strings.Contains(stdout, "│ p5   │") {
		t.Errorf("gate --history (auto): exit %d, want 1 with 2 regressions read as p5:\n%s%s", code, stdout, stderr)
	}
	bare := filepath.Join(dir, "bare.db")
	for i := range 12 {
		file := writeRecords(t, dir, fmt.Sprintf("bare%02d.jsonl", i), stepRecords(t, i, slowFrom(1)))
		if code, _, stderr := runCLI("history", "add", "--db", bare, "--commit", fmt.Sprintf("c%02d", i), file); code != exitOK {
			t.Fatalf("history add run %d: exit %d: %s", i, code, stderr)
		}
	}
	if code, _, stderr := runCLI("history", "changes", "--db", bare, "--stat", "p5"); code != exitBad || !strings.Contains(stderr, "per-iteration samples") {
		t.Errorf("--stat p5 without samples: exit %d, %q", code, stderr)
	}
}
