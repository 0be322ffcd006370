// tune constants: fit the cost model's constants to forced-config sweeps.

package cli

import (
	"fmt"
	"io"
	"os"
	"sort"
	"strings"

	"github.com/jedib0t/go-pretty/v6/table"
	"github.com/spf13/pflag"

	"github.com/gccl/gccl/lib/tuning"
	"github.com/gccl/gccl/tuner"
)

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
