package perf

import (
	"fmt"
	"os"

	"github.com/gccl/gccl/plots"
	"github.com/gccl/gccl/results"
)

// --plot FILE: the busBW curve of the run just done, one curve per
// configuration swept, drawn from the run's own records (package plots)
// once the run is over. The format is FILE's extension (PNG, SVG, PDF).

// validatePlot checks --plot's file name when the command line is parsed.
func validatePlot(o *Options) error {
	if o.Plot == "" {
		return nil
	}
	if _, err := plots.FormatOf(o.Plot); err != nil {
		return usagef("invalid --plot: %v", err)
	}
	return nil
}

// checkPlotFile refuses, before anything is measured, a --plot file that
// exists without --force: a long run must not end unable to write it.
func checkPlotFile(o *Options) error {
	if o.Plot == "" || o.Force {
		return nil
	}
	if _, err := os.Stat(o.Plot); err == nil {
		return fmt.Errorf("%s already exists; refusing to overwrite it: %w (pass --force to overwrite it)", o.Plot, results.ErrExists)
	}
	return nil
}

// plotIterSamples bounds the per-iteration times a record keeps for the
// plot's interquartile band: a long --precision run has many, and 100
// evenly spaced order statistics give the same quartiles.
const plotIterSamples = 100

// keepForPlot keeps a record for the plot, its per-iteration times
// thinned.
func (e *engine) keepForPlot(r results.Record) {
	if e.o.Plot == "" {
		return
	}
	r.IterTimesUs = results.Thin(r.IterTimesUs, plotIterSamples)
	e.plotRecs = append(e.plotRecs, r)
}

// writePlot draws the kept records to the --plot file.
func (e *engine) writePlot() error {
	if e.o.Plot == "" {
		return nil
	}
	format, err := plots.FormatOf(e.o.Plot)
	if err != nil {
		return err
	}
	fig, err := plots.CurvesFigure(e.plotRecs, plots.Options{CurveOptions: plots.CurveOptions{Metric: plots.BusBW}})
	if err != nil {
		return fmt.Errorf("--plot %s: %w", e.o.Plot, err)
	}
	create := results.Create
	if e.o.Force {
		create = results.CreateForce
	}
	f, err := create(e.o.Plot)
	if err != nil {
		return fmt.Errorf("--plot: %w", err)
	}
	defer f.Abort() // no half-written image
	if err := plots.Write(f, format, fig, plots.DefaultPage); err != nil {
		return fmt.Errorf("--plot %s: %w", e.o.Plot, err)
	}
	return f.Commit()
}
