package cli

import (
	"fmt"
	"io"
	"math"
	"strings"

	"github.com/spf13/pflag"

	"github.com/gccl/gccl/ci"
	"github.com/gccl/gccl/history"
	"github.com/gccl/gccl/results"
)

// gateHistory checks tune gate's flags for --history and runs it.
func gateHistory(fs *pflag.FlagSet, db string, base, cand []string, thr, metric, norm, stat string, z float64, f history.Filter, tags []string, jsonOut, md, junit string, stdout, stderr io.Writer) int {
	bad := func(format string, a ...any) int {
		fmt.Fprintf(stderr, "tune gate: "+format+"\n", a...)
		return ci.ExitBadInput
	}
	switch {
	case len(base) > 0:
		return bad("--history judges the candidate against the history's series: drop --baseline")
	case len(cand) == 0:
		return bad("--history needs --candidate FILES: the run to judge")
	case md != "" || junit != "":
		return bad("--markdown and --junit report a baseline comparison; with --history use --json")
	case !(z > 0) || math.IsInf(z, 0):
		return bad("--z %v: want a positive number of noise units, e.g. 5", z)
	}
	h := historyJudge{db: db, filter: f, z: z}
	var err error
	if h.metric, err = ci.ParseMetric(metric); err != nil {
		return bad("--metric: %v", err)
	}
	if h.norm, err = ci.ParseNormalization(norm); err != nil {
		return bad("--normalize: %v", err)
	}
	if h.stat, err = ci.ParseStat(stat); err != nil {
		return bad("--stat: %v", err)
	}
	if fs.Changed("threshold") {
		if h.floor, err = results.ParseFraction(thr); err != nil || h.floor < 0 {
			return bad("--threshold %q: with --history one percent or fraction, the least change a regression needs beside z (size bands are for baselines)", thr)
		}
	}
	return runHistoryGate(h, cand, tags, jsonOut, stdout, stderr)
}

// gateCmd is `tune gate --baseline FILES --candidate FILES`: the regression
// gate (package ci). Exit 0 pass, 1 regression, 2 bad input.
func gateCmd(args []string, stdout, stderr io.Writer) int {
	fs := pflag.NewFlagSet("tune gate", pflag.ContinueOnError)
	fs.SetOutput(stderr)
	base := fs.StringArray("baseline", nil, "baseline result files (JSONL, CSV, nccl-tests text or -J JSON, go test -bench output), required; several may follow the flag")
	cand := fs.StringArray("candidate", nil, "candidate result files, required; several may follow the flag")
	thr := fs.String("threshold", "5%", "largest change in the worse direction that passes, percent or fraction (5%, 0.05), or size bands LO-HI=PCT in bytes with an optional default, e.g. 8B-64K=15%,64K-=5% (LO inclusive, HI exclusive)")
	metric := fs.String("metric", "busbw", "what is compared: busbw, GB/s (higher is better), or time, us per op (lower is better)")
	minSize := fs.String("min-size", "", "leave out sizes below this many bytes, K/M/G suffixes, e.g. 1K (default: every size)")
	norm := fs.String("normalize", "none", "copy: divide busbw by each run's ref_copy_gbps, GB/s (multiply time by it), so machines of different speeds compare; none: as measured")
	all := fs.Bool("all", false, "list unchanged keys in the table too")
	requireAll := fs.Bool("require-all", false, "fail when a key is on one side only (default: list such keys)")
	alpha := fs.Float64("alpha", 0.05, "significance level of the Mann-Whitney U test, a probability")
	md := fs.String("markdown", "", "write the report as Markdown to this file, overwritten, for PR comments and $GITHUB_STEP_SUMMARY (default: none)")
	junit := fs.String("junit", "", "write the report as JUnit XML to this file, overwritten, one test case per key (default: none)")
	jsonOut := fs.String("json", "", "write the report as JSON to this file, overwritten (default: none); with --history JSON Lines, a key a line")
	hist := fs.String("history", "", "judge the candidate against each key's series in this history database (tune history add) instead of a baseline: regression when z noise units (--z) and --threshold worse than the newest segment's median (default: none, gate against --baseline)")
	zLimit := fs.Float64("z", 5, "with --history: the noise units (robust standard deviations of one run) a regression needs (conbench's z-score test)")
	histStat := fs.String("stat", "auto", "with --history: a run's value of a key: median, p5 (the 5th percentile of its iterations), min (its fastest iteration) or auto (per key, whichever series has the least run-to-run noise); the candidate is read the same way")
	histBranch := fs.String("branch", "", "with --history: only the runs of this branch (default: every branch)")
	histMachine := fs.String("machine", "", "with --history: only the runs of this machine (default: every machine)")
	tags := tagFlag(fs)
	fs.Usage = func() {
		fmt.Fprint(stderr, `usage: tune gate --baseline FILES --candidate FILES [flags]
       tune gate --history DB --candidate FILES [flags]

Compares the candidate with the baseline key by key (collective, type, op,
algorithm, protocol, channels, buffer size, ranks, hosts, size, placement).
A key regresses when its median moved beyond the threshold in the worse
direction AND a Mann-Whitney U test finds the sides differ (repeated runs, -N
cycles or per-iteration samples); without repeats, on the plain ratio.
With --history, each key of the candidate is judged against its series in
the history instead: the newest segment's median (after the series' change
points) and the series' noise; a regression is --z noise units worse.
Exit status: 0 pass, 1 regression, 2 bad input.

flags:
`)
		fs.PrintDefaults()
	}
	if code, ok := parseFlags(fs, fileLists(args, "--baseline", "--candidate"), stderr); !ok {
		return code
	}
	bad := func(format string, a ...any) int {
		fmt.Fprintf(stderr, "tune gate: "+format+"\n", a...)
		return ci.ExitBadInput
	}
	if fs.NArg() > 0 {
		return bad("unexpected argument %q: give files after --baseline or --candidate", fs.Arg(0))
	}
	if *hist != "" {
		return gateHistory(fs, *hist, *base, *cand, *thr, *metric, *norm, *histStat, *zLimit, history.Filter{Branch: *histBranch, Machine: *histMachine}, *tags, *jsonOut, *md, *junit, stdout, stderr)
	}
	if len(*base) == 0 || len(*cand) == 0 {
		return bad("give both --baseline FILES and --candidate FILES (or --history DB and --candidate FILES)")
	}
	opt := ci.DefaultOptions()
	var err error
	if opt.Thresholds, err = ci.ParseThresholds(*thr); err != nil {
		return bad("--threshold: %v", err)
	}
	if opt.Metric, err = ci.ParseMetric(*metric); err != nil {
		return bad("--metric: %v", err)
	}
	if opt.Normalize, err = ci.ParseNormalization(*norm); err != nil {
		return bad("--normalize: %v", err)
	}
	if opt.MinSize, err = ci.ParseSize(*minSize); err != nil {
		return bad("--min-size: %v", err)
	}
	opt.RequireAll, opt.Alpha = *requireAll, *alpha
	baseRecs, err := readRecords(*base, *tags)
	if err != nil {
		return bad("baseline: %v", err)
	}
	candRecs, err := readRecords(*cand, *tags)
	if err != nil {
		return bad("candidate: %v", err)
	}
	rep, err := ci.Compare(baseRecs, candRecs, opt)
	if err != nil {
		return bad("%v", err)
	}
	if err := ci.WriteText(stdout, rep, *all); err != nil {
		return bad("%v", err)
	}
	for _, o := range []struct {
		path  string
		write func(io.Writer, *ci.Report) error
	}{{*md, ci.WriteMarkdown}, {*junit, ci.WriteJUnit}, {*jsonOut, ci.WriteJSON}} {
		if o.path == "" {
			continue
		}
		if err := writeFile(o.path, func(w io.Writer) error { return o.write(w, rep) }); err != nil {
			return bad("%v", err)
		}
	}
	return rep.ExitCode()
}

// fileLists lets a flag take several files: "--baseline a b --candidate c"
// becomes "--baseline a --baseline b --candidate c", so a shell glob after
// the flag works. A list ends at the next flag or "--".
func fileLists(args []string, flags ...string) []string {
	var out []string
	cur := ""
	for i, a := range args {
		switch {
		case a == "--":
			return append(out, args[i:]...)
		case strings.HasPrefix(a, "-"):
			cur = ""
			for _, f := range flags {
				if a == f || strings.HasPrefix(a, f+"=") {
					cur = f
				}
			}
			out = append(out, a)
			if cur != "" && a == cur {
				cur += "?" // the flag's own value comes next
			}
			continue
		}
		switch {
		case strings.HasSuffix(cur, "?"):
			cur = strings.TrimSuffix(cur, "?")
			out = append(out, a)
		case cur != "":
			out = append(out, cur, a)
		default:
			out = append(out, a)
		}
	}
	return out
}

// writeFile writes path with put, replacing it.
func writeFile(path string, put func(io.Writer) error) error {
	f, err := results.CreateForce(path)
	if err != nil {
		return err
	}
	if err := settle(f, put(f)); err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	return nil
}

// settle puts a result file in place when it was written without error
// (err), or discards it: the path holds a whole file or what it held.
func settle(f *results.File, err error) error {
	if err != nil {
		f.Abort()
		return err
	}
	return f.Commit()
}
