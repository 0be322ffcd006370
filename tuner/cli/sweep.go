// sweep.go: the tune sweep command: its flags, the loop over repetitions and
// runs, and the refusal of variables that would change what it measures.
// The plan is in sweep_plan.go, the perf runs in sweep_run.go.

package cli

import (
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"os/signal"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/pflag"

	"github.com/gccl/gccl/lib/ccl"
	"github.com/gccl/gccl/perf"
	"github.com/gccl/gccl/results"
	"github.com/gccl/gccl/tuner"
)

func sweepCmd(args []string, stdout, stderr io.Writer) int {
	fs := pflag.NewFlagSet("tune sweep", pflag.ContinueOnError)
	fs.SetOutput(stderr)
	colls := fs.String("colls", "allreduce", "collectives, comma separated: allreduce, allgather, reducescatter, broadcast, reduce, alltoall, ...")
	ranks := fs.String("ranks", "2", "rank counts, comma separated")
	perHost := fs.String("ranks-per-host", "0", "ranks per simulated host, comma separated; 0 puts every rank on one host")
	protos := fs.String("proto", "all", "protocols, comma separated: LL, LL128, Simple, or all")
	algos := fs.String("algo", "all", "algorithms, comma separated: Ring, Tree (allreduce only), OneShot (LL, one channel), TwoShot (allreduce only, LL, one channel), or all (those the collective has)")
	chans := fs.String("nchannels", "1", "channel counts, comma separated; auto (or 0) leaves the count to the stack with algorithm and protocol forced")
	buffs := fs.String("buffsize", "", "Simple buffer sizes in bytes, K/M/G suffixes, comma separated (default: the stack's)")
	auto := fs.Bool("auto", true, "also measure the stack's own choice (no forced configuration), which tables are compared with")
	minB := fs.StringP("minbytes", "b", "8", "smallest size in bytes, K/M/G suffixes")
	maxB := fs.StringP("maxbytes", "e", "64M", "largest size in bytes, K/M/G suffixes")
	factor := fs.Int64P("stepfactor", "f", 2, "multiply the size by this from one point to the next")
	iters := fs.IntP("iters", "n", 10, "timed iterations per batch")
	warmup := fs.IntP("warmup_iters", "w", 3, "untimed warmup iterations before the batches")
	precision := fs.String("precision", "2%", "repeat batches until the median's 95% confidence interval is within this fraction of it, percent or fraction (2% or 0.02)")
	maxTime := fs.Duration("max-time", 2*time.Second, "most time spent timing one point, a duration (500ms, 2s)")
	interleave := fs.Bool("interleave", true, "measure a shape's configurations side by side on one set of communicators, round after round, so a slow spell hits all alike (perf --interleave); false: communicators per configuration")
	backend := fs.String("backend", "embedded", "collective backend: embedded (gccl's stack) or nccl (libnccl on GPUs: one GPU per rank, configurations on fresh communicators, no --interleave)")
	np := fs.Int("np", 0, "run every measurement across this many processes on this host (perf --np), each holding --ranks/np of the ranks; default 0 keeps the ranks in one process")
	hosts := fs.Int("hosts", 0, "with --np: run the processes as this many hosts (perf --hosts: each its own host id, joined by the network transport on loopback), so the records and tables are for jobs across hosts (default 0: the processes are one host)")
	netns := fs.Bool("netns", false, "with --hosts: each host a network namespace of its own, joined by veth links on a bridge (perf --netns: real TCP between separate stacks; root and iproute2), built for each run and removed after it")
	repeat := fs.Int("repeat", 1, "separate runs of every configuration (new communicators each), pooled, so one run's bad luck is outvoted")
	out := outputFlag(fs, "the results file (JSONL), required; an existing one is resumed: finished points are kept, not redone")
	force := fs.Bool("force", false, "start over: overwrite the --output file instead of resuming")
	setUsage(fs, stderr, "tune sweep --output FILE [flags]",
		"Measures collectives over configurations and sizes into a JSONL file, side by\nside per shape; an interrupted sweep resumes where it stopped.")
	if code, ok := parseFlags(fs, args, stderr); !ok {
		return code
	}
	bad := func(format string, a ...any) int {
		fmt.Fprintf(stderr, "tune sweep: "+format+"\n", a...)
		return exitBad
	}
	if *out == "" {
		return bad("--output FILE is required: the sweep's records go there (and it resumes from there)")
	}
	if fs.NArg() > 0 {
		return bad("unexpected argument %q (flags only)", fs.Arg(0))
	}
	if *repeat < 1 {
		return bad("--repeat %d: want at least 1", *repeat)
	}
	if *np < 0 || *np > 1024 {
		return bad("--np %d: want 1 to 1024 processes (0: the ranks in one process)", *np)
	}
	if *hosts != 0 && (*np < 1 || *hosts < 1 || *hosts > *np || *np%*hosts != 0) {
		return bad("--hosts %d with --np %d: want --np processes and a divisor of them as hosts (every host holds as many processes)", *hosts, *np)
	}
	if *netns && *hosts < 2 {
		return bad("--netns needs --np and --hosts of 2 or more: it puts each host in a network namespace of its own")
	}
	if err := refuseChoiceEnv(os.LookupEnv); err != nil {
		return bad("%v", err)
	}
	be, err := perf.ParseBackend(*backend)
	if err != nil {
		return bad("%v", err)
	}
	switch be {
	case perf.BackendEmbedded:
	case perf.BackendNCCL:
		if fs.Changed("interleave") && *interleave {
			return bad("--interleave with --backend nccl: NCCL fixes a communicator's configuration when it is created, so configurations cannot alternate; drop --interleave")
		}
		*interleave = false
		if *buffs != "" {
			return bad("--buffsize with --backend nccl: NCCL reads NCCL_BUFFSIZE once per process, so one sweep cannot vary it; set NCCL_BUFFSIZE for the whole sweep instead")
		}
		if *perHost != "0" {
			return bad("--ranks-per-host with --backend nccl: NCCL sees the real hosts; drop it")
		}
	}
	plan, err := planSweep(*colls, *ranks, *perHost, *protos, *algos, *chans, *buffs, *auto, *minB, *maxB, *factor)
	if err == nil {
		plan, err = withoutOneShot(plan, *algos, *hosts, be)
	}
	if err != nil {
		return bad("%v", err)
	}
	if *hosts > 1 {
		for i := range plan {
			if plan[i].perHost > 0 {
				return bad("--hosts and --ranks-per-host both group ranks into hosts (real processes, simulated ones): give one")
			}
			plan[i].hosts = *hosts
		}
	}
	if *np > 1 {
		for _, b := range plan {
			if b.nRanks%*np != 0 {
				return bad("--ranks %d with --np %d: every process holds as many ranks, so the rank counts must be multiples of --np", b.nRanks, *np)
			}
		}
	}
	// A run killed mid-block left its records in the part file, or in
	// its temporary file (perf puts it in place only when its run ends):
	// keep the complete ones.
	part := filepath.Join(filepath.Dir(*out), "."+filepath.Base(*out)+".part")
	leftovers, _ := filepath.Glob(results.TempPattern(part))
	for _, p := range append(leftovers, part) {
		if *force {
			os.Remove(p)
		} else if _, err := salvage(*out, p, nil); err != nil {
			return bad("%v", err)
		}
	}
	done := map[tuner.Key]map[int64]int{} // records per key and size
	if !*force {
		if recs, err := results.ReadFile(*out); err == nil {
			for _, r := range recs {
				if r.Placement != results.OutOfPlace {
					continue
				}
				k := tuner.KeyOf(r)
				if done[k] == nil {
					done[k] = map[int64]int{}
				}
				done[k][r.Size]++
			}
		} else if !errors.Is(err, os.ErrNotExist) {
			return bad("cannot resume from %s: %v (use --force to start over)", *out, err)
		}
	} else if err := os.Remove(*out); err != nil && !errors.Is(err, os.ErrNotExist) {
		return bad("%v", err)
	}
	launch := launchArgs(*np, *hosts, *netns, be)
	var todo []sweepRun
	total, skipped := 0, 0
	for rep := 0; rep < *repeat; rep++ {
		var blocks []block
		for _, b := range plan {
			var left []int64
			for _, s := range b.sizes {
				if done[b.key()][b.rowSize(s)] > rep {
					skipped++
				} else {
					left = append(left, s)
				}
			}
			if len(left) > 0 {
				b.sizes = left
				blocks = append(blocks, b)
				total += len(left)
			}
		}
		todo = append(todo, groupRuns(blocks, *interleave)...)
	}
	// Runs go in a shuffled (seeded) order: measured in plan order, the
	// first configuration of every shape always ran right after the last
	// shape's, inheriting its garbage and its machine state; that biased
	// whole configurations (the stack's own choice ran first, and looked
	// 8% worse than it is).
	rand.New(rand.NewPCG(1, 2)).Shuffle(len(todo), func(i, j int) { todo[i], todo[j] = todo[j], todo[i] })
	fmt.Fprintf(stdout, "tune sweep: %d points to measure in %d runs (%d already in %s)\n", total, len(todo), skipped, *out)
	prog := newSweepProgress(stderr, total)
	started := time.Now()
	measured := 0
	// Ctrl-C or SIGTERM: perf finishes the size it measures and returns
	// perf.ExitInterrupted (a second signal makes it exit at once, leaving
	// the part file for the next start to salvage); between runs, this
	// catches it. Either way the finished records are in --out, whole.
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	defer signal.Stop(sigs)
	interrupted := func(sig os.Signal) int {
		prog.stop()
		fmt.Fprintf(stderr, "tune sweep: %v: stopped after %d of %d points; every finished point is in %s (valid JSONL, no partial file left): run the same command again to resume\n",
			sig, measured, total, *out)
		return perf.ExitInterrupted
	}
	for i, run := range todo {
		select {
		case s := <-sigs:
			return interrupted(s)
		default:
		}
		tmp := part
		args := run.args(*iters, *warmup, *factor, *precision, *maxTime, *interleave, tmp, *np, launch)
		var errBuf strings.Builder
		runtime.GC() // the last run's buffers must not be collected during this one
		code := perf.Main(run.blocks[0].test, args, io.Discard, &errBuf)
		if code == perf.ExitInterrupted {
			n, err := salvage(*out, tmp, run.wanted)
			if err != nil {
				return bad("%v", err)
			}
			measured += n
			var s os.Signal = os.Interrupt
			select {
			case s = <-sigs:
			default:
			}
			return interrupted(s)
		}
		if code != 0 {
			os.Remove(tmp)
			return bad("%s: perf exited %d: %s", run.label(), code, strings.TrimSpace(errBuf.String()))
		}
		if _, err := salvage(*out, tmp, run.wanted); err != nil {
			return bad("%v", err)
		}
		measured += run.points
		prog.add(run.points)
		eta := time.Duration(float64(time.Since(started)) / float64(measured) * float64(total-measured))
		if prog.tracker == nil {
			fmt.Fprintf(stdout, "[%d/%d] %s: %d sizes, %d/%d points, ETA %s\n", i+1, len(todo), run.label(), len(run.sizes), measured, total, eta.Round(time.Second))
		}
	}
	prog.stop()
	fmt.Fprintf(stdout, "tune sweep: done in %s: %s\n", time.Since(started).Round(time.Second), *out)
	return exitOK
}

// refuseChoiceEnv refuses a sweep under a variable that changes which
// configuration runs (ccl.ChoiceEnv): a sweep measures the configurations
// its flags name and the stack's built-in default ("auto", the baseline a
// table must beat), and such a variable would change the baseline, or the
// buffer of every block, behind their labels.
func refuseChoiceEnv(lookup func(string) (string, bool)) error {
	var set []string
	for _, k := range ccl.ChoiceEnv {
		if v, ok := lookup(k); ok {
			set = append(set, k+"="+v)
		}
	}
	if len(set) == 0 {
		return nil
	}
	return fmt.Errorf("%s set in the environment would change the configurations this sweep measures and the built-in default it compares against: unset it (the sweep's own flags --proto, --algo, --nchannels and --buffsize set the axes)",
		strings.Join(set, ", "))
}
