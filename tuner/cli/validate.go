// tune validate: the regret of a tuning table and of the built-in default.

package cli

import (
	"fmt"
	"io"
	"math"

	"github.com/jedib0t/go-pretty/v6/table"
	"github.com/spf13/pflag"

	"github.com/gccl/gccl/lib/tuning"
	"github.com/gccl/gccl/perf"
	"github.com/gccl/gccl/results"
	"github.com/gccl/gccl/tuner"
)

// validateCmd is `tune validate --table table.json FILES...`: the regret of
// the table's choices and of the stack's built-in default on measurements
// (tuner.Validate), per shape and overall.
func validateCmd(args []string, stdout, stderr io.Writer) int {
	fs := pflag.NewFlagSet("tune validate", pflag.ContinueOnError)
	fs.SetOutput(stderr)
	tablePath := fs.String("table", "", "the tuning table to validate (JSON, written by tune table --output); required")
	procs := fs.Int("procs", 0, "processors (cores) of the process that measured, for the built-in default (default: the records' core count)")
	model := fs.String("model", "", "cost-model constants file (JSON, as GCCL_MODEL_FILE) for the built-in default where no auto run was measured (default: the built-in constants)")
	points := fs.Bool("points", false, "also list every point: size, fastest measured, the table's and the default's choice and regret")
	failWorse := fs.Bool("fail-worse", false, "exit 1 when the table does worse than the default on the points both were measured at (higher geomean or max regret)")
	tags := tagFlag(fs)
	live := fs.Bool("live", false, "run the table's rules live, beside the stack's own choice (for NCCL: through the tuner plugin against no plugin), on sizes the sweep did not measure, in alternating passes; FILES, if given, are the sweep's records (the margins the rules claimed)")
	var lo liveOptions
	fs.StringVar(&lo.backendFlag, "backend", string(perf.BackendEmbedded), "with --live: embedded (gccl's stack) or nccl (libnccl on GPUs)")
	fs.IntVar(&lo.ranks, "ranks", 0, "with --live: the rank count to measure (default: the one each rule names)")
	fs.IntVar(&lo.np, "np", 0, "with --live: run across this many processes (perf --np; default 0: the ranks in one process)")
	fs.IntVar(&lo.hosts, "hosts", 0, "with --live and --np: the processes are this many hosts (perf --hosts; default 0: one host)")
	fs.IntVar(&lo.passes, "passes", 3, "with --live: passes, each one run of the default and one of the table, who goes first alternating")
	fs.IntVar(&lo.perRule, "sizes-per-rule", 3, "with --live: held-out sizes measured inside each rule")
	fs.IntVarP(&lo.iters, "iters", "n", 50, "with --live: timed iterations per size")
	fs.IntVarP(&lo.warmup, "warmup_iters", "w", 10, "with --live: warmup iterations per size")
	noise := fs.String("noise", "1%", "with --live: the least noise assumed at any size (the passes' own spread counts when larger)")
	maxB := fs.String("max-bytes", "1G", "with --live: where held-out sizes of a rule with no upper end stop")
	fs.StringVar(&lo.output, "output", "", "with --live: write the rules that paid as a tuning table (JSON; default: none written)")
	fs.StringVar(&lo.nccl, "nccl-csv", "", "with --live: write the rules that paid as NCCL's tuner CSV (default: none written)")
	fs.BoolVar(&lo.force, "force", false, "with --live: overwrite --output and --nccl-csv")
	fs.BoolVar(&lo.keepAll, "keep-unpaid", false, "with --live: keep the unpaid and unmeasured rules in the written table too (the slower ones are always dropped)")
	setUsage(fs, stderr, "tune validate --table FILE [flags] FILES...",
		"Regret of a tuning table's choices, and of the stack's built-in default, on\nmeasurements the table was not built from. With --live, the table runs live\nbeside the default, and each rule's realised gain is set beside its claim.")
	if code, ok := parseFlags(fs, args, stderr); !ok {
		return code
	}
	bad := func(format string, a ...any) int {
		fmt.Fprintf(stderr, "tune validate: "+format+"\n", a...)
		return exitBad
	}
	if *live {
		return validateLive(fs, &lo, *tablePath, *noise, *maxB, *points, *failWorse, *tags, stdout, stderr)
	}
	for _, f := range []string{"backend", "ranks", "np", "hosts", "passes", "sizes-per-rule", "iters", "warmup_iters", "noise", "max-bytes", "output", "nccl-csv", "force", "keep-unpaid"} {
		if fs.Changed(f) {
			return bad("--%s is a flag of --live: add --live to run the table live", f)
		}
	}
	consts := tuning.DefaultConstants()
	if *model != "" {
		var err error
		if consts, err = tuning.LoadConstants(*model); err != nil {
			return bad("%v", err)
		}
	}
	if *tablePath == "" {
		return bad("no --table given")
	}
	if fs.NArg() == 0 {
		return bad("no input files (give measurements not used to build the table)")
	}
	tab, err := tuning.LoadTable(*tablePath)
	if err != nil {
		return bad("%v", err)
	}
	recs, err := readRecords(fs.Args(), *tags)
	if err != nil {
		return bad("%v", err)
	}
	var def tuner.DefaultPicker
	p, _, err := recordsMachine(recs)
	if *procs > 0 {
		p, err = *procs, nil
	}
	if err != nil {
		fmt.Fprintf(stderr, "tune validate: the built-in default is priced only from \"auto\" series (%v; give --procs)\n", err)
	} else {
		def = tuner.EmbeddedDefault(recs, tuner.ModelDefault(consts, p))
	}
	rep, err := tuner.Validate(tab, tuner.Collect(recs), def)
	if err != nil {
		return bad("%v", err)
	}

	pct := func(v float64) string {
		if math.IsNaN(v) {
			return "-"
		}
		return fmt.Sprintf("%.1f%%", 100*v)
	}
	if *points {
		writePoints(stdout, rep.Points)
	}
	t := table.NewWriter()
	t.SetOutputMirror(stdout)
	t.SetStyle(table.StyleLight)
	t.AppendHeader(table.Row{"coll", "ranks", "hosts", "table geomean", "table max", "table points", "table unpriced",
		"default geomean", "default max", "default points", "default unpriced"})
	for _, s := range rep.Shapes {
		t.AppendRow(table.Row{s.Shape.Coll, s.Shape.NRanks, s.Shape.NHosts,
			pct(s.Table.Geomean), pct(s.Table.Max), s.Table.Points, s.Table.Unpriced,
			pct(s.Default.Geomean), pct(s.Default.Max), s.Default.Points, s.Default.Unpriced})
	}
	t.Render()
	for _, s := range rep.Skipped {
		fmt.Fprintf(stdout, "skipped %s: lib/tuning has no rules for this collective\n", s)
	}
	for _, c := range []struct {
		name string
		r    tuner.Regrets
		pick func(tuner.PointResult) (tuner.Key, float64)
	}{
		{"table  ", rep.Table, func(p tuner.PointResult) (tuner.Key, float64) { return p.Table, p.TableUs }},
		{"default", rep.Default, func(p tuner.PointResult) (tuner.Key, float64) { return p.Default, p.DefaultUs }},
	} {
		fmt.Fprintf(stdout, "%s: geomean regret %s, max %s over %d points, %d unpriced", c.name, pct(c.r.Geomean), pct(c.r.Max), c.r.Points, c.r.Unpriced)
		if c.r.Points > 0 {
			w := c.r.Worst
			k, us := c.pick(w)
			fmt.Fprintf(stdout, " (worst: %s %s B, %s %.1f us vs %s %.1f us)", w.Shape, results.SizeLabel(w.Bytes),
				k.Config(), us, w.Best.Config(), w.BestUs)
		}
		fmt.Fprintln(stdout)
	}
	fmt.Fprintln(stdout, "default: the \"auto\" series where measured, else the built-in cost model's pick (gccl records only)")
	fmt.Fprintln(stdout, "each configuration is timed by its best run at each size (both placements, every repeat)")
	fmt.Fprintf(stdout, "side by side on the %d points both were measured at: table geomean %s, max %s; default geomean %s, max %s\n",
		rep.BothTable.Points, pct(rep.BothTable.Geomean), pct(rep.BothTable.Max), pct(rep.BothDefault.Geomean), pct(rep.BothDefault.Max))
	if rep.Spread.Points > 0 {
		fmt.Fprintf(stdout, "yardstick noise: the default's median run is %s over its best (geomean; max %s) on the %d points it was repeated at: regrets of that order are measurement spread\n",
			pct(rep.Spread.Geomean), pct(rep.Spread.Max), rep.Spread.Points)
	} else {
		fmt.Fprintln(stdout, "yardstick noise: unknown (the default was measured once per point)")
	}
	if rep.Worse() {
		fmt.Fprintln(stdout, "verdict: the table is WORSE than the default")
		if *failWorse {
			return 1
		}
	} else if rep.BothTable.Points > 0 {
		fmt.Fprintln(stdout, "verdict: the table is no worse than the default")
	}
	return exitOK
}

// writePoints lists validate's points, one row each, for finding where a
// picker loses.
func writePoints(w io.Writer, pts []tuner.PointResult) {
	pct := func(v float64) string {
		if math.IsNaN(v) {
			return "-"
		}
		return fmt.Sprintf("%.1f%%", 100*v)
	}
	us := func(v float64) string {
		if math.IsNaN(v) {
			return "-"
		}
		return fmt.Sprintf("%.2f", v)
	}
	t := table.NewWriter()
	t.SetOutputMirror(w)
	t.SetStyle(table.StyleLight)
	t.AppendHeader(table.Row{"shape", "size", "fastest", "us", "table", "us", "regret", "default", "us", "regret"})
	for _, p := range pts {
		def := "-"
		if p.DefaultOK {
			def = p.Default.Config()
		}
		t.AppendRow(table.Row{p.Shape.String(), results.SizeLabel(p.Bytes), p.Best.Config(), us(p.BestUs),
			p.Table.Config(), us(p.TableUs), pct(p.TableRegret()), def, us(p.DefaultUs), pct(p.DefaultRegret())})
	}
	t.Render()
}
