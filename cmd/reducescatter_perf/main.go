// Command reducescatter_perf measures reducescatter like nccl-tests' reducescatter_perf; see perf.Options for flags.
package main

import (
	"os"

	"github.com/gccl/gccl/perf"
)

func main() { os.Exit(perf.Main(perf.ReduceScatter, os.Args[1:], os.Stdout, os.Stderr)) }
