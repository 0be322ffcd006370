// sweep_run.go: running a sweep's blocks as perf runs: grouping them into
// runs, the perf arguments and the hidden _perf child command, keeping the
// records of a run that stopped (salvage), and the progress bar.

package cli

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"golang.org/x/term"

	pprogress "github.com/jedib0t/go-pretty/v6/progress"

	"github.com/gccl/gccl/perf"
	"github.com/gccl/gccl/results"
	"github.com/gccl/gccl/tuner"
)

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
func launchArgs(np, hosts int, netns bool, backend perf.BackendName) []string {
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
	if backend != "" && backend != perf.BackendEmbedded {
		args = append(args, "--backend", string(backend))
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
