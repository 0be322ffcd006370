// Command tune turns sweeps into tuning decisions.
//
//	tune constants [--output constants.json] [--procs N] [--start FILE] FILES...
//
// fits the built-in cost model's constants (lib/tuning) to forced-config
// sweeps (perf --out JSONL, CSV or nccl-tests output with the config in
// its records) and writes a constants file for GCCL_MODEL_FILE.
package main

import (
	"fmt"
	"io"
	"os"

	"github.com/gccl/gccl/tuner/cli"
)

func main() { os.Exit(run(os.Args[1:], os.Stdout, os.Stderr)) }

func run(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, cli.Usage)
		return 2
	}
	return cli.Run(args, stdout, stderr)
}
