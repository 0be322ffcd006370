package profplugin

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/gccl/gccl/lib/nccl/cbuild"
	"github.com/gccl/gccl/lib/tef"
)

// built is the plugin and the harness (testdata/harness.c, NCCL's side),
// compiled once for the package's tests.
var built struct {
	once        sync.Once
	so, harness string
	err         error
}

func buildAll(t *testing.T) (so, harness string) {
	t.Helper()
	if runtime.GOOS != "linux" {
		t.Skip("the plugin is a Linux shared object")
	}
	cc, err := cbuild.FindCompiler(os.Getenv("CC"), "the test harness")
	if err != nil {
		t.Skipf("skipping: %v", err)
	}
	built.once.Do(func() {
		dir, err := os.MkdirTemp("", "gccl-profplugin-test-")
		if err != nil {
			built.err = err
			return
		}
		built.so = filepath.Join(dir, FileName)
		if built.err = Build(built.so, cc); built.err != nil {
			return
		}
		built.harness = filepath.Join(dir, "harness")
		out, err := exec.Command(cc, "-O2", "-Wall", "-o", built.harness, "testdata/harness.c", "-ldl").CombinedOutput()
		if err != nil {
			built.err = fmt.Errorf("building the harness: %v\n%s", err, out)
		}
	})
	if built.err != nil {
		t.Fatal(built.err)
	}
	return built.so, built.harness
}

// harness runs the harness with env added; it returns its stdout and
// stderr and fails the test if it did not exit 0.
func harness(t *testing.T, version int, scenario string, env ...string) (stdout, stderr string) {
	t.Helper()
	so, h := buildAll(t)
	cmd := exec.Command(h, so, strconv.Itoa(version), scenario)
	cmd.Env = append(os.Environ(), env...)
	var o, e bytes.Buffer
	cmd.Stdout, cmd.Stderr = &o, &e
	if err := cmd.Run(); err != nil {
		t.Fatalf("harness v%d %s: %v\n%s%s", version, scenario, err, o.String(), e.String())
	}
	return o.String(), e.String()
}

func readValid(t *testing.T, path string) *tef.File {
	t.Helper()
	f, err := tef.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if errs := tef.Validate(f); errs != nil {
		t.Fatalf("%s breaks the format's rules: %v", path, errs)
	}
	// The plugin writes gccl's grid (tef.Micros): ts and dur are exact
	// multiples of 1/1024 us, as the file's text says them.
	for _, e := range f.TraceEvents {
		if e.Ph == "X" && (tef.OnGrid(e.Ts) != e.Ts || tef.OnGrid(e.Dur) != e.Dur) {
			t.Fatalf("%s: event %s at ts %v dur %v: off the grid of 1/%d us", path, e.Name, e.Ts, e.Dur, tef.GridPerMicro)
		}
	}
	return f
}

func argInt(e *tef.Event, k string) (int, bool) {
	v, ok := e.Args[k].(float64)
	return int(v), ok
}

func inside(in, out *tef.Event) bool {
	const eps = 1e-3
	return in.Ts >= out.Ts-eps && in.End() <= out.End()+eps
}

func byCat(f *tef.File, cat string) []*tef.Event {
	var evs []*tef.Event
	for i := range f.TraceEvents {
		if e := &f.TraceEvents[i]; e.Cat == cat && e.Ph == "X" {
			evs = append(evs, e)
		}
	}
	return evs
}

// TestTraceShape drives each exported interface version as NCCL would
// (testdata/harness.c: per rank two allreduces, kernels on channels 0 and
// 1, proxy sends and receives to two peers on each with three pipelined
// steps) and checks the files: valid, one rank each, and every event on
// its track with its arguments and inside its parent.
func TestTraceShape(t *testing.T) {
	for _, v := range []int{6, 5, 4} {
		t.Run(fmt.Sprintf("v%d", v), func(t *testing.T) {
			dir := t.TempDir()
			stdout, _ := harness(t, v, "run", EnvOutput+"="+filepath.Join(dir, "r%r.json"))
			if !strings.Contains(stdout, "mask=0x5e") {
				t.Errorf("init's mask: %s; want 0x5e (coll, p2p, proxy op and step, kernel channel)", stdout)
			}
			gpu := map[[2]int]float64{} // rank, channel -> kernel time on the GPU, µs
			for _, m := range regexp.MustCompile(`kernel rank=(\d) ch=(\d) gpu_ns=(\d+)`).FindAllStringSubmatch(stdout, -1) {
				r, _ := strconv.Atoi(m[1])
				c, _ := strconv.Atoi(m[2])
				ns, _ := strconv.ParseInt(m[3], 10, 64)
				gpu[[2]int{r, c}] = tef.Micros(ns)
			}
			for rank := 0; rank < 2; rank++ {
				checkRank(t, readValid(t, filepath.Join(dir, fmt.Sprintf("r%d.json", rank))), rank, v, gpu)
			}
		})
	}
}

func checkRank(t *testing.T, f *tef.File, rank, version int, gpu map[[2]int]float64) {
	t.Helper()
	for i := range f.TraceEvents {
		if e := &f.TraceEvents[i]; e.Pid != rank {
			t.Fatalf("rank %d's file has an event of pid %d: %+v", rank, e.Pid, *e)
		}
	}
	if got := f.OtherData["interface"]; got != fmt.Sprintf("v%d", version) {
		t.Errorf("otherData.interface %v, want v%d", got, version)
	}
	// Operations: the two allreduces on the rank's lanes, apart (they overlap).
	ops := byCat(f, tef.CatOp)
	if len(ops) != 2 {
		t.Fatalf("rank %d: %d operations, want 2", rank, len(ops))
	}
	var a *tef.Event
	for _, op := range ops {
		if k, _, _ := tef.TrackOf(op.Tid); k != tef.TrackRank {
			t.Errorf("operation on tid %d, want one of the rank's lanes", op.Tid)
		}
		seq, _ := argInt(op, tef.ArgSeq)
		b, _ := argInt(op, tef.ArgBytes)
		nch, _ := argInt(op, tef.ArgChannels)
		if op.Name != "AllReduce" || b != 4096 || nch != 2 || op.Args[tef.ArgAlgo] != "Ring" || op.Args[tef.ArgProto] != "Simple" || (seq != 7 && seq != 8) {
			t.Errorf("operation %+v: want AllReduce, seq 7 or 8, 4096 bytes, 2 channels, Ring, Simple", *op)
		}
		if seq == 7 {
			a = op
		}
	}
	if a == nil || ops[0].Tid == ops[1].Tid {
		t.Fatalf("want seq 7 and the overlapping seq 8 on two lanes: %+v %+v", *ops[0], *ops[1])
	}
	// Kernels: channel c on tid c, as long as the GPU said, inside seq 7.
	kernels := byCat(f, tef.CatKernel)
	if len(kernels) != 2 {
		t.Fatalf("rank %d: %d kernel events, want 2", rank, len(kernels))
	}
	for _, k := range kernels {
		ch, _ := argInt(k, "channel")
		if seq, _ := argInt(k, tef.ArgSeq); k.Tid != ch || seq != 7 || k.Args["clock"] != "gpu" {
			t.Errorf("kernel %+v: want tid = channel, seq 7, the GPU's clock", *k)
		}
		if want := gpu[[2]int{rank, ch}]; want == 0 || k.Dur < want-1e-3 || k.Dur > want+1e-3 {
			t.Errorf("kernel of channel %d lasts %.3f µs; the GPU said %.3f", ch, k.Dur, want)
		}
		if !inside(k, a) {
			t.Errorf("kernel %+v outside its allreduce %+v", *k, *a)
		}
	}
	checkProxy(t, f, rank, a)
}

func checkProxy(t *testing.T, f *tef.File, rank int, a *tef.Event) {
	t.Helper()
	proxies := byCat(f, tef.CatProxy)
	if len(proxies) != 5 {
		t.Fatalf("rank %d: %d proxy operations, want 4 and the PXN one", rank, len(proxies))
	}
	next, prev := (rank+1)%4, (rank+3)%4
	seen := map[string]bool{}
	for _, p := range proxies {
		kind, ch, _ := tef.TrackOf(p.Tid)
		peer, _ := argInt(p, tef.ArgPeer)
		argCh, _ := argInt(p, "channel")
		if kind != tef.TrackProxy || ch != argCh {
			t.Errorf("proxy %+v on tid %d: want a proxy lane of channel %d", *p, p.Tid, argCh)
		}
		seq, hasSeq := argInt(p, tef.ArgSeq)
		if !hasSeq { // the PXN operation: its parent belongs to another process
			if p.Name != "proxy send" || peer != 2 {
				t.Errorf("PXN proxy %+v", *p)
			}
			continue
		}
		if seq != 7 || !inside(p, a) || !(p.Name == "proxy send" && peer == next || p.Name == "proxy recv" && peer == prev) {
			t.Errorf("proxy %+v: want seq 7 inside its allreduce, sends to %d, receives from %d", *p, next, prev)
		}
		seen[fmt.Sprintf("%s %d", p.Name, ch)] = true
	}
	if len(seen) != 4 {
		t.Errorf("proxy operations: %v, want a send and a receive on channels 0 and 1", seen)
	}
	// Steps: three per operation, inside it, one on its own lane (nested
	// there); the overlapping ones on other lanes of its channel.
	steps := byCat(f, tef.CatStep)
	if len(steps) != 12 {
		t.Fatalf("rank %d: %d steps, want 12", rank, len(steps))
	}
	for _, p := range proxies {
		if _, ok := p.Args[tef.ArgSeq]; !ok {
			continue
		}
		peer, _ := argInt(p, tef.ArgPeer)
		_, ch, _ := tef.TrackOf(p.Tid)
		var mine, onLane int
		idx := map[int]bool{}
		for _, s := range steps {
			sp, _ := argInt(s, tef.ArgPeer)
			sch, _ := argInt(s, "channel")
			if sp != peer || sch != ch {
				continue
			}
			mine++
			st, _ := argInt(s, tef.ArgStep)
			idx[st] = true
			if b, _ := argInt(s, tef.ArgBytes); b != 4096 || s.Name != strings.TrimPrefix(p.Name, "proxy ") || !inside(s, p) {
				t.Errorf("step %+v of %+v: want 4096 bytes, its direction, inside it", *s, *p)
			}
			if _, sc, _ := tef.TrackOf(s.Tid); sc != ch {
				t.Errorf("step %+v on channel %d's track, want %d", *s, sc, ch)
			}
			if s.Tid == p.Tid {
				onLane++
			}
		}
		if mine != 3 || len(idx) != 3 || onLane == 0 || onLane == 3 {
			t.Errorf("%s on channel %d: %d steps (indices %v), %d on its lane; want 3 (0, 1, 2), some nested on its lane and the overlapping ones beside", p.Name, ch, mine, idx, onLane)
		}
	}
	// Waits: three per step, each inside a step on its track.
	waits := byCat(f, tef.CatWait)
	if len(waits) != 36 {
		t.Fatalf("rank %d: %d waits, want 36", rank, len(waits))
	}
	for _, w := range waits {
		found := false
		for _, s := range steps {
			st, _ := argInt(s, tef.ArgStep)
			wt, _ := argInt(w, tef.ArgStep)
			found = found || (s.Tid == w.Tid && st == wt && inside(w, s))
		}
		if !found || w.Args[tef.ArgOn] == nil {
			t.Errorf("wait %+v: not inside a step of its index on its track, or no %q", *w, tef.ArgOn)
		}
	}
}

// TestGroups: with GCCL_PROFILER_MASK=all a group holds its two
// allreduces, the first nested on the group's lane.
func TestGroups(t *testing.T) {
	dir := t.TempDir()
	stdout, _ := harness(t, 5, "run", EnvOutput+"="+filepath.Join(dir, "r%r.json"), EnvMask+"=all")
	if !strings.Contains(stdout, "mask=0x5f") {
		t.Errorf("init's mask: %s; want 0x5f", stdout)
	}
	f := readValid(t, filepath.Join(dir, "r0.json"))
	groups, ops := byCat(f, tef.CatGroup), byCat(f, tef.CatOp)
	if len(groups) != 1 || len(ops) != 2 {
		t.Fatalf("%d groups, %d operations; want 1 and 2", len(groups), len(ops))
	}
	nested := 0
	for _, op := range ops {
		if !inside(op, groups[0]) {
			t.Errorf("operation %+v outside its group %+v", *op, *groups[0])
		}
		if op.Tid == groups[0].Tid {
			nested++
		}
	}
	if nested != 1 {
		t.Errorf("%d operations on the group's lane, want 1 (the other overlaps it)", nested)
	}
}

// TestDrops: a buffer of three keeps three of five collectives, counts the
// other two, and says so.
func TestDrops(t *testing.T) {
	dir := t.TempDir()
	out := filepath.Join(dir, "t.json")
	stdout, stderr := harness(t, 5, "drops", EnvOutput+"="+out, EnvEvents+"=3")
	if strings.Count(stdout, "kept") != 3 || strings.Count(stdout, "null") != 2 {
		t.Errorf("handles: %s; want three kept and two NULL", stdout)
	}
	f := readValid(t, out)
	if n := len(byCat(f, tef.CatOp)); n != 3 {
		t.Errorf("%d operations in the file, want 3", n)
	}
	if d := countOf(f, "dropped"); d != 2 {
		t.Errorf("otherData.dropped %d, want 2", d)
	}
	if !strings.Contains(stderr, "2 events dropped") || !strings.Contains(stderr, EnvEvents) {
		t.Errorf("stderr %q: want it to say 2 events were dropped and name %s", stderr, EnvEvents)
	}
	_, sum, err := Merge([]*tef.File{f})
	if err != nil || sum.Dropped != 2 || len(sum.Problems) != 1 {
		t.Errorf("Merge's summary %+v, %v: want 2 dropped, said once", sum, err)
	}
}

// TestDeclines: where the plugin cannot trace, init says why and fails,
// and NCCL's later calls with the NULL context do no harm.
func TestDeclines(t *testing.T) {
	dir := t.TempDir()
	cases := []struct {
		env  []string
		want string
	}{
		{[]string{EnvOutput + "=" + filepath.Join(dir, "missing", "t.json")}, "cannot write the trace to " + filepath.Join(dir, "missing", "t.json")},
		{[]string{EnvOutput + "=" + filepath.Join(dir, "t-%q.json")}, "unknown %q"},
		{[]string{EnvOutput + "=" + filepath.Join(dir, "t.json"), EnvMask + "=coll,bogus"}, "unknown event bogus"},
		{[]string{EnvOutput + "=" + filepath.Join(dir, "t.json"), EnvMask + "=0x20"}, "non-empty set of the bits"},
		{[]string{EnvOutput + "=" + filepath.Join(dir, "t.json"), EnvEvents + "=0"}, "from 1 to"},
	}
	for _, c := range cases {
		stdout, stderr := harness(t, 5, "declined", c.env...)
		if !strings.Contains(stdout, "ctx=null") || strings.Contains(stdout, "rc=0 ") || !strings.Contains(stdout, "survived") {
			t.Errorf("%v: %s; want init to fail with a NULL context, and the calls after it survived", c.env, stdout)
		}
		if !strings.Contains(stderr, c.want) || !strings.Contains(stderr, "NCCL runs on without this profiler") {
			t.Errorf("%v: stderr %q; want %q and that NCCL runs on", c.env, stderr, c.want)
		}
	}
	if left, _ := filepath.Glob(filepath.Join(dir, "*")); len(left) != 0 {
		t.Errorf("declined runs left %v", left)
	}
}

// TestEnvAndMergeRanks: the variables EnvFromLookup returns make the
// plugin write its per-rank files where MergeRanks finds them, and the
// merge is one valid trace of both ranks.
func TestEnvAndMergeRanks(t *testing.T) {
	so, _ := buildAll(t)
	trace := filepath.Join(t.TempDir(), "trace.json")
	none := func(string) (string, bool) { return "", false }
	env, err := EnvFromLookup(none, trace, func() (string, error) { return so, nil })
	if err != nil {
		t.Fatal(err)
	}
	if len(env) != 2 || env[0] != EnvPlugin+"="+so || !strings.HasPrefix(env[1], EnvOutput+"="+RankDir(trace)) {
		t.Fatalf("env %q", env)
	}
	if err := os.WriteFile(filepath.Join(RankDir(trace), "r7-stale.json"), []byte("{}"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := ClearRanks(trace); err != nil {
		t.Fatal(err)
	}
	harness(t, 6, "run", env...)
	sum, err := MergeRanks(trace)
	if err != nil {
		t.Fatal(err)
	}
	if sum.Files != 2 || sum.Ranks != 2 || sum.Dropped != 0 || len(sum.Problems) != 0 || sum.Events != 2*(2+2+5+12+36) {
		t.Errorf("summary %+v: want 2 files of 2 ranks, %d events, nothing lost", sum, 2*(2+2+5+12+36))
	}
	f := readValid(t, trace)
	pids := map[int]bool{}
	for _, e := range f.TraceEvents {
		pids[e.Pid] = true
	}
	if len(pids) != 2 || !pids[0] || !pids[1] {
		t.Errorf("merged pids %v, want ranks 0 and 1", pids)
	}
}

func TestEnvRefuses(t *testing.T) {
	ok := func() (string, error) { return "/opt/gccl.so", nil }
	env := func(m map[string]string) func(string) (string, bool) {
		return func(k string) (string, bool) { v, ok := m[k]; return v, ok }
	}
	trace := filepath.Join(t.TempDir(), "t.json")
	cases := []struct {
		lookup func(string) (string, bool)
		build  func() (string, error)
		want   string
	}{
		{env(map[string]string{EnvPlugin: "/opt/other.so"}), ok, "NCCL loads one profiler: unset " + EnvPlugin},
		{env(map[string]string{EnvMask: "coll,nope"}), ok, `unknown event "nope"`},
		{env(map[string]string{EnvMask: "0x80"}), ok, "non-empty set of the bits"},
		{env(map[string]string{EnvEvents: "-4"}), ok, "from 1 to"},
		{env(nil), func() (string, error) { return "", fmt.Errorf("no C compiler") }, "needs gccl's profiler plugin: no C compiler"},
	}
	for _, c := range cases {
		if _, err := EnvFromLookup(c.lookup, trace, c.build); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("error %v, want one saying %q", err, c.want)
		}
	}
	if got, err := EnvFromLookup(env(map[string]string{EnvPlugin: " /opt/gccl.so "}), trace, ok); err != nil || len(got) != 2 {
		t.Errorf("NCCL_PROFILER_PLUGIN naming gccl's own: %v, %v", got, err)
	}
}

// TestMergeRebasesAndJoins: files on other hours' bases line up; two
// communicators of one rank join into one process, on the same tracks when
// one follows the other and apart when they overlap.
func TestMergeRebasesAndJoins(t *testing.T) {
	file := func(pid int, base int64, ts float64) *tef.File {
		return &tef.File{
			TraceEvents: []tef.Event{tef.ProcessName(pid, "rank"), tef.Complete("AllReduce", tef.CatOp, pid, tef.RankTrack, int64(ts*1e3), 10e3, nil)},
			OtherData:   map[string]any{"ts_base_ns": strconv.FormatInt(base, 10)},
		}
	}
	const hour = int64(3600e9)
	out, sum, err := Merge([]*tef.File{file(0, 5*hour, 100), file(1, 4*hour, 100), file(0, 5*hour, 105), file(0, 5*hour, 500)})
	if err != nil {
		t.Fatal(err)
	}
	if errs := tef.Validate(out); errs != nil {
		t.Fatalf("merged: %v", errs)
	}
	if sum.Ranks != 2 || sum.Files != 4 || out.OtherData["ts_base_ns"] != strconv.FormatInt(4*hour, 10) {
		t.Errorf("summary %+v, base %v", sum, out.OtherData["ts_base_ns"])
	}
	var r0 []tef.Event
	for _, e := range out.TraceEvents {
		if e.Ph != "X" {
			continue
		}
		if e.Pid == 1 && e.Ts != 100 {
			t.Errorf("rank 1 on the earliest base moved to %v", e.Ts)
		}
		if e.Pid == 0 {
			r0 = append(r0, e)
		}
	}
	if len(r0) != 3 {
		t.Fatalf("rank 0: %d events, want 3", len(r0))
	}
	shift := float64(hour) / 1e3
	tids := map[float64]int{}
	for _, e := range r0 {
		tids[e.Ts-shift] = e.Tid
	}
	if want := map[float64]int{100: tef.RankTrack, 105: tef.RankTrack + CommTracks, 500: tef.RankTrack}; fmt.Sprint(tids) != fmt.Sprint(want) {
		t.Errorf("rank 0's tracks by start %v, want %v: the second communicator (overlapping) %d tracks apart, the third (after) on the first's", tids, want, CommTracks)
	}
	if _, _, err := Merge([]*tef.File{{TraceEvents: []tef.Event{tef.ProcessName(0, "a"), tef.ProcessName(1, "b")}}}); err == nil {
		t.Error("a file of two ranks merged")
	}
}
