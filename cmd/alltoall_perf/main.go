// Command alltoall_perf measures alltoall like nccl-tests' alltoall_perf; see perf.Options for flags.
package main

import (
	"os"

	"github.com/gccl/gccl/perf"
)

func main() { os.Exit(perf.Main(perf.AlltoAll, os.Args[1:], os.Stdout, os.Stderr)) }
