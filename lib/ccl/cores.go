package ccl

import (
	"fmt"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gccl/gccl/lib/cpuset"
	"github.com/gccl/gccl/lib/hostload"
	"github.com/gccl/gccl/lib/proto"
)

// modelCores is the processor count the cost model prices ranks against:
// procs, or fewer when those processors are hardware threads sharing
// cores (phys of them; 0: unknown): ranks that wait by spinning on two
// threads of one core share its execution units, so past the physical
// cores every step pays the model's oversubscription term. (It does not
// explain the collapse measured on the GPU host's 16 cores, which report
// one thread each: 16 ranks of one process ran an 8 B ring or tree
// allreduce far slower than 8 ranks; the waits' back-off did, fixed since:
// docs/log/performance-2026-11.md 12b and 12e.)
func modelCores(procs, phys int) int {
	if phys > 0 && phys < procs {
		return phys
	}
	return procs
}

// usableProcs is the processors a process's goroutines run on at once: its
// Go processors (GOMAXPROCS), but no more than the CPUs it may run on.
// GOMAXPROCS above them buys threads, not processors: with GOMAXPROCS=32 on
// 16 cores, 8 ranks x 4 channels (32 runners) counted as fitting and spun
// for 2 ms a wait while the OS ran their threads in turn, a Ring/Simple
// allreduce of 2 KiB-512 KiB tens of times slower than at GOMAXPROCS=16
// (docs/log/performance-2026-11.md 12q).
func usableProcs(gomaxprocs, cpus int) int {
	if cpus > 0 && cpus < gomaxprocs {
		return cpus
	}
	return max(gomaxprocs, 1)
}

// cpuCount is the CPUs this process may run on; tests that play a bigger
// host replace it.
var cpuCount = runtime.NumCPU

// longSpinFor is the spin phase of waits on a host of 8 processors or more
// whose runners fit it: every runner has a processor, so spinning costs no
// one anything, while a wait that gives up parks, and a parked rank costs
// its peer a wake-up that makes the next one late in turn. Measured on a
// 16-core Xeon, 16 ranks in one process, 8 B-32 KiB allreduce: Tree/Simple
// on one channel with 20 us spins collapsed to a wake-up per hop; 2 ms ones
// fixed it, and 500 us ones still collapsed now and then on the ring
// (docs/log/performance-2026-11.md 12e).
const longSpinFor = 2 * time.Millisecond

// planSpin is how a plan's waits spin and yield (proto.SpinPlan):
//   - runners (ranks x channels with work) beyond the processors: no long
//     spin at all, the peer may need this very processor;
//   - on hosts of 8 processors or more: longSpinFor, no back-off after a
//     miss, and yields that keep the processor (KeepProc). A late peer
//     there is late, not queued behind this goroutine: backing off turned
//     lateness into a park and a wake-up per step (16 ranks' small ring
//     allreduce and 8 ranks' 8 B tree over ten times slower with it;
//     docs/log/performance-2026-11.md 12b and 12e);
//   - smaller hosts: proto.DefaultSpinFor, backing off after a miss unless
//     the runners fill at most half the processors, and yielding the
//     goroutine. On the 2-processor VM a woken peer often does queue
//     behind its waker: 2 ranks did better with the back-off (small tree
//     and ring allreduce slower without), and with yields that keep the
//     processor each operation after a pause paid a wake-up (8 B
//     allreduce -z 2: 0.2 -> 24 us in half the rows).
func planSpin(runners, procs int) proto.SpinPlan {
	switch {
	case runners > procs:
		return proto.SpinPlan{}
	case procs >= 8:
		return proto.SpinPlan{For: longSpinFor, NoBackOff: true, KeepProc: true}
	default:
		return proto.SpinPlan{For: proto.DefaultSpinFor, NoBackOff: 2*runners <= procs}
	}
}

// parseNetSpin reads GCCL_NET_SPIN (Config.NetSpin): how long the network
// transport's idle proxies poll before they park (transport.Net.Spin), a
// duration; empty or "0" for none, the default. Polling proxies once ran
// by default on hosts of 8 processors or more; measured on the 16-core
// Xeon, 2 processes as 2 hosts on loopback, 128 MiB sendrecv and
// allreduce ran at a third of the parking proxies' rate when polling 2 ms
// (docs/PERFORMANCE.md, "Across hosts"; docs/log/performance-2026-11.md
// 13e); 8 B across processes alike either way (the log's 13b).
func parseNetSpin(v string) (time.Duration, error) {
	v = strings.TrimSpace(v)
	if v == "" {
		return 0, nil
	}
	d, err := time.ParseDuration(v)
	if err != nil || d < 0 {
		return 0, fmt.Errorf("invalid network spin %q", v)
	}
	return d, nil
}

// liveRanks counts the ranks of this process's worlds that are not yet
// released: added to by world.start, taken from by the last Destroy of a
// world; read by every launch (freeProcs).
var liveRanks atomic.Int64

// freeProcs is the processors a plan of w may count on: w's spinProcs,
// less one for each rank of the process's other live worlds, whose
// runners share them, and less those other programs keep busy (w.load).
// Without the first, 16 worlds of 2-8 ranks (TestMatrix's parallel cells)
// on 16 cores each counted all 16 and spun 2 ms per wait with their peers
// off the processors: not one cell finished in 130 s. Without the second,
// a busy loop of another program on one of 2 cores made 2 ranks spin as
// if each had a core, and wait out the system's time slices instead:
// 8 B allreduce 0.8 -> 30-50 us (docs/PERFORMANCE.md, "A busy host").
func (w *world) freeProcs() int {
	others := int(liveRanks.Load()) - len(w.local)
	return max(w.spinProcs-max(others, 0)-w.load.Load().Taken(), 1)
}

// hostLoad is the process's sampler of the load other programs put on
// its processors, while it has live ranks: started by the first world
// of one process, ended when the last rank is released.
var hostLoad struct {
	mu sync.Mutex // guards s
	s  *hostload.Sampler
}

// processLoad returns the process's running sampler, starting one when
// none runs.
func processLoad() *hostload.Sampler {
	hostLoad.mu.Lock()
	defer hostLoad.mu.Unlock()
	if s := hostLoad.s; s == nil || s.Stopped() {
		hostLoad.s = hostload.Start(cpuset.Affinity(), nil, hostload.Interval, func() bool { return liveRanks.Load() > 0 })
	}
	return hostLoad.s
}

// boardSpin is how the one-shot fast path's waits spin: one runner per
// rank.
func (w *world) boardSpin() proto.SpinPlan {
	return planSpin(w.n, w.freeProcs())
}
