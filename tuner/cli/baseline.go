package cli

import (
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/spf13/pflag"

	"github.com/gccl/gccl/ci"
	"github.com/gccl/gccl/results"
)

// baselineCmd is `tune baseline --output FILE RESULTS...`: records a new baseline
// for `tune gate` from result files, on purpose. It checks that the results
// can serve (every record has a time, none reports wrong data), thins
// per-iteration samples to what the gate uses, writes one JSONL file and
// says what it holds.
func baselineCmd(args []string, stdout, stderr io.Writer) int {
	fs := pflag.NewFlagSet("tune baseline", pflag.ContinueOnError)
	fs.SetOutput(stderr)
	out := outputFlag(fs, "the baseline file to write (JSONL); required")
	force := fs.Bool("force", false, "replace the --output file if it exists (refreshing a baseline)")
	iters := fs.Int("iter-samples", 100, "per-iteration samples kept per record, evenly spaced order statistics (what the gate uses); 0 drops them and keys are judged on runs")
	tags := tagFlag(fs)
	setUsage(fs, stderr, "tune baseline --output FILE [--force] RESULTS...",
		"Writes the result files (several runs of one sweep: perf --out, -N cycles,\ntune sweep) as the baseline that tune gate compares candidates with.")
	if code, ok := parseFlags(fs, args, stderr); !ok {
		return code
	}
	bad := func(format string, a ...any) int {
		fmt.Fprintf(stderr, "tune baseline: "+format+"\n", a...)
		return exitBad
	}
	if *out == "" {
		return bad("--output FILE is required: the baseline to write")
	}
	if fs.NArg() == 0 {
		return bad("no result files (give the runs the baseline is made of)")
	}
	if *iters < 0 {
		return bad("--iter-samples %d: want 0 (drop them) or more", *iters)
	}
	recs, err := readRecords(fs.Args(), *tags)
	if err != nil {
		return bad("%v", err)
	}
	runs := map[ci.Key]int{}
	refs := 0
	for i, r := range recs {
		if !(r.TimeUs > 0) {
			return bad("%s: record %s has no time", where(r, i), ci.KeyOf(r))
		}
		if r.Wrong > 0 {
			return bad("%s: record %s reports %d wrong elements: a baseline must come from a correct run", where(r, i), ci.KeyOf(r), r.Wrong)
		}
		if r.RefCopyGBps > 0 {
			refs++
		}
		switch {
		case *iters == 0:
			recs[i].IterTimesUs = nil
		case len(r.IterTimesUs) > *iters:
			recs[i].IterTimesUs = results.Thin(r.IterTimesUs, *iters)
		}
		runs[ci.KeyOf(r)]++
	}
	create := results.Create
	if *force {
		create = results.CreateForce
	}
	f, err := create(*out)
	if err == nil {
		w := results.NewJSONLWriter(f)
		for _, r := range recs {
			if err = w.Write(r); err != nil {
				break
			}
		}
		if err == nil {
			err = w.Flush()
		}
		err = settle(f, err)
	}
	if err != nil {
		return bad("writing %s: %v", *out, err)
	}

	counts := slices.Sorted(func(yield func(int) bool) {
		for _, n := range runs {
			if !yield(n) {
				return
			}
		}
	})
	fmt.Fprintf(stdout, "wrote %s: %d records, %d keys, %d-%d runs per key\n", *out, len(recs), len(runs), counts[0], counts[len(counts)-1])
	fmt.Fprintf(stdout, "measured on: %s\n", strings.Join(machines(recs), "; "))
	if counts[0] < 5 {
		fmt.Fprintln(stdout, "note: fewer than 5 runs of some keys; the gate then tests per-iteration samples (if recorded) or the plain ratio. Several runs (-N 5, or repeated sweeps) let it test run-to-run noise.")
	}
	if refs < len(recs) {
		fmt.Fprintf(stdout, "note: %d of %d records lack ref_copy_gbps: this baseline cannot be used with --normalize copy\n", len(recs)-refs, len(recs))
	}
	fmt.Fprintf(stdout, "gate a run against it: tune gate --baseline %s --candidate RESULTS...\n", *out)
	return exitOK
}

// where names a record's origin for messages.
func where(r results.Record, i int) string {
	if r.Source != "" {
		return r.Source
	}
	return fmt.Sprintf("record %d", i+1)
}

// machines lists the distinct machines and tools the records come from.
func machines(recs []results.Record) []string {
	seen := map[string]bool{}
	var out []string
	for _, r := range recs {
		s := r.Tool
		if r.GitRev != "" {
			s += " @" + r.GitRev
		}
		if r.CPU != "" {
			s += fmt.Sprintf(", %s, %d cores", r.CPU, r.Cores)
		}
		if r.Host != "" {
			s += " (" + r.Host + ")"
		}
		if !seen[s] {
			seen[s] = true
			out = append(out, s)
		}
	}
	return out
}
