package cli

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"strings"

	"github.com/jedib0t/go-pretty/v6/table"
	"github.com/spf13/pflag"

	"github.com/gccl/gccl/changepoint"
	"github.com/gccl/gccl/ci"
	"github.com/gccl/gccl/history"
	"github.com/gccl/gccl/results"
)

// seriesFlags are the flags of the commands that read a history's series
// and look for change points in them: history changes and report --db.
type seriesFlags struct {
	metric, norm, stat, minChange *string
	pValue                        *float64
	window                        *int
	branch, machine               *string
}

func addSeriesFlags(fs *pflag.FlagSet) *seriesFlags {
	return &seriesFlags{
		metric:    fs.String("metric", "busbw", "the series: busbw, GB/s (higher is better), or time, us per op (lower is better)"),
		norm:      fs.String("normalize", "none", "machine: each run's values divided by the run's machine factor (the median over keys of its value against the key's usual one), which takes out a shared machine's slow spells and with them any change that hits most keys alike; copy: by its ref_copy_gbps; none: as measured"),
		stat:      fs.String("stat", "auto", "a run's value of a key: median (the median time of its records, the gate's value), p5 (the 5th percentile of its iterations), min (its fastest iteration: other work on a shared host only adds time, so the low end moves with the code more than with the neighbours), or auto: per key, whichever series has the least run-to-run noise (changepoint.RunNoise)"),
		pValue:    fs.Float64("p-value", changepoint.DefaultPValue, "a change point is reported when its permutation test's p-value is at most this (Otava's default)"),
		window:    fs.Int("window", changepoint.DefaultWindow, "runs per window of the search (and the most runs on each side a change point is tested against)"),
		minChange: fs.String("min-change", "0", "leave out change points smaller than this, percent or fraction (2%, 0.02)"),
		branch:    fs.String("branch", "", "only the runs of this branch (default: every branch)"),
		machine:   fs.String("machine", "", "only the runs of this machine (default: every machine)"),
	}
}

// seriesSpec is what seriesFlags asked for, checked.
type seriesSpec struct {
	metric  ci.Metric
	norm    ci.Normalization
	stat    ci.Stat
	machine bool // divide each run's values by its machine factor (changepoint.MachineFactors)
	opts    changepoint.Options
	filter  history.Filter
}

func (f *seriesFlags) parse() (seriesSpec, error) {
	var s seriesSpec
	var err error
	if s.metric, err = ci.ParseMetric(*f.metric); err != nil {
		return s, fmt.Errorf("--metric: %v", err)
	}
	if s.stat, err = ci.ParseStat(*f.stat); err != nil {
		return s, fmt.Errorf("--stat: %v", err)
	}
	if strings.EqualFold(strings.TrimSpace(*f.norm), "machine") {
		s.machine = true
	} else if s.norm, err = ci.ParseNormalization(*f.norm); err != nil {
		return s, fmt.Errorf("--normalize: %v (or machine)", err)
	}
	if !(*f.pValue > 0 && *f.pValue <= 1) {
		return s, fmt.Errorf("--p-value %v: want a probability in (0, 1], e.g. 0.001", *f.pValue)
	}
	if *f.window < 2*changepoint.DefaultMinSize {
		return s, fmt.Errorf("--window %d: want at least %d runs (%d on each side of a change)", *f.window, 2*changepoint.DefaultMinSize, changepoint.DefaultMinSize)
	}
	minChange, err := results.ParseFraction(*f.minChange)
	if err != nil || minChange < 0 {
		return s, fmt.Errorf("--min-change %q: want a percent or fraction of at least 0 (2%%, 0.02)", *f.minChange)
	}
	s.opts = changepoint.Options{PValue: *f.pValue, Window: *f.window, MinChange: minChange}
	s.filter = history.Filter{Branch: *f.branch, Machine: *f.machine}
	return s, nil
}

// keyChanges is one key's series and the change points found in it.
type keyChanges struct {
	Key     ci.Key
	Stat    ci.Stat // what a point's Value is: median, p5 or min
	Points  []history.Point
	Changes []changepoint.ChangePoint
}

// findChanges reads every key's series from s and runs the change-point
// search on each (a key with too few runs has none).
func findChanges(s *history.Store, spec seriesSpec) ([]keyChanges, error) {
	keys, err := s.Keys(spec.filter)
	if err != nil {
		return nil, err
	}
	stats := []ci.Stat{spec.stat}
	if spec.stat == ci.StatAuto {
		stats = ci.Stats
	}
	// byStat[i]: every key's series in stats[i], where every run gives it
	byStat := make([][]keyChanges, len(stats))
	found := false
	for _, k := range keys {
		pts, err := s.Series(k, spec.metric, spec.norm, spec.filter)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", k, err)
		}
		found = found || len(pts) > 0
		for i, st := range stats {
			if v := statSeries(pts, st, spec.metric); len(v) > 0 {
				byStat[i] = append(byStat[i], keyChanges{Key: k, Stat: st, Points: v})
			}
		}
	}
	if found && len(byStat[0]) == 0 && spec.stat != ci.StatAuto {
		return nil, fmt.Errorf("--stat %s: %s", spec.stat, statMissing(spec.stat))
	}
	if spec.machine {
		for i := range byStat {
			if err := machineNormalize(byStat[i]); err != nil {
				if stats[i] == spec.stat || stats[i] == ci.StatMedian {
					return nil, err
				}
				byStat[i] = nil // auto: too few keys give this value to normalise it; the others serve
			}
		}
	}
	out, err := quietest(byStat)
	if err != nil {
		return nil, err
	}
	for i := range out {
		kc := &out[i]
		if len(kc.Points) < 2*changepoint.DefaultMinSize {
			continue
		}
		if kc.Changes, err = changepoint.Detect(values(kc.Points), spec.opts); err != nil {
			return nil, fmt.Errorf("%s: %w", kc.Key, err)
		}
	}
	return out, nil
}

// statSeries is a key's series in stat st: its points with Value set to
// the run's value in st, or nil unless every run gives it (runs stored
// before the history kept min_us have no fastest iteration; runs without
// per-iteration samples no p5).
func statSeries(pts []history.Point, st ci.Stat, m ci.Metric) []history.Point {
	if st == ci.StatMedian {
		return pts
	}
	out := make([]history.Point, len(pts))
	for i, p := range pts {
		v, ok := p.Fastest, p.Fastest > 0
		if st == ci.StatLow {
			v, ok = ci.LowOf(p.Samples, m)
		}
		if !ok {
			return nil
		}
		p.Value = v
		out[i] = p
	}
	return out
}

// statMissing says why no series could be read in st.
func statMissing(st ci.Stat) string {
	if st == ci.StatLow {
		return "no key has per-iteration samples (at least 20) in every run: record them (perf --precision or -I 1)"
	}
	return "no key's runs all know their fastest iteration (min_us); runs added by an older gccl do not"
}

// quietest picks each key's series among byStat's (each a list of keys'
// series in one stat, the first list holding every key the others may):
// the one with the least run-to-run noise, the earlier list on a tie.
func quietest(byStat [][]keyChanges) ([]keyChanges, error) {
	if len(byStat) == 1 {
		return byStat[0], nil
	}
	idx := make([]map[ci.Key]keyChanges, len(byStat))
	for i, kcs := range byStat {
		idx[i] = map[ci.Key]keyChanges{}
		for _, kc := range kcs {
			idx[i][kc.Key] = kc
		}
	}
	var out []keyChanges
	for _, first := range byStat[0] {
		best := first
		bestNoise := math.Inf(1)
		for i := range byStat {
			kc, ok := idx[i][first.Key]
			if !ok || len(kc.Points) < 3 {
				continue
			}
			n, err := changepoint.RunNoise(values(kc.Points))
			if err != nil {
				return nil, fmt.Errorf("%s: %w", kc.Key, err)
			}
			if n < bestNoise {
				best, bestNoise = kc, n
			}
		}
		out = append(out, best)
	}
	return out, nil
}

func values(pts []history.Point) []float64 {
	v := make([]float64, len(pts))
	for i, p := range pts {
		v[i] = p.Value
	}
	return v
}

// machineNormalize divides every point by its run's machine factor: the
// median over keys of the run's value against each key's median.
func machineNormalize(kcs []keyChanges) error {
	col := map[int64]int{} // run id -> column
	for _, kc := range kcs {
		for _, p := range kc.Points {
			if _, ok := col[p.RunID]; !ok {
				col[p.RunID] = len(col)
			}
		}
	}
	matrix := make([][]float64, len(kcs))
	for i, kc := range kcs {
		row := make([]float64, len(col))
		for j := range row {
			row[j] = math.NaN()
		}
		for _, p := range kc.Points {
			row[col[p.RunID]] = p.Value
		}
		matrix[i] = row
	}
	factors, err := changepoint.MachineFactors(matrix)
	if err != nil {
		return fmt.Errorf("--normalize machine: %w", err)
	}
	for _, kc := range kcs {
		for j := range kc.Points {
			kc.Points[j].Value /= factors[col[kc.Points[j].RunID]]
		}
	}
	return nil
}

// changeRow is one change point as `history changes` prints it.
type changeRow struct {
	Key        string  `json:"key"`
	Stat       string  `json:"stat"`        // what a run's value is: median or min
	From       string  `json:"from_commit"` // the last run before the change
	To         string  `json:"to_commit"`   // the first run after it
	Run        int64   `json:"run"`         // the first run after it (history list's run)
	Before     float64 `json:"before"`
	After      float64 `json:"after"`
	Change     float64 `json:"change"` // After/Before - 1
	PValue     float64 `json:"p_value"`
	Regression bool    `json:"regression"`
	Newest     bool    `json:"newest"` // within the newest --newest runs
}

// historyChangesCmd is `tune history changes --db FILE`: the change points
// of every key's series (E-divisive means, package changepoint). With
// --fail-on-change it exits 1 when a regression lies within the newest
// runs, so CI gates on the series rather than on one pair of runs.
func historyChangesCmd(args []string, stdout, stderr io.Writer) int {
	const name = "tune history changes"
	fs := pflag.NewFlagSet(name, pflag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.SortFlags = false
	db := dbFlag(fs)
	sf := addSeriesFlags(fs)
	newest := fs.Int("newest", 5, "runs counted as new: --fail-on-change looks for a regression among them")
	fail := fs.Bool("fail-on-change", false, "exit 1 when a change for the worse starts within the newest runs")
	jsonOut := fs.Bool("json", false, "print the change points as JSON Lines, one a line, instead of a table")
	setUsage(fs, stderr, "tune history changes --db FILE [flags]",
		"Finds the change points in every key's series over the history's runs: E-divisive means with a\npermutation test (Matteson & James 2014; Apache Otava's method). Exit status: 0, or 1 with\n--fail-on-change when a regression starts within the newest runs; 2 bad input.")
	if code, ok := parseFlags(fs, args, stderr); !ok {
		return code
	}
	bad := func(format string, a ...any) int {
		fmt.Fprintf(stderr, name+": "+format+"\n", a...)
		return exitBad
	}
	if fs.NArg() > 0 {
		return bad("unexpected argument %q: the history is --db FILE", fs.Arg(0))
	}
	spec, err := sf.parse()
	if err != nil {
		return bad("%v", err)
	}
	if *newest < 1 {
		return bad("--newest %d: want at least 1 run", *newest)
	}
	s := openHistory(name, *db, false, stderr)
	if s == nil {
		return exitBad
	}
	kcs, err := findChanges(s, spec)
	if err != nil {
		s.Close()
		return bad("%v", err)
	}
	var rows []changeRow
	regressions := 0
	for _, kc := range kcs {
		n := len(kc.Points)
		for _, c := range kc.Changes {
			r := changeRow{Key: kc.Key.String(), Stat: kc.Stat.String(), From: kc.Points[c.Index-1].Commit, To: kc.Points[c.Index].Commit, Run: kc.Points[c.Index].RunID,
				Before: c.Before, After: c.After, Change: c.Change, PValue: c.PValue,
				Regression: c.Regression(spec.metric.HigherIsBetter()), Newest: c.Index >= n-*newest}
			if r.Regression && r.Newest {
				regressions++
			}
			rows = append(rows, r)
		}
	}
	if *jsonOut {
		enc := json.NewEncoder(stdout)
		for _, r := range rows {
			if err := enc.Encode(r); err != nil {
				s.Close()
				return bad("%v", err)
			}
		}
	} else {
		unit := ci.Unit(spec.metric, spec.norm)
		if spec.machine {
			unit += "/machine"
		}
		printChanges(stdout, rows, unit)
		fmt.Fprintf(stdout, "%d keys, %d change points, %d regressions within the newest %d runs\n", len(kcs), len(rows), regressions, *newest)
	}
	code := exitOK
	if *fail && regressions > 0 {
		fmt.Fprintf(stderr, "%s: %d regressions within the newest %d runs\n", name, regressions, *newest)
		code = ci.ExitRegression
	}
	return closeHistory(name, s, code, stderr)
}

func printChanges(w io.Writer, rows []changeRow, unit string) {
	if len(rows) == 0 {
		return
	}
	t := table.NewWriter()
	t.SetOutputMirror(w)
	t.SetStyle(table.StyleLight)
	t.AppendHeader(table.Row{"key", "stat", "commits", "before " + unit, "after " + unit, "change", "p-value", ""})
	for _, r := range rows {
		verdict := "improvement"
		if r.Regression {
			verdict = "regression"
		}
		if r.Newest {
			verdict += " (new)"
		}
		t.AppendRow(table.Row{r.Key, r.Stat, shortCommit(r.From) + ".." + shortCommit(r.To), fmt.Sprintf("%.4g", r.Before), fmt.Sprintf("%.4g", r.After),
			fmt.Sprintf("%+.1f%%", 100*r.Change), pValueText(r.PValue), verdict})
	}
	t.Render()
}

func pValueText(p float64) string {
	if math.IsNaN(p) {
		return "-"
	}
	return fmt.Sprintf("%.4f", p)
}
