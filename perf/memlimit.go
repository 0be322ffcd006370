package perf

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"math"
	"runtime/debug"
	"runtime/metrics"
	"strings"

	"github.com/gccl/gccl/lib/ccl"
	"github.com/gccl/gccl/lib/sysmem"
)

// memLimit reads the bound on this process's memory (the host's, or a
// cgroup's); tests replace it.
var memLimit = func() (sysmem.Limit, error) { return sysmem.Read("/") }

// KeepAllSizes makes a -e whose buffers do not fit a usage error, as a -b
// is, instead of lowered: for a program that records every size it asks
// for (tune sweep), where a sweep cut short would pass for a whole one.
// Set before Main runs (in an init), read by every run after.
var KeepAllSizes bool

// The buffers of a process get bufShareNum/bufShareDen of its share of
// the memory left. The rest is for what the process holds beside them:
// the Go runtime and its small garbage, the shared-memory FIFOs of --np
// (buffsize per connection, whatever the message size), goroutine
// stacks, and before the buffers, copyBandwidth's probe (at most an
// eighth of the share in each of its two buffers). Half of MemTotal per
// process, as before, let every one of N processes assume the whole
// machine; 3/4 of an even share of what is really left keeps their sum
// under the bound.
const bufShareNum, bufShareDen = 3, 4

// memShare is what one process of the job may take, and why.
type memShare struct {
	Bytes int64        // the process's share of what is left (Limit.Left / Procs); < 0: unknown
	Procs int          // processes of the job on this host, sharing the bound
	Limit sysmem.Limit // the bound
}

// budget is what the buffers may take of the share.
func (s memShare) budget() int64 { return s.Bytes / bufShareDen * bufShareNum }

// why says where the budget comes from: "3/4 of 1/4 of the 2.9 GiB left
// (4 processes on this host) under the 3.0 GiB cgroup v1 limit (...)".
func (s memShare) why() string {
	of := ""
	if s.Procs > 1 {
		of = fmt.Sprintf("1/%d of ", s.Procs)
	}
	procs := ""
	if s.Procs > 1 {
		procs = fmt.Sprintf(" (%d processes on this host)", s.Procs)
	}
	return fmt.Sprintf("%d/%d of %sthe %s left%s under the %v", bufShareNum, bufShareDen, of, sysmem.Human(s.Limit.Left), procs, s.Limit)
}

// bufGroup is buffers of up to -e bytes that a rank holds for one
// purpose.
type bufGroup struct {
	n    int64
	name string
	drop string // the flags that do without them; "" for send and recv
}

func (g bufGroup) String() string {
	if g.n == 1 {
		return g.name
	}
	return fmt.Sprintf("%s x%d", g.name, g.n)
}

// rankBuffers are the buffers of up to -e bytes a rank may hold at once:
// send and recv, the expected values of a check and the reference output
// of -K (allocBuffers), and in place, for the alltoalls, the staging
// their receives land in (Test.inPlaceStages).
func (e *engine) rankBuffers() []bufGroup {
	gs := []bufGroup{{n: 1, name: "send"}, {n: 1, name: "recv"}}
	if e.o.Check > 0 || e.o.CheckTimed {
		gs = append(gs, bufGroup{1, "expected values", "-c 0 without --check-timed"})
	}
	if e.o.Bitwise > 0 {
		gs = append(gs, bufGroup{1, "-K reference", "no -K"})
	}
	if s := e.stagings(); s > 0 {
		gs = append(gs, bufGroup{int64(s), "in-place staging", "--out-of-place-only"})
	}
	return gs
}

// countBufs is the number of buffers in gs.
func countBufs(gs []bufGroup) int64 {
	var n int64
	for _, g := range gs {
		n += g.n
	}
	return n
}

// listBufs names gs: "send, recv, expected values".
func listBufs(gs []bufGroup) string {
	s := make([]string, len(gs))
	for i, g := range gs {
		s[i] = g.String()
	}
	return strings.Join(s, ", ")
}

// stagings is how many in-place staging buffers a rank may hold at once:
// buffers allocated during the run, whose garbage the collector must
// keep up with. Per-call staging is the embedded stack's (another
// backend's device stages on its own).
func (e *engine) stagings() int {
	if e.o.OutOfPlaceOnly || (e.t.inPlaceStage == stagePerCall && e.be.Name() != BackendEmbedded) {
		return 0
	}
	return e.t.inPlaceStages(e.o.AggIters, e.o.inFlight())
}

// inFlight bounds the operations a rank may have enqueued and not yet
// finished: warmUp enqueues -w plus one (plus -n when the sweep has one
// size) before it waits; a timed batch, -w plus one, then -n (fewer when
// each iteration is waited for: -I, --check-timed, -z; the batches that
// grow, under --precision, come with -I). At most what the stack lets in
// flight (ccl.MaxInFlight).
func (o *Options) inFlight() int {
	return min(o.Warmup+1+o.Iters, ccl.MaxInFlight)
}

// bufPad is what allocBuffers adds to every buffer: the -u offset (at
// most 8 bytes an element) and 64 bytes.
func (o *Options) bufPad() int64 { return int64(o.Unalign)*8 + 64 }

// limitMemory fits the sweep in this process's memory, as nccl-tests fits
// it in the device's: when the buffers of the largest sizes would not
// fit, it lowers -e and says so; when those of -b would not, it refuses
// the run (a usage error) before anything is allocated. It lowers the Go
// runtime's soft memory limit to the share for the run, so that garbage
// is collected before the bound is reached; the returned function puts
// it back.
func (e *engine) limitMemory() (func(), error) {
	nothing := func() {}
	debug.FreeOSMemory() // what this process freed (tune sweep's last run) is not in the way
	s, err := e.memShare()
	if err != nil {
		return nothing, err
	}
	if s.Bytes < 0 {
		return nothing, nil // no bound known (not Linux)
	}
	if p := max(s.Bytes/8, 1<<20); p < probeMax {
		e.probeBytes = int(p)
		e.o.notes = append(e.o.notes, fmt.Sprintf("the reference copy (ref_copy_gbps) copies %s, not %s: the memory limit leaves this process %s",
			sysmem.Human(p), sysmem.Human(probeMax), sysmem.Human(s.Bytes)))
	}
	bufs := e.rankBuffers()
	per := int64(e.o.nRanks()) * countBufs(bufs) // buffers in this process
	fit := s.budget()/per - e.o.bufPad()         // the largest size whose buffers fit
	if e.o.MinBytes > fit {
		return nothing, usagef("%s", e.refusal("-b", e.o.MinBytes, s, bufs, fit))
	}
	if e.o.MaxBytes > fit && KeepAllSizes {
		return nothing, usagef("%s", e.refusal("-e", e.o.MaxBytes, s, bufs, fit))
	}
	if e.o.MaxBytes > fit {
		e.o.MaxBytes = fit
		fmt.Fprintf(e.out, "#\n# Reducing maxBytes to %d due to memory limitation: %v; %s; %d buffers per rank (%s)\n",
			fit, s.Limit, procsOnHost(s.Procs), countBufs(bufs), listBufs(bufs))
	}
	// The collector's target: the buffers, and room for small garbage
	// (an eighth of the share) when nothing large is allocated during the
	// run. A run that stages makes garbage as large as a buffer: its
	// target is the budget (where the extra staging buffer counted is the
	// garbage), so that the one allocation that passes the target before
	// a collection stays within the share.
	room := s.budget()
	if e.stagings() == 0 {
		room += s.Bytes / 8
	}
	return softLimit(room), nil
}

// refusal says why size (of flag -b or -e) does not fit, and what would.
func (e *engine) refusal(flag string, size int64, s memShare, bufs []bufGroup, fit int64) string {
	o := e.o
	ranks, nbufs := o.nRanks(), countBufs(bufs)
	each := satAdd(size, o.bufPad())
	need := satMul(int64(ranks)*nbufs, each)
	what := fmt.Sprintf("sizes up to %d bytes fit", fit)
	if fit < 0 {
		what = "not even empty buffers fit"
	}
	var drops []string
	for _, g := range bufs {
		if g.drop != "" {
			drops = append(drops, fmt.Sprintf("%s drops the %s", g.drop, g))
		}
	}
	if len(drops) > 0 {
		what += "; " + strings.Join(drops, ", ")
	}
	return fmt.Sprintf("%s %d does not fit in memory: %d rank%s x %d buffers (%s) of %d bytes need %d bytes (%s), and this process may take %d (%s: %s); %s",
		flag, size, ranks, plural(ranks), nbufs, listBufs(bufs), each, need, sysmem.Human(need),
		s.budget(), sysmem.Human(s.budget()), s.why(), what)
}

func procsOnHost(n int) string {
	return fmt.Sprintf("%d process%s on this host", n, map[bool]string{true: "", false: "es"}[n == 1])
}

func plural(n int) string {
	if n == 1 {
		return ""
	}
	return "s"
}

func satAdd(a, b int64) int64 {
	if a > math.MaxInt64-b {
		return math.MaxInt64
	}
	return a + b
}

func satMul(a, b int64) int64 {
	if a != 0 && b > math.MaxInt64/a {
		return math.MaxInt64
	}
	return a * b
}

// memShare reads this process's bound and agrees with the job's other
// processes on one share, the least of theirs (every process must sweep
// the same sizes), naming its bound. Every process reads its bound before
// any allocates its buffers: those come after this exchange. A bound that
// could be read only in part (a cgroup file that makes no sense) becomes
// a note; none at all (no /proc/meminfo) leaves the share unknown.
func (e *engine) memShare() (memShare, error) {
	lim, err := memLimit()
	mine := memShare{Bytes: -1, Procs: e.job.procsOnHost(), Limit: lim}
	switch {
	case err == nil || lim.Max > 0:
		mine.Bytes = lim.Left / int64(mine.Procs)
		if err != nil {
			e.o.notes = append(e.o.notes, fmt.Sprintf("memory: %v; -e is capped by the host's memory only", err))
		}
	case !errors.Is(err, fs.ErrNotExist):
		e.o.notes = append(e.o.notes, fmt.Sprintf("memory: %v; -e is not capped", err))
	}
	if e.job == nil {
		return mine, nil
	}
	b, err := json.Marshal(mine)
	if err != nil {
		return memShare{}, err
	}
	all, err := e.job.link.AllGather(b)
	if err != nil {
		return memShare{}, fmt.Errorf("agreeing on the memory limit: %w", err)
	}
	least := memShare{Bytes: -1}
	for i, b := range all {
		var s memShare
		if err := json.Unmarshal(b, &s); err != nil {
			return memShare{}, fmt.Errorf("agreeing on the memory limit: process %d: %w", i, err)
		}
		if s.Bytes >= 0 && (least.Bytes < 0 || s.Bytes < least.Bytes) {
			least = s
		}
	}
	return least, nil
}

// procsOnHost counts the job's processes on this process's host (by host
// name: --hosts and --netns hosts are one machine's memory); 1 without a
// job.
func (j *job) procsOnHost() int {
	if j == nil {
		return 1
	}
	procs := j.link.Procs()
	me := procs[j.link.Index()].Host
	n := 0
	for _, p := range procs {
		if p.Host == me {
			n++
		}
	}
	return max(n, 1)
}

// softLimit lowers the Go runtime's soft memory limit (GOMEMLIMIT) to
// what the runtime holds now plus room, unless it is lower already, and
// returns the function that restores it. Without it the heap may grow to
// twice the live buffers before a collection (GOGC=100): the garbage of
// the alltoalls' staging alone could pass the bound.
func softLimit(room int64) func() {
	s := []metrics.Sample{{Name: "/memory/classes/total:bytes"}, {Name: "/memory/classes/heap/released:bytes"}}
	metrics.Read(s)
	if s[0].Value.Kind() != metrics.KindUint64 || s[1].Value.Kind() != metrics.KindUint64 {
		return func() {}
	}
	held := int64(s[0].Value.Uint64() - s[1].Value.Uint64())
	lim := satAdd(held, room)
	prev := debug.SetMemoryLimit(-1)
	if lim >= prev {
		return func() {}
	}
	debug.SetMemoryLimit(lim)
	return func() { debug.SetMemoryLimit(prev) }
}
