// Command broadcast_perf measures broadcast like nccl-tests' broadcast_perf; see perf.Options for flags.
package main

import (
	"os"

	"github.com/gccl/gccl/perf"
)

func main() { os.Exit(perf.Main(perf.Broadcast, os.Args[1:], os.Stdout, os.Stderr)) }
