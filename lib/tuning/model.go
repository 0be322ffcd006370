package tuning

import (
	"math"
	"slices"

	"github.com/gccl/gccl/lib/board/layout"
	"github.com/gccl/gccl/lib/proto"
)

// Model is the built-in alpha-beta cost model, in the form of NCCL's
// tuning.cc (ncclTopoTuneModel, ncclTopoGetAlgoTime): an operation costs a
// latency (base + per-hop latency x hops on its critical path) plus its
// bytes over an algorithm bandwidth derived from a bus bandwidth. It is
// pure: every method reads C only.
type Model struct {
	C Constants
}

// Estimate is the model's breakdown of one operation.
type Estimate struct {
	LatUs    float64 // base latency + hops x per-hop latency
	BusBwGBs float64 // bus bandwidth, nccl-tests' definition (0 for one rank)
	AlgBwGBs float64 // bytes / (Us - LatUs)
	Us       float64 // predicted time: LatUs + bytes / AlgBwGBs
}

// busBwFactor is nccl-tests' busBw / algBw of collective c on n ranks.
func busBwFactor(c Coll, n int) float64 {
	switch c {
	case AllReduce:
		return 2 * float64(n-1) / float64(n)
	case AllGather, ReduceScatter:
		return float64(n-1) / float64(n)
	}
	return 1
}

// hops counts the link crossings on the critical path of collective c with
// algorithm a, split by link kind. Ranks are grouped by host: the ring
// crosses to the next host nHosts times per round, the tree is a chain per
// host under a double binary tree over hosts (topo.RankTrees).
func hops(c Coll, a Algo, nRanks, nHosts, perHost int) (intra, inter int) {
	if a == Tree {
		// Up from the deepest host's last rank: the chain of every host on
		// the way (the child hosts hang off a host's last rank, the head
		// links to its parent) and depth inter-host links; down again.
		// NCCL counts one host's chain, 2*((ppn-1)*intra + log2(nNodes)*inter);
		// ours crosses depth+1 chains.
		depth := ceilLog2(nHosts)
		return 2 * (depth + 1) * (perHost - 1), 2 * depth
	}
	steps, interSteps := nRanks-1, nHosts-1 // allgather, reducescatter
	switch c {
	case AllReduce:
		steps, interSteps = 2*(nRanks-1), 2*(nHosts-1)
	case Broadcast:
		// A pipelined chain from the root: the last rank hears after n-1
		// hops. In one process a rank posts its output by reference and
		// holds the operation open until its successor has copied it, so
		// broadcasts issued back to back overlap little along the chain
		// (16 ranks' Ring/Simple/1 8 B on the 16-core Xeon took twice the
		// reduce's time; docs/log/performance-2026-11.md 12w). NCCL counts
		// nRanks steps.
		steps, interSteps = nRanks-1, nHosts-1
	case Reduce:
		// A chain to the root: a lone reduce reaches the root after n-1
		// hops, but reduces issued back to back (a stream, and how the
		// perf tools measure) overlap along it: a rank posts its partial
		// sum into its successor's FIFO and starts the next, so each costs
		// a rank's own cycle, the hop that brings its input and the one
		// that frees its slot, whatever the rank count: on the 16-core
		// Xeon 16 ranks' Ring/Simple/1 reduce of 8 B-8 KiB back to back
		// took a few hops' time, not 15 hops' (docs/log/performance-2026-11.md
		// 12w; docs/PERFORMANCE.md, "Tree against ring", has the chains).
		// A chain across hosts is paced by the ranks at a host's edge.
		steps = min(nRanks-1, 2)
		interSteps = 0
		if nHosts > 1 {
			interSteps = steps
		}
	}
	return steps - interSteps, interSteps
}

// ceilLog2 is the depth of topo.BinaryTree over n nodes (its root has a
// single child), 0 for one node.
func ceilLog2(n int) int {
	d := 0
	for 1<<d < n {
		d++
	}
	return d
}

// Estimate predicts collective c with algorithm a and protocol p on nCh
// channels, nRanks ranks over nHosts hosts (ranks grouped by host; uneven
// hosts count as ceil(nRanks/nHosts) ranks each). bytes is the size
// nccl-tests' algBw uses: the per-rank buffer for allreduce, broadcast and
// reduce, the whole gathered buffer (count x elt x nRanks) for allgather and
// reducescatter. ok is false when !Supports(c, a), an argument is out of
// range, or the constants give no finite time.
//
//	latency = BaseLatUs[a][p] + intraHops*(StepLatUs[Intra][a][p]+over) + interHops*(StepLatUs[Inter][a][p]+over)
//	over    = OversubStepLatUs[p] * max(0, perHost*nCh/Cores - 1)              (Cores > 0)
//	perCh   = min(min(ChannelBwGBs[links used]) * eff[p], MaxChannelBwGBs[a][p] if > 0)
//	busBw   = min(min(nCh, Cores/perHost) * perCh, hostBw*eff[p]/perHost) (* TreeBwFactor for Tree)
//	hostBw  = min(MaxHostBwGBs if > 0, HostBwPerCoreGBs*Cores if both > 0)      (no cap if neither)
//	          and, across hosts (nHosts > 1), busBw <= NetBwGBs*eff[p] if > 0 (the channels share the link)
//	algBw   = busBw / busBwFactor(c, nRanks)
//	time    = latency + min(bytes, CacheBytes) / algBw + max(0, bytes - CacheBytes) / (algBw * OutOfCacheBwFactor[a][p])
//	          (CacheBytes > 0; else latency + bytes / algBw)
//
// One rank costs LocalLatUs + bytes/LocalBwGBs whatever a and p.
func (m *Model) Estimate(c Coll, a Algo, p proto.Protocol, nCh, nRanks, nHosts int, bytes int64) (Estimate, bool) {
	if !Supports(c, a) || !SupportsProto(a, p) || nCh < 1 || nRanks < 1 || nHosts < 1 || nHosts > nRanks || bytes < 0 {
		return Estimate{}, false
	}
	k := &m.C
	b := float64(bytes)
	if nRanks == 1 {
		e := Estimate{LatUs: k.LocalLatUs, AlgBwGBs: k.LocalBwGBs}
		e.Us = e.LatUs + b/(e.AlgBwGBs*1e3)
		return e, finite(e)
	}
	perHost := (nRanks + nHosts - 1) / nHosts
	eff := Efficiency(p)
	if a.OnBoard() {
		return m.board(c, a, nRanks, nHosts, perHost, b)
	}

	over := 0.0
	if k.Cores > 0 {
		over = k.OversubStepLatUs[p] * max(0, float64(perHost*nCh)/k.Cores-1)
	}
	intra, inter := hops(c, a, nRanks, nHosts, perHost)
	lat := k.BaseLatUs[a][p] +
		float64(intra)*(k.StepLatUs[Intra][a][p]+over) +
		float64(inter)*(k.StepLatUs[Inter][a][p]+over)

	// The slowest link a channel crosses sets its pace (NCCL takes bwIntra
	// or bwInter by node count).
	wire := math.Inf(1)
	if perHost > 1 {
		wire = k.ChannelBwGBs[Intra]
	}
	if nHosts > 1 {
		wire = min(wire, k.ChannelBwGBs[Inter])
	}
	perCh := wire * eff
	if limit := k.MaxChannelBwGBs[a][p]; limit > 0 {
		perCh = min(perCh, limit)
	}
	// Channels are goroutines: those beyond a core each add nothing.
	channels := float64(nCh)
	if k.Cores > 0 {
		channels = min(channels, k.Cores/float64(perHost))
	}
	busBw := channels * perCh
	if hostBw := k.hostBw(); hostBw > 0 {
		busBw = min(busBw, hostBw*eff/float64(perHost))
	}
	if nHosts > 1 && k.NetBwGBs > 0 {
		busBw = min(busBw, k.NetBwGBs*eff)
	}
	if a == Tree {
		busBw *= k.TreeBwFactor
	}
	// NCCL converts with nRanks/nsteps for rings and .5 for trees; using
	// nccl-tests' factor for both is the same for rings and keeps tree and
	// ring bus bandwidths comparable at small n.
	algBw := busBw / busBwFactor(c, nRanks)
	xfer := b / (algBw * 1e3)
	if f := k.OutOfCacheBwFactor[a][p]; k.CacheBytes > 0 && b > k.CacheBytes && f > 0 {
		xfer = k.CacheBytes/(algBw*1e3) + (b-k.CacheBytes)/(algBw*f*1e3)
	}
	e := Estimate{LatUs: lat, BusBwGBs: busBw, Us: lat + xfer}
	// The effective algorithm bandwidth over the whole message.
	e.AlgBwGBs = algBw
	if xfer > 0 {
		e.AlgBwGBs = b / (xfer * 1e3)
	}
	return e, finite(e) && algBw > 0
}

// hostBw is the cap on a host's bus bandwidth, 0 for none.
func (k *Constants) hostBw() float64 {
	bw := k.MaxHostBwGBs
	if k.HostBwPerCoreGBs > 0 && k.Cores > 0 {
		if perCore := k.HostBwPerCoreGBs * k.Cores; bw == 0 || perCore < bw {
			bw = perCore
		}
	}
	return bw
}

// board prices the algorithms of the one-shot board (a = OneShot or
// TwoShot): one hop (per link kind the ranks span) for OneShot, two for
// TwoShot, then each rank reads and reduces what it needs of the posts:
//
//	latency = BaseLatUs[a][LL] + rounds x hops x (hop(Intra) + hop(Inter) + peers)
//	hop     = StepLatUs[link][a][LL] + over
//	peers   = BoardPeerLatUs x waits: every further post a reader waits for on a hop
//	further = max(0, nRanks - 2); waits = further, 0 for the one-shot broadcast (one post to wait for)
//	rounds  = the board's rounds the operation takes (BoardRounds: 16 KiB of each rank's post a round)
//	over    = OversubHopLatUs * max(0, readers/Cores - 1)
//	readers = the ranks of a host that wait and read (boardReaders): perHost; the
//	          one-shot reduce's root alone; the one-shot broadcast's perHost - 1 on one host
//	moved   = a rank's post, then what it reads (boardBytes), copied in turn each round:
//	          OneShot: allreduce, reduce: bytes + bytes x nRanks (every rank's whole buffer);
//	          allgather: bytes/nRanks + bytes (nccl-tests' bytes hold every rank's block);
//	          broadcast: 2 x bytes (the root's post, read); reducescatter: 2 x bytes;
//	          TwoShot: bytes + bytes/nRanks + 2 x bytes (its input and reduced block; its block
//	          of every post, then every reduced block)
//	rate    = LL posts:    min(ChannelBwGBs[links used] x EffLL, MaxChannelBwGBs[a][LL] if > 0)
//	          plain posts: MaxChannelBwGBs[a][LL] (ChannelBwGBs[Intra] if 0), at most ChannelBwGBs[Inter]
//	          across hosts (BoardPlain)
//	share   = min(1, Cores/readers) (1 without Cores): readers past the cores take turns
//	slow    = 1 + BoardReadSlowdown x further: every rank reads every post at once
//	time    = latency + moved x slow / (rate x share)
//
// A rank posts, reads and acknowledges one round before it posts the
// next, so its copies add up. Plain posts are the payload as is, read
// straight from the board in one pass, so no channel's copy rate inside a
// host bounds them: the cap is their rate (on the 2-core VM about twice
// one channel's Simple rate; docs/log/performance-2026-11.md 12v). The
// one-shot's cost grows with ranks x bytes, so it wins only at small sizes
// and few ranks; the two-shot pays a second hop to read less. Past the cores every rank that waits for the board
// waits for the scheduler too (over); ranks that only post do not.
func (m *Model) board(c Coll, a Algo, nRanks, nHosts, perHost int, b float64) (Estimate, bool) {
	k := &m.C
	readers := float64(boardReaders(c, a, nHosts, perHost))
	over := 0.0
	if k.Cores > 0 {
		over = k.OversubHopLatUs * max(0, readers/k.Cores-1)
	}
	hops := float64(BoardRounds(c, a, nRanks, int64(b)))
	if a == TwoShot {
		hops *= 2
	}
	// A reader of the one-shot broadcast waits for the root's post only,
	// not every rank's: on the 16-core Xeon its 8 B grew with ranks far
	// less than the allreduce's (docs/log/performance-2026-11.md 12w). Its
	// readers still read at once.
	further := float64(max(nRanks-2, 0))
	waits := further
	if c == Broadcast && a == OneShot {
		waits = 0
	}
	lat := k.BaseLatUs[a][proto.LL] + hops*k.BoardPeerLatUs*waits
	wire := math.Inf(1)
	if perHost > 1 {
		lat += hops * (k.StepLatUs[Intra][a][proto.LL] + over)
		wire = k.ChannelBwGBs[Intra]
	}
	if nHosts > 1 {
		lat += hops * (k.StepLatUs[Inter][a][proto.LL] + over)
		wire = min(wire, k.ChannelBwGBs[Inter])
	}
	limit := k.MaxChannelBwGBs[a][proto.LL]
	bw := wire * EffLL
	switch {
	case BoardPlain(c, a, nRanks, int64(b)):
		bw = k.ChannelBwGBs[Intra]
		if limit > 0 {
			bw = limit
		}
		if nHosts > 1 {
			bw = min(bw, k.ChannelBwGBs[Inter])
		}
	case limit > 0:
		bw = min(bw, limit)
	}
	if k.Cores > 0 && readers > k.Cores {
		bw *= k.Cores / readers // readers past the cores read in turns
	}
	bw /= 1 + k.BoardReadSlowdown*further
	xfer := boardBytes(c, a, nRanks, b) / (bw * 1e3)
	e := Estimate{LatUs: lat, Us: lat + xfer}
	if xfer > 0 {
		e.AlgBwGBs = b / (xfer * 1e3)
		e.BusBwGBs = e.AlgBwGBs * busBwFactor(c, nRanks)
	}
	return e, finite(e) && bw > 0
}

// boardReaders is how many ranks of a host wait on the board and read it
// at once: the ones that compete for its cores. A one-shot reduce's ranks
// post and go; its root alone waits and reads (4 ranks on the 2-core VM,
// 8 B: several times faster than the allreduce's four readers;
// docs/log/performance-2026-11.md 12w). A one-shot broadcast's root posts
// and goes; the others wait for it.
func boardReaders(c Coll, a Algo, nHosts, perHost int) int {
	switch {
	case a != OneShot:
	case c == Reduce:
		return 1
	case c == Broadcast && nHosts == 1:
		return max(perHost-1, 1)
	}
	return perHost
}

// boardBytes is what a rank of the board copies, in turn, for an
// operation of b bytes (NCCL's): its post, then what it reads (see
// Model.board).
func boardBytes(c Coll, a Algo, nRanks int, b float64) float64 {
	n := float64(nRanks)
	switch {
	case a == TwoShot:
		return b + b/n + 2*b // its input, its reduced block; every post's block, every reduced block
	case c == AllReduce || c == Reduce:
		return b + n*b
	case c == AllGather:
		return b/n + b
	}
	return 2 * b // broadcast: the root's post, read; reducescatter: the input, then every block of its own
}

// BoardRounds is how many rounds of the one-shot board (lib/board) an
// operation of bytes (NCCL's: the whole result for allgather and
// reducescatter) takes with algorithm a on nRanks ranks: each round carries
// at most layout.RoundBytes of each rank's post, and every round is a hop
// (two for the two-shot). At least one.
func BoardRounds(c Coll, a Algo, nRanks int, bytes int64) int64 {
	per := int64(layout.RoundBytes)
	switch {
	case a == TwoShot:
		per = int64(layout.TwoShotSegment(nRanks) * nRanks)
	case c == AllGather:
		bytes /= int64(max(nRanks, 1)) // each rank posts its block
	}
	if per <= 0 {
		return 1
	}
	return max((bytes+per-1)/per, 1)
}

// BoardPlain reports whether the stack posts an operation of bytes
// (NCCL's, as BoardRounds takes them) with algorithm a on nRanks ranks as
// plain payloads rather than LL lines (lib/ccl's plainPosts, which decides
// from the same rule): the one-shot (not the two-shot) allreduce, reduce,
// allgather and broadcast, when a round of a rank's post holds at least
// layout.PlainMinBytes.
func BoardPlain(c Coll, a Algo, nRanks int, bytes int64) bool {
	if a != OneShot || c == ReduceScatter {
		return false
	}
	post := bytes
	if c == AllGather {
		post /= int64(max(nRanks, 1)) // each rank posts its block
	}
	return min(post, layout.RoundBytes) >= layout.PlainMinBytes
}

func finite(e Estimate) bool {
	for _, f := range []float64{e.LatUs, e.BusBwGBs, e.AlgBwGBs, e.Us} {
		if math.IsNaN(f) || math.IsInf(f, 0) {
			return false
		}
	}
	return true
}

// Time is Estimate's predicted time in microseconds.
func (m *Model) Time(c Coll, a Algo, p proto.Protocol, nCh, nRanks, nHosts int, bytes int64) (us float64, ok bool) {
	e, ok := m.Estimate(c, a, p, nCh, nRanks, nHosts, bytes)
	return e.Us, ok
}

// Limits restrict Choose (GCCL_ALGO, GCCL_PROTO, GCCL_NCHANNELS).
type Limits struct {
	Algos  []Algo           // allowed algorithms; nil = all
	Protos []proto.Protocol // allowed protocols; nil = all
	// MaxChannels is the communicator's channel count (< 1 counts as 1).
	MaxChannels int
	// Channels > 0 forces the channel count: no reduction.
	Channels int
}

// Choose returns the allowed (algorithm, protocol) of least predicted time
// and its channel count, with the predicted time in microseconds.
//
// The channel count is at most NCCL's (getAlgoInfo): from MaxChannels it
// drops while bytes < nChannels x ChannelThresholdBytes[proto] and
// nChannels > 1; a forced Channels is kept as is; one rank runs on one
// channel. Below that, every count is priced (up to the one that fills the
// cores) and the cheapest taken: in this model a channel is a goroutine,
// and past the cores it adds latency (a trip through the scheduler per
// step) and no bandwidth, which NCCL's rule, made for thread blocks that
// never share an SM, does not see. Counts that tie have all reached the
// host's bandwidth cap: the most of them is taken where the cores are
// known, the fewest where they are not.
//
// Ties go to Ring over Tree, then Simple over LL128 over LL: the simpler
// schedule and the protocol that moves fewer wire bytes. When no allowed
// algorithm implements c, the ring runs it (NCCL_ALGO likewise only
// restricts collectives that have a choice). Auto algorithms under a forced
// channel count above 1 are Ring and Tree: the board's algorithms run on
// one channel; so are they for 2 ranks where the one-shot would take more
// than one round of the board. Invalid arguments (nRanks
// < 1, nHosts outside 1..nRanks, bytes < 0) or no allowed protocol (a
// non-nil empty Protos) give Ring/Simple and time -1.
func (m *Model) Choose(c Coll, nRanks, nHosts int, bytes int64, lim Limits) (Choice, float64) {
	algos := lim.Algos
	if algos == nil {
		algos = Algos()
		if lim.Channels > 1 || nRanks <= 2 && BoardRounds(c, OneShot, nRanks, bytes) > 1 {
			// A forced channel count asks for a split over channels; the
			// one-shot algorithm has nothing to split. And 2 ranks use
			// the board only for what fits one of its rounds (16 KiB of
			// each rank's post): there the ring is one step each way as
			// well, reading its peer's buffer directly in one process,
			// where the board copies twice; this model prices those
			// direct reads as copies through the FIFO, and priced so the
			// board took 2-rank broadcasts of 64 KiB-4 MiB, measured
			// slower than the ring on this VM and the 16-core Xeon. From
			// 3 ranks the board is one hop where the ring's broadcast is
			// a chain: 8 ranks' one-shot broadcast of 32-256 KiB beat the
			// ring there (docs/log/performance-2026-11.md 12v).
			algos = []Algo{Ring, Tree}
		}
	}
	if !slices.ContainsFunc(algos, func(a Algo) bool { return Supports(c, a) }) {
		algos = []Algo{Ring} // every collective has a ring
	}
	protos := lim.Protos
	if protos == nil {
		protos = proto.All()
	}
	best := Choice{Algo: Ring, Proto: proto.Simple, NChannels: m.channels(proto.Simple, nRanks, bytes, lim)}
	bestUs := -1.0
	for _, a := range Algos() {
		if !slices.Contains(algos, a) {
			continue
		}
		for p := proto.Simple; p >= proto.LL; p-- {
			if !slices.Contains(protos, p) {
				continue
			}
			if !SupportsProto(a, p) {
				continue
			}
			lo, hi := m.channelRange(p, nRanks, nHosts, bytes, lim)
			if a.OnBoard() {
				lo, hi = 1, 1 // one channel whatever was forced: it has no parts to split
			}
			for nc := lo; nc <= hi; nc++ {
				us, ok := m.Time(c, a, p, nc, nRanks, nHosts, bytes)
				// A tie between channel counts of one algorithm and
				// protocol is the host's bandwidth cap, reached by both
				// (past the cores a channel adds latency, so it never
				// ties): where the cores are known (hi fills them, no
				// further), take the more channels, which come nearer the
				// cap. Measured on the 16-core Xeon, 4 ranks' Ring/Simple
				// 256 KiB-256 MiB: 4 channels faster than 3, which the
				// model priced the same (docs/log/performance-2026-11.md 12s).
				more := m.C.Cores > 0 && us == bestUs && a == best.Algo && p == best.Proto && nc > best.NChannels
				if ok && (bestUs < 0 || us < bestUs || more) {
					best, bestUs = Choice{Algo: a, Proto: p, NChannels: nc}, us
				}
			}
		}
	}
	return best, bestUs
}

// channelRange is the channel counts Choose prices for protocol p, lo..hi:
// a forced count alone; else 1 up to NCCL's rule (channels), but no further
// than the count that gives every core a goroutine (ceil(Cores/perHost)):
// channels past it add no bandwidth in the model, only scheduler trips, so
// they can never be cheaper. A range, not a list: Choose runs per call.
func (m *Model) channelRange(p proto.Protocol, nRanks, nHosts int, bytes int64, lim Limits) (lo, hi int) {
	hi = m.channels(p, nRanks, bytes, lim)
	if lim.Channels > 0 {
		return hi, hi
	}
	if m.C.Cores > 0 && nHosts >= 1 {
		perHost := (nRanks + nHosts - 1) / nHosts
		fill := int(math.Ceil(m.C.Cores / float64(perHost)))
		hi = min(hi, max(fill, 1))
	}
	return 1, hi
}

// channels is the channel count protocol p runs bytes with under lim by
// NCCL's rule: the most Choose prices.
func (m *Model) channels(p proto.Protocol, nRanks int, bytes int64, lim Limits) int {
	if lim.Channels > 0 {
		return lim.Channels
	}
	if nRanks == 1 {
		return 1 // a local copy: nothing to split
	}
	nc := max(lim.MaxChannels, 1)
	for nc > 1 && bytes < int64(nc)*m.C.ChannelThresholdBytes[p] {
		nc--
	}
	return nc
}
