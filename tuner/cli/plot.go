package cli

import (
	"fmt"
	"io"
	"path/filepath"
	"strings"

	"github.com/spf13/pflag"

	"github.com/gccl/gccl/ci"
	"github.com/gccl/gccl/lib/tuning"
	"github.com/gccl/gccl/plots"
	"github.com/gccl/gccl/results"
	"github.com/gccl/gccl/tuner"
)

// plotKinds are the figures `tune plot` draws.
const plotKinds = "busbw, algbw, time, norm, winners"

// plotCmd is `tune plot --output FILE [--kind K] FILES...`: a figure of
// result files (package plots), written as PNG, SVG or PDF by the extension
// of --output.
//
//   - busbw, algbw, time, norm: one curve per configuration (--by), with
//     fitted models dashed over them (--model); with --baseline, the
//     inputs are the candidate and a ratio panel compares them.
//   - winners: the fastest configuration at each measured size of every
//     shape, and the tuning table's choices and thresholds (--table, or
//     the table tune table would build from the inputs).
func plotCmd(args []string, stdout, stderr io.Writer) int {
	fs := pflag.NewFlagSet("tune plot", pflag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.SortFlags = false
	out := outputFlag(fs, "the image to write, required: .png, .svg or .pdf by its extension")
	kind := fs.String("kind", "busbw", "what to draw: "+plotKinds+" (norm: busBW / the machine's copy bandwidth)")
	by := fs.String("by", "", "group curves by these fields, comma-separated (default: every field that tells configurations apart); fields: "+plots.FieldNames())
	where := fs.StringArray("where", nil, "plot only records whose fields match, k=v[,k=v] (v1|v2: either); repeatable (default: every record)")
	placement := fs.String("placement", results.OutOfPlace, "which measurements: out-of-place, in-place or both")
	median := fs.Bool("median", false, "plot median iteration times where recorded (what tune fit fits) instead of the reported mean")
	model := fs.String("model", "", "models file written by tune fit --output: draw the fitted curves dashed over the points; winners: the models the table is built from (default: none)")
	baseline := fs.StringArray("baseline", nil, "compare: the baseline result files, FILES being the candidate; a ratio panel shows candidate/baseline (default: no comparison)")
	threshold := fs.String("threshold", "5%", "comparison: half-width of the shaded band around ratio 1, percent or fraction (5% or 0.05)")
	tablePath := fs.String("table", "", "winners: the tuning table (JSON, written by tune table --output) whose choices and thresholds to draw, or none (default: build it from the inputs as tune table does)")
	procs := fs.Int("procs", 0, "winners without --table: processors of the process that measured, for the built-in default (default: the records' core count)")
	title := fs.String("title", "", "the figure's title (default: from the records)")
	size := fs.String("size", "8x5", "image size WIDTHxHEIGHT, in inches or with a unit: cm, mm, pt, px")
	dpi := fs.Int("dpi", plots.DefaultPage.DPI, "PNG resolution, dots per inch")
	force := fs.Bool("force", false, "overwrite the --output file if it exists")
	tags := tagFlag(fs)
	setUsage(fs, stderr, "tune plot --output FILE [flags] FILES...",
		"Draws result files: busBW, algBW, time or normalised curves per configuration,\nfitted models, a comparison with a baseline, or the winners of every size.")
	if code, ok := parseFlags(fs, args, stderr); !ok {
		return code
	}
	bad := func(format string, a ...any) int {
		fmt.Fprintf(stderr, "tune plot: "+format+"\n", a...)
		return exitBad
	}
	if *out == "" {
		return bad("no --output image given (.png, .svg or .pdf)")
	}
	if fs.NArg() == 0 {
		return bad("no input files (give result files: JSONL, CSV, nccl-tests text or JSON)")
	}
	format, err := plots.FormatOf(*out)
	if err != nil {
		return bad("%v", err)
	}
	if err := plots.CheckDPI(*dpi); err != nil {
		return bad("invalid --dpi: %v", err)
	}
	page := plots.Page{DPI: *dpi}
	if page.Width, page.Height, err = plots.ParseSize(*size, *dpi); err != nil {
		return bad("invalid --size: %v", err)
	}
	var o plots.Options
	o.Title = *title
	o.Median = *median
	switch *placement {
	case results.OutOfPlace, results.InPlace, "both":
		o.Placement = *placement
	default:
		return bad("invalid --placement %q: want out-of-place, in-place or both", *placement)
	}
	if *by != "" {
		if o.By, err = plots.ParseFields(*by); err != nil {
			return bad("invalid --by: %v", err)
		}
	}
	filter, err := plots.ParseFilter(strings.Join(*where, ","))
	if err != nil {
		return bad("invalid --where: %v", err)
	}
	// The gate's thresholds, parsed as tune gate parses them: a
	// comparison's ratio panel is the gate's (compareFigure).
	th, err := ci.ParseThresholds(*threshold)
	if err != nil {
		return bad("invalid --threshold: %v", err)
	}
	winners := strings.EqualFold(*kind, "winners")
	if !winners {
		if o.Metric, err = plots.ParseMetric(*kind); err != nil {
			return bad("invalid --kind %q: valid kinds are %s", *kind, plotKinds)
		}
	}
	switch {
	case winners && len(*baseline) > 0:
		return bad("--baseline compares curves; it does not go with --kind winners")
	case !winners && *tablePath != "":
		return bad("--table goes with --kind winners")
	}
	var fits []tuner.Fit
	if *model != "" {
		m, err := tuner.LoadModels(*model)
		if err != nil {
			return bad("%v", err)
		}
		fits = m.Fits
	}
	recs, err := readRecords(fs.Args(), *tags)
	if err != nil {
		return bad("%v", err)
	}
	if recs = filter.Apply(recs); len(recs) == 0 {
		return bad("no record passes --where %s", strings.Join(*where, ","))
	}

	var fig *plots.Figure
	switch {
	case winners:
		fig, err = winnerFigure(recs, fits, *tablePath, *procs, *title, stderr)
	case len(*baseline) > 0:
		var base []results.Record
		if base, err = readRecords(*baseline, *tags); err != nil {
			return bad("%v", err)
		}
		if base = filter.Apply(base); len(base) == 0 {
			return bad("no baseline record passes --where %s", strings.Join(*where, ","))
		}
		if len(fits) > 0 {
			fmt.Fprintln(stderr, "tune plot: --model is not drawn on a comparison")
		}
		fig, err = compareFigure(plots.Set{Name: setName(*baseline), Records: base}, plots.Set{Name: setName(fs.Args()), Records: recs}, o, th)
	default:
		if len(fits) > 0 {
			o.Models = fitModels(fits)
		}
		fig, err = plots.CurvesFigure(recs, o)
	}
	if err != nil {
		return bad("%v", err)
	}
	for _, w := range fig.Warnings {
		fmt.Fprintf(stderr, "tune plot: note: %s\n", w)
	}
	create := results.Create
	if *force {
		create = results.CreateForce
	}
	f, err := create(*out)
	if err == nil {
		err = settle(f, plots.Write(f, format, fig, page)) // no half-written image
	}
	if err != nil {
		return bad("writing %s: %v", *out, err)
	}
	what := strings.ToUpper(format)
	if format == "png" {
		w, h := page.Pixels()
		what = fmt.Sprintf("%dx%d PNG", w, h)
	}
	fmt.Fprintf(stdout, "wrote %s (%s)\n", *out, what)
	return exitOK
}

// winnerFigure builds the winner map of recs: the table from tablePath, or
// "none", or (empty) the table tune table builds from recs and fits (the
// inputs fitted when fits is empty).
func winnerFigure(recs []results.Record, fits []tuner.Fit, tablePath string, procs int, title string, stderr io.Writer) (*plots.Figure, error) {
	series := tuner.Collect(recs)
	maps, shapes := winnerMaps(series)
	o := plots.WinnerOptions{Title: title, Subtitle: plots.Title(recs)}
	switch strings.ToLower(tablePath) {
	case "none":
	case "":
		if len(fits) == 0 {
			fits, _ = tuner.FitAll(series)
		}
		opt := tuner.TableOptions{}
		p, _, err := recordsMachine(recs)
		if procs > 0 {
			p, err = procs, nil
		}
		if err == nil {
			opt.Default = tuner.EmbeddedDefault(recs, tuner.ModelDefault(tuning.DefaultConstants(), p))
		} else {
			fmt.Fprintf(stderr, "tune plot: no built-in default to prefer on ties (%v; give --procs)\n", err)
		}
		_, ds, err := tuner.BuildTable(series, fits, opt)
		if err != nil {
			return nil, err
		}
		for i := range maps {
			maps[i].Table = decisionBands(ds, shapes[i])
		}
		o.Table = "built from the inputs as tune table builds it"
	default:
		tab, err := tuning.LoadTable(tablePath)
		if err != nil {
			return nil, err
		}
		for i := range maps {
			maps[i].Table = tableBands(tab, shapes[i])
		}
		o.Table = filepath.Base(tablePath)
	}
	return plots.WinnersFigure(maps, o)
}

// setName names a comparison side by its files' base names, tags dropped.
func setName(files []string) string {
	names := make([]string, len(files))
	for i, f := range files {
		file, _ := splitTags(f)
		names[i] = filepath.Base(file)
	}
	return strings.Join(names, "+")
}
