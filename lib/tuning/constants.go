// constants.go: the cost model's constants: links, protocol efficiency, the
// Constants type with its defaults, their validation, and the adjustments
// for hosts that share a process. The file format is in constants_file.go.

package tuning

import (
	"fmt"
	"math"
	"reflect"
	"strings"

	"github.com/gccl/gccl/lib/proto"
)

// Link is a kind of connection between two ranks: the model charges a
// different latency per step and bandwidth per channel to each (NCCL's
// hwLat and bw per NVLink/PCI/NET).
type Link int

const (
	// Intra connects ranks of one host.
	Intra Link = iota
	// Inter connects ranks of different hosts: the network transport
	// (TCP through proxies), with constants of its own.
	Inter
	NumLinks
)

var linkNames = [...]string{"Intra", "Inter"}

func (l Link) String() string {
	if l < 0 || l >= NumLinks {
		return fmt.Sprintf("Link(%d)", int(l))
	}
	return linkNames[l]
}

// ParseLink reads a link name, case-insensitively.
func ParseLink(s string) (Link, error) {
	for l, n := range linkNames {
		if strings.EqualFold(strings.TrimSpace(s), n) {
			return Link(l), nil
		}
	}
	return 0, fmt.Errorf("unknown link %q (valid: Intra, Inter)", s)
}

// Protocol efficiency: the share of the bytes a protocol moves that is
// payload. Fixed by the wire formats (lib/proto), not measured: LL carries 8
// data bytes per 16-byte line, LL128 120 per 128-byte line.
const (
	EffLL     = 0.5
	EffLL128  = 120.0 / 128.0
	EffSimple = 1.0
)

// Efficiency returns the payload share of protocol p's wire bytes.
func Efficiency(p proto.Protocol) float64 {
	switch p {
	case proto.LL:
		return EffLL
	case proto.LL128:
		return EffLL128
	}
	return EffSimple
}

// ConstantsVersion is the version of the constants file format.
const ConstantsVersion = 1

// Constants are the cost model's parameters for one machine and set of
// transports (NCCL's tuning.cc tables: baseLat, hwLat, bandwidths, per-channel
// caps, thread thresholds). Times are in microseconds, bandwidths in GB/s
// (1e9 B/s) of bus bandwidth as nccl-tests defines it, sizes in bytes.
//
// The JSON form keys every table by name, e.g. "base_lat_us": {"Ring":
// {"LL": 0.8, "LL128": 0.8, "Simple": 2}}; the dims tag lists, outermost
// first, which names index a table. A file overrides DefaultConstants field
// by field (see ParseConstants).
type Constants struct {
	Version int    `json:"version"`
	Machine string `json:"machine"` // where the constants were measured
	Method  string `json:"method"`  // how they were measured

	// Cores is the number of processors one host's ranks share. When more
	// channel goroutines than Cores run, steps wait for the scheduler and
	// channels beyond Cores/ranksPerHost add no bandwidth. 0 turns both
	// effects off.
	Cores float64 `json:"cores"`

	// BaseLatUs is the fixed cost of one operation (NCCL's baseLat): call
	// path, plan, launch and completion.
	BaseLatUs [NumAlgos][proto.NumProtocols]float64 `json:"base_lat_us" dims:"algo,proto"`
	// StepLatUs is the cost of one hop over a link (NCCL's hwLat): the
	// sender's publish to the receiver's seeing it, with a core each.
	StepLatUs [NumLinks][NumAlgos][proto.NumProtocols]float64 `json:"step_lat_us" dims:"link,algo,proto"`
	// OversubStepLatUs is added to every step for each goroutine per core
	// beyond one (runners = ranksPerHost x nChannels): the wait is then a
	// trip through the Go scheduler. gccl's own term; NCCL's blocks never
	// share an SM.
	OversubStepLatUs [proto.NumProtocols]float64 `json:"oversub_step_lat_us" dims:"proto"`
	// OversubHopLatUs is the same for a hop of the one-shot board (OneShot,
	// TwoShot), per rank per core beyond one: a reader that waits for every
	// rank's post waits for the last rank the scheduler runs, where a ring's
	// step waits for one neighbour and its steps overlap.
	OversubHopLatUs float64 `json:"oversub_hop_lat_us"`
	// BoardPeerLatUs is added to every hop of the board for each rank
	// beyond two: a reader waits for every peer's post, a miss on each,
	// and the slowest of them gates it. gccl's own term: a ring's step
	// waits for one neighbour whatever the ranks.
	BoardPeerLatUs float64 `json:"board_peer_lat_us"`
	// BoardReadSlowdown divides the board's read rate by 1 + this x
	// (ranks - 2): every rank reads every post at once, so each line
	// written by one core is fetched by all the others and the reads
	// contend. 0 = reads as fast at any rank count.
	BoardReadSlowdown float64 `json:"board_read_slowdown"`

	// ChannelBwGBs is one channel's bus bandwidth over a link with Simple
	// when the channel has a core of its own; other protocols get it times
	// their efficiency.
	ChannelBwGBs [NumLinks]float64 `json:"channel_bw_gbs" dims:"link"`
	// MaxChannelBwGBs caps one channel's bus bandwidth per algorithm and
	// protocol (NCCL's llMaxBw, perChMaxRingLL128Bw, perChMaxTreeBw): what
	// the protocol's own loop sustains whatever the link. 0 = no cap.
	MaxChannelBwGBs [NumAlgos][proto.NumProtocols]float64 `json:"max_channel_bw_gbs" dims:"algo,proto"`
	// MaxHostBwGBs caps the sum of one host's ranks' bus bandwidth: every
	// channel of every rank of a host copies through the same memory
	// system. It bounds wire bytes, so a protocol's payload share of it
	// is this times its efficiency. 0 = no cap.
	MaxHostBwGBs float64 `json:"max_host_bw_gbs"`
	// HostBwPerCoreGBs caps it too, per core the host's ranks run on
	// (HostBwPerCoreGBs x Cores): a host's copies scale with the cores that
	// run them until memory saturates, so a cap fitted on a 2-core machine
	// must not bind a 16-core one. 0 = no such cap; without Cores it is off.
	HostBwPerCoreGBs float64 `json:"host_bw_per_core_gbs"`
	// NetBwGBs caps the bus bandwidth of a job across hosts: every channel
	// crosses each host's network link once each way (a ring's edge, a
	// tree's), so the channels share the link's rate (NCCL fits its
	// per-channel bwInter to the NIC likewise). It bounds wire bytes, like
	// MaxHostBwGBs. 0 = no cap.
	NetBwGBs float64 `json:"net_bw_gbs"`
	// TreeBwFactor scales tree bandwidth against ring's (NCCL uses .92 for
	// its tree's imperfect pipelining).
	TreeBwFactor float64 `json:"tree_bw_factor"`

	// CacheBytes is the size (nccl-tests' bytes, as Estimate takes them)
	// beyond which the buffers no longer fit the processors' caches and
	// each further byte moves at the bandwidth times
	// OutOfCacheBwFactor[algo][proto]: the algorithms and protocols make
	// different numbers of passes over memory, so the knee moves their
	// crossovers. NCCL needs no such term (a GPU's buffers live in HBM at
	// every size); a CPU stack does. 0 turns the knee off.
	CacheBytes float64 `json:"cache_bytes"`
	// OutOfCacheBwFactor scales the bandwidth of the bytes beyond
	// CacheBytes; 0 counts as 1 (no change).
	OutOfCacheBwFactor [NumAlgos][proto.NumProtocols]float64 `json:"out_of_cache_bw_factor" dims:"algo,proto"`

	// ChannelThresholdBytes is the least data per channel that pays for a
	// channel (NCCL's threadThresholds x nThreads): Choose drops channels
	// while bytes < nChannels x this.
	ChannelThresholdBytes [proto.NumProtocols]int64 `json:"channel_threshold_bytes" dims:"proto"`

	// LocalLatUs and LocalBwGBs price an operation on a single rank: the
	// call path and one local copy (out of place) of the buffer.
	LocalLatUs float64 `json:"local_lat_us"`
	LocalBwGBs float64 `json:"local_bw_gbs"`
}

// DefaultConstants returns the built-in constants.
func DefaultConstants() Constants {
	c := Constants{Version: ConstantsVersion}

	// Fitted on this project's 2-vCPU VM (AMD EPYC, 2 MiB L2 per core,
	// 32 MiB L3; the earlier constants were an Intel Xeon VM's and priced
	// this one's operations too slow) by
	//   echo '{"version":1,"cache_bytes":0,"step_lat_us":{"Intra":{"Ring":{"LL":0.143}},"Inter":{"Ring":{"LL":0.143}}}}' > start.json
	//   go run ./cmd/tune constants docs/data/tuning/pass3_*.jsonl.gz --start start.json \
	//     --hold cache_bytes,out_of_cache_bw_factor,step_lat_us.Intra.Ring.LL
	// (allreduce over every algorithm x protocol x 1-2 channels, 2/4/8 ranks
	// on 1 and 2 ranks per host, 8 B..32 MiB), rounded to 3 digits; values
	// below 0.01 are 0. Held, because the data cannot determine them:
	//   - the ring's LL hop, at half the LL ping-pong's round trip
	//     (docs/data/bench_pingpong_epyc.txt): on 2 cores the
	//     fit cannot tell it from the oversubscription term, and at 0 the
	//     ring would be as fast on 16 ranks as on 2;
	//   - the cache knee, off: fitted, it sat past 169 MB with
	//     out-of-cache factors of 0.1-10^6, a fit to noise that priced 1 GiB
	//     absurdly.
	// The per-channel Simple bandwidth and the tree's LL128 cap came out
	// unbounded: the host cap binds instead. Checked on the held-out pass 4
	// (the model's picks regret less than with the Intel constants:
	// docs/PERFORMANCE.md, "The cost model's constants") and on the
	// end-to-end sweeps (docs/PERFORMANCE.md, "The tuner end to end").
	c.Machine = "AMD EPYC, 2 vCPUs, Go 1.26.8 (the project's CI-class VM)"
	c.Method = "tune constants on docs/data/tuning/pass3_*.jsonl.gz (792 out-of-place forced-config points), ring LL hop and cache knee held, rounded"

	c.BaseLatUs[Ring] = [proto.NumProtocols]float64{proto.LL: 0.552, proto.LL128: 0.435, proto.Simple: 0}
	c.BaseLatUs[Tree] = [proto.NumProtocols]float64{proto.LL: 0, proto.LL128: 0, proto.Simple: 0.664}
	for l := range c.StepLatUs {
		// Inter is the in-process transport too, for now.
		c.StepLatUs[l][Ring] = [proto.NumProtocols]float64{proto.LL: 0.143, proto.LL128: 0.143, proto.Simple: 0.488}
		c.StepLatUs[l][Tree] = [proto.NumProtocols]float64{proto.LL: 0.363, proto.LL128: 0.349, proto.Simple: 0.0265}
	}
	// The ring's LL128 hop is the LL hop (held like it: a FIFO post and a
	// flag wait, the same mechanics), with the base lowered by what the two
	// hops of 2 ranks gained, so 2 ranks price as fitted (the fit's own hop
	// was lower: 2 ranks' two hops could not tell a hop from the base; it
	// priced 8-16 ranks' long rings at 512 B below the one-shot, measured
	// slower on the 16-core Xeon). `tune choices` on that Xeon's sweeps
	// (docs/data/cpu16/s10) regretted less, this VM's pass-3 picks
	// unchanged (docs/log/performance-2026-11.md 12g).
	c.StepLatUs[Intra][Tree][proto.Simple] = 0.3
	// Tree/Simple's hop inside a host is not from that fit (2-4 ranks'
	// short chains could not tell a hop from the base). There a tree hop is
	// a FIFO hop like the ring's; 0.3 us, set by hand with `tune choices`
	// (the hop between hosts keeps the fit's value until a network
	// transport measures its own): on the 16-core Xeon's sweeps
	// (docs/data/cpu16/fit_n*) the fit's value picked an 8-16 rank chain
	// for 512 B-32 KiB, far from the fastest; 0.3 regrets much less there
	// and a little more on this VM's pass-3 sweeps
	// (docs/log/performance-2026-11.md 12e).
	// The one-shot algorithm (LL only), not in that fit: set from
	// BenchmarkSmallAllReduce on this VM (2 ranks, quiet runs, with the
	// AVX2 line packing; the board's own Put+Get, BenchmarkPutGet, beside
	// it): the call path and one hop, then each rank reads every post at
	// the rate the plain-post cap below prices
	// (docs/log/performance-2026-11.md 12a).
	c.BaseLatUs[OneShot][proto.LL] = 0.15
	for l := range c.StepLatUs {
		c.StepLatUs[l][OneShot][proto.LL] = 0.13
	}
	// The copy rate of plain posts (Model.board: a rank's post, then its
	// reads; from 256 B a post), in GB/s: `tune constants` with only it
	// free on this VM's 2-rank one-shot allreduce, broadcast and allgather,
	// 8 B-1 MiB (perf -t 2, 2 passes; docs/log/performance-2026-11.md 12v).
	// LL posts (below 256 B) copy at LL's half of a channel's rate, which
	// binds below this cap. It was 6 while every post was LL lines: there
	// the cap never bound (LL's half of ChannelBwGBs).
	c.MaxChannelBwGBs[OneShot][proto.LL] = 17
	// The two-shot posts LL lines at any size: its own constants, the
	// one-shot's base and hop, and no cap of its own: LL's half of a
	// channel's rate prices its copies. It had a read rate of its own while
	// the model counted its reads only (2 x bytes, now 3.25 x bytes with
	// its posts on 4 ranks; pricing it alike would need a rate above LL's
	// bound; docs/log/performance-2026-11.md 12v).
	c.BaseLatUs[TwoShot][proto.LL] = c.BaseLatUs[OneShot][proto.LL]
	for l := range c.StepLatUs {
		c.StepLatUs[l][TwoShot][proto.LL] = c.StepLatUs[l][OneShot][proto.LL]
	}
	c.OversubStepLatUs = [proto.NumProtocols]float64{proto.LL: 0.498, proto.LL128: 0.405, proto.Simple: 0.611}
	// The board's hop past the cores, set by hand on this VM's 2 cores
	// (perf -t N, docs/log/performance-2026-11.md 12q). Measured, the hop
	// costs more than this. But the rings' steps past the cores are priced
	// low too (OversubStepLatUs), and at 4.5 the model took Ring/LL128 for
	// 4 ranks' 8 B-2 KiB, measured slower than the one-shot; 2.5 keeps the
	// one-shot there. With the rings' figure the model took the two-shot at
	// 8 ranks up to 512 KiB, measured slower than Tree/Simple; with 2.5 it
	// takes it at 8-32 KiB only (where the one-shot it replaces was slower
	// still) and Ring/Simple from 128 KiB.
	c.OversubHopLatUs = 2.5
	// The board's terms per rank (BoardPeerLatUs, BoardReadSlowdown) are
	// 0 here: this VM's 2 cores cannot measure them (past 2 ranks the
	// oversubscription term prices its hops). A host of many cores fits
	// them with the rest of its constants (tune constants), as the 16-core
	// Xeon's do (docs/data/cpu16/s23/xeon_s23.json; docs/PERFORMANCE.md,
	// "The cost model's constants"; the fit: docs/log/performance-2026-11.md
	// 12v). Set here beside the other constants, fitted on this VM, they
	// priced the board above the rings this VM's hops make cheap: on the
	// Xeon's held-out sweep the built-in picks regretted more (12v's first
	// version of the board's price).
	// The fit's host cap over the VM's 2 cores as a per-core rate, and one
	// channel (a goroutine, a core at most) at that rate: the same
	// predictions on the VM, where 2 ranks fill both cores, but on a
	// 16-core host 2 ranks' 4 channels get 4 cores' worth (measured on a
	// 16-core Xeon, 2 ranks' Ring/Simple allreduce of 2-16 MiB: 4 channels
	// several times faster than 1; the host-wide cap had priced them alike
	// and auto took 1; docs/log/performance-2026-11.md 12e).
	c.ChannelBwGBs = [NumLinks]float64{Intra: 8.55, Inter: 0.6}
	// The network between hosts (transport.Net), measured on this VM
	// between two network namespaces, one process each (perf --np 2
	// --hosts 2 --netns, 3 passes): LL and LL128 hops are cheaper since
	// ranks read small frames off the socket themselves; Simple's receives
	// are the proxy's, and its tiny chunks also cost a frame more than
	// LL's; beyond TCP's round trip the rest is the wake-ups on 2 busy
	// cores. Every algorithm crosses the same proxies, so one figure per
	// protocol (docs/PERFORMANCE.md, "The cost model's constants"; history:
	// docs/log/performance-2026-11.md 13f). Refit with tune sweep --hosts
	// and tune constants.
	for a := range c.StepLatUs[Inter] {
		c.StepLatUs[Inter][a] = [proto.NumProtocols]float64{proto.LL: 50, proto.LL128: 50, proto.Simple: 90}
	}
	c.HostBwPerCoreGBs = 8.55
	// One channel fills this VM's link between two namespaces: 2 ranks'
	// allreduce, 1 MiB-64 MiB, 3 passes: two channels were slower than one
	// at every size (docs/PERFORMANCE.md, "Across hosts"). Without the cap
	// the model priced two channels at twice one's rate and auto took them.
	c.NetBwGBs = c.ChannelBwGBs[Inter]
	c.MaxChannelBwGBs[Ring] = [proto.NumProtocols]float64{proto.LL: 0.958, proto.LL128: 4.39}
	c.MaxChannelBwGBs[Tree] = [proto.NumProtocols]float64{proto.LL: 1.24}
	c.MaxHostBwGBs = 0 // see HostBwPerCoreGBs
	c.TreeBwFactor = 0.718

	// Not fitted: the least data per channel that pays for a channel's
	// wake-up at its per-channel rate. Simple's was 256 KiB while a
	// channel had no rate of its own; at ChannelBwGBs 64 KiB of copying
	// outweighs a wake-up (on the 16-core Xeon 4 channels beat 1 at
	// 256 KiB; VM picks unchanged, where the cores cap the channels first;
	// docs/log/performance-2026-11.md 12e).
	// Simple's and LL128's are 32 KiB since the Xeon's sweeps of 2-16 ranks
	// to 256 KiB: at 64-128 KiB more channels than the rule left were
	// faster, and `tune choices` regretted less with both the Xeon's own
	// and the built-in constants; this VM's picks unchanged. 16 KiB
	// measured alike (docs/log/performance-2026-11.md 12v).
	c.ChannelThresholdBytes = [proto.NumProtocols]int64{proto.LL: 16 << 10, proto.LL128: 32 << 10, proto.Simple: 32 << 10}

	// One rank: the call path alone (BenchmarkCallOneRank) and copy() of a
	// large buffer (docs/log/performance-2026-11.md 6 and 8).
	c.LocalLatUs = 0.45
	c.LocalBwGBs = 3.0
	return c
}

// Validate checks what the model needs of the constants: every number
// finite and >= 0, bandwidths that divide (> 0) and a known version. It
// returns one error per bad field, naming its key path.
func (c Constants) Validate() error {
	return c.validate("")
}

func (c Constants) validate(file string) error {
	bad := func(path, format string, args ...any) error {
		return &ConstantsError{File: file, Path: path, Err: fmt.Errorf(format, args...)}
	}
	if c.Version != ConstantsVersion {
		return bad("version", "version %d is not supported (valid versions: %d)", c.Version, ConstantsVersion)
	}
	var err error
	walkConstants(reflect.ValueOf(&c).Elem(), func(path string, v reflect.Value) bool {
		if f, ok := number(v); ok && !(f >= 0 && !math.IsInf(f, 0)) {
			err = bad(path, "%v is not a finite number >= 0", f)
			return false
		}
		return true
	})
	if err != nil {
		return err
	}
	for l := range c.ChannelBwGBs {
		if c.ChannelBwGBs[l] <= 0 {
			return bad("channel_bw_gbs."+Link(l).String(), "must be > 0")
		}
	}
	if c.TreeBwFactor <= 0 {
		return bad("tree_bw_factor", "must be > 0")
	}
	if c.LocalBwGBs <= 0 {
		return bad("local_bw_gbs", "must be > 0")
	}
	return nil
}

// ConstantsError is one problem in a constants file: the file, the key path
// (e.g. "step_lat_us.Intra.Ring.LL") and what is wrong.
type ConstantsError struct {
	File string // name given to ParseConstants; "" for constants built in code
	Path string // dotted key path; "" for the file as a whole
	Err  error
}

func (e *ConstantsError) Error() string {
	var b strings.Builder
	if e.File != "" {
		b.WriteString(e.File)
	} else {
		b.WriteString("tuning constants")
	}
	if e.Path != "" {
		fmt.Fprintf(&b, ": %s", e.Path)
	}
	fmt.Fprintf(&b, ": %v", e.Err)
	return b.String()
}

func (e *ConstantsError) Unwrap() error { return e.Err }

// InProcessHosts is c for hosts simulated in one process
// (Config.RanksPerHost): their "network" is the in-process FIFO, so the
// links between them take the links' inside a host constants.
func (c Constants) InProcessHosts() Constants {
	c.StepLatUs[Inter] = c.StepLatUs[Intra]
	c.ChannelBwGBs[Inter] = c.ChannelBwGBs[Intra]
	c.NetBwGBs = 0 // no network: the host's own caps bind
	return c
}

// ForOneProcess returns c adjusted for nHosts hosts simulated by one process
// of procs processors (GCCL_RANKS_PER_HOST): the hosts share the process's
// processors and its memory system, so each gets its share of both. A Cores
// already set (by a constants file) is kept. These are machine facts, not
// fitted constants: the stack applies them at InitAll, and a fit of the
// constants to in-process sweeps must apply them the same way.
func (c Constants) ForOneProcess(procs, nHosts int) Constants {
	nHosts = max(nHosts, 1)
	if c.Cores == 0 {
		c.Cores = float64(max(procs, 1)) / float64(nHosts)
	}
	c.MaxHostBwGBs /= float64(nHosts)
	return c
}
