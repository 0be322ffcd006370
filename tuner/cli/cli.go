// Package cli is cmd/tune's command line: flag parsing, files in and out,
// and tables printed; the work is in package tuner.
package cli

import (
	"fmt"
	"io"
	"strings"

	"github.com/gccl/gccl/perf"
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
  report      one self-contained HTML page of result files: curves, every key's series, the gate's table
  plugin      build gccl's NCCL tuner plugin (a .so for NCCL_TUNER_PLUGIN that applies table --nccl-csv)
  profiler    build gccl's NCCL profiler plugin (a .so for NCCL_PROFILER_PLUGIN that writes per-rank traces)
  history     keep every run per commit in one SQLite file: add, list, export, import, changes
  trace       see inside a collective: a step timeline's busy and waiting time, stragglers, critical path, timeline plot

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
	case "report":
		return reportCmd(args[1:], stdout, stderr)
	case "plugin":
		return pluginCmd(args[1:], stdout, stderr)
	case "profiler":
		return profilerCmd(args[1:], stdout, stderr)
	case "history":
		return historyCmd(args[1:], stdout, stderr)
	case "trace":
		return traceCmd(args[1:], stdout, stderr)
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
