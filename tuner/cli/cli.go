// Package cli is cmd/tune's command line: flag parsing, files in and out,
// and tables printed; the work is in package tuner.
package cli

import (
	"fmt"
	"github.com/gccl/gccl/perf"
	"io"
	"math"
	"os"
	"sort"
	"strconv"
	"strings"

	"github.com/jedib0t/go-pretty/v6/table"
	"github.com/spf13/pflag"

	"github.com/gccl/gccl/lib/nccl/tunerplugin"
	"github.com/gccl/gccl/lib/tuning"
	"github.com/gccl/gccl/results"
	"github.com/gccl/gccl/tuner"
)

// Usage lists the subcommands.
const Usage = `usage: tune <command> [flags] FILES...

commands:
  sweep       measure collectives over configurations and sizes into a JSONL file (resumable)
  fit         fit t = alpha + bytes/beta (a second segment past a cache knee) per configuration
  constants   fit the built-in cost model's constants to forced-config sweeps
  choices     compare the cost model's picks with the fastest measured configs
  table       pick the fastest config per size into a tuning table (and NCCL tuner CSV)
  validate    regret of a tuning table and of the built-in default on held-out measurements
  plot        draw result files: busBW/algBW/time curves, fitted models, comparisons, winner maps (PNG/SVG/PDF)
  gate        regression gate: compare a candidate with a baseline (exit 0 pass, 1 regression, 2 bad input)
  baseline    record result files as a new baseline for gate
  plugin      build gccl's NCCL tuner plugin (a .so for NCCL_TUNER_PLUGIN that applies table --nccl-csv)

Run "tune <command> --help" for a command's flags; "tune --version" prints the version.
`

// Exit codes: 0 success, 2 bad input or usage.
const (
	exitOK  = 0
	exitBad = 2
)

// Run runs one subcommand.
func Run(args []string, stdout, stderr io.Writer) int {
	switch args[0] {
	case "sweep":
		return sweepCmd(args[1:], stdout, stderr)
	case "fit":
		return fitCmd(args[1:], stdout, stderr)
	case "constants":
		return constants(args[1:], stdout, stderr)
	case "choices":
		return choices(args[1:], stdout, stderr)
	case "table":
		return tableCmd(args[1:], stdout, stderr)
	case "validate":
		return validateCmd(args[1:], stdout, stderr)
	case "plot":
		return plotCmd(args[1:], stdout, stderr)
	case "gate":
		return gateCmd(args[1:], stdout, stderr)
	case "baseline":
		return baselineCmd(args[1:], stdout, stderr)
	case "plugin":
		return pluginCmd(args[1:], stdout, stderr)
	case perfCommand:
		return perfChild(args[1:], stdout, stderr)
	case "-h", "--help", "help":
		fmt.Fprint(stdout, Usage)
		return exitOK
	case "--version", "version":
		fmt.Fprintln(stdout, perf.VersionLine("tune"))
		return exitOK
	}
	if strings.HasPrefix(args[0], "-") {
		fmt.Fprintf(stderr, "tune: %s before a command: flags follow the command (tune <command> --help lists them)\n\n%s", args[0], Usage)
		return exitBad
	}
	fmt.Fprintf(stderr, "tune: unknown command %q\n\n%s", args[0], Usage)
	return exitBad
}

func constants(args []string, stdout, stderr io.Writer) int {
	fs := pflag.NewFlagSet("tune constants", pflag.ContinueOnError)
	fs.SetOutput(stderr)
	out := outputFlag(fs, "write the fitted constants (JSON, for GCCL_MODEL_FILE) to this file (default: print them only)")
	procs := fs.Int("procs", 0, "processors (cores) of the process that measured (default: the records' core count)")
	start := fs.String("start", "", "constants file (JSON) to start from (default: the built-in constants)")
	machine := fs.String("machine", "", "text for the constants' machine field (default: the records' CPU and cores)")
	hold := fs.StringSlice("hold", nil, "constants kept at their start values, comma separated: names or prefixes ending at a dot, e.g. step_lat_us.*.Ring.LL,base_lat_us.Tree (default: none)")
	setUsage(fs, stderr, "tune constants [--output FILE] [flags] FILES...",
		"Fits the built-in cost model's constants to sweeps of forced configurations and\nprints (or writes) them, for GCCL_MODEL_FILE.")
	if code, ok := parseFlags(fs, args, stderr); !ok {
		return code
	}
	if fs.NArg() == 0 {
		fmt.Fprintln(stderr, "tune constants: no input files (give sweeps of forced configurations)")
		return exitBad
	}
	recs, pts, skipped, err := readPoints(fs.Args())
	if err != nil {
		fmt.Fprintf(stderr, "tune constants: %v\n", err)
		return exitBad
	}
	p, desc, err := recordsMachine(recs)
	if err != nil && *procs == 0 {
		fmt.Fprintf(stderr, "tune constants: %v; give --procs\n", err)
		return exitBad
	}
	if *procs > 0 {
		p = *procs
	}
	c := tuning.DefaultConstants()
	if *start != "" {
		if c, err = tuning.LoadConstants(*start); err != nil {
			fmt.Fprintf(stderr, "tune constants: %v\n", err)
			return exitBad
		}
	}
	before := tuner.Evaluate(c, p, pts)
	fitted, rep, err := tuner.FitConstants(c, p, pts, *hold)
	if err != nil {
		fmt.Fprintf(stderr, "tune constants: %v\n", err)
		return exitBad
	}
	if *machine != "" {
		desc = *machine
	}
	fitted.Machine = desc
	fitted.Method = fmt.Sprintf("tune constants: Nelder-Mead on squared log(predicted/measured) over %d out-of-place forced-config points (%s), %d processors", len(pts), shapes(pts), p)
	if len(*hold) > 0 {
		fitted.Method += fmt.Sprintf("; held: %s", strings.Join(*hold, ", "))
	}
	fmt.Fprintf(stdout, "%d points (%d records skipped), %d processors\n", len(pts), skipped, p)
	fmt.Fprintf(stdout, "start:  median relative error %.1f%%, max %.0f%%\n", 100*before.MedianRelErr, 100*before.MaxRelErr)
	fmt.Fprintf(stdout, "fitted: median relative error %.1f%%, max %.0f%% (%s n=%d hosts=%d %s/%s/%dch %d B: %.1f us predicted, %.1f measured), %d evaluations\n\n",
		100*rep.MedianRelErr, 100*rep.MaxRelErr, rep.Worst.Coll, rep.Worst.NRanks, rep.Worst.NHosts, rep.Worst.Algo, rep.Worst.Proto,
		rep.Worst.NCh, rep.Worst.Bytes, rep.WorstPred, rep.Worst.Us, rep.Evaluations)
	writeErrorTable(stdout, fitted, p, pts)
	if *out != "" {
		b, err := fitted.MarshalJSON()
		if err == nil {
			err = os.WriteFile(*out, append(b, '\n'), 0o644)
		}
		if err != nil {
			fmt.Fprintf(stderr, "tune constants: writing %s: %v\n", *out, err)
			return exitBad
		}
		fmt.Fprintf(stdout, "\nwrote %s (use it with GCCL_MODEL_FILE=%s)\n", *out, *out)
	} else {
		fmt.Fprintf(stdout, "\n%s\n", fitted)
	}
	return exitOK
}

// recordsMachine returns the processor count and a description of the
// machine the records came from; an error when they disagree.
func recordsMachine(recs []results.Record) (int, string, error) {
	cores, cpu := 0, ""
	for _, r := range recs {
		if r.Cores == 0 {
			continue
		}
		if cores != 0 && r.Cores != cores {
			return 0, "", fmt.Errorf("records come from machines with %d and %d cores", cores, r.Cores)
		}
		cores, cpu = r.Cores, r.CPU
	}
	if cores == 0 {
		return 0, "", fmt.Errorf("records do not say how many cores measured them")
	}
	return cores, fmt.Sprintf("%s, %d cores", cpu, cores), nil
}

func shapes(pts []tuner.Point) string {
	seen := map[[2]int]bool{}
	var s string
	for _, p := range pts {
		k := [2]int{p.NRanks, p.NHosts}
		if !seen[k] {
			seen[k] = true
			if s != "" {
				s += ", "
			}
			s += fmt.Sprintf("%d ranks/%d hosts", p.NRanks, p.NHosts)
		}
	}
	return s
}

// writeErrorTable prints the fitted model's median and max relative error
// per (ranks, hosts, algorithm, protocol).
func writeErrorTable(w io.Writer, c tuning.Constants, procs int, pts []tuner.Point) {
	type key struct {
		n, hosts int
		algo     string
		proto    string
	}
	groups := map[key][]tuner.Point{}
	for _, p := range pts {
		k := key{p.NRanks, p.NHosts, p.Algo.String(), p.Proto.String()}
		groups[k] = append(groups[k], p)
	}
	keys := make([]key, 0, len(groups))
	for k := range groups {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool {
		a, b := keys[i], keys[j]
		if a.n != b.n {
			return a.n < b.n
		}
		if a.hosts != b.hosts {
			return a.hosts < b.hosts
		}
		if a.algo != b.algo {
			return a.algo < b.algo
		}
		return a.proto < b.proto
	})
	t := table.NewWriter()
	t.SetOutputMirror(w)
	t.SetStyle(table.StyleLight)
	t.AppendHeader(table.Row{"ranks", "hosts", "algo", "proto", "points", "median err", "max err"})
	for _, k := range keys {
		r := tuner.Evaluate(c, procs, groups[k])
		t.AppendRow(table.Row{k.n, k.hosts, k.algo, k.proto, r.Points,
			fmt.Sprintf("%.1f%%", 100*r.MedianRelErr), fmt.Sprintf("%.0f%%", 100*r.MaxRelErr)})
	}
	t.Render()
}

// readPoints reads every file and keeps the forced-configuration points.
func readPoints(files []string) ([]results.Record, []tuner.Point, int, error) {
	var recs []results.Record
	for _, f := range files {
		r, err := results.ReadFile(f)
		if err != nil {
			return nil, nil, 0, err
		}
		recs = append(recs, r...)
	}
	pts, skipped := tuner.PointsFromRecords(recs)
	if len(pts) == 0 {
		return nil, nil, 0, fmt.Errorf("none of the %d records is an out-of-place forced configuration (algorithm, protocol and channels set)", len(recs))
	}
	return recs, pts, skipped, nil
}

func choices(args []string, stdout, stderr io.Writer) int {
	fs := pflag.NewFlagSet("tune choices", pflag.ContinueOnError)
	fs.SetOutput(stderr)
	model := fs.String("model", "", "cost-model constants file (JSON, as GCCL_MODEL_FILE) (default: the built-in constants)")
	procs := fs.Int("procs", 0, "processors (cores) of the process that measured (default: the records' core count)")
	setUsage(fs, stderr, "tune choices [flags] FILES...",
		"Compares the cost model's pick at every measured size with the fastest measured\nconfiguration of sweeps of forced configurations.")
	if code, ok := parseFlags(fs, args, stderr); !ok {
		return code
	}
	if fs.NArg() == 0 {
		fmt.Fprintln(stderr, "tune choices: no input files (give sweeps of forced configurations)")
		return exitBad
	}
	recs, pts, _, err := readPoints(fs.Args())
	if err != nil {
		fmt.Fprintf(stderr, "tune choices: %v\n", err)
		return exitBad
	}
	p, _, err := recordsMachine(recs)
	if *procs > 0 {
		p, err = *procs, nil
	}
	if err != nil {
		fmt.Fprintf(stderr, "tune choices: %v; give --procs\n", err)
		return exitBad
	}
	c := tuning.DefaultConstants()
	if *model != "" {
		if c, err = tuning.LoadConstants(*model); err != nil {
			fmt.Fprintf(stderr, "tune choices: %v\n", err)
			return exitBad
		}
	}
	rows := tuner.CompareChoices(c, p, pts)
	t := table.NewWriter()
	t.SetOutputMirror(stdout)
	t.SetStyle(table.StyleLight)
	t.AppendHeader(table.Row{"coll", "ranks", "hosts", "bytes", "fastest measured", "us", "model pick", "predicted us", "measured us", "regret"})
	var logSum float64
	var n int
	worst := 0.0
	for _, r := range rows {
		regret := "n/a"
		if !math.IsNaN(r.ModelUs) {
			g := r.Regret()
			regret = fmt.Sprintf("%.0f%%", 100*g)
			logSum += math.Log1p(g)
			n++
			worst = max(worst, g)
		}
		t.AppendRow(table.Row{r.Coll, r.NRanks, r.NHosts, r.Bytes, cfgString(r.Best), fmt.Sprintf("%.1f", r.BestUs),
			cfgString(r.Model), fmt.Sprintf("%.1f", r.PredictedUs), fmt.Sprintf("%.1f", r.ModelUs), regret})
	}
	t.Render()
	writeSwitches(stdout, rows)
	rep := tuner.Evaluate(c, p, pts)
	fmt.Fprintf(stdout, "model picks: geomean regret %.1f%%, max %.0f%% over %d sizes\n", 100*(math.Exp(logSum/float64(max(n, 1)))-1), 100*worst, n)
	fmt.Fprintf(stdout, "model time vs measured over all %d points: median relative error %.1f%%, max %.0f%%\n", rep.Points, 100*rep.MedianRelErr, 100*rep.MaxRelErr)
	return exitOK
}

func cfgString(c tuner.Config) string { return fmt.Sprintf("%s/%s/%dch", c.Algo, c.Proto, c.NCh) }

// writeSwitches prints, per shape, the size ranges over which the model's
// pick and the fastest measured configuration stay the same: where each
// switches algorithm, protocol or channels.
func writeSwitches(w io.Writer, rows []tuner.ChoiceRow) {
	t := table.NewWriter()
	t.SetOutputMirror(w)
	t.SetStyle(table.StyleLight)
	t.AppendHeader(table.Row{"coll", "ranks", "hosts", "model picks", "fastest measured"})
	for i := 0; i < len(rows); {
		j := i
		for j < len(rows) && rows[j].Coll == rows[i].Coll && rows[j].NRanks == rows[i].NRanks && rows[j].NHosts == rows[i].NHosts {
			j++
		}
		group := rows[i:j]
		model := segments(group, func(r tuner.ChoiceRow) string { return cfgString(r.Model) })
		best := segments(group, func(r tuner.ChoiceRow) string { return cfgString(r.Best) })
		t.AppendRow(table.Row{rows[i].Coll, rows[i].NRanks, rows[i].NHosts, model, best})
		i = j
	}
	t.Render()
}

// segments merges consecutive sizes with the same label into ranges, one
// per line: "8-512: Ring/LL/1ch".
func segments(rows []tuner.ChoiceRow, label func(tuner.ChoiceRow) string) string {
	var out string
	for i := 0; i < len(rows); {
		j := i
		for j+1 < len(rows) && label(rows[j+1]) == label(rows[i]) {
			j++
		}
		if out != "" {
			out += "\n"
		}
		out += fmt.Sprintf("%s-%s: %s", results.SizeLabel(rows[i].Bytes), results.SizeLabel(rows[j].Bytes), label(rows[i]))
		i = j + 1
	}
	return out
}

// fitCmd is `tune fit [--output model.json] FILES...`: one alpha-beta model
// per configuration measured (tuner.FitSeries), printed as a table;
// --output writes them as a models file (tuner.Models).
func fitCmd(args []string, stdout, stderr io.Writer) int {
	fs := pflag.NewFlagSet("tune fit", pflag.ContinueOnError)
	fs.SetOutput(stderr)
	out := outputFlag(fs, "write the fitted models (JSON) to this file (default: print them only)")
	force := fs.Bool("force", false, "overwrite the --output file if it exists")
	tags := tagFlag(fs)
	setUsage(fs, stderr, "tune fit [--output FILE] [flags] FILES...",
		"Fits t = alpha + bytes/beta (a second segment past a cache knee) to every\nconfiguration measured in the result files.")
	if code, ok := parseFlags(fs, args, stderr); !ok {
		return code
	}
	if fs.NArg() == 0 {
		fmt.Fprintln(stderr, "tune fit: no input files (give result files: JSONL, CSV, nccl-tests text or JSON)")
		return exitBad
	}
	if *out != "" && !*force {
		if _, err := os.Stat(*out); err == nil {
			fmt.Fprintf(stderr, "tune fit: %s already exists; refusing to overwrite it (give --force)\n", *out)
			return exitBad
		}
	}
	recs, err := readRecords(fs.Args(), *tags)
	if err != nil {
		fmt.Fprintf(stderr, "tune fit: %v\n", err)
		return exitBad
	}
	series := tuner.Collect(recs)
	if len(series) == 0 {
		fmt.Fprintf(stderr, "tune fit: none of the %d records is a measurement with a time (size > 0)\n", len(recs))
		return exitBad
	}
	fits, errs := tuner.FitAll(series)
	for _, err := range errs {
		fmt.Fprintf(stderr, "tune fit: skipped %v\n", err)
	}
	if len(fits) == 0 {
		fmt.Fprintln(stderr, "tune fit: nothing could be fitted")
		return exitBad
	}

	num := func(v float64) string {
		switch {
		case v >= tuner.MaxBetaGBs:
			return "max"
		case math.Abs(v) >= 100:
			return fmt.Sprintf("%.0f", v)
		case math.Abs(v) >= 1:
			return fmt.Sprintf("%.2f", v)
		}
		return fmt.Sprintf("%.3f", v)
	}
	t := table.NewWriter()
	t.SetOutputMirror(stdout)
	t.SetStyle(table.StyleLight)
	t.AppendHeader(table.Row{"coll", "ranks", "hosts", "config", "points", "alpha us", "beta GB/s", "break", "alpha2 us", "beta2 GB/s", "R^2 (log)", "median err", "max err", ""})
	var two, flagged, piecewise int
	for _, f := range fits {
		s := f.Segments[0]
		brk, a2, b2 := "-", "", ""
		switch {
		case f.Key.Auto() && len(f.Segments) > 1:
			piecewise++
			brk = fmt.Sprintf("%d pieces", len(f.Segments))
		case len(f.Segments) > 1:
			two++
			brk, a2, b2 = results.SizeLabel(f.Break()), num(f.Segments[1].AlphaUs), num(f.Segments[1].BetaGBs)
		}
		flag := ""
		if f.Flagged {
			flagged++
			flag = "FLAG"
		}
		t.AppendRow(table.Row{f.Key.Coll, f.Key.NRanks, f.Key.NHosts, f.Key.Config(), f.Points, num(s.AlphaUs), num(s.BetaGBs),
			brk, a2, b2, fmt.Sprintf("%.4f", f.R2), fmt.Sprintf("%.1f%%", 100*f.MedianRelErr), fmt.Sprintf("%.1f%%", 100*f.MaxRelErr), flag})
	}
	t.Render()
	fmt.Fprintf(stdout, "%d fits (%d with two segments, %d auto piecewise), %d flagged (max relative error > %.0f%%), %d series skipped\n",
		len(fits), two, piecewise, flagged, 100*tuner.FlagRelErr, len(errs))
	for _, f := range fits {
		if f.Key.Auto() {
			fmt.Fprintf(stdout, "auto %s: %s (%d pieces)\n", f.Key.Shape, f.Method, len(f.Segments))
		}
	}

	if *out == "" {
		return exitOK
	}
	create := results.Create
	if *force {
		create = results.CreateForce
	}
	w, err := create(*out)
	if err == nil {
		m := tuner.Models{Version: tuner.ModelsVersion, Fits: fits}
		err = settle(w, m.Write(w))
	}
	if err != nil {
		fmt.Fprintf(stderr, "tune fit: writing %s: %v\n", *out, err)
		return exitBad
	}
	fmt.Fprintf(stdout, "wrote %s\n", *out)
	return exitOK
}

// tableCmd is `tune table FILES... --output table.json [--nccl-csv FILE]`: the
// fastest configuration per size of every shape (tuner.BuildTable), printed
// as thresholds and written as the stack's tuning table and NCCL's
// example-tuner CSV.
func tableCmd(args []string, stdout, stderr io.Writer) int {
	fs := pflag.NewFlagSet("tune table", pflag.ContinueOnError)
	fs.SetOutput(stderr)
	out := outputFlag(fs, "write the tuning table (JSON, for GCCL_TUNING_FILE) to this file (default: print it only)")
	csv := fs.String("nccl-csv", "", "also write the table as NCCL's example-tuner configuration, for NCCL_TUNER_CONFIG_FILE (default: none)")
	models := fs.String("models", "", "models file (JSON) written by tune fit --output (default: fit the inputs)")
	tie := fs.String("tie", "2%", "relative difference within which two configurations tie, percent or fraction (2% or 0.02; 0: only the medians' confidence intervals); with --noise off")
	noiseFlag := fs.String("noise", "auto", "run-to-run noise a forced configuration must beat the default by to get a rule: auto (estimated from repeats in the inputs, else the prior "+tuner.DefaultNoisePrior.String()+"), an explicit ADDus+REL% (e.g. 15us+1%), or off (fastest wins, ties by --tie)")
	procs := fs.Int("procs", 0, "processors (cores) of the process that measured, for the built-in default (default: the records' core count)")
	force := fs.Bool("force", false, "overwrite the --output and --nccl-csv files if they exist")
	tags := tagFlag(fs)
	setUsage(fs, stderr, "tune table [--output FILE] [--nccl-csv FILE] [flags] FILES...",
		"Picks the fastest configuration per size of every shape measured into a tuning\ntable (GCCL_TUNING_FILE), and NCCL's example-tuner CSV.")
	if code, ok := parseFlags(fs, args, stderr); !ok {
		return code
	}
	bad := func(format string, a ...any) int {
		fmt.Fprintf(stderr, "tune table: "+format+"\n", a...)
		return exitBad
	}
	if fs.NArg() == 0 {
		return bad("no input files (give result files: JSONL, CSV, nccl-tests text or JSON)")
	}
	margin, err := results.ParseFraction(*tie)
	if err != nil || margin < 0 || margin >= 1 {
		return bad("invalid --tie %q: want a relative margin such as 2%% or 0.02", *tie)
	}
	if margin == 0 {
		margin = -1 // TableOptions: negative is no margin, 0 the default
	}
	for _, f := range []string{*out, *csv} {
		if _, err := os.Stat(f); f != "" && err == nil && !*force {
			return bad("%s already exists; refusing to overwrite it (give --force)", f)
		}
	}
	recs, err := readRecords(fs.Args(), *tags)
	if err != nil {
		return bad("%v", err)
	}
	series := tuner.Collect(recs)
	if len(series) == 0 {
		return bad("none of the %d records is a measurement with a time (size > 0)", len(recs))
	}
	var fits []tuner.Fit
	if *models != "" {
		m, err := tuner.LoadModels(*models)
		if err != nil {
			return bad("%v", err)
		}
		fits = m.Fits
	} else {
		var errs []error
		fits, errs = tuner.FitAll(series)
		for _, err := range errs {
			fmt.Fprintf(stderr, "tune table: no model (competes only at its measured sizes): %v\n", err)
		}
	}
	opt := tuner.TableOptions{TieMargin: margin,
		Comment: fmt.Sprintf("tune table from %s; ties within %s or the medians' 95%% intervals", strings.Join(fs.Args(), " "), *tie)}
	switch strings.ToLower(strings.TrimSpace(*noiseFlag)) {
	case "off":
	case "auto", "":
		n, estimated := tuner.EstimateNoiseOr(series, tuner.DefaultNoisePrior)
		if !estimated {
			fmt.Fprintf(stderr, "tune table: warning: the noise is %s, %s: a single run cannot show a smaller win; set --noise to state your own\n", n, n.Source)
		}
		opt.Noise = &n
	default:
		n, err := tuner.ParseNoise(*noiseFlag)
		if err != nil {
			return bad("invalid --noise: %v", err)
		}
		n.Source = "--noise"
		opt.Noise = &n
	}
	if opt.Noise != nil {
		opt.Comment = fmt.Sprintf("tune table from %s; a rule needs a measured win over the default beyond the noise %s (%s)", strings.Join(fs.Args(), " "), opt.Noise, opt.Noise.Source)
		fmt.Fprintf(stdout, "noise: %s, %s; a forced configuration needs a measured win beyond it (over sqrt(runs)) to displace the default\n", opt.Noise, opt.Noise.Source)
	}
	p, _, err := recordsMachine(recs)
	if *procs > 0 {
		p, err = *procs, nil
	}
	if err != nil {
		fmt.Fprintf(stderr, "tune table: no built-in default to prefer on ties (%v; give --procs)\n", err)
	} else {
		opt.Default = tuner.EmbeddedDefault(recs, tuner.ModelDefault(tuning.DefaultConstants(), p))
	}
	tab, ds, err := tuner.BuildTable(series, fits, opt)
	if err != nil {
		return bad("%v", err)
	}

	bytesOf := func(b int64) string {
		if b == -1 {
			return "inf"
		}
		return strconv.FormatInt(b, 10)
	}
	t := table.NewWriter()
	t.SetOutputMirror(stdout)
	t.SetStyle(table.StyleLight)
	t.AppendHeader(table.Row{"coll", "ranks", "hosts", "from bytes", "to bytes", "choice", "sizes", "tie", "runner-up", "margin", "noise"})
	var notes []string
	for _, d := range ds {
		if d.Skipped != "" {
			what := d.Shape.String()
			if d.Key != (tuner.Key{}) {
				what += " " + d.Key.Config()
			}
			notes = append(notes, fmt.Sprintf("skipped %s: %s", what, d.Skipped))
			continue
		}
		choice := d.Key.Config()
		if !d.Rule {
			choice += " (no rule)"
		}
		sizes := fmt.Sprint(d.Sizes)
		if d.Sizes == 0 {
			sizes = "model"
		}
		tieCol, runner, margin := "", "-", "-"
		if d.Tie() {
			tieCol = fmt.Sprintf("tie %d/%d", d.TieSizes, max(d.Sizes, 1))
		}
		if !math.IsNaN(d.MarginPct) {
			runner, margin = d.RunnerUp.Config(), fmt.Sprintf("%+.1f%%", d.MarginPct)
		}
		noise := "-"
		if !math.IsNaN(d.NoisePct) {
			noise = fmt.Sprintf("%.1f%%", d.NoisePct)
		}
		t.AppendRow(table.Row{d.Shape.Coll, d.Shape.NRanks, d.Shape.NHosts, bytesOf(d.From), bytesOf(d.To), choice, sizes, tieCol, runner, margin, noise})
	}
	t.Render()
	if opt.Noise != nil && len(tab.Rules) == 0 {
		fmt.Fprintln(stdout, "no configuration beat the default by more than the noise at any measured size: the table is empty, and the default stands")
	}
	for _, n := range notes {
		fmt.Fprintln(stdout, n)
	}
	fmt.Fprintf(stdout, "%d rules from %d series, %d models\n", len(tab.Rules), len(series), len(fits))

	write := func(path string, put func(io.Writer) error) error {
		create := results.Create
		if *force {
			create = results.CreateForce
		}
		w, err := create(path)
		if err == nil {
			err = settle(w, put(w))
		}
		if err != nil {
			return fmt.Errorf("writing %s: %w", path, err)
		}
		fmt.Fprintf(stdout, "wrote %s\n", path)
		return nil
	}
	if *out != "" {
		if err := write(*out, tab.WriteJSON); err != nil {
			return bad("%v", err)
		}
	}
	if *csv != "" {
		if err := write(*csv, tab.WriteNCCLCSV); err != nil {
			return bad("%v", err)
		}
	}
	return exitOK
}

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
	fs.StringVar(&lo.backend, "backend", "embedded", "with --live: embedded (gccl's stack) or nccl (libnccl on GPUs)")
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

func pluginCmd(args []string, stdout, stderr io.Writer) int {
	fs := pflag.NewFlagSet("tune plugin", pflag.ContinueOnError)
	fs.SetOutput(stderr)
	out := fs.String("output", tunerplugin.FileName, "where to write the plugin")
	src := fs.Bool("source", false, "print the plugin's C source instead of building it")
	setUsage(fs, stderr, "tune plugin [--output FILE.so] [--source]",
		"Builds gccl's NCCL tuner plugin with the C compiler ($CC, cc or gcc). Run NCCL with\n"+
			"NCCL_TUNER_PLUGIN=FILE.so NCCL_TUNER_CONFIG_FILE=RULES.csv (tune table --nccl-csv):\n"+
			"it applies the first matching rule's algorithm and protocol, and keeps NCCL's\n"+
			"channel count unless the rule sets one; a call no rule matches is left as NCCL\n"+
			"had it. It exports NCCL's tuner interfaces v6 (NCCL 2.30.3 on), v5 and v4.")
	if code, ok := parseFlags(fs, args, stderr); !ok {
		return code
	}
	if fs.NArg() != 0 {
		fmt.Fprintf(stderr, "tune plugin: unexpected arguments %q\n", fs.Args())
		return exitBad
	}
	if *src {
		stdout.Write(tunerplugin.Source())
		return exitOK
	}
	// The output first: a path that cannot be written is refused before
	// the compiler runs. Written beside and renamed (results.File): a
	// process that has the old one loaded keeps it, and a failure leaves
	// nothing behind.
	f, err := results.CreateMode(*out, 0o755)
	if err == nil {
		var so []byte
		if so, err = tunerplugin.Compile(); err == nil {
			_, err = f.Write(so)
		}
		err = settle(f, err)
	}
	if err != nil {
		fmt.Fprintf(stderr, "tune plugin: %v\n", err)
		return exitBad
	}
	fmt.Fprintf(stdout, "wrote %s (NCCL_TUNER_PLUGIN=%s NCCL_TUNER_CONFIG_FILE=rules.csv)\n", *out, *out)
	return exitOK
}
