// tune fit: an alpha-beta model per configuration measured.

package cli

import (
	"fmt"
	"io"
	"math"
	"os"

	"github.com/jedib0t/go-pretty/v6/table"
	"github.com/spf13/pflag"

	"github.com/gccl/gccl/results"
	"github.com/gccl/gccl/tuner"
)

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
