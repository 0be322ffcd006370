// Command alltoallv_perf measures alltoallv like nccl-tests' alltoallv_perf (each rank sends each peer a different amount; NCCL_TESTS_ALLTOALLV_* set the pattern); see perf.Options for flags.
package main

import (
	"os"

	"github.com/gccl/gccl/perf"
)

func main() { os.Exit(perf.Main(perf.AlltoAllv, os.Args[1:], os.Stdout, os.Stderr)) }
