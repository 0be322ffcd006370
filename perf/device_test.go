package perf

import (
	"errors"
	"os"

	"fmt"
	"github.com/gccl/gccl/results"
	"strings"
	"sync/atomic"
	"testing"
	"time"
	"unsafe"

	"github.com/gccl/gccl/lib/ccl"
	"github.com/gccl/gccl/lib/reduce"
)

// fakeDevice is a backend whose ranks keep their data in "device" twins of
// the harness's host buffers, as the NCCL backend does, so the engine's
// uploads and downloads are checked on any machine: a check passes only if
// the inputs reached the twins and the outputs came back. Its ranks also
// capture calls into "graphs" and time with "events".
type fakeDevice struct {
	Embedded
	skipUpload bool // a broken device: uploads are dropped
	launches   *atomic.Int64
	// capturing counts the ranks capturing now (all share one thread
	// with -g: CUDA's thread-local capture rule applies to them together).
	capturing *atomic.Int64
}

func (be fakeDevice) Name() BackendName { return "fake-device" }

func (be fakeDevice) Init(n int, rc RunConfig) ([]Comm, error) {
	cs, err := Embedded{}.Init(n, rc)
	for i := range cs {
		cs[i] = &fakeRank{Comm: cs[i], be: be}
	}
	return cs, err
}

// fakeRank maps host slices to twin slices and runs the embedded rank on
// the twins.
type fakeRank struct {
	Comm
	be        fakeDevice
	twins     []twin
	capturing bool
	ready     bool // the graph is instantiated
	graph     []func() error
	events    []time.Time
}

type twin struct{ host, dev []byte }

func (r *fakeRank) Mirror(bufs ...[]byte) error {
	for _, b := range bufs {
		if len(b) > 0 {
			r.twins = append(r.twins, twin{host: b, dev: make([]byte, len(b))})
		}
	}
	return nil
}

// dev returns the twin of host.
func (r *fakeRank) dev(host []byte) []byte {
	p := uintptr(unsafe.Pointer(unsafe.SliceData(host)))
	for _, t := range r.twins {
		base := uintptr(unsafe.Pointer(&t.host[0]))
		if p >= base && p+uintptr(len(host)) <= base+uintptr(len(t.host)) {
			off := int(p - base)
			return t.dev[off : off+len(host)]
		}
	}
	panic(fmt.Sprintf("fake device: %d bytes outside the mirrored buffers", len(host)))
}

func (r *fakeRank) ToDevice(h []byte) error {
	if !r.be.skipUpload {
		copy(r.dev(h), h)
	}
	return nil
}

func (r *fakeRank) ToHost(h []byte) error {
	copy(h, r.dev(h))
	return nil
}

// do runs a call now, or records it while capturing.
func (r *fakeRank) do(f func() error) error {
	if r.capturing {
		r.graph = append(r.graph, f)
		return nil
	}
	return f()
}

func (r *fakeRank) AllReduce(send, recv []byte, count int, dt reduce.DataType, op ccl.RedOp) error {
	s, d := r.dev(send), r.dev(recv)
	return r.do(func() error { return r.Comm.AllReduce(s, d, count, dt, op) })
}

func (r *fakeRank) AllGather(send, recv []byte, count int, dt reduce.DataType) error {
	s, d := r.dev(send), r.dev(recv)
	return r.do(func() error { return r.Comm.AllGather(s, d, count, dt) })
}

func (r *fakeRank) ReduceScatter(send, recv []byte, count int, dt reduce.DataType, op ccl.RedOp) error {
	s, d := r.dev(send), r.dev(recv)
	return r.do(func() error { return r.Comm.ReduceScatter(s, d, count, dt, op) })
}

func (r *fakeRank) Broadcast(send, recv []byte, count int, dt reduce.DataType, root int) error {
	s, d := r.dev(send), r.dev(recv)
	return r.do(func() error { return r.Comm.Broadcast(s, d, count, dt, root) })
}

func (r *fakeRank) Reduce(send, recv []byte, count int, dt reduce.DataType, op ccl.RedOp, root int) error {
	s, d := r.dev(send), r.dev(recv)
	return r.do(func() error { return r.Comm.Reduce(s, d, count, dt, op, root) })
}

func (r *fakeRank) AlltoAll(send, recv []byte, count int, dt reduce.DataType) error {
	s, d := r.dev(send), r.dev(recv)
	return r.do(func() error { return r.Comm.AlltoAll(s, d, count, dt) })
}

func (r *fakeRank) Gather(send, recv []byte, count int, dt reduce.DataType, root int) error {
	s, d := r.dev(send), r.dev(recv)
	return r.do(func() error { return r.Comm.Gather(s, d, count, dt, root) })
}

func (r *fakeRank) Scatter(send, recv []byte, count int, dt reduce.DataType, root int) error {
	s, d := r.dev(send), r.dev(recv)
	return r.do(func() error { return r.Comm.Scatter(s, d, count, dt, root) })
}

func (r *fakeRank) Send(buf []byte, count int, dt reduce.DataType, peer int) error {
	b := r.dev(buf)
	return r.do(func() error { return r.Comm.Send(b, count, dt, peer) })
}

func (r *fakeRank) Recv(buf []byte, count int, dt reduce.DataType, peer int) error {
	b := r.dev(buf)
	return r.do(func() error { return r.Comm.Recv(b, count, dt, peer) })
}

func (r *fakeRank) GroupStart() error { return r.do(r.Comm.GroupStart) }
func (r *fakeRank) GroupEnd() error   { return r.do(r.Comm.GroupEnd) }

// The fake device keeps CUDA's rule: no graph is instantiated while a
// rank (a stream of the thread) is still capturing.
func (r *fakeRank) BeginCapture() error {
	r.capturing, r.graph, r.ready = true, nil, false
	r.be.capturing.Add(1)
	return nil
}

func (r *fakeRank) EndCapture() error {
	r.capturing = false
	r.be.capturing.Add(-1)
	return nil
}

func (r *fakeRank) Instantiate() error {
	if n := r.be.capturing.Load(); n > 0 {
		return fmt.Errorf("fake cudaGraphInstantiate: operation not permitted when stream is capturing (%d capturing)", n)
	}
	r.ready = true
	return nil
}

func (r *fakeRank) FreeGraph() error { r.graph, r.ready = nil, false; return nil }

func (r *fakeRank) LaunchGraph() error {
	if !r.ready {
		return errors.New("fake cudaGraphLaunch: graph not instantiated")
	}
	r.be.launches.Add(1)
	for _, f := range r.graph {
		if err := f(); err != nil {
			return err
		}
	}
	return nil
}

// RecordEvent waits for the rank's work, then notes the time: a slow but
// true stream clock.
func (r *fakeRank) RecordEvent(i int) error {
	if err := r.Synchronize(); err != nil {
		return err
	}
	for len(r.events) <= i {
		r.events = append(r.events, time.Time{})
	}
	r.events[i] = time.Now()
	return nil
}

func (r *fakeRank) EventMs(i, j int) (float64, error) {
	return float64(r.events[j].Sub(r.events[i])) / 1e6, nil
}

func (fakeDevice) Versions() (string, string, string) { return "0.0.0", "0.0", "fake" }

func newFakeDevice() fakeDevice {
	return fakeDevice{launches: new(atomic.Int64), capturing: new(atomic.Int64)}
}

// Every collective, in and out of place, checks right on a backend whose
// data lives in device twins: the engine uploads inputs and downloads
// outputs around every check.
func TestDeviceMirrorsEveryCollective(t *testing.T) {
	for _, tc := range Tests {
		for _, g := range []string{"1", "3"} {
			if tc == Hypercube && g == "3" {
				continue
			}
			r := runWith(t, tc, newFakeDevice(), args(tiny, []string{"-g", g, "-c", "2"})...)
			if r.code != 0 {
				t.Errorf("%s -g %s: exit %d\n%s%s", tc.Prog, g, r.code, r.stdout, r.stderr)
				continue
			}
			if len(dataRows(r.stdout)) == 0 {
				t.Errorf("%s -g %s: no rows", tc.Prog, g)
			}
		}
	}
}

// The checks see the device's data, not the host's: a device that drops
// uploads fails them (the outputs come back poisoned or stale).
func TestDeviceCheckSeesTheDevice(t *testing.T) {
	be := newFakeDevice()
	be.skipUpload = true
	r := runWith(t, AllReduce, be, args(tiny, []string{"-g", "2"})...)
	if r.code != exitDataError || !strings.Contains(r.stdout, "Out of bounds values") {
		t.Fatalf("exit %d, want %d (wrong data)\n%s%s", r.code, exitDataError, r.stdout, r.stderr)
	}
}

// All types and reductions, --check-timed, -K and -m on device twins.
func TestDeviceChecksEveryTypeAndMode(t *testing.T) {
	for _, extra := range [][]string{
		{"-d", "all", "-o", "all"},
		{"--check-timed"},
		{"-m", "3"},
		{"-K", "2"},
		{"-I", "1", "-m", "2"},
		{"-u", "1", "-d", "half"},
	} {
		r := runWith(t, AllReduce, newFakeDevice(), args(tiny, []string{"-g", "2"}, extra)...)
		if r.code != 0 {
			t.Errorf("%v: exit %d\n%s%s", extra, r.code, r.stdout, r.stderr)
		}
	}
}

// -G captures -n iterations once per size and placement and launches the
// graph -G times on every rank, and the data still checks.
func TestDeviceGraphLaunches(t *testing.T) {
	be := newFakeDevice()
	r := runWith(t, AllReduce, be, "-b", "1K", "-e", "1K", "-n", "3", "-w", "1", "-g", "2", "-G", "4", "--backend", "nccl")
	if r.code != 0 {
		t.Fatalf("exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	// One size, two placements, two ranks, four launches each.
	if got := be.launches.Load(); got != 1*2*2*4 {
		t.Errorf("%d graph launches, want %d", got, 1*2*2*4)
	}
	if !strings.Contains(r.stdout, "graph: 4") {
		t.Errorf("header does not show graph: 4\n%s", r.stdout)
	}
}

// -I on a device times iterations with events, and says so.
func TestDeviceEventTiming(t *testing.T) {
	r := runWith(t, AllReduce, newFakeDevice(), args(tiny, []string{"-I", "1", "--backend", "nccl"})...)
	if r.code != 0 {
		t.Fatalf("exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	if !strings.Contains(r.stdout, "# Per-Iteration Report: CUDA event timing") {
		t.Errorf("no event-timing header\n%s", r.stdout)
	}
}

// The embedded backend refuses the GPU-only flags; the nccl backend's
// combinations that nccl-tests refuses are refused before anything runs.
func TestNCCLFlagErrors(t *testing.T) {
	cases := []struct {
		args []string
		want string
	}{
		{[]string{"--backend", "nccl", "-G", "2", "-I", "1"}, "-G/--cudagraph with per-iteration timing"},
		{[]string{"--backend", "nccl", "-G", "2", "-z", "3"}, "-z 3"},
		{[]string{"--backend", "nccl", "-G", "2", "--check-timed"}, "--check-timed"},
		{[]string{"--backend", "nccl", "-G", "-1"}, "invalid -G/--cudagraph -1"},
		{[]string{"--backend", "nccl", "-R", "3"}, "invalid -R/--local_register 3"},
		{[]string{"--backend", "nccl", "-D", "1"}, "-D/--device_implementation 1"},
		{[]string{"--backend", "nccl", "--interleave", "--proto", "LL,Simple"}, "--interleave"},
		{[]string{"--backend", "nccl", "--buffsize", "1M,2M"}, "NCCL_BUFFSIZE once per process"},
		{[]string{"--backend", "nccl", "--ranks-per-host", "2"}, "--ranks-per-host"},
		{[]string{"--backend", "gloo"}, `unknown --backend "gloo"`},
		{[]string{"-G", "1"}, "the embedded backend has none"},
	}
	for _, c := range cases {
		r := runPerf(t, AllReduce, args([]string{"-b", "8", "-e", "8"}, c.args)...)
		if r.code != exitInvalidUsage || !strings.Contains(r.stderr, c.want) {
			t.Errorf("%v: exit %d, stderr %q; want exit %d and %q", c.args, r.code, r.stderr, exitInvalidUsage, c.want)
		}
	}
}

// Without the libraries, --backend nccl fails at once with exit 2 (CUDA
// error, as nccl-tests) and names what it looked for.
func TestNCCLBackendWithoutLibraries(t *testing.T) {
	t.Setenv("GCCL_CUDART_LIBRARY", t.TempDir()+"/libcudart.so.13")
	var out, errb strings.Builder
	done := make(chan int, 1)
	go func() { done <- Main(AllReduce, []string{"--backend", "nccl", "-b", "8", "-e", "8"}, &out, &errb) }()
	select {
	case code := <-done:
		if code != exitCUDA {
			t.Errorf("exit %d, want %d", code, exitCUDA)
		}
	case <-time.After(30 * time.Second): // a hang, not a timing assertion
		t.Fatal("--backend nccl without libraries did not return")
	}
	for _, want := range []string{"--backend nccl", "GCCL_CUDART_LIBRARY", "libcudart.so.13"} {
		if !strings.Contains(errb.String(), want) {
			t.Errorf("stderr %q does not name %q", errb.String(), want)
		}
	}
	if out.Len() != 0 {
		t.Errorf("printed a table without a backend:\n%s", out.String())
	}
}

// --tuning-file steers the embedded stack's automatic choices as
// GCCL_TUNING_FILE does: the records say a table rule chose.
func TestTuningFileFlag(t *testing.T) {
	dir := t.TempDir()
	table := dir + "/table.json"
	rule := `{"version": 1, "rules": [{"coll":"allreduce","bytes":[0,-1],"algo":"Ring","proto":"LL","channels":1}]}`
	if err := os.WriteFile(table, []byte(rule), 0o644); err != nil {
		t.Fatal(err)
	}
	// The environment's table (Simple) loses to the flag's, and the flag
	// reaches the stack in its Config: the variable is left as it was.
	other := dir + "/env.json"
	if err := os.WriteFile(other, []byte(strings.Replace(rule, `"LL"`, `"Simple"`, 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Setenv(ccl.EnvTuningFile, other)
	out := dir + "/r.jsonl"
	r := runPerf(t, AllReduce, args(tiny, []string{"-g", "2", "--tuning-file", table, "--out", out})...)
	if r.code != 0 {
		t.Fatalf("exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	if got := os.Getenv(ccl.EnvTuningFile); got != other {
		t.Errorf("%s is %q after the run, want %q: perf must not set it", ccl.EnvTuningFile, got, other)
	}
	if !strings.Contains(r.stdout, "# Tuning file: "+table) {
		t.Errorf("header does not name the tuning file\n%s", r.stdout)
	}
	if !strings.Contains(r.stdout, ccl.EnvTuningFile+"="+other+" in the environment is overridden by --tuning-file") {
		t.Errorf("header does not say --tuning-file overrode %s\n%s", ccl.EnvTuningFile, r.stdout)
	}
	recs, err := results.ReadFile(out)
	if err != nil || len(recs) == 0 {
		t.Fatalf("records: %v (%d)", err, len(recs))
	}
	for _, rec := range recs {
		if rec.ChosenBy != "table" || rec.ChosenProto != "LL" || rec.ChosenAlgo != "Ring" {
			t.Fatalf("record chosen by %q: %s/%s, want the table's Ring/LL", rec.ChosenBy, rec.ChosenAlgo, rec.ChosenProto)
		}
		if rec.Env[ccl.EnvTuningFile] != table {
			t.Fatalf("record env %v: want %s=%s, the table that ran", rec.Env, ccl.EnvTuningFile, table)
		}
	}
	// Without the flag, the variable (read once by perf) steers the stack.
	out = dir + "/env.jsonl"
	if r := runPerf(t, AllReduce, args(tiny, []string{"-g", "2", "--out", out})...); r.code != 0 {
		t.Fatalf("exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	if recs, err = results.ReadFile(out); err != nil || len(recs) == 0 {
		t.Fatalf("records: %v (%d)", err, len(recs))
	}
	for _, rec := range recs {
		if rec.ChosenBy != "table" || rec.ChosenProto != "Simple" || rec.ChosenAlgo != "Ring" || rec.Env[ccl.EnvTuningFile] != other {
			t.Fatalf("record chosen by %q: %s/%s, env %v; want %s's Ring/Simple", rec.ChosenBy, rec.ChosenAlgo, rec.ChosenProto, rec.Env, ccl.EnvTuningFile)
		}
	}
	r = runPerf(t, AllReduce, args(tiny, []string{"--tuning-file", dir + "/missing.json"})...)
	if r.code != exitInvalidUsage || !strings.Contains(r.stderr, "missing.json") {
		t.Errorf("missing file: exit %d, stderr %q", r.code, r.stderr)
	}
}
