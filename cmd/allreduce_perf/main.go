// Command allreduce_perf measures allreduce like nccl-tests' allreduce_perf; see perf.Options for flags.
package main

import (
	"os"

	"github.com/gccl/gccl/perf"
)

func main() { os.Exit(perf.Main(perf.AllReduce, os.Args[1:], os.Stdout, os.Stderr)) }
