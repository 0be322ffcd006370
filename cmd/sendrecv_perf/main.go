// Command sendrecv_perf measures sendrecv like nccl-tests' sendrecv_perf; see perf.Options for flags.
package main

import (
	"os"

	"github.com/gccl/gccl/perf"
)

func main() { os.Exit(perf.Main(perf.SendRecv, os.Args[1:], os.Stdout, os.Stderr)) }
