// Command hypercube_perf measures hypercube like nccl-tests' hypercube_perf; see perf.Options for flags.
package main

import (
	"os"

	"github.com/gccl/gccl/perf"
)

func main() { os.Exit(perf.Main(perf.Hypercube, os.Args[1:], os.Stdout, os.Stderr)) }
