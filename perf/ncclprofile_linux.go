//go:build linux && (amd64 || arm64)

// --trace-steps on --backend nccl: NCCL records through gccl's profiler
// plugin (lib/nccl/profplugin), one file per rank, merged after the run.

package perf

import (
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/gccl/gccl/lib/nccl/profplugin"
)

// traceNCCL makes NCCL load gccl's profiler plugin (built once with cc
// into the user's cache) and write its per-rank files for trace into
// profplugin.RankDir(trace). NCCL loads the plugin when the first
// communicator is created: call it in open, where --tuning-file's tuner
// plugin is set; the parameters go back to the user's at Close.
func (be *ncclBackend) traceNCCL(trace string) error {
	env, err := profplugin.EnvFromLookup(os.LookupEnv, trace, func() (string, error) { return profplugin.Cached(os.Getenv("CC")) })
	if err != nil {
		return fmt.Errorf("--trace-steps with --backend nccl: %w", err)
	}
	for _, kv := range env {
		k, v, _ := strings.Cut(kv, "=")
		if err := be.setParam(k, v); err != nil {
			return err
		}
	}
	return nil
}

// mergeNCCLTrace merges the per-rank files into trace once every
// communicator is destroyed (NCCL writes a rank's file then), and says on
// w what the plugin left out. Under a launcher the process that outlives
// the ranks calls it (the per-rank files of every process are in one
// directory); profplugin.ClearRanks before the run removes an earlier
// run's files.
func mergeNCCLTrace(trace string, w io.Writer) error {
	sum, err := profplugin.MergeRanks(trace)
	for _, p := range sum.Problems {
		fmt.Fprintf(w, "# NCCL trace: %s\n", p)
	}
	if err != nil {
		return fmt.Errorf("--trace-steps: %w", err)
	}
	fmt.Fprintf(w, "# NCCL trace: %s (%d ranks, %d events; per rank in %s)\n", trace, sum.Ranks, sum.Events, profplugin.RankDir(trace))
	return nil
}

// finishNCCLTrace ends --trace-steps on --backend nccl once this process's
// communicators are destroyed: in a job, after every process's are
// (a barrier), process 0 merges the ranks' files.
func finishNCCLTrace(trace string, j *job, w io.Writer) error {
	if j != nil && j.procs > 1 {
		if err := j.link.Barrier(); err != nil {
			return fmt.Errorf("--trace-steps: waiting for the other processes' NCCL trace files: %w", err)
		}
		if j.proc != 0 {
			return nil
		}
	}
	return mergeNCCLTrace(trace, w)
}
