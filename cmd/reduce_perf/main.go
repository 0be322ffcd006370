// Command reduce_perf measures reduce like nccl-tests' reduce_perf; see perf.Options for flags.
package main

import (
	"os"

	"github.com/gccl/gccl/perf"
)

func main() { os.Exit(perf.Main(perf.Reduce, os.Args[1:], os.Stdout, os.Stderr)) }
