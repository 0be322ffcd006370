// tune plugin: build (or print) gccl's NCCL tuner plugin.

package cli

import (
	"fmt"
	"io"

	"github.com/spf13/pflag"

	"github.com/gccl/gccl/lib/nccl/tunerplugin"
)

func pluginCmd(args []string, stdout, stderr io.Writer) int {
	fs := pflag.NewFlagSet("tune plugin", pflag.ContinueOnError)
	fs.SetOutput(stderr)
	out := fs.String("output", tunerplugin.FileName, "where to write the plugin")
	src := fs.Bool("source", false, "print the plugin's C source instead of building it")
	setUsage(fs, stderr, "tune plugin [--output FILE.so] [--source]",
		"Builds gccl's NCCL tuner plugin with the C compiler ($CC, cc or gcc). Run NCCL with\n"+
			"NCCL_TUNER_PLUGIN=FILE.so NCCL_TUNER_CONFIG_FILE=RULES.csv (tune table --nccl-csv):\n"+
			"it applies the first matching rule's algorithm and protocol, and keeps NCCL's\n"+
			"channel count unless the rule sets one; a call no rule matches is left as NCCL\n"+
			"had it. It exports NCCL's tuner interfaces v6 (NCCL 2.30.3 on), v5 and v4.")
	if code, ok := parseFlags(fs, args, stderr); !ok {
		return code
	}
	if fs.NArg() != 0 {
		fmt.Fprintf(stderr, "tune plugin: unexpected arguments %q\n", fs.Args())
		return exitBad
	}
	if *src {
		stdout.Write(tunerplugin.Source())
		return exitOK
	}
	if err := writeSharedObject(*out, tunerplugin.CompileFromEnv); err != nil {
		fmt.Fprintf(stderr, "tune plugin: %v\n", err)
		return exitBad
	}
	fmt.Fprintf(stdout, "wrote %s (NCCL_TUNER_PLUGIN=%s NCCL_TUNER_CONFIG_FILE=rules.csv)\n", *out, *out)
	return exitOK
}
