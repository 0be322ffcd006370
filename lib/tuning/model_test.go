package tuning

import (
	"errors"
	"io/fs"
	"math"
	"reflect"
	"strings"
	"testing"

	"github.com/gccl/gccl/lib/proto"
)

// shapes lists (nRanks, nHosts) for 1..16 ranks and every host count that
// divides the ranks.
func shapes() [][2]int {
	var out [][2]int
	for n := 1; n <= 16; n++ {
		for h := 1; h <= n; h++ {
			if n%h == 0 {
				out = append(out, [2]int{n, h})
			}
		}
	}
	return out
}

// sizes are 0 and every power of two to 4 GiB, with the odd size between.
func sizes() []int64 {
	out := []int64{0}
	for b := int64(1); b <= 4<<30; b *= 2 {
		out = append(out, b, b+b/2+1)
	}
	return out
}

func defaultModel() *Model { return &Model{C: DefaultConstants()} }

func TestModelDefaultsValidAndRoundTrip(t *testing.T) {
	d := DefaultConstants()
	if err := d.Validate(); err != nil {
		t.Fatalf("DefaultConstants invalid: %v", err)
	}
	data, err := d.MarshalJSON()
	if err != nil {
		t.Fatal(err)
	}
	got, err := ParseConstants(data, "roundtrip.json")
	if err != nil {
		t.Fatalf("ParseConstants(MarshalJSON(defaults)): %v\n%s", err, data)
	}
	if !reflect.DeepEqual(got, d) {
		t.Errorf("round trip changed the constants:\n got %s\nwant %s", got, d)
	}
	if s := d.String(); !strings.Contains(s, `"base_lat_us"`) || !strings.Contains(s, `"Simple"`) {
		t.Errorf("String() is not the file format:\n%s", s)
	}
}

// TestModelFormula pins every term of Estimate against hand computations
// with round constants, so that fitted defaults can change freely.
func TestModelFormula(t *testing.T) {
	k := Constants{Version: ConstantsVersion, TreeBwFactor: 0.5, LocalLatUs: 0.25, LocalBwGBs: 4}
	for p := range proto.NumProtocols {
		k.BaseLatUs[Ring][p], k.BaseLatUs[Tree][p] = 1, 2
		for a := range NumAlgos {
			k.StepLatUs[Intra][a][p], k.StepLatUs[Inter][a][p] = 0.5, 3
		}
	}
	k.ChannelBwGBs = [NumLinks]float64{Intra: 2, Inter: 1}
	capped := k
	capped.Cores = 2
	capped.OversubStepLatUs[proto.LL128] = 1
	capped.MaxChannelBwGBs[Ring][proto.LL128] = 0.3
	capped.MaxHostBwGBs = 1.2
	hostCapped := k
	hostCapped.MaxHostBwGBs = 1.2
	board := k
	board.BaseLatUs[OneShot][proto.LL] = 1.5
	board.MaxChannelBwGBs[OneShot][proto.LL] = 0.8
	plain := board // a plain rate above LL's half of the wire
	plain.MaxChannelBwGBs[OneShot][proto.LL] = 3
	plainPeers := plain // 2 ranks beyond two: 0.25 us each a hop, reads 1 + 0.5 x 2 times slower
	plainPeers.BoardPeerLatUs, plainPeers.BoardReadSlowdown = 0.25, 0.5
	plainNoCap := board
	plainNoCap.MaxChannelBwGBs[OneShot][proto.LL] = 0
	boardOver := board // 4 ranks on 2 cores
	boardOver.Cores, boardOver.OversubHopLatUs = 2, 2
	boardTwo := k // the two-shot's own constants, the one-shot's priced out
	boardTwo.BaseLatUs[OneShot][proto.LL], boardTwo.BaseLatUs[TwoShot][proto.LL] = 100, 1.5
	boardTwo.MaxChannelBwGBs[TwoShot][proto.LL] = 0.8
	boardTwoHigh := boardTwo
	boardTwoHigh.MaxChannelBwGBs[TwoShot][proto.LL] = 3
	boardTwoOver := boardTwo
	boardTwoOver.Cores = 2
	boardTwoOver.OversubHopLatUs = 2

	cases := []struct {
		name                string
		k                   Constants
		c                   Coll
		a                   Algo
		p                   proto.Protocol
		nCh, nRanks, nHosts int
		bytes               int64
		lat, busBw, us      float64
	}{
		// 6 steps, 2 of them between hosts; the Inter link (1 GB/s) paces
		// both channels; algBw = busBw / (2*3/4).
		{"ring allreduce 2 hosts", k, AllReduce, Ring, proto.Simple, 2, 4, 2, 1e6, 1 + 4*0.5 + 2*3, 2, 9 + 1e6/(2/1.5*1e3)},
		// 3 steps; LL moves half payload; algBw = busBw / (3/4).
		{"ring allgather LL", k, AllGather, Ring, proto.LL, 1, 4, 1, 3000, 1 + 3*0.5, 1, 2.5 + 3000/(1/0.75*1e3)},
		// A chain of 3 ranks on 3 hosts: 2 inter hops, busBw factor 1.
		{"ring broadcast chain", k, Broadcast, Ring, proto.LL128, 1, 3, 3, 1e4, 1 + 2*3, 0.9375, 7 + 1e4/(0.9375*1e3)},
		// A broadcast chain of 16 ranks: 15 hops. A reduce chain is priced
		// back to back: a rank's own cycle, 2 hops at any rank count (1 for
		// 2 ranks), paced by the inter-host link when it crosses hosts.
		{"ring broadcast chain of 16", k, Broadcast, Ring, proto.Simple, 1, 16, 1, 1e4, 1 + 15*0.5, 2, 8.5 + 1e4/(2*1e3)},
		{"ring reduce chain of 16", k, Reduce, Ring, proto.Simple, 1, 16, 1, 1e4, 1 + 2*0.5, 2, 2 + 1e4/(2*1e3)},
		{"ring reduce chain of 2", k, Reduce, Ring, proto.Simple, 1, 2, 1, 1e4, 1 + 0.5, 2, 1.5 + 1e4/(2*1e3)},
		{"ring reduce chain across hosts", k, Reduce, Ring, proto.LL128, 1, 8, 4, 1e4, 1 + 2*3, 0.9375, 7 + 1e4/(0.9375*1e3)},
		// Tree over 4 hosts of 2 ranks: depth 2, 3 chains of 1 hop each way.
		{"tree allreduce", k, AllReduce, Tree, proto.Simple, 1, 8, 4, 1e6, 2 + 6*0.5 + 4*3, 0.5, 17 + 1e6/(0.5/1.75*1e3)},
		// 4 ranks x 2 channels on 2 cores: 3 extra runners per core add 3 us
		// a step; channels count as 2/4; the LL128 cap (0.3) binds.
		{"cores and channel cap", capped, AllReduce, Ring, proto.LL128, 2, 4, 1, 1e6, 1 + 6*(0.5+3), 0.15, 22 + 1e6/(0.15/1.5*1e3)},
		// The host cap: 2 channels of 2 GB/s, but 1.2 GB/s shared by 2 ranks.
		{"host cap", hostCapped, AllReduce, Ring, proto.Simple, 2, 2, 1, 6e5, 1 + 2*0.5, 0.6, 2 + 6e5/(0.6*1e3)},
		// The host cap bounds wire bytes: LL128 gets 120/128 of it.
		{"host cap LL128", hostCapped, AllReduce, Ring, proto.LL128, 2, 2, 1, 5.625e5, 2, 0.5625, 2 + 5.625e5/(0.5625*1e3)},
		{"one rank", k, Reduce, Ring, proto.LL, 4, 1, 1, 4000, 0.25, 0, 0.25 + 4000/(4*1e3)},
		// The board: base 1.5, a hop of 0.5 (one host), LL's half of 2 GB/s
		// capped at 0.8; a one-shot rank posts its buffer and reads 4 (5 x
		// bytes), a two-shot rank posts its buffer and its block and reads
		// every post's block and every reduced block (3.25 x bytes) in two
		// hops; busBw = algBw x 2(n-1)/n.
		{"one-shot allreduce", board, AllReduce, OneShot, proto.LL, 1, 4, 1, 8000, 2, 0.8 * 8000 / 40000 * 1.5, 2 + 40000/(0.8*1e3)},
		{"two-shot allreduce", boardTwo, AllReduce, TwoShot, proto.LL, 1, 4, 1, 8000, 2.5, 0.8 / 3.25 * 1.5, 2.5 + 26000/(0.8*1e3)},
		// 40000 B take 3 rounds of 16 KiB, each a hop; the two-shot's rounds
		// on 4 ranks are 4 x 4096 B, 3 of them again, two hops each.
		{"one-shot in rounds", board, AllReduce, OneShot, proto.LL, 1, 4, 1, 40000, 1.5 + 3*0.5, 0.8 / 5 * 1.5, 3 + 200000/(0.8*1e3)},
		{"two-shot in rounds", boardTwo, AllReduce, TwoShot, proto.LL, 1, 4, 1, 40000, 1.5 + 6*0.5, 0.8 / 3.25 * 1.5, 4.5 + 130000/(0.8*1e3)},
		// Posts from 256 B are plain (BoardPlain): the cap (3) is their
		// rate, above LL's half of the wire (1); below, LL's rate binds.
		// Without a cap plain posts read at the wire's rate (2); across
		// hosts, at most at the Inter link's (1), after a hop on each link.
		{"one-shot plain posts", plain, AllReduce, OneShot, proto.LL, 1, 4, 1, 8000, 2, 3.0 / 5 * 1.5, 2 + 40000/(3*1e3)},
		{"one-shot LL posts", plain, AllReduce, OneShot, proto.LL, 1, 4, 1, 200, 2, 1.0 / 5 * 1.5, 2 + 1000/(1*1e3)},
		{"one-shot plain, no cap", plainNoCap, AllReduce, OneShot, proto.LL, 1, 4, 1, 8000, 2, 2.0 / 5 * 1.5, 2 + 40000/(2*1e3)},
		{"one-shot plain across hosts", plain, AllReduce, OneShot, proto.LL, 1, 4, 2, 8000, 1.5 + 0.5 + 3, 1.0 / 5 * 1.5, 5 + 40000/(1*1e3)},
		{"one-shot, ranks beyond two", plainPeers, AllReduce, OneShot, proto.LL, 1, 4, 1, 8000, 2 + 2*0.25, 1.5 / 5 * 1.5, 2.5 + 40000/(1.5*1e3)},
		// A reader of the one-shot broadcast waits for the root's post
		// only: no per-rank hop term; the reads still slow (1 + 0.5 x 2);
		// it posts and reads 2 x bytes.
		{"one-shot broadcast, ranks beyond two", plainPeers, Broadcast, OneShot, proto.LL, 1, 4, 1, 8000, 2, 0.75, 2 + 16000/(1.5*1e3)},
		{"two-shot, ranks beyond two", func() Constants { c := boardTwo; c.BoardPeerLatUs, c.BoardReadSlowdown = 0.25, 0.5; return c }(),
			AllReduce, TwoShot, proto.LL, 1, 4, 1, 8000, 2.5 + 2*2*0.25, 0.4 / 3.25 * 1.5, 3.5 + 26000/(0.4*1e3)},
		// The two-shot posts LL lines at any size: LL's half of the wire
		// binds under a higher cap.
		{"two-shot never plain", boardTwoHigh, AllReduce, TwoShot, proto.LL, 1, 4, 1, 8000, 2.5, 1.0 / 3.25 * 1.5, 2.5 + 26000/(1*1e3)},
		// The one-shot's allgather posts its block and reads the result's
		// bytes once (1.25 x bytes).
		{"one-shot allgather", board, AllGather, OneShot, proto.LL, 1, 4, 1, 8000, 2, 0.8 * 8000 / 10000 * 0.75, 2 + 10000/(0.8*1e3)},
		// Oversubscribed: 4 ranks on 2 cores add OversubHopLatUs (2)
		// to each of the two-shot's two hops, and read in turns: half the
		// rate each.
		// Past the cores only the ranks that wait and read compete
		// (boardReaders): the one-shot allreduce's 4 (a hop 2 us later,
		// half the rate each), the broadcast's 3 (1 us, 2/3 the rate), the
		// reduce's root alone (no cost). 200 B posts LL lines at 0.8 GB/s.
		{"one-shot allreduce on 2 cores", boardOver, AllReduce, OneShot, proto.LL, 1, 4, 1, 200, 4, 0.12, 4 + 1000/(0.4*1e3)},
		{"one-shot broadcast on 2 cores", boardOver, Broadcast, OneShot, proto.LL, 1, 4, 1, 200, 3, 0.8 * 2 / 3 / 2, 3 + 400/(0.8*2/3*1e3)},
		{"one-shot reduce on 2 cores", boardOver, Reduce, OneShot, proto.LL, 1, 4, 1, 200, 2, 0.8 / 5, 2 + 1000/(0.8*1e3)},
		{"two-shot on 2 cores", boardTwoOver, AllReduce, TwoShot, proto.LL, 1, 4, 1, 8000, 1.5 + 2*2.5, 0.4 / 3.25 * 1.5, 6.5 + 26000/(0.4*1e3)},
	}
	near := func(a, b float64) bool { return math.Abs(a-b) <= 1e-9*math.Max(1, math.Abs(b)) }
	for _, tc := range cases {
		m := &Model{C: tc.k}
		e, ok := m.Estimate(tc.c, tc.a, tc.p, tc.nCh, tc.nRanks, tc.nHosts, tc.bytes)
		if !ok || !near(e.LatUs, tc.lat) || !near(e.BusBwGBs, tc.busBw) || !near(e.Us, tc.us) {
			t.Errorf("%s: Estimate = %+v, %v; want lat %g busBw %g time %g", tc.name, e, ok, tc.lat, tc.busBw, tc.us)
		}
		if us, ok := m.Time(tc.c, tc.a, tc.p, tc.nCh, tc.nRanks, tc.nHosts, tc.bytes); !ok || us != e.Us {
			t.Errorf("%s: Time = %g, %v; Estimate says %g", tc.name, us, ok, e.Us)
		}
	}
}

// TestModelMonotoneInBytes: for every collective, algorithm, protocol,
// shape and channel count, time never falls as bytes grow, and Time is ok
// exactly where Supports says the algorithm exists. The one exception is
// where the one-shot's posts turn plain (BoardPlain): a different
// mechanism, measured as fast or faster there, so the time starts again.
func TestModelMonotoneInBytes(t *testing.T) {
	m := defaultModel()
	for _, c := range Colls() {
		for _, a := range Algos() {
			for _, p := range proto.All() {
				for _, s := range shapes() {
					for nCh := 1; nCh <= 8; nCh++ {
						prev, prevB := math.Inf(-1), int64(0)
						for _, b := range sizes() {
							us, ok := m.Time(c, a, p, nCh, s[0], s[1], b)
							if ok != (Supports(c, a) && SupportsProto(a, p)) {
								t.Fatalf("Time(%v,%v,%v,%dch,%d ranks,%d hosts,%d B) ok=%v, Supports=%v", c, a, p, nCh, s[0], s[1], b, ok, Supports(c, a))
							}
							if !ok {
								break
							}
							if b > 0 && BoardPlain(c, a, s[0], b) != BoardPlain(c, a, s[0], prevB) {
								prev = math.Inf(-1)
							}
							prevB = b
							if us < prev || us <= 0 {
								t.Fatalf("Time(%v,%v,%v,%dch,%d ranks,%d hosts) = %g us at %d B after %g", c, a, p, nCh, s[0], s[1], us, b, prev)
							}
							prev = us
						}
					}
				}
			}
		}
	}
}

func TestModelTimeRejects(t *testing.T) {
	m := defaultModel()
	cases := []struct {
		name                string
		c                   Coll
		a                   Algo
		p                   proto.Protocol
		nCh, nRanks, nHosts int
		bytes               int64
	}{
		{"tree allgather", AllGather, Tree, proto.LL, 1, 8, 8, 8},
		{"tree broadcast", Broadcast, Tree, proto.Simple, 1, 8, 8, 8},
		{"bad coll", NumColls, Ring, proto.LL, 1, 2, 1, 8},
		{"bad algo", AllReduce, NumAlgos, proto.LL, 1, 2, 1, 8},
		{"bad proto", AllReduce, Ring, proto.NumProtocols, 1, 2, 1, 8},
		{"no channel", AllReduce, Ring, proto.LL, 0, 2, 1, 8},
		{"no rank", AllReduce, Ring, proto.LL, 1, 0, 1, 8},
		{"no host", AllReduce, Ring, proto.LL, 1, 2, 0, 8},
		{"more hosts than ranks", AllReduce, Ring, proto.LL, 1, 2, 3, 8},
		{"negative bytes", AllReduce, Ring, proto.LL, 1, 2, 1, -1},
	}
	for _, tc := range cases {
		if us, ok := m.Time(tc.c, tc.a, tc.p, tc.nCh, tc.nRanks, tc.nHosts, tc.bytes); ok {
			t.Errorf("%s: Time = %g, ok; want not ok", tc.name, us)
		}
	}
	// Constants that give no finite time (a zero bandwidth) are not ok either.
	z := &Model{C: DefaultConstants()}
	z.C.ChannelBwGBs[Intra] = 0
	if us, ok := z.Time(AllReduce, Ring, proto.Simple, 1, 2, 1, 8); ok {
		t.Errorf("zero bandwidth: Time = %g, ok", us)
	}
}

// ncclLikeModel prices with NCCL's GPU constants (DESIGN.md section 5:
// baseLat, NVLink hwLat; LL at half the bandwidth, capped): the form of
// the model must reproduce NCCL's well-known decisions with them.
func ncclLikeModel() *Model {
	var c Constants
	c.Version = ConstantsVersion
	c.BaseLatUs[Ring] = [proto.NumProtocols]float64{proto.LL: 6.6, proto.LL128: 14, proto.Simple: 8.4}
	c.BaseLatUs[Tree] = [proto.NumProtocols]float64{proto.LL: 6.8, proto.LL128: 14, proto.Simple: 8.4}
	for l := range c.StepLatUs {
		for a := range c.StepLatUs[l] {
			c.StepLatUs[l][a] = [proto.NumProtocols]float64{proto.LL: 0.6, proto.LL128: 1.9, proto.Simple: 3.4}
		}
	}
	c.ChannelBwGBs = [NumLinks]float64{Intra: 20, Inter: 20}
	for a := range c.MaxChannelBwGBs {
		c.MaxChannelBwGBs[a][proto.LL] = 5
	}
	c.TreeBwFactor = 0.92
	// NCCL has no board algorithms: price them out of every choice.
	c.BaseLatUs[OneShot][proto.LL], c.BaseLatUs[TwoShot][proto.LL] = 1e9, 1e9
	c.ChannelThresholdBytes = [proto.NumProtocols]int64{proto.LL: 4096, proto.LL128: 16384, proto.Simple: 65536}
	c.LocalLatUs, c.LocalBwGBs = 1, 100
	return &Model{C: c}
}

// TestModelTinyPicksLLAndTree: with NCCL-like constants an 8-byte operation
// runs LL on one channel, and allreduce takes the tree once there are 4
// hosts or more (the tree's hops, 2(depth+1)(perHost-1) + 2 depth, undercut
// the ring's 2(n-1) when depth+1 < nHosts).
func TestModelTinyPicksLLAndTree(t *testing.T) {
	m := ncclLikeModel()
	for _, c := range Colls() {
		for _, s := range shapes() {
			if s[0] == 1 {
				continue
			}
			for _, maxCh := range []int{1, 2, 8} {
				got, us := m.Choose(c, s[0], s[1], 8, Limits{MaxChannels: maxCh})
				want := Choice{Algo: Ring, Proto: proto.LL, NChannels: 1}
				if c == AllReduce && s[1] >= 4 {
					want.Algo = Tree
				}
				if got != want || us <= 0 {
					t.Errorf("%v 8 B, %d ranks on %d hosts, max %d ch: Choose = %v (%g us), want %v", c, s[0], s[1], maxCh, got, us, want)
				}
			}
		}
	}
}

// TestModelDefaultsTiny: with the constants measured on this stack and a
// hop between hosts that costs what a network hop does (5 us: the built-in
// constants price simulated hosts in one process, where it costs what a hop
// inside a host does), an 8-byte allreduce takes the tree on one channel
// from 4 hosts up (as with NCCL's constants): its depth crosses fewer host
// boundaries than the ring. Its protocol is whatever the fit ranks first:
// on a CPU with coherent caches LL, LL128 and Simple all signal a step with
// one store and one load, and measured 8 B times rank them within noise, so
// the test does not pin it.
func TestModelDefaultsTiny(t *testing.T) {
	m := defaultModel()
	for a := range m.C.StepLatUs[Inter] {
		for p := range m.C.StepLatUs[Inter][a] {
			m.C.StepLatUs[Inter][a][p] = 5
		}
	}
	for _, s := range shapes() {
		if s[1] < 4 {
			continue
		}
		lim := Limits{MaxChannels: 4, Algos: []Algo{Ring, Tree}}
		got, _ := m.Choose(AllReduce, s[0], s[1], 8, lim)
		if got.Algo != Tree || got.NChannels != 1 {
			t.Errorf("allreduce 8 B, %d ranks on %d hosts: Choose = %v, want the tree on one channel", s[0], s[1], got)
		}
		// With every algorithm allowed, the one-shot undercuts both at 8 B
		// (one hop against the tree's 2 depth).
		if got, _ := m.Choose(AllReduce, s[0], s[1], 8, Limits{MaxChannels: 4}); got != (Choice{OneShot, proto.LL, 1, 0}) {
			t.Errorf("allreduce 8 B, %d ranks on %d hosts: Choose = %v, want OneShot/LL/1ch", s[0], s[1], got)
		}
	}
}

// TestModelNCCLLikeHugePicksSimpleRing: with NCCL-like constants 1 GiB runs
// Simple on the ring with every channel, as NCCL does on NVLink.
func TestModelNCCLLikeHugePicksSimpleRing(t *testing.T) {
	m := ncclLikeModel()
	for _, c := range Colls() {
		for _, s := range shapes() {
			if s[0] == 1 {
				continue
			}
			got, _ := m.Choose(c, s[0], s[1], 1<<30, Limits{MaxChannels: 8})
			if want := (Choice{Algo: Ring, Proto: proto.Simple, NChannels: 8}); got != want {
				t.Errorf("%v 1 GiB, %d ranks on %d hosts: Choose = %v, want %v", c, s[0], s[1], got, want)
			}
		}
	}
}

// TestModelNetCapSharesLink: across hosts the channels share the network
// link: with NetBwGBs at one channel's rate, 1 GiB across hosts runs on one
// channel; with room for 4 it runs on 4 (of 8); inside one host the cap
// does not apply, and hosts simulated in one process have no network.
func TestModelNetCapSharesLink(t *testing.T) {
	m := defaultModel()
	m.C.MaxHostBwGBs, m.C.HostBwPerCoreGBs, m.C.Cores = 0, 0, 0
	lim := Limits{MaxChannels: 8, Algos: []Algo{Ring}, Protos: []proto.Protocol{proto.Simple}}
	for _, c := range []struct {
		net           float64
		hosts, wantCh int
	}{
		{m.C.ChannelBwGBs[Inter], 2, 1},
		{4 * m.C.ChannelBwGBs[Inter], 2, 4},
		{0, 2, 8},
		{m.C.ChannelBwGBs[Inter], 1, 8},
	} {
		mc := *m
		mc.C.NetBwGBs = c.net
		if got, _ := mc.Choose(AllReduce, 4, c.hosts, 1<<30, lim); got.NChannels != c.wantCh {
			t.Errorf("net_bw_gbs %g, 4 ranks on %d hosts: Choose = %v, want %d channels", c.net, c.hosts, got, c.wantCh)
		}
		one, _ := mc.Time(AllReduce, Ring, proto.Simple, 1, 4, c.hosts, 1<<30)
		two, _ := mc.Time(AllReduce, Ring, proto.Simple, 2, 4, c.hosts, 1<<30)
		if capped := c.hosts > 1 && c.net > 0 && c.net <= m.C.ChannelBwGBs[Inter]; capped != (one == two) {
			t.Errorf("net_bw_gbs %g, %d hosts: 1 channel %g us, 2 channels %g us", c.net, c.hosts, one, two)
		}
	}
	if n := DefaultConstants().InProcessHosts().NetBwGBs; n != 0 {
		t.Errorf("InProcessHosts: net_bw_gbs %g, want 0 (no network)", n)
	}
}

// TestModelHugeUsesEveryChannel: with a core per channel and no host cap,
// 1 GiB runs on every channel the communicator has (it is far above every
// channel threshold), whatever algorithm and protocol win.
func TestModelHugeUsesEveryChannel(t *testing.T) {
	m := defaultModel()
	m.C.MaxHostBwGBs = 0
	m.C.NetBwGBs = 0
	m.C.Cores = 0
	for _, c := range Colls() {
		for _, s := range shapes() {
			if s[0] == 1 {
				continue
			}
			for _, maxCh := range []int{1, 2, 8} {
				got, us := m.Choose(c, s[0], s[1], 1<<30, Limits{MaxChannels: maxCh})
				if got.NChannels != maxCh || us <= 0 {
					t.Errorf("%v 1 GiB, %d ranks on %d hosts, max %d ch: Choose = %v (%g us), want %d channels", c, s[0], s[1], maxCh, got, us, maxCh)
				}
			}
		}
	}
}

// TestModelChannelsStopAtCoresAndCaps: channels that add no bandwidth are
// not taken. On 2 cores, 2 ranks run 1 GiB on one channel (a second would
// only add scheduler trips); under a host cap, with the cores unknown, the
// fewest channels that reach the cap (TestModelChooseMoreChannelsAtTheCap:
// known, the most that fit them); a forced count is kept whatever it
// costs.
func TestModelChannelsStopAtCoresAndCaps(t *testing.T) {
	m := defaultModel()
	m.C.Cores = 2
	for _, c := range []Coll{AllReduce, AllGather} {
		got, _ := m.Choose(c, 2, 1, 1<<30, Limits{MaxChannels: 4})
		if got.NChannels != 1 {
			t.Errorf("%v 1 GiB, 2 ranks on 2 cores: Choose = %v, want one channel", c, got)
		}
		got, _ = m.Choose(c, 2, 1, 1<<30, Limits{MaxChannels: 4, Channels: 3})
		if got.NChannels != 3 {
			t.Errorf("%v 1 GiB forced to 3 channels: Choose = %v", c, got)
		}
	}

	// A cap that one channel's 1 GB/s reaches only with three of them.
	capped := defaultModel()
	capped.C.Cores = 0
	capped.C.ChannelBwGBs = [NumLinks]float64{1, 1}
	capped.C.MaxHostBwGBs = 2.5 * 2 // per host of 2 ranks: 2.5 GB/s each
	got, _ := capped.Choose(AllReduce, 2, 1, 1<<30, Limits{MaxChannels: 8, Protos: []proto.Protocol{proto.Simple}, Algos: []Algo{Ring}})
	if got.NChannels != 3 {
		t.Errorf("host cap 2.5 GB/s a rank at 1 GB/s a channel: Choose = %v, want the 3 channels that reach it", got)
	}
}

// TestModelCacheKnee: past CacheBytes a configuration's time grows at its
// out-of-cache rate: the slope doubles where the factor is 0.5, and a
// factor of 0 (or no knee) leaves the line straight.
func TestModelCacheKnee(t *testing.T) {
	c := DefaultConstants()
	c.CacheBytes = 1 << 20
	c.OutOfCacheBwFactor[Ring][proto.Simple] = 0.5
	c.OutOfCacheBwFactor[Ring][proto.LL] = 0
	m := Model{C: c}
	slope := func(p proto.Protocol, lo, hi int64) float64 {
		a, ok1 := m.Time(AllReduce, Ring, p, 1, 2, 1, lo)
		b, ok2 := m.Time(AllReduce, Ring, p, 1, 2, 1, hi)
		if !ok1 || !ok2 {
			t.Fatalf("%v: no time", p)
		}
		return (b - a) / float64(hi-lo)
	}
	in, out := slope(proto.Simple, 1<<19, 1<<20), slope(proto.Simple, 2<<20, 4<<20)
	if r := out / in; math.Abs(r-2) > 1e-9 {
		t.Errorf("Simple: slope beyond the knee / before = %v, want 2", r)
	}
	in, out = slope(proto.LL, 1<<19, 1<<20), slope(proto.LL, 2<<20, 4<<20)
	if r := out / in; math.Abs(r-1) > 1e-9 {
		t.Errorf("LL (factor 0): slope ratio %v, want 1", r)
	}
	e, _ := m.Estimate(AllReduce, Ring, proto.Simple, 1, 2, 1, 4<<20)
	if want := float64(4<<20) / ((e.Us - e.LatUs) * 1e3); math.Abs(e.AlgBwGBs/want-1) > 1e-9 {
		t.Errorf("AlgBwGBs %v, want the effective %v over the whole message", e.AlgBwGBs, want)
	}
}

// TestModelChooseIsArgmin: Choose's configuration beats or ties every
// allowed alternative, at the forced count, or at any count up to NCCL's
// reduction from MaxChannels (recomputed here with a plain division); and
// its time is its own configuration's. The board's algorithms are
// alternatives on 2 ranks only where the one-shot takes one round.
func TestModelChooseIsArgmin(t *testing.T) {
	m := defaultModel()
	for _, c := range Colls() {
		for _, s := range [][2]int{{2, 1}, {4, 1}, {8, 1}, {8, 2}, {8, 8}, {16, 4}} {
			for _, b := range sizes() {
				for _, forced := range []int{0, 4} {
					lim := Limits{MaxChannels: 4, Channels: forced}
					got, us := m.Choose(c, s[0], s[1], b, lim)
					if own, ok := m.Time(c, got.Algo, got.Proto, got.NChannels, s[0], s[1], b); !ok || own != us {
						t.Errorf("%v %d B %v: Choose = %v at %g us, its Time %g", c, b, s, got, us, own)
					}
					for _, a := range Algos() {
						if a.OnBoard() && (forced > 1 || s[0] <= 2 && BoardRounds(c, OneShot, s[0], b) > 1) {
							continue // not a candidate under a forced split, nor past one round on 2 ranks
						}
						for _, p := range proto.All() {
							lo, hi := forced, forced
							if a.OnBoard() {
								lo, hi = 1, 1
							}
							if forced == 0 {
								lo, hi = 1, int(min(4, max(1, b/m.C.ChannelThresholdBytes[p])))
							}
							for nc := lo; nc <= hi; nc++ {
								if alt, ok := m.Time(c, a, p, nc, s[0], s[1], b); ok && alt < us {
									t.Errorf("%v %d B %v %+v: Choose = %v (%g us) but %v/%v/%dch takes %g us", c, b, s, lim, got, us, a, p, nc, alt)
								}
							}
						}
					}
				}
			}
		}
	}
}

// TestChooseBoardOneRound: on 2 ranks auto takes the board's algorithms
// only where the one-shot fits one round (16 KiB of each rank's post),
// however dear the rings beyond it; from 3 ranks at any size; asked for,
// they run at any size.
func TestChooseBoardOneRound(t *testing.T) {
	m := defaultModel()
	for p := range proto.NumProtocols { // the rings and trees priced out
		m.C.BaseLatUs[Ring][p], m.C.BaseLatUs[Tree][p] = 1e9, 1e9
	}
	for _, c := range Colls() {
		for _, n := range []int{2, 3, 8} {
			for _, b := range sizes() {
				got, _ := m.Choose(c, n, 1, b, Limits{MaxChannels: 4})
				if one := BoardRounds(c, OneShot, n, b) == 1 || n > 2; got.Algo.OnBoard() != (one && Supports(c, OneShot)) {
					t.Errorf("%v %d ranks %d B (one round: %v): Choose = %v", c, n, b, one, got)
				}
				if !Supports(c, OneShot) {
					continue
				}
				if got, _ := m.Choose(c, n, 1, b, Limits{MaxChannels: 4, Algos: []Algo{OneShot}}); got.Algo != OneShot {
					t.Errorf("%v %d ranks %d B, OneShot asked for: Choose = %v", c, n, b, got)
				}
			}
		}
	}
}

func TestModelChooseHonoursLimits(t *testing.T) {
	m := ncclLikeModel() // fixed constants: refitting the defaults must not move these
	cases := []struct {
		name   string
		c      Coll
		nRanks int
		nHosts int
		bytes  int64
		lim    Limits
		want   Choice
		valid  bool
	}{
		{"forced tree", AllReduce, 4, 1, 1 << 30, Limits{Algos: []Algo{Tree}, MaxChannels: 2}, Choice{Tree, proto.Simple, 2, 0}, true},
		{"forced ring", AllReduce, 8, 8, 8, Limits{Algos: []Algo{Ring}, MaxChannels: 2}, Choice{Ring, proto.LL, 1, 0}, true},
		{"forced LL128", AllReduce, 2, 1, 1 << 30, Limits{Protos: []proto.Protocol{proto.LL128}, MaxChannels: 2}, Choice{Ring, proto.LL128, 2, 0}, true},
		{"forced Simple tiny", AllGather, 2, 1, 8, Limits{Protos: []proto.Protocol{proto.Simple}, MaxChannels: 4}, Choice{Ring, proto.Simple, 1, 0}, true},
		{"two protos", AllReduce, 2, 1, 8, Limits{Protos: []proto.Protocol{proto.Simple, proto.LL128}, MaxChannels: 1}, Choice{Ring, proto.Simple, 1, 0}, true},
		{"forced channels tiny", AllReduce, 2, 1, 8, Limits{MaxChannels: 2, Channels: 6}, Choice{Ring, proto.LL, 6, 0}, true},
		{"forced channels huge", AllReduce, 2, 1, 1 << 30, Limits{MaxChannels: 8, Channels: 1}, Choice{Ring, proto.Simple, 1, 0}, true},
		{"tree only, allgather", AllGather, 8, 8, 8, Limits{Algos: []Algo{Tree}, MaxChannels: 2}, Choice{Ring, proto.LL, 1, 0}, true},
		{"one rank", AllReduce, 1, 1, 1 << 30, Limits{MaxChannels: 8}, Choice{Ring, proto.Simple, 1, 0}, true},
		{"one rank forced", AllReduce, 1, 1, 8, Limits{MaxChannels: 8, Channels: 3, Protos: []proto.Protocol{proto.LL}}, Choice{Ring, proto.LL, 3, 0}, true},
		{"no channels given", AllReduce, 2, 1, 1 << 30, Limits{}, Choice{Ring, proto.Simple, 1, 0}, true},
		{"no protocol allowed", AllReduce, 2, 1, 8, Limits{Protos: []proto.Protocol{}, MaxChannels: 2}, Choice{Ring, proto.Simple, 1, 0}, false},
		{"invalid shape", AllReduce, 2, 3, 8, Limits{MaxChannels: 2}, Choice{Ring, proto.Simple, 1, 0}, false},
		{"invalid bytes", AllReduce, 2, 1, -8, Limits{MaxChannels: 2}, Choice{Ring, proto.Simple, 1, 0}, false},
	}
	for _, tc := range cases {
		got, us := m.Choose(tc.c, tc.nRanks, tc.nHosts, tc.bytes, tc.lim)
		if got != tc.want || (us >= 0) != tc.valid {
			t.Errorf("%s: Choose = %v, %g us; want %v (valid time: %v)", tc.name, got, us, tc.want, tc.valid)
			continue
		}
		if !tc.valid {
			if us != -1 {
				t.Errorf("%s: time %g, want -1", tc.name, us)
			}
			continue
		}
		// The time returned is the model's for the final choice.
		if want, _ := m.Time(tc.c, got.Algo, got.Proto, got.NChannels, tc.nRanks, tc.nHosts, tc.bytes); us != want {
			t.Errorf("%s: Choose time %g, Time of %v = %g", tc.name, us, got, want)
		}
	}
}

// TestModelChannelReduction follows NCCL's rule: channels drop while
// bytes < nChannels x threshold, down to one.
func TestModelChannelReduction(t *testing.T) {
	m := defaultModel()
	m.C.MaxHostBwGBs = 0 // channels pay: the rule alone limits them
	m.C.Cores = 0
	for _, p := range proto.All() {
		th := m.C.ChannelThresholdBytes[p]
		// The board's algorithms run on one channel: not this rule's.
		lim := Limits{Algos: []Algo{Ring, Tree}, Protos: []proto.Protocol{p}, MaxChannels: 8}
		for _, tc := range []struct {
			bytes int64
			want  int
		}{
			{0, 1}, {8, 1}, {th - 1, 1}, {2*th - 1, 1}, {2 * th, 2}, {3*th + 1, 3}, {8*th - 1, 7}, {8 * th, 8}, {1 << 32, 8},
		} {
			got, _ := m.Choose(AllReduce, 4, 1, tc.bytes, lim)
			if got.NChannels != tc.want || got.Proto != p {
				t.Errorf("%v %d B (threshold %d): Choose = %v, want %d channels", p, tc.bytes, th, got, tc.want)
			}
		}
	}
	// A zero threshold never drops a channel.
	z := m
	z.C.ChannelThresholdBytes = [proto.NumProtocols]int64{}
	if got, _ := z.Choose(AllReduce, 4, 1, 8, Limits{MaxChannels: 8, Algos: []Algo{Ring, Tree}}); got.NChannels != 8 {
		t.Errorf("zero threshold: Choose = %v, want 8 channels", got)
	}
}

func TestModelPartialOverride(t *testing.T) {
	got, err := LoadConstants("testdata/constants_partial.json")
	if err != nil {
		t.Fatal(err)
	}
	want := DefaultConstants()
	want.Machine = "partial override test"
	want.BaseLatUs[Ring][proto.LL] = 1.25
	want.ChannelBwGBs[Inter] = 1.5
	want.ChannelThresholdBytes[proto.Simple] = 1 << 20
	if !reflect.DeepEqual(got, want) {
		t.Errorf("partial override:\n got %s\nwant %s", got, want)
	}
	// An empty object is the defaults.
	if got, err := ParseConstants([]byte(" {} "), "empty.json"); err != nil || !reflect.DeepEqual(got, DefaultConstants()) {
		t.Errorf("ParseConstants({}) = %v, %v; want the defaults", got, err)
	}
}

func TestModelLoadConstantsErrors(t *testing.T) {
	cases := []struct{ in, want string }{
		{``, `x.json: want a JSON object of constants: EOF`},
		{`[1]`, `x.json: want a JSON object of constants`},
		{`{"cores": 2`, `x.json: want a JSON object of constants`},
		{`{} {}`, `x.json: want a JSON object of constants: data after the object`},
		{`{"bogus": 1}`, `x.json: bogus: unknown key (valid: base_lat_us, board_peer_lat_us, board_read_slowdown, cache_bytes, channel_bw_gbs, channel_threshold_bytes, cores, host_bw_per_core_gbs, local_bw_gbs, local_lat_us, machine, max_channel_bw_gbs, max_host_bw_gbs, method, net_bw_gbs, out_of_cache_bw_factor, oversub_hop_lat_us, oversub_step_lat_us, step_lat_us, tree_bw_factor, version)`},
		{`{"Cores": 2}`, `x.json: Cores: unknown key`},
		{`{"cores": 2, "cores": 3}`, `x.json: cores: duplicate key`},
		{`{"base_lat_us": {"Rung": {}}}`, `x.json: base_lat_us.Rung: unknown algorithm "Rung" (valid: Ring, Tree, OneShot, TwoShot)`},
		{`{"base_lat_us": {"Ring": {"LL64": 1}}}`, `x.json: base_lat_us.Ring.LL64: unknown protocol "LL64" (valid: LL, LL128, Simple)`},
		{`{"channel_bw_gbs": {"Intre": 1}}`, `x.json: channel_bw_gbs.Intre: unknown link "Intre" (valid: Intra, Inter)`},
		{`{"base_lat_us": {"Ring": {"LL": 1, "ll": 2}}}`, `x.json: base_lat_us.Ring.ll: duplicate of "LL"`},
		{`{"base_lat_us": [1, 2]}`, `x.json: base_lat_us: want an object keyed by algo name (valid: Ring, Tree, OneShot, TwoShot)`},
		{`{"step_lat_us": {"Intra": 0.5}}`, `x.json: step_lat_us.Intra: want an object keyed by algo name`},
		{`{"step_lat_us": {"Intra": {"Ring": {"LL": "fast"}}}}`, `x.json: step_lat_us.Intra.Ring.LL: want a number >= 0, got JSON string`},
		{`{"tree_bw_factor": -0.5}`, `x.json: tree_bw_factor: -0.5 is out of range (valid: a finite number >= 0)`},
		{`{"tree_bw_factor": 1e999}`, `x.json: tree_bw_factor: want a number >= 0`},
		{`{"channel_threshold_bytes": {"LL": -5}}`, `x.json: channel_threshold_bytes.LL: -5 is out of range`},
		{`{"max_host_bw_gbs": null}`, `x.json: max_host_bw_gbs: null is not a value`},
		{`{"cores": -1.5}`, `x.json: cores: -1.5 is out of range (valid: a finite number >= 0)`},
		{`{"cores": -1}`, `x.json: cores: -1 is out of range`},
		{`{"machine": 5}`, `x.json: machine: want a string, got JSON number`},
		{`{"version": 2}`, `x.json: version: version 2 is not supported (valid versions: 1)`},
		{`{"channel_bw_gbs": {"Inter": 0}}`, `x.json: channel_bw_gbs.Inter: must be > 0`},
		{`{"tree_bw_factor": 0}`, `x.json: tree_bw_factor: must be > 0`},
		{`{"local_bw_gbs": 0}`, `x.json: local_bw_gbs: must be > 0`},
	}
	for _, tc := range cases {
		_, err := ParseConstants([]byte(tc.in), "x.json")
		var ce *ConstantsError
		if err == nil || !strings.HasPrefix(err.Error(), tc.want) || !errors.As(err, &ce) || ce.File != "x.json" {
			t.Errorf("ParseConstants(%s) = %v; want a *ConstantsError starting %q", tc.in, err, tc.want)
		}
	}

	_, err := LoadConstants("testdata/constants_bad_proto.json")
	if want := `testdata/constants_bad_proto.json: step_lat_us.Intra.Ring.LL64: unknown protocol "LL64" (valid: LL, LL128, Simple)`; err == nil || err.Error() != want {
		t.Errorf("LoadConstants(bad proto) = %v; want %s", err, want)
	}
	if _, err := LoadConstants("testdata/constants_missing.json"); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("LoadConstants(missing) = %v; want fs.ErrNotExist", err)
	}
	// Validate speaks for constants built in code.
	bad := DefaultConstants()
	bad.StepLatUs[Inter][Tree][proto.LL128] = math.NaN()
	if err := bad.Validate(); err == nil || !strings.HasPrefix(err.Error(), "tuning constants: step_lat_us.Inter.Tree.LL128: NaN") {
		t.Errorf("Validate(NaN) = %v", err)
	}
}

// Hosts simulated in one process price their links between "hosts" as
// the FIFOs they are; real hosts pay the network's hop.
func TestInProcessHostsPriceFIFOs(t *testing.T) {
	c := DefaultConstants()
	k := c.InProcessHosts()
	if k.StepLatUs[Inter] != c.StepLatUs[Intra] || k.ChannelBwGBs[Inter] != c.ChannelBwGBs[Intra] {
		t.Errorf("simulated hosts keep the network's constants")
	}
	real, sim := Model{C: c}, Model{C: k}
	tr, _ := real.Time(AllReduce, Ring, proto.LL, 1, 8, 8, 64)
	ts, _ := sim.Time(AllReduce, Ring, proto.LL, 1, 8, 8, 64)
	if tr < 10*ts {
		t.Errorf("8 ranks on 8 hosts, 64 B: %.1f us over the network, %.1f us in process; want the network far slower", tr, ts)
	}
}

// TestTwoShotConstantsFromOldFiles: a constants file that names no TwoShot
// constant prices the two-shot from its own OneShot constants (the same
// base and hop, half the read rate); one that names any keeps its own.
func TestTwoShotConstantsFromOldFiles(t *testing.T) {
	old := `{"base_lat_us": {"OneShot": {"LL": 0.7}}, "step_lat_us": {"Intra": {"OneShot": {"LL": 0.9}}},
		"max_channel_bw_gbs": {"OneShot": {"LL": 10}}}`
	c, err := ParseConstants([]byte(old), "old.json")
	if err != nil {
		t.Fatal(err)
	}
	if got := [3]float64{c.BaseLatUs[TwoShot][proto.LL], c.StepLatUs[Intra][TwoShot][proto.LL], c.MaxChannelBwGBs[TwoShot][proto.LL]}; got != [3]float64{0.7, 0.9, 5} {
		t.Errorf("two-shot base, hop, read rate = %v, want the file's one-shot's 0.7, 0.9 and half of 10", got)
	}
	own := `{"base_lat_us": {"OneShot": {"LL": 0.7}, "twoshot": {"LL": 2}}}`
	c, err = ParseConstants([]byte(own), "new.json")
	if err != nil {
		t.Fatal(err)
	}
	d := DefaultConstants()
	if c.BaseLatUs[TwoShot][proto.LL] != 2 || c.StepLatUs[Intra][TwoShot][proto.LL] != d.StepLatUs[Intra][TwoShot][proto.LL] {
		t.Errorf("a file naming TwoShot: base %g, hop %g; want its own 2 and the default hop %g",
			c.BaseLatUs[TwoShot][proto.LL], c.StepLatUs[Intra][TwoShot][proto.LL], d.StepLatUs[Intra][TwoShot][proto.LL])
	}
}

// TestTwoShotNeverWinsOnTwoRanks: on two ranks the two-shot reads what the
// one-shot reads and pays a second hop, so with equal constants the model
// never prefers it; with many ranks and mid sizes it does.
func TestTwoShotNeverWinsOnTwoRanks(t *testing.T) {
	m := defaultModel()
	m.C.MaxChannelBwGBs[TwoShot] = m.C.MaxChannelBwGBs[OneShot]
	for _, b := range sizes() {
		one, _ := m.Time(AllReduce, OneShot, proto.LL, 1, 2, 1, b)
		two, _ := m.Time(AllReduce, TwoShot, proto.LL, 1, 2, 1, b)
		if two <= one {
			t.Fatalf("2 ranks, %d B: two-shot %g us, one-shot %g: want the two-shot slower", b, two, one)
		}
	}
	if got, _ := m.Choose(AllReduce, 16, 1, 2048, Limits{MaxChannels: 1}); got.Algo != TwoShot {
		t.Errorf("16 ranks, 2 KiB: Choose = %v, want TwoShot", got)
	}
}

// TestBoardRounds: the rounds the model charges are the stack's: 16 KiB of
// each rank's post a round (per rank for allgather), the two-shot's rounds
// n segments, at least one round.
func TestBoardRounds(t *testing.T) {
	for _, tc := range []struct {
		c     Coll
		a     Algo
		n     int
		bytes int64
		want  int64
	}{
		{AllReduce, OneShot, 4, 0, 1}, {AllReduce, OneShot, 4, 16384, 1}, {AllReduce, OneShot, 4, 16385, 2},
		{AllGather, OneShot, 4, 4 * 16384, 1}, {AllGather, OneShot, 4, 4*16384 + 4, 2},
		{ReduceScatter, OneShot, 3, 16384, 1}, {Broadcast, OneShot, 8, 1 << 20, 64},
		{AllReduce, TwoShot, 3, 3 * 5456, 1}, {AllReduce, TwoShot, 3, 3*5456 + 1, 2}, {AllReduce, TwoShot, 16, 1 << 20, 64},
	} {
		if got := BoardRounds(tc.c, tc.a, tc.n, tc.bytes); got != tc.want {
			t.Errorf("BoardRounds(%v, %v, %d ranks, %d B) = %d, want %d", tc.c, tc.a, tc.n, tc.bytes, got, tc.want)
		}
	}
}

// TestModelChooseMoreChannelsAtTheCap: channel counts that all reach the
// host's bandwidth cap price the same; Choose takes the most of them that
// fit the cores (4 ranks x 4 channels on 16), and never one past them.
func TestModelChooseMoreChannelsAtTheCap(t *testing.T) {
	m := ncclLikeModel()
	m.C.Cores = 16
	m.C.MaxHostBwGBs = 60 // 4 ranks: 15 GB/s a rank, below 2 channels' 2 x 20 x eff
	for _, b := range []int64{1 << 20, 16 << 20, 256 << 20} {
		lim := Limits{Algos: []Algo{Ring}, Protos: []proto.Protocol{proto.Simple}, MaxChannels: 8}
		t2, _ := m.Time(AllReduce, Ring, proto.Simple, 2, 4, 1, b)
		t4, _ := m.Time(AllReduce, Ring, proto.Simple, 4, 4, 1, b)
		if t2 != t4 {
			t.Fatalf("%d B: 2 and 4 channels at the cap price %g and %g us, want a tie", b, t2, t4)
		}
		if got, _ := m.Choose(AllReduce, 4, 1, b, lim); got.NChannels != 4 {
			t.Errorf("%d B: Choose = %v, want 4 channels (the most that fit 16 cores at the cap)", b, got)
		}
	}
}
