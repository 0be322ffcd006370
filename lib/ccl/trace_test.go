package ccl

import (
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/gccl/gccl/lib/steptrace"
	"github.com/gccl/gccl/lib/tef"
)

// traceCase is one shape of operation whose timeline TestTraceShapes
// records.
type traceCase struct {
	name  string
	n     int
	cfg   Config
	call  func(c *Comm, send, recv []byte) error
	bytes int // per rank buffer
	// algo is what every channel operation must have run (the forced
	// algorithm, or what the shape implies); "" skips the check.
	algo string
}

func allReduceCall(count int) func(c *Comm, send, recv []byte) error {
	return func(c *Comm, send, recv []byte) error { return c.AllReduce(send, recv, count, Float32, Sum) }
}

// traceCases covers the collectives, protocols, algorithms, channel
// counts and rank counts the timeline must record.
func traceCases() []traceCase {
	var cs []traceCase
	for _, n := range []int{2, 3} {
		for _, p := range []string{"Simple", "LL", "LL128"} {
			for _, nch := range []int{1, 2} {
				cs = append(cs, traceCase{name: fmt.Sprintf("allreduce/ring/%s/nch=%d/n=%d", p, nch, n), n: n,
					cfg:  Config{Proto: protoReq(p), Algo: algoReq("Ring"), NChannels: nch},
					call: allReduceCall(12 << 10), bytes: 48 << 10, algo: "Ring"})
			}
		}
		cs = append(cs,
			traceCase{name: fmt.Sprintf("allreduce/tree/Simple/n=%d", n), n: n, cfg: Config{Proto: protoReq("Simple"), Algo: algoReq("Tree"), NChannels: 2},
				call: allReduceCall(40 << 10), bytes: 160 << 10, algo: "Tree"},
			traceCase{name: fmt.Sprintf("allreduce/tree/LL/n=%d", n), n: n, cfg: Config{Proto: protoReq("LL"), Algo: algoReq("Tree")},
				call: allReduceCall(1 << 10), bytes: 4 << 10, algo: "Tree"},
			traceCase{name: fmt.Sprintf("allreduce/oneshot/n=%d", n), n: n, cfg: Config{Algo: algoReq("OneShot")},
				call: allReduceCall(2), bytes: 8, algo: "OneShot"},
			traceCase{name: fmt.Sprintf("broadcast/n=%d", n), n: n, cfg: Config{Proto: protoReq("Simple"), NChannels: 2, Algo: algoReq("Ring")},
				call: func(c *Comm, s, r []byte) error { return c.Broadcast(s, r, 10<<10, Float32, 1) }, bytes: 40 << 10, algo: "Ring"},
			traceCase{name: fmt.Sprintf("reduce/n=%d", n), n: n, cfg: Config{Proto: protoReq("LL"), Algo: algoReq("Ring")},
				call: func(c *Comm, s, r []byte) error { return c.Reduce(s, r, 1000, Float32, Sum, 0) }, bytes: 4000, algo: "Ring"},
			traceCase{name: fmt.Sprintf("allgather/n=%d", n), n: n, cfg: Config{Proto: protoReq("LL128"), NChannels: 2, Algo: algoReq("Ring")},
				call: func(c *Comm, s, r []byte) error { return c.AllGather(s[:4000], r, 1000, Float32) }, bytes: 4000 * n, algo: "Ring"},
			traceCase{name: fmt.Sprintf("reducescatter/n=%d", n), n: n, cfg: Config{Proto: protoReq("Simple"), Algo: algoReq("Ring")},
				call: func(c *Comm, s, r []byte) error { return c.ReduceScatter(s, r[:4000], 1000, Float32, Sum) }, bytes: 4000 * n, algo: "Ring"},
			traceCase{name: fmt.Sprintf("sendrecv/n=%d", n), n: n, cfg: Config{NChannels: 2},
				call: func(c *Comm, s, r []byte) error {
					next, prev := (c.Rank()+1)%c.Size(), (c.Rank()+c.Size()-1)%c.Size()
					return c.grouped(func() error {
						if err := c.Send(s, 20<<10, Float32, next); err != nil {
							return err
						}
						return c.Recv(r, 20<<10, Float32, prev)
					})
				}, bytes: 80 << 10, algo: "P2P"},
			traceCase{name: fmt.Sprintf("alltoall/n=%d", n), n: n, cfg: Config{},
				call: func(c *Comm, s, r []byte) error { return c.AlltoAll(s, r, 100, Float32) }, bytes: 400 * n, algo: "P2P"},
		)
	}
	cs = append(cs,
		traceCase{name: "allreduce/twoshot/n=3", n: 3, cfg: Config{Algo: algoReq("TwoShot")}, call: allReduceCall(300), bytes: 1200, algo: "TwoShot"},
		traceCase{name: "allreduce/n=1", n: 1, cfg: Config{NChannels: 2}, call: allReduceCall(100), bytes: 400, algo: "Local"},
	)
	return cs
}

// recordTrace runs iters calls on every rank with the timeline on and
// returns the trace written to a file and read back.
func recordTrace(t *testing.T, tc traceCase, iters int) (*tef.File, []*Comm) {
	t.Helper()
	comms := initT(t, tc.n, tc.cfg)
	snaps := make([]steptrace.Snapshot, tc.n)
	err := perRankErr(comms, func(c *Comm) error {
		send, recv := pattern(c.Rank(), tc.bytes), make([]byte, tc.bytes)
		if err := tc.call(c, send, recv); err != nil { // untraced: connections made
			return err
		}
		if err := c.StartTrace(0); err != nil {
			return err
		}
		for range iters {
			if err := tc.call(c, send, recv); err != nil {
				return err
			}
			if err := c.Synchronize(); err != nil {
				return err
			}
		}
		if err := c.StopTrace(); err != nil {
			return err
		}
		if err := tc.call(c, send, recv); err != nil { // untraced again: not recorded
			return err
		}
		s, err := c.TakeTrace()
		snaps[c.Rank()] = s
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "trace.json")
	if err := tef.WriteFile(path, steptrace.File(snaps, steptrace.Clock{}, nil)); err != nil {
		t.Fatal(err)
	}
	f, err := tef.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range tef.Validate(f) {
		t.Error(e)
	}
	return f, comms
}

// TestTraceShapes: the timeline of every collective, protocol, algorithm,
// channel count and rank count is a valid trace; each rank's calls track
// holds every operation, with the same sequence numbers on every rank;
// steps and waits nest in operations; steps name their peers as the
// schedule has them.
func TestTraceShapes(t *testing.T) {
	for _, tc := range traceCases() {
		t.Run(tc.name, func(t *testing.T) {
			const iters = 3
			f, comms := recordTrace(t, tc, iters)
			checkCalls(t, f, tc, iters)
			checkNesting(t, f)
			checkPeers(t, f, tc, comms[0].w)
			if tc.algo != "" {
				checkAlgo(t, f, tc.algo)
			}
		})
	}
}

// checkCalls: every rank's calls track has iters operations, the same
// sequence numbers in the same order on every rank.
func checkCalls(t *testing.T, f *tef.File, tc traceCase, iters int) {
	t.Helper()
	seqs := map[int][]float64{}
	for _, e := range f.TraceEvents {
		if e.Ph == "X" && e.Tid == tef.RankTrack {
			if e.Cat != tef.CatOp {
				t.Errorf("rank %d calls track: %s event %q", e.Pid, e.Cat, e.Name)
			}
			seqs[e.Pid] = append(seqs[e.Pid], e.Args[tef.ArgSeq].(float64))
		}
	}
	if len(seqs) != tc.n {
		t.Fatalf("calls tracks of %d ranks, want %d", len(seqs), tc.n)
	}
	for r := range tc.n {
		if len(seqs[r]) != iters {
			t.Errorf("rank %d: %d operations on its calls track, want %d", r, len(seqs[r]), iters)
		}
		if fmt.Sprint(seqs[r]) != fmt.Sprint(seqs[0]) {
			t.Errorf("rank %d's sequence numbers %v, rank 0's %v", r, seqs[r], seqs[0])
		}
	}
}

// checkNesting: on every channel track each step lies inside an
// operation and each wait inside a step or an operation, of the same
// sequence number; every channel has operations.
func checkNesting(t *testing.T, f *tef.File) {
	t.Helper()
	const eps = 1e-3
	type span struct {
		lo, hi float64
		seq    any
	}
	ops, steps := map[tef.Track][]span{}, map[tef.Track][]span{}
	for _, e := range f.TraceEvents {
		tr := tef.Track{Pid: e.Pid, Tid: e.Tid}
		switch {
		case e.Ph != "X" || e.Tid == tef.RankTrack:
		case e.Cat == tef.CatOp:
			ops[tr] = append(ops[tr], span{e.Ts, e.End(), e.Args[tef.ArgSeq]})
		case e.Cat == tef.CatStep:
			steps[tr] = append(steps[tr], span{e.Ts, e.End(), e.Args[tef.ArgSeq]})
		}
	}
	in := func(list []span, e tef.Event) bool {
		for _, s := range list {
			if e.Ts >= s.lo-eps && e.End() <= s.hi+eps && s.seq == e.Args[tef.ArgSeq] {
				return true
			}
		}
		return false
	}
	waits := 0
	for _, e := range f.TraceEvents {
		tr := tef.Track{Pid: e.Pid, Tid: e.Tid}
		if e.Ph != "X" || e.Tid == tef.RankTrack {
			continue
		}
		switch e.Cat {
		case tef.CatStep:
			if !in(ops[tr], e) {
				t.Errorf("rank %d channel %d: step %s at %.3f (seq %v) is in no operation", e.Pid, e.Tid, e.Name, e.Ts, e.Args[tef.ArgSeq])
			}
		case tef.CatWait:
			waits++
			if !in(ops[tr], e) && !in(steps[tr], e) {
				t.Errorf("rank %d channel %d: %s at %.3f is in no step or operation", e.Pid, e.Tid, e.Name, e.Ts)
			}
			if what, _ := e.Args[tef.ArgWhat].(string); what == "" && e.Dur >= tef.Micros(steptrace.DescribeAfter) {
				t.Errorf("rank %d channel %d: %s of %.3f us has no description", e.Pid, e.Tid, e.Name, e.Dur)
			}
		}
	}
	if len(ops) == 0 {
		t.Error("no channel operations")
	}
}

// checkAlgo: every channel operation ran algo.
func checkAlgo(t *testing.T, f *tef.File, algo string) {
	t.Helper()
	for _, e := range f.TraceEvents {
		if e.Ph == "X" && e.Cat == tef.CatOp && e.Tid != tef.RankTrack && e.Args[tef.ArgAlgo] != algo {
			t.Errorf("rank %d channel %d: operation %s ran %v, want %s", e.Pid, e.Tid, e.Name, e.Args[tef.ArgAlgo], algo)
		}
	}
}

// checkPeers: steps name the ranks the schedule sends to and receives
// from: a ring's successor and predecessor on the channel's ring (the
// chain's for broadcast and reduce), a tree's parent, a sendrecv's
// neighbours, the one-shot's other rank.
func checkPeers(t *testing.T, f *tef.File, tc traceCase, w *world) {
	t.Helper()
	steps := 0
	for _, e := range f.TraceEvents {
		if e.Ph != "X" || e.Cat != tef.CatStep {
			continue
		}
		steps++
		me, n := e.Pid, tc.n
		peer, hasPeer := e.Args[tef.ArgPeer].(float64)
		from, hasFrom := e.Args[tef.ArgFrom].(float64)
		if !hasPeer {
			t.Fatalf("rank %d channel %d: step %s has no peer", me, e.Tid, e.Name)
		}
		bad := func(want string) {
			t.Errorf("rank %d channel %d: step %s: peer %v, from %v: want %s", me, e.Tid, e.Name, e.Args[tef.ArgPeer], e.Args[tef.ArgFrom], want)
		}
		switch {
		case n == 1:
			if peer != 0 {
				bad("the rank itself")
			}
		case tc.algo == "Ring":
			order := w.rings[e.Tid].Order
			if strings.HasPrefix(tc.name, "broadcast") || strings.HasPrefix(tc.name, "reduce/") {
				order = w.chain.Order
			}
			ix := slices.Index(order, me)
			next, prev := order[(ix+1)%n], order[(ix+n-1)%n]
			switch {
			case hasFrom && (int(peer) != next || int(from) != prev):
				bad(fmt.Sprintf("peer %d, from %d", next, prev))
			case !hasFrom && (e.Name == "send" || e.Name == "copySend") && int(peer) != next:
				bad(fmt.Sprintf("peer %d", next))
			case !hasFrom && (e.Name == "recv" || e.Name == "recvReduceCopy") && int(peer) != prev:
				bad(fmt.Sprintf("peer %d", prev))
			}
		case tc.algo == "Tree":
			parent := w.trees[e.Tid%2][me].Parent
			if parent >= 0 && int(peer) != parent && (!hasFrom || int(from) != parent) {
				bad(fmt.Sprintf("rank %d, its parent, as peer or from", parent))
			}
			if parent < 0 && !hasFrom && peer == float64(me) {
				bad("a child")
			}
		case strings.HasPrefix(tc.name, "sendrecv"):
			want := (me + 1) % n
			if e.Name == "recv" {
				want = (me + n - 1) % n
			}
			if int(peer) != want {
				bad(fmt.Sprint(want))
			}
		case tc.algo == "OneShot" && n == 2 && e.Name == "reduce":
			if int(peer) != 1-me {
				bad(fmt.Sprint(1 - me))
			}
		}
	}
	if steps == 0 {
		t.Error("no steps")
	}
}

// TestTraceOffAllocatesNothing: with the timeline off, after a recording
// too, a repeated small allreduce and its Synchronize allocate nothing, on
// the one-shot fast path and the ring's plan path alike (as
// TestSmallCallsDoNotAllocate without any recording).
func TestTraceOffAllocatesNothing(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector allocates")
	}
	for _, algo := range []string{"OneShot", "Ring"} {
		comms := initT(t, 2, Config{Algo: algoReq(algo), TraceSteps: 64})
		const runs = 500
		bufs := [2][2][]byte{{make([]byte, 64), make([]byte, 64)}, {make([]byte, 64), make([]byte, 64)}}
		call := func(r int) {
			if err := comms[r].AllReduce(bufs[r][0], bufs[r][1], 16, Float32, Sum); err != nil {
				t.Error(err)
			}
			if err := comms[r].Synchronize(); err != nil {
				t.Error(err)
			}
		}
		perRank(comms, func(c *Comm) { // recorded from InitAll on (Config.TraceSteps), then off
			call(c.Rank())
			if err := c.StopTrace(); err != nil {
				t.Error(err)
			}
		})
		allocs := allocsPerCall(runs, call)
		if allocs != 0 {
			t.Errorf("%s: %v allocations per call with the timeline off, want 0", algo, allocs)
		}
		s, err := comms[0].TakeTrace()
		if err != nil || len(s.Calls) != 1 {
			t.Errorf("%s: %d operations recorded before the timeline went off (%v), want 1", algo, len(s.Calls), err)
		}
	}
}

// TestTraceCountsDrops: tracks that fill count what they drop, and keep
// whole operations from the start.
func TestTraceCountsDrops(t *testing.T) {
	comms := initT(t, 2, Config{Algo: algoReq("Ring"), Proto: protoReq("LL"), NChannels: 1})
	snaps := tracedRun(t, comms, func(c *Comm) error {
		in, out := make([]byte, 64), make([]byte, 64)
		if err := c.StartTrace(10); err != nil {
			return err
		}
		for range 20 {
			if err := c.AllReduce(in, out, 16, Float32, Sum); err != nil {
				return err
			}
		}
		return nil
	})
	for r, s := range snaps {
		// The calls track holds 10 of 20 operations; channel 0 records
		// at least 4 a ring allreduce of 2 ranks (the operation and 3
		// steps).
		if len(s.Calls) != 10 || len(s.Channels[0]) != 10 || s.Dropped < 10+20*4-10 {
			t.Errorf("rank %d: kept %d calls and %d channel records, dropped %d: want 10, 10 and at least 80", r, len(s.Calls), len(s.Channels[0]), s.Dropped)
		}
		if s.Calls[0].Seq != 1 || s.Calls[9].Seq != 10 {
			t.Errorf("rank %d: calls kept from operation %d to %d, want 1 to 10", r, s.Calls[0].Seq, s.Calls[9].Seq)
		}
	}
}

// TestTraceBadUse: the timeline's misuse gets errors that say what is
// valid.
func TestTraceBadUse(t *testing.T) {
	if _, err := InitAll(1, Config{TraceSteps: -1}); err == nil || !strings.Contains(err.Error(), "TraceSteps -1") {
		t.Errorf("TraceSteps -1: %v", err)
	}
	c := initT(t, 1, Config{})[0]
	if _, err := c.TakeTrace(); err == nil || !strings.Contains(err.Error(), "never recorded") {
		t.Errorf("TakeTrace before any recording: %v", err)
	}
	if err := c.StartTrace(-5); err == nil || !strings.Contains(err.Error(), "capacity -5") {
		t.Errorf("StartTrace(-5): %v", err)
	}
}

// TestTraceSamples: SampleTrace(k) records the operations at stream
// positions that are multiples of k, whole (the call, the channels'
// operations and their steps), the same ones on every rank, whichever
// path each took: the one-shot fast path, a ring, a group of sends and
// receives.
func TestTraceSamples(t *testing.T) {
	const every, ops = 3, 13
	comms := initT(t, 3, Config{})
	snaps := tracedRun(t, comms, func(c *Comm) error {
		if err := c.SampleTrace(every); err != nil {
			return err
		}
		if err := c.StartTrace(0); err != nil {
			return err
		}
		send, recv := pattern(c.Rank(), 256<<10), make([]byte, 256<<10)
		next, prev := (c.Rank()+1)%c.Size(), (c.Rank()+c.Size()-1)%c.Size()
		for i := range ops {
			var err error
			switch i % 4 {
			case 0: // the fast path
				err = c.AllReduce(send, recv, 2, Float32, Sum)
			case 1: // a ring, several channels
				err = c.AllReduce(send, recv, 64<<10, Float32, Sum)
			case 2:
				err = c.grouped(func() error {
					if err := c.Send(send, 1000, Float32, next); err != nil {
						return err
					}
					return c.Recv(recv, 1000, Float32, prev)
				})
			case 3:
				err = c.Broadcast(send, recv, 100, Float32, 0)
			}
			if err != nil {
				return err
			}
		}
		return nil
	})
	var want []uint64
	for s := uint64(every); s <= ops; s += every {
		want = append(want, s)
	}
	for r, s := range snaps {
		var calls []uint64
		for _, rec := range s.Calls {
			calls = append(calls, rec.Seq)
		}
		if !slices.Equal(calls, want) {
			t.Errorf("rank %d: calls recorded at positions %v, want %v", r, calls, want)
		}
		// Every channel record belongs to a sampled operation, and every
		// sampled operation ran on some channel with its steps.
		opsOn, stepsOf := map[uint64]bool{}, map[uint64]int{}
		for ch, recs := range s.Channels {
			for _, rec := range recs {
				if rec.Seq%every != 0 {
					t.Errorf("rank %d channel %d: a %v record of operation %d, which is not sampled", r, ch, rec.Kind, rec.Seq)
				}
				switch rec.Kind {
				case steptrace.KindOp:
					opsOn[rec.Seq] = true
				case steptrace.KindStep:
					stepsOf[rec.Seq]++
				}
			}
		}
		for _, seq := range want {
			if !opsOn[seq] || stepsOf[seq] == 0 {
				t.Errorf("rank %d: operation %d recorded on no channel (%v) or with no steps (%d)", r, seq, opsOn[seq], stepsOf[seq])
			}
		}
	}
	if err := comms[0].SampleTrace(0); err == nil || !strings.Contains(err.Error(), "every 0") {
		t.Errorf("SampleTrace(0): %v, want an error naming 0", err)
	}
}

// tracedRun runs body on every rank, then takes each rank's timeline.
func tracedRun(t *testing.T, comms []*Comm, body func(c *Comm) error) []steptrace.Snapshot {
	t.Helper()
	snaps := make([]steptrace.Snapshot, len(comms))
	err := perRankErr(comms, func(c *Comm) error {
		if err := body(c); err != nil {
			return err
		}
		var err error
		snaps[c.Rank()], err = c.TakeTrace()
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return snaps
}
