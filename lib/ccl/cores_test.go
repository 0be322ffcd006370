package ccl

import (
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/gccl/gccl/lib/bootstrap"
	"github.com/gccl/gccl/lib/proto"
)

// The model's cores are the processors or the fewer physical cores under
// them, never more and never none.
func TestModelCores(t *testing.T) {
	for _, c := range []struct{ procs, phys, want int }{
		{16, 0, 16}, {16, 8, 8}, {16, 16, 16}, {4, 8, 4}, {1, 1, 1}, {2, 0, 2},
	} {
		if got := modelCores(c.procs, c.phys); got != c.want {
			t.Errorf("modelCores(%d, %d) = %d, want %d", c.procs, c.phys, got, c.want)
		}
	}
}

// usableProcs: the Go processors, never more than the CPUs, never none.
func TestUsableProcs(t *testing.T) {
	for _, c := range []struct{ gomaxprocs, cpus, want int }{
		{16, 16, 16}, {32, 16, 16}, {8, 16, 8}, {2, 0, 2}, {0, 4, 1}, {1, 1, 1},
	} {
		if got := usableProcs(c.gomaxprocs, c.cpus); got != c.want {
			t.Errorf("usableProcs(%d, %d) = %d, want %d", c.gomaxprocs, c.cpus, got, c.want)
		}
	}
	// A world of one process assumes no more processors than its CPUs.
	prev := runtime.GOMAXPROCS(4 * runtime.NumCPU())
	defer runtime.GOMAXPROCS(prev)
	comms := initT(t, 2, Config{})
	if got := comms[0].w.procs; got != runtime.NumCPU() {
		t.Errorf("GOMAXPROCS %d on %d CPUs: the world assumes %d processors, want %d", 4*runtime.NumCPU(), runtime.NumCPU(), got, runtime.NumCPU())
	}
}

// planSpin: no long spin past the processors; on big hosts a long spin
// without back-off whose yields keep the processor; on small ones the
// short spin, backing off unless the runners fill at most half the
// processors, yielding the goroutine.
func TestPlanSpin(t *testing.T) {
	long := proto.SpinPlan{For: longSpinFor, NoBackOff: true, KeepProc: true}
	short := proto.SpinPlan{For: proto.DefaultSpinFor}
	shortNoBackOff := proto.SpinPlan{For: proto.DefaultSpinFor, NoBackOff: true}
	for _, c := range []struct {
		runners, procs int
		want           proto.SpinPlan
	}{
		{3, 2, proto.SpinPlan{}}, {17, 16, proto.SpinPlan{}}, {64, 16, proto.SpinPlan{}},
		{16, 16, long}, {1, 8, long}, {8, 8, long}, {9, 8, proto.SpinPlan{}},
		{2, 2, short}, {1, 2, shortNoBackOff}, {2, 4, shortNoBackOff}, {3, 4, short}, {1, 1, short},
		{4, 7, short}, {3, 7, shortNoBackOff},
	} {
		if got := planSpin(c.runners, c.procs); got != c.want {
			t.Errorf("planSpin(%d runners, %d procs) = %+v, want %+v", c.runners, c.procs, got, c.want)
		}
	}
}

// TestNetSpin: GCCL_NET_SPIN reaches Config.NetSpin (unset, empty or 0:
// none), and a bad value is an error naming the variable; a negative
// Config.NetSpin is refused by name.
func TestNetSpin(t *testing.T) {
	for _, c := range []struct {
		override string
		want     time.Duration
		bad      bool
	}{
		{"", 0, false}, {"300us", 300 * time.Microsecond, false}, {" 2ms ", 2 * time.Millisecond, false}, {"0", 0, false},
		{"fast", 0, true}, {"-1ms", 0, true},
	} {
		cfg, err := Config{}.FromLookup(func(k string) (string, bool) { return c.override, k == EnvNetSpin })
		if (err != nil) != c.bad || cfg.NetSpin != c.want {
			t.Errorf("%s=%q: NetSpin %v, error %v; want %v, error %v", EnvNetSpin, c.override, cfg.NetSpin, err, c.want, c.bad)
		}
		if err != nil && !strings.Contains(err.Error(), EnvNetSpin) {
			t.Errorf("error %q does not name %s", err, EnvNetSpin)
		}
	}
	if _, err := (Config{NetSpin: -time.Millisecond}).validate(); err == nil || !strings.Contains(err.Error(), "Config.NetSpin") {
		t.Errorf("Config.NetSpin -1ms: %v, want an error naming the field", err)
	}
	if s, err := (Config{NetSpin: time.Millisecond}).validate(); err != nil || s.netSpin != time.Millisecond {
		t.Errorf("Config.NetSpin 1ms: settings %v, %v; want 1ms", s.netSpin, err)
	}
}

// TestIdleChannelSpinsLikeItsPlans: a channel goroutine that ran a plan
// whose runners fit the processors spins like it when idle, on channels
// but 0 (whose work the caller runs); where the plans back off (more
// runners than processors) it does not spin at all.
func TestIdleChannelSpinsLikeItsPlans(t *testing.T) {
	for _, c := range []struct {
		procs int
		spin  proto.SpinPlan
	}{{16, proto.SpinPlan{For: longSpinFor, NoBackOff: true, KeepProc: true}}, {1, proto.SpinPlan{}}} {
		prev, prevCPUs := runtime.GOMAXPROCS(c.procs), cpuCount
		cpuCount = func() int { return c.procs } // a host of c.procs CPUs
		comms := initT(t, 2, Config{Algo: algoReq("Ring"), Proto: protoReq("Simple"), NChannels: 2})
		runtime.GOMAXPROCS(prev)
		cpuCount = prevCPUs
		const count = 1 << 16 // enough for both channels
		if err := perRankErr(comms, func(comm *Comm) error {
			buf := make([]byte, 4*count)
			if err := comm.AllReduce(buf, buf, count, Float32, Sum); err != nil {
				return err
			}
			return comm.Synchronize()
		}); err != nil {
			t.Fatal(err)
		}
		for _, comm := range comms {
			// After Destroy the channel goroutines have exited: their
			// fields may be read.
			if err := comm.Destroy(); err != nil {
				t.Fatal(err)
			}
			if got := comm.channels[0].idleSpin; got != (proto.SpinPlan{}) {
				t.Errorf("procs %d: rank %d channel 0 idle spin %+v, want none", c.procs, comm.Rank(), got)
			}
			if got := comm.channels[1].idleSpin; got != c.spin {
				t.Errorf("procs %d: rank %d channel 1 idle spin %+v, want %+v", c.procs, comm.Rank(), got, c.spin)
			}
		}
	}
}

// Across processes the model prices the processors process 0's host lends
// all of its processes (the union of their affinities, bound or not) and
// the cores under them; another host's processes do not count; a process
// that cannot tell its affinity leaves process 0's GOMAXPROCS.
func TestHostProcs(t *testing.T) {
	h := func(host string) bootstrap.ProcInfo { return bootstrap.ProcInfo{HostID: host} }
	bound := []offer{ // 4 processes bound to a processor each; 2 threads a core
		{Procs: 1, CPUs: []int{0}, Cores: []int{0}},
		{Procs: 1, CPUs: []int{1}, Cores: []int{0}},
		{Procs: 1, CPUs: []int{2}, Cores: []int{1}},
		{Procs: 1, CPUs: []int{3}, Cores: []int{1}},
	}
	for _, c := range []struct {
		name        string
		procs       []bootstrap.ProcInfo
		offers      []offer
		want, cores int
	}{
		{"bound", []bootstrap.ProcInfo{h("a"), h("a"), h("a"), h("a")}, bound, 4, 2},
		{"other host", []bootstrap.ProcInfo{h("a"), h("a"), h("b"), h("b")}, bound, 2, 1},
		{"unbound", []bootstrap.ProcInfo{h("a"), h("a")},
			[]offer{{Procs: 8, CPUs: []int{0, 1, 2, 3}, Cores: []int{0, 1, 2, 3}}, {Procs: 8, CPUs: []int{0, 1, 2, 3}, Cores: []int{0, 1, 2, 3}}}, 4, 4},
		{"affinity unknown", []bootstrap.ProcInfo{h("a"), h("a")},
			[]offer{{Procs: 6, CPUs: []int{0, 1}}, {Procs: 6}}, 6, 0},
		{"cores unknown", []bootstrap.ProcInfo{h("a"), h("a")},
			[]offer{{Procs: 1, CPUs: []int{0}, Cores: []int{0}}, {Procs: 1, CPUs: []int{1}}}, 2, 0},
	} {
		if n, cores := hostProcs(c.procs, c.offers); n != c.want || cores != c.cores {
			t.Errorf("%s: hostProcs = %d processors, %d cores; want %d, %d", c.name, n, cores, c.want, c.cores)
		}
	}
}

// A process's waits assume the host's processors unless it has fewer
// processors (GOMAXPROCS) than ranks: then n ranks count as more runners
// than processors, and no wait spins long (planSpin).
func TestSpinProcs(t *testing.T) {
	for _, c := range []struct{ host, gomaxprocs, n, local, want int }{
		{16, 1, 16, 1, 16},
		{16, 2, 8, 1, 16},
		{16, 16, 16, 16, 16},
		{16, 1, 16, 2, 8},
		{2, 1, 4, 2, 2},
	} {
		got := spinProcs(c.host, c.gomaxprocs, c.n, c.local)
		if got != c.want {
			t.Errorf("spinProcs(%d, %d, %d, %d) = %d, want %d", c.host, c.gomaxprocs, c.n, c.local, got, c.want)
		}
		if c.local > c.gomaxprocs {
			if s := planSpin(c.n, got); s.For != 0 {
				t.Errorf("host %d, %d of %d ranks on %d processors: waits spin %v, want none", c.host, c.local, c.n, c.gomaxprocs, s.For)
			}
		}
	}
}

// The automatic channel count across processes: the host's processors per
// rank on it, no more than process 0's processors less one per rank (past
// them its channels would fold), 1 to 4.
func TestAutoChannels(t *testing.T) {
	for _, c := range []struct{ hostProcs, hostRanks, leadProcs, leadRanks, want int }{
		{16, 4, 4, 1, 3},  // 4 processes bound to 4 processors each
		{16, 16, 1, 1, 1}, // 16 bound to one each
		{16, 8, 2, 1, 1},  // 8 bound to two each
		{16, 2, 16, 1, 4}, // 2 unbound: at most 4
		{16, 2, 8, 1, 4},  // 2 bound to 8 each
		{2, 4, 1, 1, 1},   // oversubscribed: at least 1
		{16, 4, 16, 4, 3}, // one process of 4 ranks... and others
		{16, 8, 4, 4, 1},  // process 0 holds 4 ranks on 4 processors
		{64, 8, 64, 8, 4},
	} {
		if got := autoChannels(c.hostProcs, c.hostRanks, c.leadProcs, c.leadRanks); got != c.want {
			t.Errorf("autoChannels(%d, %d, %d, %d) = %d, want %d", c.hostProcs, c.hostRanks, c.leadProcs, c.leadRanks, got, c.want)
		}
	}
}

// Process 0's debug line names what the model prices and, when the
// processes' runtimes hold more than twice the host's processors, says
// what to do; it counts process 0's host only.
func TestHostReport(t *testing.T) {
	procs := []bootstrap.ProcInfo{{Host: "a", HostID: "a"}, {Host: "a", HostID: "a"}, {Host: "b", HostID: "b"}}
	crowded := []offer{{Procs: 16}, {Procs: 16}, {Procs: 64}}
	got := hostReport(procs, crowded, 8, 8, 4)
	for _, want := range []string{"host a: 2 processes, 8 processors (8 cores) priced, 32 Go processors", "channels per rank 4", "bind each process", "GOMAXPROCS to its share (4)"} {
		if !strings.Contains(got, want) {
			t.Errorf("crowded host: %q lacks %q", got, want)
		}
	}
	fits := []offer{{Procs: 4}, {Procs: 4}, {Procs: 64}}
	if got := hostReport(procs, fits, 8, 8, 2); strings.Contains(got, "bind") || !strings.Contains(got, "8 Go processors") {
		t.Errorf("a host whose runtimes fit: %q", got)
	}
}

// TestOtherWorldsTakeProcessors: a world's plans count the ranks of the
// process's other live worlds as processors taken, so that worlds side by
// side (TestMatrix's parallel cells) do not each spin as if the host were
// theirs alone; and get them back when those worlds are destroyed.
func TestOtherWorldsTakeProcessors(t *testing.T) {
	a := initT(t, 2, Config{Algo: algoReq("Ring"), Proto: protoReq("Simple"), NChannels: 1})
	// Play a 16-processor host, plus one for each rank that earlier
	// tests left alive.
	a[0].w.spinProcs = 16 + int(liveRanks.Load()) - len(a)
	a[0].w.load.Store(nil) // what other programs take is not this test's
	spinOf := func() time.Duration {
		perRank(a, func(c *Comm) {
			b := make([]byte, 64)
			must(t, c.AllReduce(b, b, 16, Float32, Sum))
			must(t, c.Synchronize())
		})
		return a[0].lastSpin.For
	}
	if got := spinOf(); got != longSpinFor {
		t.Fatalf("alone on 16 processors: spin %v, want %v", got, longSpinFor)
	}
	b, err := InitAll(15, Config{})
	must(t, err)
	if got := spinOf(); got != 0 {
		t.Errorf("beside 15 more ranks on 16 processors: spin %v, want 0", got)
	}
	if got, want := a[0].w.freeProcs(), 1; got > want {
		t.Errorf("freeProcs beside 15 ranks = %d, want %d", got, want)
	}
	for _, c := range b {
		c.Destroy()
	}
	if got := spinOf(); got != longSpinFor {
		t.Errorf("after the other world's Destroy: spin %v, want %v", got, longSpinFor)
	}
}

// jobPidsBeside: the job's processes on this host that may run on this
// process's processors count as the job's own time; those on other hosts,
// bound to other processors, or this process itself do not.
func TestJobPidsBeside(t *testing.T) {
	procs := []bootstrap.ProcInfo{
		{HostID: "a", Pid: 100}, // self
		{HostID: "a", Pid: 101}, // same host, processors unknown
		{HostID: "a", Pid: 102}, // same host, bound elsewhere
		{HostID: "a", Pid: 103}, // same host, shares processor 1
		{HostID: "b", Pid: 104}, // another host
		{HostID: "a", Pid: 0},   // no pid said
	}
	offers := []offer{{CPUs: []int{0, 1}}, {}, {CPUs: []int{4, 5}}, {CPUs: []int{1, 2}}, {}, {}}
	if got := jobPidsBeside(procs, offers, 0, []int{0, 1}); !slices.Equal(got, []int{101, 103}) {
		t.Errorf("beside process 0 on processors 0-1: %v, want [101 103]", got)
	}
	// This process's processors unknown: every process of the host counts.
	if got := jobPidsBeside(procs, offers, 0, nil); !slices.Equal(got, []int{101, 102, 103}) {
		t.Errorf("processors unknown: %v, want [101 102 103]", got)
	}
	if got := jobPidsBeside(procs, offers, 4, []int{0}); got != nil {
		t.Errorf("alone on host b: %v, want none", got)
	}
}
