// Package cli is cmd/tune's command line: flag parsing, files in and out,
// and tables printed; the work is in package tuner.
package cli

import (
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"sort"

	"github.com/jedib0t/go-pretty/v6/table"
	"github.com/spf13/pflag"

	"github.com/gccl/gccl/lib/tuning"
	"github.com/gccl/gccl/results"
	"github.com/gccl/gccl/tuner"
)

// Usage lists the subcommands.
const Usage = `usage: tune <command> [flags] FILES...

commands:
  constants   fit the built-in cost model's constants to forced-config sweeps
  choices     compare the cost model's picks with the fastest measured configs

Run "tune <command> --help" for a command's flags.
`

// Exit codes: 0 success, 2 bad input or usage.
const (
	exitOK  = 0
	exitBad = 2
)

// Run runs one subcommand.
func Run(args []string, stdout, stderr io.Writer) int {
	switch args[0] {
	case "constants":
		return constants(args[1:], stdout, stderr)
	case "choices":
		return choices(args[1:], stdout, stderr)
	case "-h", "--help", "help":
		fmt.Fprint(stdout, Usage)
		return exitOK
	}
	fmt.Fprintf(stderr, "tune: unknown command %q\n\n%s", args[0], Usage)
	return exitBad
}

func constants(args []string, stdout, stderr io.Writer) int {
	fs := pflag.NewFlagSet("tune constants", pflag.ContinueOnError)
	fs.SetOutput(stderr)
	out := fs.StringP("out", "o", "", "write the fitted constants (JSON, for GCCL_MODEL_FILE) to this file")
	procs := fs.Int("procs", 0, "processors of the process that measured (default: the records' core count)")
	start := fs.String("start", "", "constants file to start from (default: the built-in constants)")
	machine := fs.String("machine", "", "text for the constants' machine field (default: the records' CPU and cores)")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, pflag.ErrHelp) {
			return exitOK
		}
		return exitBad
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
	fitted, rep, err := tuner.FitConstants(c, p, pts)
	if err != nil {
		fmt.Fprintf(stderr, "tune constants: %v\n", err)
		return exitBad
	}
	if *machine != "" {
		desc = *machine
	}
	fitted.Machine = desc
	fitted.Method = fmt.Sprintf("tune constants: Nelder-Mead on squared log(predicted/measured) over %d out-of-place forced-config points (%s), %d processors", len(pts), shapes(pts), p)
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
	model := fs.String("model", "", "constants file (default: the built-in constants)")
	procs := fs.Int("procs", 0, "processors of the process that measured (default: the records' core count)")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, pflag.ErrHelp) {
			return exitOK
		}
		return exitBad
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
