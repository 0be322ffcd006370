// tune profiler: build (or print) gccl's NCCL profiler plugin.

package cli

import (
	"errors"
	"fmt"
	"io"
	"sort"
	"strings"

	"github.com/spf13/pflag"

	"github.com/gccl/gccl/lib/nccl/profplugin"
	"github.com/gccl/gccl/lib/tef"
	"github.com/gccl/gccl/results"
)

func profilerCmd(args []string, stdout, stderr io.Writer) int {
	fs := pflag.NewFlagSet("tune profiler", pflag.ContinueOnError)
	fs.SetOutput(stderr)
	out := fs.String("output", profplugin.FileName, "where to write the plugin")
	src := fs.Bool("source", false, "print the plugin's C source instead of building it")
	merge := fs.String("merge", "", "instead of building: merge the per-rank trace files given as arguments into this file, checked against the format's rules")
	setUsage(fs, stderr, "tune profiler [--output FILE.so] [--source] | --merge OUT.json RANKFILE.json...",
		"Builds gccl's NCCL profiler plugin with the C compiler ($CC, cc or gcc). Run NCCL with\n"+
			"NCCL_PROFILER_PLUGIN=FILE.so: each rank writes its collectives, proxy operations and\n"+
			"steps, and kernel channels as a Trace Event Format file (Perfetto, chrome://tracing)\n"+
			"when its communicator is destroyed. "+profplugin.EnvOutput+" names the file (%r rank,\n"+
			"%p pid, %h host, %n communicator); "+profplugin.EnvMask+" chooses the events (group,\n"+
			"coll, p2p, proxyop, proxystep, kernelch, all); "+profplugin.EnvEvents+" is the buffer\n"+
			"per communicator. It exports NCCL's profiler interfaces v6 (NCCL 2.29 on), v5 and v4.\n"+
			"--merge joins the ranks' files into one trace on one clock.")
	if code, ok := parseFlags(fs, args, stderr); !ok {
		return code
	}
	if *merge != "" {
		return mergeTraces(*merge, fs.Args(), stdout, stderr)
	}
	if fs.NArg() != 0 {
		fmt.Fprintf(stderr, "tune profiler: unexpected arguments %q\n", fs.Args())
		return exitBad
	}
	if *src {
		stdout.Write(profplugin.Source())
		return exitOK
	}
	if err := writeSharedObject(*out, profplugin.CompileFromEnv); err != nil {
		fmt.Fprintf(stderr, "tune profiler: %v\n", err)
		return exitBad
	}
	fmt.Fprintf(stdout, "wrote %s (NCCL_PROFILER_PLUGIN=%s %s=trace-r%%r.json)\n", *out, *out, profplugin.EnvOutput)
	return exitOK
}

// mergeTraces is tune profiler --merge: the plugin's per-rank files into
// one trace, which must keep the format's rules.
func mergeTraces(out string, paths []string, stdout, stderr io.Writer) int {
	if len(paths) == 0 {
		fmt.Fprintln(stderr, "tune profiler --merge: no trace files to merge (the plugin's per-rank files)")
		return exitBad
	}
	files := make([]*tef.File, len(paths))
	for i, p := range paths {
		var err error
		if files[i], err = tef.ReadFile(p); err != nil {
			fmt.Fprintf(stderr, "tune profiler --merge: %v\n", err)
			return exitBad
		}
	}
	merged, sum, err := profplugin.Merge(files)
	if err == nil {
		if errs := tef.Validate(merged); errs != nil {
			err = fmt.Errorf("the merged trace breaks the format's rules: %w", errors.Join(errs...))
		}
	}
	if err == nil {
		err = tef.WriteFile(out, merged)
	}
	if err != nil {
		fmt.Fprintf(stderr, "tune profiler --merge: %v\n", err)
		return exitBad
	}
	cats := map[string]int{}
	for _, e := range merged.TraceEvents {
		if e.Ph == "X" {
			cats[e.Cat]++
		}
	}
	names := make([]string, 0, len(cats))
	for c := range cats {
		names = append(names, fmt.Sprintf("%s %d", c, cats[c]))
	}
	sort.Strings(names)
	fmt.Fprintf(stdout, "wrote %s: %d files, %d ranks, %d events (%s)\n", out, sum.Files, sum.Ranks, sum.Events, strings.Join(names, ", "))
	for _, p := range sum.Problems {
		fmt.Fprintf(stdout, "  %s\n", p)
	}
	return exitOK
}

// writeSharedObject writes what compile builds to out. The output is
// opened first: a path that cannot be written is refused before the
// compiler runs. Written beside and renamed (results.File): a process that
// has the old one loaded keeps it, and a failure leaves nothing behind.
func writeSharedObject(out string, compile func() ([]byte, error)) error {
	f, err := results.CreateMode(out, 0o755)
	if err != nil {
		return err
	}
	so, err := compile()
	if err == nil {
		_, err = f.Write(so)
	}
	return settle(f, err)
}
