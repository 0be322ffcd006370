// Command allgather_perf measures allgather like nccl-tests' allgather_perf; see perf.Options for flags.
package main

import (
	"os"

	"github.com/gccl/gccl/perf"
)

func main() { os.Exit(perf.Main(perf.AllGather, os.Args[1:], os.Stdout, os.Stderr)) }
