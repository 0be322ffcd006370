//go:build linux && (amd64 || arm64)

package perf

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
	"unsafe"

	"github.com/ebitengine/purego"

	"github.com/gccl/gccl/lib/nccl/fakelib"
	"github.com/gccl/gccl/lib/nccl/profplugin"
	"github.com/gccl/gccl/lib/reduce"
)

// fake is the stand-in libcudart/libnccl (lib/nccl/fakelib), loaded: the
// backend finds it through GCCL_CUDART_LIBRARY and GCCL_NCCL_LIBRARY, and
// a test reads its counters through these symbols.
type fake struct {
	path                       string
	reset, count, cost, minCTA uintptr
	bench, sync                uintptr
}

// useFake builds the fake and points the backend at it for this test (a
// test that uses it cannot run in parallel: it sets the environment).
func useFake(tb testing.TB) *fake {
	tb.Helper()
	path, err := fakelib.Build(tb.TempDir(), os.Getenv("CC"))
	if err != nil {
		tb.Skipf("no fake CUDA/NCCL library: %v", err)
	}
	tb.Setenv("GCCL_CUDART_LIBRARY", path)
	tb.Setenv("GCCL_NCCL_LIBRARY", path)
	h, err := purego.Dlopen(path, purego.RTLD_NOW|purego.RTLD_GLOBAL)
	if err != nil {
		tb.Fatal(err)
	}
	f := &fake{path: path}
	for _, s := range []struct {
		p    *uintptr
		name string
	}{{&f.reset, "fake_reset"}, {&f.count, "fake_count"}, {&f.cost, "fake_set_cost"}, {&f.minCTA, "fake_last_min_ctas"}, {&f.bench, "fake_bench_loop"}, {&f.sync, "fake_set_sync"}} {
		if *s.p, err = purego.Dlsym(h, s.name); err != nil {
			tb.Fatal(err)
		}
	}
	f.setCost(0, 0)
	f.setSync(0)
	tb.Cleanup(func() { f.setCost(0, 0); f.setSync(0) })
	return f
}

func (f *fake) resetCounts() { purego.SyscallN(f.reset) }

func (f *fake) n(counter int) int64 {
	r, _, _ := purego.SyscallN(f.count, uintptr(counter))
	return int64(r)
}

// setCost makes each enqueue spin op ns and each launch launch ns.
func (f *fake) setCost(op, launch int64) { purego.SyscallN(f.cost, uintptr(op), uintptr(launch)) }

// setSync makes every stream sync spin ns.
func (f *fake) setSync(ns int64) { purego.SyscallN(f.sync, uintptr(ns)) }

// rowTimes are the out-of-place and in-place times (us) of a table's rows.
func rowTimes(tb testing.TB, stdout string) (oop, ip []float64) {
	tb.Helper()
	for _, row := range dataRows(stdout) {
		f := strings.Fields(row)
		if len(f) < 13 {
			tb.Fatalf("short row %q", row)
		}
		a, err1 := strconv.ParseFloat(f[5], 64)
		b, err2 := strconv.ParseFloat(f[9], 64)
		if err1 != nil || err2 != nil {
			tb.Fatalf("row %q: times %q, %q", row, f[5], f[9])
		}
		oop, ip = append(oop, a), append(ip, b)
	}
	return oop, ip
}

// The NCCL backend runs end to end on the fake: every collective, one and
// four ranks a thread, exit 0 and a row per size.
func TestNCCLBackendOnFake(t *testing.T) {
	useFake(t)
	for _, tt := range []*Test{AllReduce, AllGather, ReduceScatter, Broadcast, Reduce, SendRecv, AlltoAll, Gather, Scatter} {
		for _, g := range []string{"1", "4"} {
			r := runWith(t, tt, nil, "--backend", "nccl", "-g", g, "-b", "8", "-e", "64K", "-f", "8", "-n", "3", "-w", "1", "-c", "0")
			if r.code != exitOK {
				t.Errorf("%s -g %s: exit %d\n%s", tt.Prog, g, r.code, r.stderr)
				continue
			}
			if rows := dataRows(r.stdout); len(rows) != 5 {
				t.Errorf("%s -g %s: %d rows, want 5\n%s", tt.Prog, g, len(rows), r.stdout)
			}
		}
	}
}

// fakeRunner is a runner of t on the NCCL backend over the fake, -g g
// ranks on one thread, its communicators made and mirrored; the point p
// is t's at size bytes.
func fakeRunner(tb testing.TB, t *Test, g int, size int64, extra ...string) (*runner, point) {
	tb.Helper()
	o, err := parseOptions(t.Prog, append([]string{"--backend", "nccl", "-g", strconv.Itoa(g), "-b", "8", "-e", "1M", "-c", "0"}, extra...), io.Discard)
	if err != nil {
		tb.Fatal(err)
	}
	be, err := newNCCLBackend(o, nil, g)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { be.Close() })
	comms, err := be.Init(g, RunConfig{})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() {
		for _, c := range comms {
			c.Destroy()
		}
	})
	e := &engine{t: t, o: o, be: be, n: g}
	r, err := e.newRunner(comms)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { r.close(true) })
	return r, newPoint(t, size, reduce.Float32, reduce.Sum, 0, g)
}

// One timed iteration makes the calls nccl-tests' startColl makes, from
// one thread, and no cudaSetDevice: an allreduce on -g 4 is a group start,
// four ncclAllReduce and a group end (6 calls, as nccl-tests' C); a
// sendrecv the same group around four sends and four receives (the
// ranks' own groups nest in it and stay in Go). The batch ends with one
// stream sync a rank, as nccl-tests' completeColl.
func TestNCCLCallsPerIteration(t *testing.T) {
	f := useFake(t)
	const iters = 50
	cases := []struct {
		test                      *Test
		g                         int
		counter                   int
		perIter, groups, launches int64 // calls of the collective's own kind, group start/ends, launches
	}{
		{AllReduce, 4, fakelib.AllReduce, 4, 1, 4},
		{AllReduce, 1, fakelib.AllReduce, 1, 0, 1},
		{SendRecv, 4, fakelib.Send, 4, 1, 4},
		{SendRecv, 1, fakelib.Send, 1, 1, 1},
		{AllGather, 4, fakelib.AllGather, 4, 1, 4},
		{Broadcast, 4, fakelib.Broadcast, 4, 1, 4},
	}
	for _, c := range cases {
		r, p := fakeRunner(t, c.test, c.g, 8192)
		f.resetCounts()
		res, err := r.batch(p, false, 1, false, iters)
		if err != nil {
			t.Fatalf("%s -g %d: %v", c.test.Prog, c.g, err)
		}
		if res[0].sec <= 0 {
			t.Errorf("%s -g %d: time %g", c.test.Prog, c.g, res[0].sec)
		}
		ops := int64(iters + 1) // the untimed first operation, then the timed ones
		name := fmt.Sprintf("%s -g %d", c.test.Prog, c.g)
		for _, w := range []struct {
			what    string
			counter int
			want    int64
		}{
			{"collective calls", c.counter, c.perIter * ops},
			{"group starts", fakelib.GroupStart, c.groups * ops},
			{"group ends", fakelib.GroupEnd, c.groups * ops},
			{"launches", fakelib.Launch, c.launches * ops},
			{"stream syncs", fakelib.StreamSync, 2 * int64(c.g)},
			{"cudaSetDevice", fakelib.SetDevice, 0},
			{"calls from a second thread", fakelib.Foreign, 0},
		} {
			if got := f.n(w.counter); got != w.want {
				t.Errorf("%s: %d %s in %d operations, want %d", name, got, w.what, ops, w.want)
			}
		}
	}
}

// cLoop runs nccl-tests' timed loop in C (fake_bench_loop) on r's own
// communicators, streams and buffers, and returns its nanoseconds per
// iteration.
func (f *fake) cLoop(r *runner, p point, iters int) float64 {
	var comms, streams, send, recv []uintptr
	for _, c := range r.comms {
		nr := c.(*ncclRank)
		comms = append(comms, nr.comm)
		streams = append(streams, nr.stream)
		send = append(send, nr.mirrors[0].dev)
		recv = append(recv, nr.mirrors[1].dev)
	}
	coll := 0
	if r.t == SendRecv {
		coll = 1
	}
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	ns, _, _ := purego.SyscallN(f.bench, uintptr(unsafe.Pointer(&comms[0])), uintptr(unsafe.Pointer(&streams[0])),
		uintptr(unsafe.Pointer(&send[0])), uintptr(unsafe.Pointer(&recv[0])), uintptr(len(comms)), uintptr(iters), uintptr(coll), uintptr(p.param))
	runtime.KeepAlive(comms)
	runtime.KeepAlive(streams)
	runtime.KeepAlive(send)
	runtime.KeepAlive(recv)
	return float64(ns) / float64(iters)
}

// BenchmarkNCCLHostPath is the host's cost of one timed iteration on the
// NCCL backend against the fake library (which does nothing), beside the
// same calls made from C as nccl-tests makes them: gccl's ns/iter against
// c's is what the Go side adds per iteration. launch=5us makes every
// launch spin 5 us as NCCL's own work would, so a slow path through the
// Go runtime around long C calls shows too.
//
//	go test ./perf -run '^$' -bench NCCLHostPath -benchtime 20000x
func BenchmarkNCCLHostPath(b *testing.B) {
	f := useFake(b)
	for _, launch := range []int64{0, 5000} {
		for _, tt := range []*Test{AllReduce, SendRecv} {
			for _, g := range []int{1, 4} {
				r, p := fakeRunner(b, tt, g, 8192)
				name := fmt.Sprintf("%s/g%d/launch=%dus", tt.Collective, g, launch/1000)
				b.Run(name+"/gccl", func(b *testing.B) {
					f.setCost(0, launch)
					res, err := r.batch(p, false, 1, false, b.N)
					if err != nil {
						b.Fatal(err)
					}
					b.ReportMetric(res[0].sec*1e9, "ns/iter")
				})
				b.Run(name+"/c", func(b *testing.B) {
					f.setCost(0, launch)
					b.ReportMetric(f.cLoop(r, p, b.N), "ns/iter")
				})
			}
		}
	}
}

// The device buffers come from ncclMemAlloc, as nccl-tests' do, unless
// GCCL_NCCL_ALLOC=cudamalloc; the header says which.
func TestNCCLBuffersFromMemAlloc(t *testing.T) {
	f := useFake(t)
	for _, c := range []struct {
		env, header string
		counter     int
	}{{"", "buffers by ncclMemAlloc", fakelib.MemAlloc}, {"cudamalloc", "buffers by cudaMalloc", fakelib.Malloc}} {
		t.Setenv(EnvAlloc, c.env)
		f.resetCounts()
		r := runWith(t, AllReduce, nil, "--backend", "nccl", "-g", "2", "-b", "8", "-e", "8", "-n", "1", "-w", "1", "-c", "0")
		if r.code != exitOK {
			t.Fatalf("%s=%q: exit %d\n%s", EnvAlloc, c.env, r.code, r.stderr)
		}
		if n := f.n(c.counter); n != 4 { // send and recv on each of 2 ranks
			t.Errorf("%s=%q: %d allocations of the expected kind, want 4 (malloc %d memalloc %d)", EnvAlloc, c.env, n, f.n(fakelib.Malloc), f.n(fakelib.MemAlloc))
		}
		if !strings.Contains(r.stdout, c.header) {
			t.Errorf("%s=%q: the header does not say %q\n%s", EnvAlloc, c.env, c.header, r.stdout)
		}
	}
}

// -C 1 reports nccl-tests' cputime: the time up to the last enqueue, the
// final wait not counted. With every stream sync taking 40 ms, one
// iteration's time holds the two ranks' waits (80 ms) and its cputime
// none of them.
func TestNCCLCPUTime(t *testing.T) {
	f := useFake(t)
	const syncNs = 40e6
	f.setSync(syncNs)
	base := []string{"--backend", "nccl", "-g", "2", "-b", "8", "-e", "8", "-n", "1", "-w", "0", "-c", "0"}
	wall := runWith(t, AllReduce, nil, base...)
	cpu := runWith(t, AllReduce, nil, append(base, "-C", "1")...)
	for _, r := range []result{wall, cpu} {
		if r.code != exitOK {
			t.Fatalf("exit %d\n%s", r.code, r.stderr)
		}
	}
	if !strings.Contains(cpu.stdout, "cputime") {
		t.Errorf("-C 1: the header does not say cputime\n%s", cpu.stdout)
	}
	w, _ := rowTimes(t, wall.stdout)
	c, _ := rowTimes(t, cpu.stdout)
	if w[0] < 2*syncNs/1e3 {
		t.Errorf("time %.0f us holds less than the two ranks' waits (%.0f us)", w[0], 2*syncNs/1e3)
	}
	if c[0] >= syncNs/1e3 {
		t.Errorf("cputime %.0f us holds a wait (%.0f us each): it must stop at the last enqueue", c[0], syncNs/1e3)
	}
}

// A thread's every call, batch after batch (warmup, timing, a check),
// comes from one OS thread, as an nccl-tests thread makes them: NCCL's
// groups and CUDA's device are per thread, and a new one per batch also
// lands on another core with cold caches.
func TestNCCLOneThreadAcrossBatches(t *testing.T) {
	f := useFake(t)
	r, p := fakeRunner(t, AllReduce, 4, 8192)
	// Other goroutines keep the scheduler's threads busy and moving, as a
	// run's output, signals and timers do: a thread taken per batch from
	// whatever is free is then seldom the same twice.
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for i := 0; i < 4; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-stop:
					return
				default:
					time.Sleep(20 * time.Microsecond)
				}
			}
		}()
	}
	defer func() { close(stop); wg.Wait() }()
	f.resetCounts()
	for i := 0; i < 20; i++ {
		if err := r.warmPoint(p, i%2 == 1, 3); err != nil {
			t.Fatal(err)
		}
		if _, err := r.batch(p, i%2 == 1, 1, i == 0, 10); err != nil {
			t.Fatal(err)
		}
		if err := r.runAll(p, false); err != nil {
			t.Fatal(err)
		}
		time.Sleep(100 * time.Microsecond) // the driver parks (a row written, a barrier) and wakes wherever
	}
	if n := f.n(fakelib.AllReduce); n == 0 {
		t.Fatal("no allreduce reached the library")
	}
	if n := f.n(fakelib.Foreign); n != 0 {
		t.Errorf("%d calls came from another OS thread than the first: the thread's work hops between threads", n)
	}
}

// TestNCCLTraceStepsOnFake: --trace-steps on --backend nccl clears an
// earlier run's per-rank files, has NCCL load gccl's profiler plugin, and
// merges the ranks' files after the run; the fake NCCL loads no plugin, so
// the merge finds none and says so (a real NCCL's run: scripts/nccl-profile.sh).
func TestNCCLTraceStepsOnFake(t *testing.T) {
	useFake(t)
	trace := filepath.Join(t.TempDir(), "steps.json")
	stale := filepath.Join(profplugin.RankDir(trace), "r0-old.json")
	if err := os.MkdirAll(filepath.Dir(stale), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(stale, []byte("{}"), 0o644); err != nil {
		t.Fatal(err)
	}
	r := runWith(t, AllReduce, nil, "--backend", "nccl", "-g", "2", "-b", "8", "-e", "8", "-n", "2", "-w", "1", "-c", "0", "--trace-steps", trace)
	if r.code != exitInternal || !strings.Contains(r.stderr, "no NCCL trace files") || !strings.Contains(r.stderr, "profiler plugin") {
		t.Errorf("exit %d, stderr %q: want the merge to say NCCL wrote no files", r.code, r.stderr)
	}
	if _, err := os.Stat(stale); !os.IsNotExist(err) {
		t.Errorf("the earlier run's %s is still there (%v)", stale, err)
	}
	if rows := dataRows(r.stdout); len(rows) != 1 {
		t.Errorf("%d rows, want the run's 1 before the merge\n%s", len(rows), r.stdout)
	}
}
