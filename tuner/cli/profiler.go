// tune profiler: build (or print) gccl's NCCL profiler plugin.

package cli

import (
	"fmt"
	"io"

	"github.com/spf13/pflag"

	"github.com/gccl/gccl/lib/nccl/profplugin"
	"github.com/gccl/gccl/results"
)

func profilerCmd(args []string, stdout, stderr io.Writer) int {
	fs := pflag.NewFlagSet("tune profiler", pflag.ContinueOnError)
	fs.SetOutput(stderr)
	out := fs.String("output", profplugin.FileName, "where to write the plugin")
	src := fs.Bool("source", false, "print the plugin's C source instead of building it")
	setUsage(fs, stderr, "tune profiler [--output FILE.so] [--source]",
		"Builds gccl's NCCL profiler plugin with the C compiler ($CC, cc or gcc). Run NCCL with\n"+
			"NCCL_PROFILER_PLUGIN=FILE.so: each rank writes its collectives, proxy operations and\n"+
			"steps, and kernel channels as a Trace Event Format file (Perfetto, chrome://tracing)\n"+
			"when its communicator is destroyed. "+profplugin.EnvOutput+" names the file (%r rank,\n"+
			"%p pid, %h host, %n communicator); "+profplugin.EnvMask+" chooses the events (group,\n"+
			"coll, p2p, proxyop, proxystep, kernelch, all); "+profplugin.EnvEvents+" is the buffer\n"+
			"per communicator. It exports NCCL's profiler interfaces v6 (NCCL 2.29 on), v5 and v4.")
	if code, ok := parseFlags(fs, args, stderr); !ok {
		return code
	}
	if fs.NArg() != 0 {
		fmt.Fprintf(stderr, "tune profiler: unexpected arguments %q\n", fs.Args())
		return exitBad
	}
	if *src {
		stdout.Write(profplugin.Source())
		return exitOK
	}
	// As tune plugin: the output is checked before the compiler runs, and
	// written beside and renamed.
	f, err := results.CreateMode(*out, 0o755)
	if err == nil {
		var so []byte
		if so, err = profplugin.CompileFromEnv(); err == nil {
			_, err = f.Write(so)
		}
		err = settle(f, err)
	}
	if err != nil {
		fmt.Fprintf(stderr, "tune profiler: %v\n", err)
		return exitBad
	}
	fmt.Fprintf(stdout, "wrote %s (NCCL_PROFILER_PLUGIN=%s %s=trace-r%%r.json)\n", *out, *out, profplugin.EnvOutput)
	return exitOK
}
