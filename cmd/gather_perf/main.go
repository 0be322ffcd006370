// Command gather_perf measures gather like nccl-tests' gather_perf; see perf.Options for flags.
package main

import (
	"os"

	"github.com/gccl/gccl/perf"
)

func main() { os.Exit(perf.Main(perf.Gather, os.Args[1:], os.Stdout, os.Stderr)) }
