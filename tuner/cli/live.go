package cli

import (
	"bytes"
	"fmt"
	"io"
	"maps"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/jedib0t/go-pretty/v6/table"
	"github.com/spf13/pflag"

	"github.com/gccl/gccl/internal/size"

	"github.com/gccl/gccl/lib/tuning"
	"github.com/gccl/gccl/perf"
	"github.com/gccl/gccl/results"
	"github.com/gccl/gccl/tuner"
)

// liveOptions are `tune validate --live`'s flags.
type liveOptions struct {
	backendFlag        string           // --backend as given
	backend            perf.BackendName // --backend, parsed (validateLive)
	ranks, np, hosts   int
	passes, perRule    int
	iters, warmup      int
	floor              float64
	maxBytes           int64
	output, nccl       string
	force, points      bool
	failWorse, keepAll bool
}

// validateLive checks validate --live's flags and runs it.
func validateLive(fs *pflag.FlagSet, o *liveOptions, tablePath, noise, maxB string, points, failWorse bool, tags []string, stdout, stderr io.Writer) int {
	bad := func(format string, a ...any) int {
		fmt.Fprintf(stderr, "tune validate --live: "+format+"\n", a...)
		return exitBad
	}
	o.points, o.failWorse = points, failWorse
	var err error
	if o.backend, err = perf.ParseBackend(o.backendFlag); err != nil {
		return bad("%v", err)
	}
	switch {
	case tablePath == "":
		return bad("no --table given: want the table to run (tune table --output)")
	case o.passes < 1:
		return bad("--passes %d: want at least 1 (3 or more to see the noise)", o.passes)
	case o.perRule < 1:
		return bad("--sizes-per-rule %d: want at least 1", o.perRule)
	case o.iters < 1 || o.warmup < 0:
		return bad("-n %d -w %d: want at least 1 timed iteration and 0 or more warmup", o.iters, o.warmup)
	case o.ranks < 0 || o.np < 0 || o.hosts < 0:
		return bad("--ranks, --np and --hosts want positive counts")
	case o.hosts != 0 && (o.np < 1 || o.hosts > o.np || o.np%o.hosts != 0):
		return bad("--hosts %d with --np %d: want --np processes and a divisor of them as hosts", o.hosts, o.np)
	}
	if o.floor, err = results.ParseFraction(noise); err != nil || o.floor < 0 || o.floor >= 1 {
		return bad("invalid --noise %q: want a fraction such as 1%% or 0.01", noise)
	}
	if o.maxBytes, err = size.Parse(maxB); err != nil || o.maxBytes < 1 {
		return bad("invalid --max-bytes %q: want a size such as 1G", maxB)
	}
	tab, err := tuning.LoadTable(tablePath)
	if err != nil {
		return bad("%v", err)
	}
	var train []results.Record
	if fs.NArg() > 0 {
		if train, err = readRecords(fs.Args(), tags); err != nil {
			return bad("%v", err)
		}
	}
	return liveValidate(tab, tablePath, train, *o, stdout, stderr)
}

// liveShape is one shape of the table, with the rules that apply to it.
type liveShape struct {
	shape tuner.Shape
	test  *perf.Test
	rules []*tuner.LiveRule
	sizes []int64 // every rule's held-out sizes, ascending
}

// liveValidate runs the table's rules live: for each shape the table has
// rules for, the perf binary on the held-out sizes, passes alternating
// between the stack's own choice (no table: for NCCL no tuner plugin) and
// the table (--tuning-file: for NCCL through the tuner plugin), each in a
// fresh process. train are the sweep's records (the claimed margins).
func liveValidate(tab *tuning.Table, tablePath string, train []results.Record, o liveOptions, stdout, stderr io.Writer) int {
	bad := func(format string, a ...any) int {
		fmt.Fprintf(stderr, "tune validate --live: "+format+"\n", a...)
		return exitBad
	}
	if err := refuseChoiceEnv(os.LookupEnv); err != nil {
		return bad("%v", strings.Replace(err.Error(), "this sweep measures", "this validation runs", 1))
	}
	if o.backend == perf.BackendNCCL {
		for _, k := range []string{"NCCL_ALGO", "NCCL_PROTO"} {
			if v, ok := os.LookupEnv(k); ok {
				return bad("%s=%s set in the environment would force NCCL's choice under both the default and the table: unset it", k, v)
			}
		}
	}
	shapes, err := liveShapes(tab, train, o)
	if err != nil {
		return bad("%v", err)
	}
	dir, err := os.MkdirTemp("", "gccl-live-")
	if err != nil {
		return bad("%v", err)
	}
	defer os.RemoveAll(dir)
	// The table as the backend reads it: the stack its JSON, NCCL's tuner
	// plugin the CSV.
	tuningFile := tablePath
	if o.backend == perf.BackendNCCL {
		tuningFile = filepath.Join(dir, "table.csv")
		if err := writeWith(tuningFile, tab.WriteNCCLCSV); err != nil {
			return bad("%v", err)
		}
	}
	runs := 0
	for _, s := range shapes {
		if len(s.sizes) > 0 {
			runs += 2 * o.passes
		}
	}
	if o.backend == perf.BackendNCCL {
		fmt.Fprintln(stdout, "(and, per shape, one untimed run of each with NCCL's TUNING log on: what NCCL ran)")
	}
	fmt.Fprintf(stdout, "tune validate --live: %d rules over %d shapes, %d runs of %d passes (default and table alternating), backend %s\n",
		len(tab.Rules), len(shapes), runs, o.passes, o.backend)
	run := 0
	for _, s := range shapes {
		if len(s.sizes) == 0 {
			continue
		}
		// Who goes first alternates, so that a slow spell at a pass's start
		// does not always fall on one.
		for pass := 1; pass <= o.passes; pass++ {
			order := []bool{false, true}
			if pass%2 == 0 {
				order = []bool{true, false}
			}
			for _, withTable := range order {
				run++
				what := "default"
				if withTable {
					what = "table"
				}
				fmt.Fprintf(stdout, "[%d/%d] %s: %s, pass %d, %d sizes\n", run, runs, s.shape, what, pass, len(s.sizes))
				out := filepath.Join(dir, fmt.Sprintf("run%d.jsonl", run))
				recs, err := liveRun(s, withTable, tuningFile, out, o, nil)
				if err != nil {
					return bad("%s, %s, pass %d: %v", s.shape, what, pass, err)
				}
				addLive(s, recs, withTable, false)
			}
		}
		// NCCL says what it ran only in its debug log, which costs host time
		// on every call: one short run of each, untimed, with the log on.
		if o.backend == perf.BackendNCCL {
			for _, withTable := range []bool{false, true} {
				out := filepath.Join(dir, fmt.Sprintf("logged-%d-%t.jsonl", run, withTable))
				lo := o
				lo.iters, lo.warmup = 2, 1
				recs, err := liveRun(s, withTable, tuningFile, out, lo, []string{"NCCL_DEBUG=INFO", "NCCL_DEBUG_SUBSYS=TUNING"})
				if err != nil {
					return bad("%s, logged run: %v", s.shape, err)
				}
				addLive(s, recs, withTable, true)
			}
		}
	}
	var kept []tuning.Rule
	count := map[tuner.LiveVerdict]int{}
	slower := false
	var all []*tuner.LiveRule
	for _, s := range shapes {
		for _, r := range s.rules {
			r.Judge(o.floor)
			count[r.Verdict]++
			slower = slower || r.Verdict == tuner.LiveSlower
			all = append(all, r)
		}
	}
	slices.SortFunc(all, func(a, b *tuner.LiveRule) int { return a.Index - b.Index })
	for _, r := range all {
		if r.Verdict == tuner.LivePays || (o.keepAll && r.Verdict != tuner.LiveSlower) {
			kept = append(kept, r.Rule)
		}
	}
	writeLive(stdout, shapes, all, o)
	fmt.Fprintf(stdout, "%d rules: %d pay, %d unpaid, %d slower, %d unmeasured; %d kept\n", len(all),
		count[tuner.LivePays], count[tuner.LiveUnpaid], count[tuner.LiveSlower], count[tuner.LiveUnmeasured], len(kept))
	keptTab := &tuning.Table{Version: tuning.TableVersion, Rules: kept,
		Comment: strings.TrimSpace(tab.Comment + fmt.Sprintf(" | tune validate --live (%s, %d passes): the rules that paid", o.backend, o.passes))}
	if o.keepAll {
		keptTab.Comment = strings.Replace(keptTab.Comment, "the rules that paid", "the rules not slower", 1)
	}
	for _, w := range []struct {
		path string
		put  func(io.Writer) error
	}{{o.output, keptTab.WriteJSON}, {o.nccl, keptTab.WriteNCCLCSV}} {
		if w.path == "" {
			continue
		}
		create := results.Create
		if o.force {
			create = results.CreateForce
		}
		f, err := create(w.path)
		if err == nil {
			err = settle(f, w.put(f))
		}
		if err != nil {
			return bad("writing %s: %v", w.path, err)
		}
		fmt.Fprintf(stdout, "wrote %s (%d rules)\n", w.path, len(kept))
	}
	if slower && o.failWorse {
		return 1
	}
	return exitOK
}

// liveShapes groups the table's rules by the shape each is measured on,
// with held-out sizes per rule and the claimed margins from train.
func liveShapes(tab *tuning.Table, train []results.Record, o liveOptions) ([]*liveShape, error) {
	if len(tab.Rules) == 0 {
		return nil, fmt.Errorf("the table has no rules: there is nothing to run against the default")
	}
	series := tuner.Collect(train)
	trained := map[tuner.Shape][]int64{}
	for _, se := range series {
		for _, sa := range se.Samples {
			trained[se.Key.Shape] = append(trained[se.Key.Shape], sa.Bytes)
		}
	}
	byShape := map[tuner.Shape]*liveShape{}
	var shapes []*liveShape
	for i, rule := range tab.Rules {
		nRanks, err := pickCount("ranks", rule.Ranks, o.ranks, "--ranks")
		if err != nil {
			return nil, fmt.Errorf("rule %d (%s): %v", i+1, rule.Coll, err)
		}
		if o.ranks > 0 && !rule.Ranks.Contains(int64(o.ranks)) {
			continue // a rule for other rank counts: not what this run measures
		}
		hosts := max(o.hosts, 1)
		if !rule.Hosts.Contains(int64(hosts)) {
			continue
		}
		test := testByName(rule.Coll.String())
		if test == nil {
			return nil, fmt.Errorf("rule %d: no perf test runs %s", i+1, rule.Coll)
		}
		if o.np > 1 && nRanks%o.np != 0 {
			return nil, fmt.Errorf("rule %d: %d ranks over --np %d processes: want a multiple of --np", i+1, nRanks, o.np)
		}
		sh := tuner.Shape{Coll: test.Collective, NRanks: nRanks, NHosts: hosts}
		s := byShape[sh]
		if s == nil {
			s = &liveShape{shape: sh, test: test}
			byShape[sh] = s
			shapes = append(shapes, s)
		}
		round := func(b int64) int64 { _, row := test.Counts(b, 4, nRanks); return row }
		lr := &tuner.LiveRule{Index: i, Rule: rule, Claimed: tuner.ClaimedMargin(series, sh, rule)}
		for _, b := range tuner.HeldOutSizes(rule.Bytes, trained[sh], o.perRule, o.maxBytes, round) {
			lr.Points = append(lr.Points, tuner.LivePoint{Bytes: b})
			s.sizes = append(s.sizes, b)
		}
		s.rules = append(s.rules, lr)
	}
	if len(shapes) == 0 {
		return nil, fmt.Errorf("no rule of the table is for %d ranks on %d hosts (give --ranks and --hosts the table's rules name)", o.ranks, max(o.hosts, 1))
	}
	for _, s := range shapes {
		slices.Sort(s.sizes)
		s.sizes = slices.Compact(s.sizes)
	}
	return shapes, nil
}

// pickCount is the count a rule's range names: its only value, else the
// flag's (which must lie in it).
func pickCount(what string, r tuning.Range, flag int, name string) (int, error) {
	switch {
	case flag > 0:
		return flag, nil
	case r.Max == r.Min:
		return int(r.Min), nil
	}
	return 0, fmt.Errorf("the rule holds for %s %s: give %s to say which to measure", what, bytesOf(r), name)
}

func bytesOf(r tuning.Range) string {
	if r.Max == -1 {
		return fmt.Sprintf("%d and up", r.Min)
	}
	return fmt.Sprintf("%d-%d", r.Min, r.Max)
}

// liveRun runs the shape's perf test once in a child process (tune _perf):
// the held-out sizes out of place, with or without the table, and returns
// its records.
func liveRun(s *liveShape, withTable bool, tuningFile, out string, o liveOptions, env []string) ([]results.Record, error) {
	exe, pre, err := perf.ChildCommand(s.test)
	if err != nil {
		return nil, err
	}
	sizes := make([]string, len(s.sizes))
	for i, b := range s.sizes {
		sizes[i] = strconv.FormatInt(b, 10)
	}
	threads := s.shape.NRanks
	if o.np > 1 {
		threads /= o.np
	}
	args := append(slices.Clone(pre), "-t", strconv.Itoa(threads), "--sizes", strings.Join(sizes, ","),
		"-n", strconv.Itoa(o.iters), "-w", strconv.Itoa(o.warmup), "-c", "0", "--out-of-place-only", "--out", out, "--force")
	args = append(args, launchArgs(o.np, o.hosts, false, o.backend)...)
	// The table reaches the run by --tuning-file only: neither variant
	// inherits one from the environment, and the default loads no tuner
	// plugin at all (what NCCL does with none).
	drop := []string{"GCCL_TUNING_FILE=", "NCCL_TUNER_CONFIG_FILE="}
	for _, kv := range env {
		drop = append(drop, kv[:strings.IndexByte(kv, '=')+1])
	}
	if withTable {
		args = append(args, "--tuning-file", tuningFile)
	} else {
		drop = append(drop, "NCCL_TUNER_PLUGIN=")
	}
	cmd := exec.Command(exe, args...)
	cmd.Env = append(slices.DeleteFunc(os.Environ(), func(kv string) bool {
		return slices.ContainsFunc(drop, func(p string) bool { return strings.HasPrefix(kv, p) })
	}), env...)
	var errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = io.Discard, &errb
	if err := cmd.Run(); err != nil {
		return nil, fmt.Errorf("%s %s: %v: %s", exe, strings.Join(args, " "), err, lastLines(errb.String(), 5))
	}
	return results.ReadFile(out)
}

func lastLines(s string, n int) string {
	l := strings.Split(strings.TrimSpace(s), "\n")
	return strings.Join(l[max(0, len(l)-n):], " | ")
}

// addLive files a run's out-of-place times under the rules' points (with
// ranOnly, only what the records say ran).
func addLive(s *liveShape, recs []results.Record, withTable, ranOnly bool) {
	for _, rec := range recs {
		if rec.Placement != results.OutOfPlace || rec.TimeUs <= 0 {
			continue
		}
		ran := ""
		if rec.ChosenAlgo != "" {
			ran = rec.ChosenAlgo + "/" + rec.ChosenProto
		}
		for _, r := range s.rules {
			for i := range r.Points {
				p := &r.Points[i]
				if p.Bytes != rec.Size {
					continue
				}
				switch {
				case withTable && ran != "":
					p.TableRan = ran
				case ran != "":
					p.DefaultRan = ran
				}
				switch {
				case ranOnly:
				case withTable:
					p.Table = append(p.Table, rec.TimeUs)
				default:
					p.Default = append(p.Default, rec.TimeUs)
				}
			}
		}
	}
}

// writeLive prints the rules' verdicts and, with --points, every point.
func writeLive(w io.Writer, shapes []*liveShape, rules []*tuner.LiveRule, o liveOptions) {
	pct := func(v float64) string {
		if math.IsNaN(v) {
			return "-"
		}
		return fmt.Sprintf("%+.1f%%", 100*v)
	}
	shapeOf := map[int]tuner.Shape{}
	for _, s := range shapes {
		for _, r := range s.rules {
			shapeOf[r.Index] = s.shape
		}
	}
	t := table.NewWriter()
	t.SetOutputMirror(w)
	t.SetStyle(table.StyleLight)
	t.AppendHeader(table.Row{"rule", "coll", "ranks", "hosts", "bytes", "choice", "ran", "sizes", "claimed", "realised", "noise", "verdict"})
	for _, r := range rules {
		sh := shapeOf[r.Index]
		ran := map[string]bool{}
		for _, p := range r.Points {
			if p.TableRan != "" {
				ran[p.TableRan] = true
			}
		}
		ranList := slices.Sorted(maps.Keys(ran))
		noise := "-"
		if !math.IsNaN(r.Noise) {
			noise = fmt.Sprintf("%.1f%%", 100*r.Noise)
		}
		t.AppendRow(table.Row{r.Index + 1, sh.Coll, sh.NRanks, sh.NHosts, bytesOf(r.Rule.Bytes), r.Rule.Choice.String(),
			strings.Join(ranList, ","), len(r.Points), pct(r.Claimed), pct(r.Gain), noise, r.Verdict})
	}
	t.Render()
	for _, r := range rules {
		fmt.Fprintf(w, "rule %d: %s: %s\n", r.Index+1, r.Verdict, r.Why)
	}
	if !o.points {
		return
	}
	fmt.Fprintf(w, "%6s %12s %12s %12s %9s %7s  %-14s %s\n", "rule", "bytes", "default us", "table us", "gain", "noise", "default ran", "table ran")
	for _, r := range rules {
		for _, p := range r.Points {
			if len(p.Default) == 0 || len(p.Table) == 0 {
				fmt.Fprintf(w, "%6d %12d %12s %12s\n", r.Index+1, p.Bytes, "-", "-")
				continue
			}
			fmt.Fprintf(w, "%6d %12d %12.2f %12.2f %9s %6.1f%%  %-14s %s\n", r.Index+1, p.Bytes, p.DefaultUs(), p.TableUs(),
				pct(p.Gain()), 100*p.Noise(o.floor), or(p.DefaultRan, "-"), or(p.TableRan, "-"))
		}
	}
}

func or(s, d string) string {
	if s == "" {
		return d
	}
	return s
}

// writeWith writes a file whole with put (an existing one is replaced: it
// is this command's own temporary file).
func writeWith(path string, put func(io.Writer) error) error {
	f, err := results.CreateForce(path)
	if err == nil {
		err = settle(f, put(f))
	}
	return err
}
