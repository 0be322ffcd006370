// Command scatter_perf measures scatter like nccl-tests' scatter_perf; see perf.Options for flags.
package main

import (
	"os"

	"github.com/gccl/gccl/perf"
)

func main() { os.Exit(perf.Main(perf.Scatter, os.Args[1:], os.Stdout, os.Stderr)) }
