// tune table: the fastest configuration per size into a tuning table.

package cli

import (
	"fmt"
	"io"
	"math"
	"os"
	"strconv"
	"strings"

	"github.com/jedib0t/go-pretty/v6/table"
	"github.com/spf13/pflag"

	"github.com/gccl/gccl/lib/tuning"
	"github.com/gccl/gccl/results"
	"github.com/gccl/gccl/tuner"
)

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
