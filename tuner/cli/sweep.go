package cli

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"os/signal"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/pflag"
	"golang.org/x/term"

	pprogress "github.com/jedib0t/go-pretty/v6/progress"

	"github.com/gccl/gccl/internal/size"
	"github.com/gccl/gccl/lib/ccl"
	"github.com/gccl/gccl/lib/tuning"
	"github.com/gccl/gccl/perf"
	"github.com/gccl/gccl/results"
	"github.com/gccl/gccl/tuner"
)

// block is one perf run of a sweep: a collective on a rank count with one
// configuration over a size range.
type block struct {
	test    *perf.Test
	nRanks  int
	perHost int // 0: one host
	hosts   int // --hosts: the processes are this many hosts (0: perHost decides)
	cfg     sweepConfig
	sizes   []int64 // the sizes still to measure
}

// sweepConfig is one point of the configuration axes; "" / 0 is auto.
type sweepConfig struct {
	proto, algo string
	nch         int
	buff        int64
}

func (c sweepConfig) auto() bool { return c == sweepConfig{} }

// spec is the configuration as perf's --configs names it (the buffer size
// goes separately).
func (c sweepConfig) spec() string {
	if c.proto == "" && c.algo == "" && c.nch == 0 {
		return "auto"
	}
	or := func(s string) string {
		if s == "" {
			return "auto"
		}
		return s
	}
	ch := "auto"
	if c.nch > 0 {
		ch = strconv.Itoa(c.nch)
	}
	return or(c.algo) + "/" + or(c.proto) + "/" + ch
}

// sweepRun is one perf run of a sweep: the blocks of one shape and buffer
// size it measures, side by side with --interleave, else one block.
type sweepRun struct {
	blocks []block
	sizes  []int64 // every size any block still needs, ascending
	points int     // sizes still needed, summed over the blocks
}

// groupRuns makes the runs of todo (blocks of one repetition, in plan
// order): with interleave the blocks of a shape and buffer size share a
// run, else each block is a run.
func groupRuns(todo []block, interleave bool) []sweepRun {
	type shape struct {
		test            *perf.Test
		nRanks, perHost int
		buff            int64
	}
	var runs []sweepRun
	at := map[shape]int{}
	for _, b := range todo {
		k := shape{b.test, b.nRanks, b.perHost, b.cfg.buff}
		i, ok := at[k]
		if !ok || !interleave {
			i = len(runs)
			at[k] = i
			runs = append(runs, sweepRun{})
		}
		r := &runs[i]
		r.blocks = append(r.blocks, b)
		r.points += len(b.sizes)
		r.sizes = mergeSizes(r.sizes, b.sizes)
	}
	return runs
}

// mergeSizes is the sorted union of two ascending size lists.
func mergeSizes(a, b []int64) []int64 {
	out := make([]int64, 0, len(a)+len(b))
	i, j := 0, 0
	for i < len(a) || j < len(b) {
		switch {
		case j == len(b) || (i < len(a) && a[i] < b[j]):
			out = append(out, a[i])
			i++
		case i == len(a) || b[j] < a[i]:
			out = append(out, b[j])
			j++
		default:
			out = append(out, a[i])
			i, j = i+1, j+1
		}
	}
	return out
}

// args are the perf arguments of the run; launch (--np, --hosts, --netns,
// --backend) ends them.
func (r sweepRun) args(iters, warmup int, factor int64, precision string, maxTime time.Duration, interleave bool, out string, np int, launch []string) []string {
	b := r.blocks[0]
	specs := make([]string, len(r.blocks))
	for i, b := range r.blocks {
		specs[i] = b.cfg.spec()
	}
	threads := b.nRanks
	if np > 1 {
		threads = b.nRanks / np // perf starts np processes of threads ranks
	}
	args := []string{"-t", strconv.Itoa(threads), "--ranks-per-host", strconv.Itoa(b.perHost),
		"-b", strconv.FormatInt(r.sizes[0], 10), "-e", strconv.FormatInt(r.sizes[len(r.sizes)-1], 10),
		"-f", strconv.FormatInt(factor, 10), "-n", strconv.Itoa(iters), "-w", strconv.Itoa(warmup), "-c", "0",
		"--precision", precision, "--max-time", maxTime.String(), "--out-of-place-only", "--out", out, "--force",
		"--configs", strings.Join(specs, ",")}
	if b.cfg.buff > 0 {
		args = append(args, "--buffsize", strconv.FormatInt(b.cfg.buff, 10))
	}
	if interleave {
		args = append(args, "--interleave")
	}
	return append(args, launch...)
}

// launchArgs are the perf flags that place a sweep's runs: processes,
// hosts, namespaces and the backend.
func launchArgs(np, hosts int, netns bool, backend string) []string {
	var args []string
	if np > 1 {
		args = append(args, "--np", strconv.Itoa(np))
	}
	if hosts > 1 {
		args = append(args, "--hosts", strconv.Itoa(hosts))
	}
	if netns {
		args = append(args, "--netns")
	}
	if backend != "" && backend != "embedded" {
		args = append(args, "--backend", backend)
	}
	return args
}

// perfCommand is the hidden subcommand that runs one perf test in this
// binary: what perf --np starts in each process when tune sweep drives it.
const perfCommand = "_perf"

func init() {
	perf.ChildCommand = func(t *perf.Test) (string, []string, error) {
		exe, err := os.Executable()
		return exe, []string{perfCommand, t.Prog}, err
	}
	// A sweep records every size it asks for: sizes that do not fit in
	// memory fail the run, never silently drop out of it.
	perf.KeepAllSizes = true
}

// perfChild is "tune _perf PROG ARGS...": the perf test PROG (e.g.
// all_reduce_perf) with ARGS.
func perfChild(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprintf(stderr, "tune %s: want a perf program name\n", perfCommand)
		return exitBad
	}
	for _, t := range perf.Tests {
		if t.Prog == args[0] {
			return perf.Main(t, args[1:], stdout, stderr)
		}
	}
	fmt.Fprintf(stderr, "tune %s: unknown perf program %q\n", perfCommand, args[0])
	return exitBad
}

// wanted reports whether r is a point the run was for: a run of several
// blocks measures every size any of them needs, and a block that had some
// of those sizes already keeps its old records of them.
func (r sweepRun) wanted(rec results.Record) bool {
	k := tuner.KeyOf(rec)
	for _, b := range r.blocks {
		if b.key() == k {
			return slices.ContainsFunc(b.sizes, func(s int64) bool { return b.rowSize(s) == rec.Size })
		}
	}
	return false
}

// label names the run in progress lines.
func (r sweepRun) label() string {
	if len(r.blocks) == 1 {
		return r.blocks[0].key().Shape.String() + " " + r.blocks[0].key().Config()
	}
	return fmt.Sprintf("%s, %d configurations side by side", r.blocks[0].key().Shape, len(r.blocks))
}

// rowSize is the size perf records for a requested size: the data of the
// elements that fit (nccl-tests rounds down to whole elements per rank),
// in the float type sweeps use.
func (b block) rowSize(size int64) int64 {
	_, row := b.test.Counts(size, 4, b.nRanks)
	return row
}

// key is the tuner.Key the block's records will have.
func (b block) key() tuner.Key {
	hosts := 1
	switch {
	case b.hosts > 0:
		hosts = b.hosts
	case b.perHost > 0:
		hosts = (b.nRanks + b.perHost - 1) / b.perHost
	}
	or := func(s string) string {
		if s == "" {
			return "auto"
		}
		return s
	}
	return tuner.Key{Shape: tuner.Shape{Coll: b.test.Collective, NRanks: b.nRanks, NHosts: hosts},
		Algo: or(b.cfg.algo), Proto: or(b.cfg.proto), NCh: b.cfg.nch, BuffSize: b.cfg.buff}
}

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
	switch *backend {
	case "embedded":
	case "nccl":
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
	default:
		return bad("unknown --backend %q: valid backends are embedded and nccl", *backend)
	}
	plan, err := planSweep(*colls, *ranks, *perHost, *protos, *algos, *chans, *buffs, *auto, *minB, *maxB, *factor)
	if err == nil {
		plan, err = withoutOneShot(plan, *algos, *hosts, *backend)
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
	launch := launchArgs(*np, *hosts, *netns, *backend)
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

// planSweep expands the axes into runs, each with its full size list.
func planSweep(colls, ranks, perHost, protos, algos, chans, buffs string, auto bool, minB, maxB string, factor int64) ([]block, error) {
	lo, err := size.Parse(minB)
	if err != nil {
		return nil, fmt.Errorf("-b: %v", err)
	}
	hi, err := size.Parse(maxB)
	if err != nil {
		return nil, fmt.Errorf("-e: %v", err)
	}
	if lo < 1 || hi < lo || factor < 2 {
		return nil, fmt.Errorf("sizes: want 1 <= -b <= -e and -f >= 2 (got %d, %d, %d)", lo, hi, factor)
	}
	var sizes []int64
	for s := lo; s <= hi; s *= factor {
		sizes = append(sizes, s)
	}
	var tests []*perf.Test
	for _, c := range splitList(colls) {
		t := testByName(c)
		if t == nil {
			var names []string
			for _, t := range perf.Tests {
				names = append(names, t.Collective)
			}
			return nil, fmt.Errorf("--colls: unknown collective %q (valid: %s)", c, strings.Join(names, ", "))
		}
		tests = append(tests, t)
	}
	rankList, err := intList("--ranks", ranks, 1)
	if err != nil {
		return nil, err
	}
	perList, err := intList("--ranks-per-host", perHost, 0)
	if err != nil {
		return nil, err
	}
	protoList, err := nameList("--proto", protos, []string{"LL", "LL128", "Simple"})
	if err != nil {
		return nil, err
	}
	algoList, err := nameList("--algo", algos, tuning.AlgoNames())
	if err != nil {
		return nil, err
	}
	// "auto" leaves the channel count to the stack (NCCL's own, or the
	// embedded stack's), with algorithm and protocol forced.
	chList, err := intList("--nchannels", strings.ReplaceAll(strings.ToLower(chans), "auto", "0"), 0)
	if err != nil {
		return nil, err
	}
	var buffList []int64
	for _, b := range splitList(buffs) {
		n, err := size.Parse(b)
		if err != nil {
			return nil, fmt.Errorf("--buffsize: %v", err)
		}
		buffList = append(buffList, n)
	}
	if len(buffList) == 0 {
		buffList = []int64{0}
	}
	var plan []block
	for _, t := range tests {
		for _, n := range rankList {
			// A size too small for one float per rank measures nothing.
			var fit []int64
			for _, s := range sizes {
				if p, _ := t.Counts(s, 4, n); p > 0 {
					fit = append(fit, s)
				}
			}
			sizes := fit
			if len(sizes) == 0 {
				continue
			}
			for _, per := range perList {
				if auto {
					plan = append(plan, block{test: t, nRanks: n, perHost: per, sizes: sizes})
				}
				for _, a := range algoList {
					if tc, err := tuning.ParseColl(t.Collective); err == nil && !tuning.Supports(tc, algoOf(a)) {
						continue // no such algorithm for this collective (Tree, TwoShot: allreduce only)
					}
					for _, p := range protoList {
						for _, ch := range chList {
							if algoOf(a).OnBoard() && (p != "LL" || ch > 1) {
								continue // LL on one channel only
							}
							for _, b := range buffList {
								cfg := sweepConfig{proto: p, algo: a, nch: ch, buff: b}
								plan = append(plan, block{test: t, nRanks: n, perHost: per, cfg: cfg, sizes: sizes})
							}
						}
					}
				}
			}
		}
	}
	return plan, nil
}

func testByName(c string) *perf.Test {
	for _, t := range perf.Tests {
		if strings.EqualFold(t.Collective, c) {
			return t
		}
	}
	return nil
}

func splitList(s string) []string {
	var out []string
	for _, f := range strings.Split(s, ",") {
		if f = strings.TrimSpace(f); f != "" {
			out = append(out, f)
		}
	}
	return out
}

func intList(flag, s string, least int) ([]int, error) {
	var out []int
	for _, f := range splitList(s) {
		n, err := strconv.Atoi(f)
		if err != nil || n < least {
			return nil, fmt.Errorf("%s: %q is not an integer >= %d", flag, f, least)
		}
		out = append(out, n)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%s: empty list", flag)
	}
	return out, nil
}

// withoutOneShot drops the configurations of the one-shot board (OneShot,
// TwoShot) a run cannot have (NCCL has no such algorithm; processes on
// several hosts share no board): silently for --algo all, with an error
// when it was asked for by name.
func withoutOneShot(plan []block, algos string, hosts int, backend string) ([]block, error) {
	var keep []block
	for _, b := range plan {
		why := ""
		a := b.cfg.algo
		switch {
		case !algoOf(a).OnBoard():
		case backend == "nccl":
			why = fmt.Sprintf("with --backend nccl: %s is gccl's own algorithm, NCCL has none", a)
		case hosts > 1:
			why = fmt.Sprintf("with --hosts %d: %s needs every rank on one host (its board is memory they share)", hosts, a)
		}
		if why == "" {
			keep = append(keep, b)
		} else if !strings.EqualFold(strings.TrimSpace(algos), "all") {
			return nil, fmt.Errorf("--algo %s %s (valid there: Ring, Tree)", a, why)
		}
	}
	return keep, nil
}

// algoOf is the algorithm a sweep names ("" and "auto": -1, none).
func algoOf(name string) tuning.Algo {
	a, err := tuning.ParseAlgo(name)
	if err != nil {
		return -1
	}
	return a
}

func nameList(flag, s string, valid []string) ([]string, error) {
	if strings.EqualFold(strings.TrimSpace(s), "all") {
		return valid, nil
	}
	var out []string
	for _, f := range splitList(s) {
		found := ""
		for _, v := range valid {
			if strings.EqualFold(f, v) {
				found = v
			}
		}
		if found == "" {
			return nil, fmt.Errorf("%s: unknown value %q (valid: %s, all)", flag, f, strings.Join(valid, ", "))
		}
		out = append(out, found)
	}
	return out, nil
}

// salvage appends the complete lines of part (if it exists) to dst and
// removes part.
func salvage(dst, part string, keep func(results.Record) bool) (int, error) {
	data, err := os.ReadFile(part)
	if errors.Is(err, os.ErrNotExist) {
		return 0, nil
	}
	if err != nil {
		return 0, err
	}
	if i := strings.LastIndexByte(string(data), '\n'); i >= 0 {
		data = data[:i+1]
	} else {
		data = nil
	}
	if keep != nil {
		var kept []byte
		for _, line := range strings.SplitAfter(string(data), "\n") {
			var r results.Record
			if line != "" && json.Unmarshal([]byte(line), &r) == nil && keep(r) {
				kept = append(kept, line...)
			}
		}
		data = kept
	}
	f, err := os.OpenFile(dst, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		return 0, err
	}
	if _, err := f.Write(data); err != nil {
		f.Close()
		return 0, err
	}
	if err := f.Close(); err != nil {
		return 0, err
	}
	return strings.Count(string(data), "\n"), os.Remove(part)
}

// sweepProgress is a progress bar with ETA on a terminal, nothing elsewhere
// (the sweep then prints a line per run).
type sweepProgress struct {
	pw      pprogress.Writer
	tracker *pprogress.Tracker
}

func newSweepProgress(w io.Writer, total int) *sweepProgress {
	f, ok := w.(*os.File)
	if !ok || !term.IsTerminal(int(f.Fd())) || total == 0 {
		return &sweepProgress{}
	}
	pw := pprogress.NewWriter()
	pw.SetOutputWriter(w)
	pw.SetAutoStop(false)
	pw.SetUpdateFrequency(250 * time.Millisecond)
	pw.Style().Visibility.ETA = true
	pw.Style().Visibility.Time = true
	pw.Style().Visibility.Value = true
	t := &pprogress.Tracker{Message: "points", Total: int64(total)}
	pw.AppendTracker(t)
	go pw.Render()
	return &sweepProgress{pw: pw, tracker: t}
}

func (p *sweepProgress) add(n int) {
	if p.tracker != nil {
		p.tracker.Increment(int64(n))
	}
}

func (p *sweepProgress) stop() {
	if p.pw != nil {
		p.tracker.MarkAsDone()
		time.Sleep(300 * time.Millisecond) // one last render
		p.pw.Stop()
	}
}
