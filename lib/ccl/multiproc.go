// A communicator of ranks across processes and hosts: InitRanks, the
// job each process joins (its settings, listeners, host report), and its
// teardown.

package ccl

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gccl/gccl/lib/bootstrap"
	"github.com/gccl/gccl/lib/cpuset"
	"github.com/gccl/gccl/lib/hostload"
	"github.com/gccl/gccl/lib/shm"
	"github.com/gccl/gccl/lib/transport"
)

// EnvHostID sets Config.HostID, this process's host identity (hostname
// plus boot id by default): processes with the same one connect through
// shared memory.
const EnvHostID = "GCCL_HOSTID"

// InitRank creates the communicator of one rank of nranks whose processes
// meet through id (ncclCommInitRank). Every rank of the job calls it (or
// InitRanks) with the same nranks and id.
func InitRank(nranks int, id UniqueID, rank int, cfg Config) (*Comm, error) {
	cs, err := InitRanks(nranks, id, []int{rank}, cfg)
	if err != nil {
		return nil, err
	}
	return cs[0], nil
}

// InitRanks creates the communicators of several ranks held by this
// process (NCCL's InitRank calls inside a group; nccl-tests' -g per
// process), in the order of ranks. Ranks of this process connect through
// its memory, ranks of other processes on this host through shared memory.
// As InitAll, it runs cfg as given and reads no GCCL_* variable into it.
func InitRanks(nranks int, id UniqueID, ranks []int, cfg Config) ([]*Comm, error) {
	if nranks < 1 {
		return nil, fmt.Errorf("ccl: InitRanks: %d ranks: want at least 1", nranks)
	}
	if len(ranks) == 0 {
		return nil, fmt.Errorf("ccl: InitRanks: no ranks given: want one or more of 0..%d", nranks-1)
	}
	seen := map[int]bool{}
	for _, r := range ranks {
		if r < 0 || r >= nranks {
			return nil, fmt.Errorf("ccl: InitRanks: rank %d is out of range: want 0..%d", r, nranks-1)
		}
		if seen[r] {
			return nil, fmt.Errorf("ccl: InitRanks: rank %d given twice", r)
		}
		seen[r] = true
	}
	addr, err := id.Root()
	if err != nil {
		return nil, fmt.Errorf("ccl: InitRanks: %w", err)
	}
	set, err := cfg.validate()
	if err != nil {
		return nil, err
	}
	joinTimeout := set.timeout
	if joinTimeout == 0 {
		joinTimeout = DefaultTimeout
	}
	host, _ := os.Hostname()
	mine := offerOf(set)
	blob, _ := json.Marshal(mine)
	link, err := bootstrap.Join(addr, id.Token(), nranks, ranks, bootstrap.ProcInfo{
		Host: hostLabel(host, set.hostID), HostID: hostID(host, set.hostID), Pid: os.Getpid(), Blob: blob,
	}, bootstrap.JoinOptions{Timeout: joinTimeout, Name: "the communicator's"})
	if err != nil {
		return nil, fmt.Errorf("ccl: InitRanks: %w", err)
	}
	cs, err := initJob(nranks, id, set, link)
	if err != nil {
		link.Abort(err)
		link.Close()
		return nil, err
	}
	return cs, nil
}

// hostID is this host's identity: given (Config.HostID), else the
// hostname and the boot id (two containers may share a hostname, not a
// boot and a name).
func hostID(host, given string) string {
	if given != "" {
		return given
	}
	boot, _ := os.ReadFile("/proc/sys/kernel/random/boot_id")
	return host + "/" + strings.TrimSpace(string(boot))
}

// hostLabel is how messages name this host: the hostname, and the host
// id it was given when one was (Config.HostID: "h1 on node7"), the name
// the user chose for it.
func hostLabel(host, given string) string {
	if given != "" && given != host {
		return given + " on " + host
	}
	return host
}

// offer is what each process brings to the table: the settings every
// process must share, and its own view of the machine. Process 0's
// machine view wins, so that every process decides alike.
type offer struct {
	Settings map[string]string // forced settings, compared across processes
	MaxCh    int               // channels per rank when forced; 0: automatic (autoChannels)
	Procs    int               // this process's GOMAXPROCS
	CPUs     []int             // the processors this process may run on (nil: unknown)
	Cores    []int             // the core of each of CPUs (coreIDs; nil: unknown)
	Nonce    string            // process 0's names this set's segments
}

// offerOf is this process's offer. MaxCh is 0 when the channel count is
// automatic: initJob fits it (autoChannels) once it knows every process.
func offerOf(s settings) offer {
	var nonce [8]byte
	_, _ = rand.Read(nonce[:])
	maxCh := s.maxCh
	if s.maxChAuto {
		maxCh = 0
	}
	cpus := cpuset.Affinity()
	return offer{Settings: s.shared(), MaxCh: maxCh, Procs: runtime.GOMAXPROCS(0), CPUs: cpus, Cores: cpuset.CoreIDs(cpus), Nonce: hex.EncodeToString(nonce[:])}
}

// autoChannels is the automatic channel count of a job across processes:
// the host's processors shared by the ranks on it (channel goroutines
// beyond the cores only wait for each other), and no more channels than
// process 0 gives each of its ranks before they fold (its processors,
// GOMAXPROCS, less one: processFoldProcs), at most 4. Measured on the
// 16-core Xeon, 4 processes bound to 4 cores each, 32 and 128 MiB
// allreduce: 4 channels twice as fast as 1
// (docs/log/performance-2026-11.md 12n); 4 channels there, which fill
// each process's processors, collapsed at 2 KiB-1 MiB, and 3 ran as fast
// as 4 from 1 MiB (docs/log/performance-2026-11.md 12t).
func autoChannels(hostProcs, hostRanks, leadProcs, leadRanks int) int {
	return max(1, min(4, hostProcs/max(hostRanks, 1), max(leadProcs-1, 1)/max(leadRanks, 1)))
}

// hostProcs is the processor count the cost model assumes for a job
// across processes: the processors that process 0's host lends the job's
// processes there (the union of their affinities: processes bound to a core
// each still share the host's), not one process's GOMAXPROCS, which a
// launcher may set low to keep each process's runtime off its neighbours'
// cores. Every process computes it from the same offers, so all decide
// alike. Process 0's GOMAXPROCS when the affinities are unknown. cores
// counts the physical cores under them (0: unknown).
func hostProcs(procs []bootstrap.ProcInfo, offers []offer) (n, cores int) {
	cpus, ids := map[int]bool{}, map[int]bool{}
	for i, p := range procs {
		if p.HostID != procs[0].HostID {
			continue
		}
		o := &offers[i]
		if o.CPUs == nil {
			return offers[0].Procs, 0
		}
		for _, c := range o.CPUs {
			cpus[c] = true
		}
		if ids != nil && len(o.Cores) == len(o.CPUs) {
			for _, id := range o.Cores {
				ids[id] = true
			}
		} else {
			ids = nil // a process that cannot tell: unknown
		}
	}
	return len(cpus), len(ids)
}

// hostReport is process 0's debug line on its host: the processes there,
// the processors and cores the model prices, the Go processors their
// runtimes hold, and, when those outnumber the host's processors twice
// over, what to do about it (16 processes of 16 Go processors each on 16
// cores ran 8 B allreduces many times slower than bound ones;
// docs/log/performance-2026-11.md 12n).
func hostReport(procs []bootstrap.ProcInfo, offers []offer, hostProcs, cores, maxCh int) string {
	n, gos := 0, 0
	for i, p := range procs {
		if p.HostID == procs[0].HostID {
			n++
			gos += offers[i].Procs
		}
	}
	line := fmt.Sprintf("gccl INFO host %s: %d processes, %d processors (%d cores) priced, %d Go processors (GOMAXPROCS) held, channels per rank %d",
		procs[0].Host, n, hostProcs, cores, gos, maxCh)
	if n > 1 && gos > 2*hostProcs {
		line += fmt.Sprintf("; the processes' Go runtimes hold %d processors on %d: bind each process to its own (perf --np does; mpirun --bind-to core) or set GOMAXPROCS to its share (%d)",
			gos, hostProcs, max(1, hostProcs/n))
	}
	return line
}

// spinProcs is the processor count this process's waits assume (planSpin)
// for n ranks of which local are its own: the host's, unless this process
// has fewer processors (GOMAXPROCS) than ranks, whose goroutines then queue
// for them; scaled so that n runners then count as more than the
// processors and no wait spins long.
func spinProcs(host, gomaxprocs, n, local int) int {
	if local <= gomaxprocs {
		return host
	}
	return min(host, gomaxprocs*n/local)
}

// jobPidsBeside is the pids of the job's other processes on this host
// (procs[self]'s) that may run on the processors cpus: their time on
// those processors is the job's, not another program's (hostload). A
// process whose processors are unknown counts; one bound elsewhere (perf
// --np binds each to its own) does not.
func jobPidsBeside(procs []bootstrap.ProcInfo, offers []offer, self int, cpus []int) []int {
	mine := map[int]bool{}
	for _, c := range cpus {
		mine[c] = true
	}
	var pids []int
	for i, p := range procs {
		if i == self || p.HostID != procs[self].HostID || p.Pid <= 0 {
			continue
		}
		shares := len(cpus) == 0 || i >= len(offers) || offers[i].CPUs == nil
		for _, c := range offers[min(i, len(offers)-1)].CPUs {
			shares = shares || mine[c]
		}
		if shares {
			pids = append(pids, p.Pid)
		}
	}
	return pids
}

// job is what a world across processes adds: the bootstrap link, the
// shared segment of each process's bells and progress, and the naming of
// the connections' segments.
type job struct {
	link   *bootstrap.Client
	procs  []bootstrap.ProcInfo
	self   int   // this process's index
	procOf []int // rank -> process index
	slotOf []int // rank -> index among its process's ranks
	maxCh  int
	token  [32]byte
	dir    string // where segments live
	prefix string // this set's segment names start with it

	bells []*shm.Segment // per process of this host: its ranks' bells and progress (nil for other hosts')

	listener *transport.NetListener // the network transport's, when the job spans hosts

	// mu guards closed and the bells' mappings: ringing a bell (abort
	// hooks) holds it shared; unmapping takes it.
	mu     sync.RWMutex
	closed bool
	// lost is set when the bootstrap reported the job lost: the abort
	// that follows need not be sent back to the root. Written once by the
	// link's callback, read by the abort hook.
	lost atomic.Bool
}

// initJob builds the world of a set of communicators across processes once
// the bootstrap has gathered every process.
func initJob(nranks int, id UniqueID, set settings, link *bootstrap.Client) ([]*Comm, error) {
	procs := link.Procs()
	offers := make([]offer, len(procs))
	for i, p := range procs {
		if err := json.Unmarshal(p.Blob, &offers[i]); err != nil {
			return nil, fmt.Errorf("ccl: InitRanks: process %d (pid %d) sent settings this version cannot read: %v", i, p.Pid, err)
		}
	}
	for i := 1; i < len(offers); i++ {
		if diff := settingsDiff(offers[0].Settings, offers[i].Settings); diff != "" {
			return nil, fmt.Errorf("ccl: InitRanks: the processes disagree on %s: process 0 (pid %d) and process %d (pid %d); every process of a job must be configured alike",
				diff, procs[0].Pid, i, procs[i].Pid)
		}
	}
	hosts := map[string]bool{}
	for _, p := range procs {
		hosts[p.HostID] = true
	}
	if len(hosts) > 1 && set.ranksPerHost > 0 {
		return nil, fmt.Errorf("ccl: InitRanks: the ranks run on %d hosts and %s=%d asks to simulate hosts as well: unset it", len(hosts), EnvRanksPerHost, set.ranksPerHost)
	}
	if a, ok := set.algo.Get(); ok && len(hosts) > 1 && a.OnBoard() {
		return nil, fmt.Errorf("ccl: InitRanks: the %s algorithm (GCCL_ALGO) needs every rank on one host, and these run on %d: valid are Ring, Tree or auto", set.algo, len(hosts))
	}
	lead := offers[0]
	hp, cores := hostProcs(procs, offers)
	set.maxCh = lead.MaxCh
	if set.maxCh == 0 {
		hostRanks := 0
		for _, p := range procs {
			if p.HostID == procs[0].HostID {
				hostRanks += len(p.Ranks)
			}
		}
		set.maxCh = autoChannels(hp, hostRanks, lead.Procs, len(procs[0].Ranks))
	}
	if set.debug != nil && link.Index() == 0 {
		fmt.Fprintln(set.debug, hostReport(procs, offers, hp, cores, set.maxCh))
	}
	j := &job{link: link, procs: procs, self: link.Index(), maxCh: set.maxCh, dir: set.shmDir,
		procOf: make([]int, nranks), slotOf: make([]int, nranks)}
	tok := id.Token()
	j.token = tok
	sum := sha256.Sum256(append(tok[:], lead.Nonce...))
	j.prefix = "gccl-" + hex.EncodeToString(sum[:6])
	liveJobs.add(j)
	peers := make([]transport.Peer, nranks)
	for pi, p := range procs {
		for slot, r := range p.Ranks {
			j.procOf[r], j.slotOf[r] = pi, slot
			peers[r] = transport.Peer{Rank: r, Host: p.HostID, Pid: p.Pid}
		}
	}
	if err := j.mapBells(set.timeout); err != nil {
		j.abandon()
		return nil, err
	}
	w := newWorld(nranks, set, peers, hp, cores)
	w.spinProcs = spinProcs(w.procs, runtime.GOMAXPROCS(0), nranks, len(procs[j.self].Ranks))
	// This host's processes against hp, the processors of process 0's
	// host: the same host unless the job spans hosts, whose machines are
	// alike in practice.
	hostProcesses := 0
	for _, p := range procs {
		if p.HostID == procs[j.self].HostID {
			hostProcesses++
		}
	}
	w.foldProcs = processFoldProcs(runtime.GOMAXPROCS(0), cpuCount(), hostProcesses, hp)
	if !w.realHosts {
		w.board = j.board(nranks)
	}
	w.transports = append(w.transports, transport.Shm{Dir: j.dir, Prefix: j.prefix, Timeout: joinWait(set.timeout), Stop: w.abort.Aborted})
	if err := j.listen(w); err != nil {
		j.abandon()
		return nil, err
	}
	link.OnLost(func(err error) {
		j.lost.Store(true)
		w.abort.Trigger(fmt.Errorf("%w\n%s", err, j.dump()))
	})
	w.abort.OnTrigger(func() {
		if !j.lost.Load() {
			j.link.Abort(w.abort.Err())
		}
		j.ringAll()
		// Segments of connections a lost process never finished mapping.
		shm.RemovePrefix(j.dir, j.prefix)
	})
	w.start(procs[j.self].Ranks, j)
	// Every process has started its channels before any uses the others'.
	if err := link.Barrier(); err != nil {
		for _, c := range w.local {
			_ = c.Abort()
		}
		return nil, fmt.Errorf("ccl: InitRanks: %w", err)
	}
	// The processors other programs keep busy count where this process
	// shares its processors with the job's others on this host (mpirun
	// --bind-to none), or has the host alone. Bound each to its own
	// (perf --np), a process whose processor another program shares still
	// spins: its peers have processors of their own, and when it yielded
	// to the other program it lost its time slices instead (--np 2 beside
	// a busy loop, 128 KiB: 120-760 us against 126-341).
	cpus := cpuset.Affinity()
	if pids := jobPidsBeside(procs, offers, j.self, cpus); len(pids) > 0 || hostProcesses == 1 {
		w.load.Store(hostload.Start(cpus, pids, hostload.Interval, w.live))
	}
	return w.local, nil
}

func joinWait(t time.Duration) time.Duration {
	if t <= 0 {
		return DefaultTimeout
	}
	return t
}

// listen starts the network transport when the job spans hosts: a
// listener on the interface Config.SocketIfname picks, whose address every
// process learns through the bootstrap. Every process takes part in the
// exchange (it is a collective), those of one-host jobs not at all.
func (j *job) listen(w *world) error {
	if !w.realHosts {
		return nil
	}
	ifaces, err := transport.Interfaces()
	if err != nil {
		return fmt.Errorf("ccl: InitRanks: listing network interfaces: %w", err)
	}
	iface, err := transport.PickInterface(w.set.ifname, ifaces)
	if err != nil {
		return fmt.Errorf("ccl: InitRanks: %w", err)
	}
	token := hex.EncodeToString(j.token[:])
	l, err := transport.ListenNet(net.JoinHostPort(iface.Addrs[0].String(), "0"), token, func(format string, args ...any) {
		fmt.Fprintf(os.Stderr, format+"\n", args...)
	})
	if err != nil {
		return fmt.Errorf("ccl: InitRanks: %w", err)
	}
	addrs, err := j.link.AllGather([]byte(l.Addr()))
	if err != nil {
		l.Close()
		return fmt.Errorf("ccl: InitRanks: exchanging network addresses: %w", err)
	}
	j.listener = l
	w.transports = append(w.transports, transport.Net{
		Listener: l, Token: token, Timeout: joinWait(w.set.timeout),
		Stop: w.abort.Aborted, Abort: w.abort, Spin: w.set.netSpin, Socks: w.set.nsocks, Threads: w.set.nsockThreads,
		Addr: func(rank int) (string, error) {
			pi := j.procOf[rank]
			if pi >= len(addrs) || len(addrs[pi]) == 0 {
				return "", fmt.Errorf("no network address for rank %d's process", rank)
			}
			return string(addrs[pi]), nil
		},
	})
	return nil
}

// shared is the settings every process of a job must agree on, by name,
// for settingsDiff.
func (s settings) shared() map[string]string {
	m := map[string]string{
		"protocol (GCCL_PROTO)":                fmt.Sprint(s.proto),
		"algorithm (GCCL_ALGO)":                fmt.Sprint(s.algo),
		"channels (GCCL_NCHANNELS)":            fmt.Sprint(s.nChannels),
		"buffer sizes (GCCL_*BUFFSIZE)":        fmt.Sprint(s.buff),
		"ranks per host":                       fmt.Sprint(s.ranksPerHost),
		"FIFO options":                         fmt.Sprint(s.fifo),
		"tuning table (GCCL_TUNING_FILE)":      digest(s.table),
		"cost model (GCCL_MODEL_FILE)":         digest(s.model),
		"sockets per connection (GCCL_NSOCKS)": fmt.Sprint(s.nsocks),
	}
	if !s.maxChAuto {
		m["channels per rank (GCCL_MAX_NCHANNELS)"] = fmt.Sprint(s.maxCh)
	}
	return m
}

func digest(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		return "?"
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:8])
}

// settingsDiff names the settings a and b disagree on ("" when none).
func settingsDiff(a, b map[string]string) string {
	var keys []string
	for k, v := range a {
		if b[k] != v {
			keys = append(keys, fmt.Sprintf("%s (%s vs %s)", k, v, b[k]))
		}
	}
	for k, v := range b {
		if _, ok := a[k]; !ok {
			keys = append(keys, fmt.Sprintf("%s (unset vs %s)", k, v))
		}
	}
	slices.Sort(keys)
	return strings.Join(keys, ", ")
}

// teardown ends this process's part of a world across processes once its
// last communicator is gone: goodbye to the bootstrap, the connections'
// and bells' memory released, and a root served here kept until the other
// processes left.
func (j *job) teardown(w *world) {
	token := j.token
	_ = j.link.Close()
	w.mu.Lock()
	closers := w.closers
	w.closers = nil
	w.mu.Unlock()
	for _, c := range closers {
		c()
	}
	if j.listener != nil {
		j.listener.Close()
	}
	if w.abort.Aborted() {
		// A segment made after the abort's sweep, or by a process that
		// died before its peer mapped it.
		shm.RemovePrefix(j.dir, j.prefix)
	}
	j.unmap()
	roots.mu.Lock()
	r := roots.m[token]
	delete(roots.m, token)
	roots.mu.Unlock()
	if r != nil {
		r.Wait(joinWait(w.set.timeout))
		r.Close()
	}
}
