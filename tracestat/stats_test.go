package tracestat

import (
	"math"
	"reflect"
	"strings"
	"testing"

	"github.com/gccl/gccl/lib/tef"
)

func near(a, b float64) bool { return math.Abs(a-b) < 1e-9 }

func checkTracks(t *testing.T, got, want []TrackStat) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%d tracks, want %d: %+v", len(got), len(want), got)
	}
	for i := range want {
		g, w := got[i], want[i]
		if g.Rank != w.Rank || g.Tid != w.Tid || g.Label != w.Label || g.Steps != w.Steps || g.Waits != w.Waits ||
			!near(g.Active, w.Active) || !near(g.Busy, w.Busy) || !near(g.Wait, w.Wait) || !near(g.Util, w.Util) {
			t.Errorf("track %d: %+v, want %+v", i, g, w)
		}
	}
}

func TestChainTracksWaitsStragglers(t *testing.T) {
	tr := read(t, chain3())
	checkTracks(t, tr.TrackStats(-1), []TrackStat{
		{Rank: 0, Tid: 0, Label: "channel 0", Active: 10, Busy: 10, Steps: 1, Util: 1},
		{Rank: 1, Tid: 0, Label: "ch 0", Active: 30, Busy: 18, Wait: 12, Steps: 2, Waits: 1, Util: 0.6},
		{Rank: 2, Tid: 0, Label: "ch 0", Active: 40, Busy: 9, Wait: 31, Steps: 1, Waits: 1, Util: 9.0 / 40},
	})
	ranks := tr.RankStats(-1)
	if len(ranks) != 3 || !near(ranks[1].Op, 30) || !near(ranks[1].Busy, 18) || ranks[1].Tracks != 1 || !near(ranks[2].Util, 9.0/40) {
		t.Errorf("rank stats %+v", ranks)
	}
	ops := tr.Ops()
	want := Op{Seq: 7, Name: "allreduce", Bytes: 4096, Algo: "Ring", Proto: "Simple", Channels: 1, Start: 0, End: 40,
		Ranks: []RankOp{{0, 0, 10}, {1, 0, 30}, {2, 0, 40}}}
	if len(ops) != 1 || !reflect.DeepEqual(ops[0], want) {
		t.Errorf("ops %+v, want %+v", ops, want)
	}
	waits := tr.LongestWaits(5, -1)
	wantW := []Wait{
		{Rank: 2, Tid: 0, Track: "ch 0", Seq: 7, Op: "allreduce", Step: "recv", Peer: 1, On: "tail", What: "", Start: 0, Dur: 31},
		{Rank: 1, Tid: 0, Track: "ch 0", Seq: 7, Op: "allreduce", Step: "recv", Peer: 0, On: "tail", What: "", Start: 0, Dur: 12},
	}
	if !reflect.DeepEqual(waits, wantW) {
		t.Errorf("waits %+v, want %+v", waits, wantW)
	}
	if w := tr.LongestWaits(1, -1); len(w) != 1 || w[0].Rank != 2 {
		t.Errorf("top 1: %+v", w)
	}
	if w := tr.LongestWaits(5, 8); len(w) != 0 {
		t.Errorf("waits of an absent op: %+v", w)
	}
	per, blame := tr.Stragglers()
	if len(per) != 1 || per[0] != (OpStraggler{Seq: 7, Op: "allreduce", Dur: 40, Last: -1, WaitedOn: 1, WaitedOnUs: 31}) {
		t.Errorf("stragglers %+v", per)
	}
	wantB := []RankBlame{{Rank: 0, WaitedOnUs: 12}, {Rank: 1, MostWaitedOn: 1, WaitedOnUs: 31}, {Rank: 2}}
	if !reflect.DeepEqual(blame, wantB) {
		t.Errorf("blame %+v, want %+v", blame, wantB)
	}
}

func TestChainCriticalPath(t *testing.T) {
	tr := read(t, chain3())
	p, err := tr.CriticalPath(7)
	if err != nil {
		t.Fatal(err)
	}
	want := []Link{
		{Kind: LinkWork, Rank: 0, Tid: 0, Track: "channel 0", Name: "send", Peer: -1, Start: 0, Dur: 10, Explained: true},
		{Kind: LinkWait, Rank: 1, Tid: 0, Track: "ch 0", Name: "wait tail", Peer: 0, On: "tail", Start: 10, Dur: 2, Explained: true},
		{Kind: LinkWork, Rank: 1, Tid: 0, Track: "ch 0", Name: "recv+send", Peer: -1, Start: 12, Dur: 18, Explained: true},
		{Kind: LinkWait, Rank: 2, Tid: 0, Track: "ch 0", Name: "wait tail", Peer: 1, On: "tail", Start: 30, Dur: 1, Explained: true},
		{Kind: LinkWork, Rank: 2, Tid: 0, Track: "ch 0", Name: "recv", Peer: -1, Start: 31, Dur: 9, Explained: true},
	}
	if !reflect.DeepEqual(p.Links, want) {
		t.Errorf("path:\n got %+v\nwant %+v", p.Links, want)
	}
	if !near(p.Explained, 40) || !near(p.Frac, 1) || p.Seq != 7 || p.Op != "allreduce" {
		t.Errorf("path explains %v (%v) of seq %d %s", p.Explained, p.Frac, p.Seq, p.Op)
	}
	if _, err := tr.CriticalPath(3); err == nil || !strings.Contains(err.Error(), "seq 7 only") {
		t.Errorf("an absent seq: %v", err)
	}
}

// A wait without a peer cannot be followed: it is the unexplained part
// of the path, and the walk goes on before it on the same track.
func TestPathThroughWaitWithoutPeer(t *testing.T) {
	tr := read(t, []tef.Event{
		opEv("copy", 0, tef.RankTrack, 0, 0, 20),
		stepEv("copy", 0, 0, -1, 0, 20), waitEv(0, 0, -1, "flag", 5, 8),
	})
	p, err := tr.CriticalPath(0)
	if err != nil {
		t.Fatal(err)
	}
	want := []Link{
		{Kind: LinkWork, Rank: 0, Tid: 0, Track: "ch 0", Name: "copy", Peer: -1, Start: 0, Dur: 5, Explained: true},
		{Kind: LinkWait, Rank: 0, Tid: 0, Track: "ch 0", Name: "wait flag", Peer: -1, On: "flag", Start: 5, Dur: 3},
		{Kind: LinkWork, Rank: 0, Tid: 0, Track: "ch 0", Name: "copy", Peer: -1, Start: 8, Dur: 12, Explained: true},
	}
	if !reflect.DeepEqual(p.Links, want) || !near(p.Explained, 17) || !near(p.Frac, 0.85) {
		t.Errorf("path %+v explains %v (%v)", p.Links, p.Explained, p.Frac)
	}
	checkTracks(t, tr.TrackStats(-1), []TrackStat{{Rank: 0, Tid: 0, Label: "ch 0", Active: 20, Busy: 17, Wait: 3, Steps: 1, Waits: 1, Util: 0.85}})
	per, _ := tr.Stragglers()
	if per[0].Last != -1 || per[0].WaitedOn != -1 || per[0].WaitedOnUs != 0 {
		t.Errorf("a single rank, a wait without peer: %+v", per[0])
	}
	if w := tr.LongestWaits(3, -1); len(w) != 1 || w[0].Peer != -1 || w[0].Step != "copy" || w[0].On != "flag" {
		t.Errorf("waits %+v", w)
	}
}

// A rank that arrives late: the path ends in its late arrival; the
// sender's step ends after the receiver's wait (the step it was in
// released it).
func TestPathLateArrival(t *testing.T) {
	tr := read(t, []tef.Event{
		opEv("allreduce", 0, tef.RankTrack, 3, 0, 30),
		stepEv("recv", 0, 0, 1, 0, 30), waitEv(0, 0, 1, "tail", 0, 25),
		opEv("allreduce", 1, tef.RankTrack, 3, 20, 28),
		stepEv("send", 1, 0, 0, 20, 28),
	})
	p, err := tr.CriticalPath(3)
	if err != nil {
		t.Fatal(err)
	}
	want := []Link{
		{Kind: LinkLate, Rank: 1, Tid: tef.RankTrack, Track: "rank", Name: "late arrival", Peer: -1, Start: 0, Dur: 20, Explained: true},
		{Kind: LinkWork, Rank: 1, Tid: 0, Track: "ch 0", Name: "send", Peer: -1, Start: 20, Dur: 5, Explained: true},
		{Kind: LinkWait, Rank: 0, Tid: 0, Track: "ch 0", Name: "wait tail", Peer: 1, On: "tail", Start: 25, Dur: 0, Explained: true},
		{Kind: LinkWork, Rank: 0, Tid: 0, Track: "ch 0", Name: "recv", Peer: -1, Start: 25, Dur: 5, Explained: true},
	}
	if !reflect.DeepEqual(p.Links, want) || !near(p.Frac, 1) {
		t.Errorf("path:\n got %+v\nwant %+v (explains %v)", p.Links, want, p.Frac)
	}
	per, blame := tr.Stragglers()
	if per[0].Last != 1 || !near(per[0].Late, 20) || per[0].WaitedOn != 1 || !near(per[0].WaitedOnUs, 25) {
		t.Errorf("straggler %+v", per[0])
	}
	if blame[1].LastArrivals != 1 || !near(blame[1].LateUs, 20) || blame[0].LastArrivals != 0 {
		t.Errorf("blame %+v", blame)
	}
}

// Operations without steps: parts from RankTrack alone; no tracks; the
// path is the last rank's operation; the late rank is found.
func TestOpsWithoutSteps(t *testing.T) {
	tr := read(t, []tef.Event{
		opEv("barrier", 0, tef.RankTrack, 3, 0, 10),
		opEv("barrier", 1, tef.RankTrack, 3, 2, 6),
	})
	if ts := tr.TrackStats(-1); len(ts) != 0 {
		t.Errorf("tracks %+v, want none", ts)
	}
	rs := tr.RankStats(-1)
	if len(rs) != 2 || !near(rs[0].Op, 10) || !near(rs[1].Op, 4) || rs[0].Tracks != 0 || rs[1].Util != 0 {
		t.Errorf("ranks %+v", rs)
	}
	p, err := tr.CriticalPath(3)
	if err != nil {
		t.Fatal(err)
	}
	want := []Link{{Kind: LinkWork, Rank: 0, Tid: tef.RankTrack, Track: "rank", Name: "barrier (no step traced)", Peer: -1, Start: 0, Dur: 10, Explained: true}}
	if !reflect.DeepEqual(p.Links, want) {
		t.Errorf("path %+v", p.Links)
	}
	per, _ := tr.Stragglers()
	if per[0].Last != 1 || !near(per[0].Late, 2) {
		t.Errorf("straggler %+v", per[0])
	}
	rows, err := tr.Timeline(3)
	if err != nil || len(rows) != 2 || rows[0].Tid != tef.RankTrack {
		t.Errorf("timeline of an op without steps: %+v, %v", rows, err)
	}
}

func TestNCCLLike(t *testing.T) {
	tr := read(t, ncclLike())
	if want := map[string]int{`category "net"`: 2, "phase i": 2}; !reflect.DeepEqual(tr.Skipped, want) {
		t.Errorf("skipped %v, want %v", tr.Skipped, want)
	}
	ops := tr.Ops()
	want := Op{Seq: 1, Name: "AllReduce", Bytes: 1 << 20, Algo: "Ring", Proto: "Simple", Channels: 2, Start: 2, End: 53,
		Ranks: []RankOp{{0, 2, 52}, {1, 3, 53}}}
	if len(ops) != 1 || !reflect.DeepEqual(ops[0], want) {
		t.Fatalf("ops %+v\nwant %+v", ops, want)
	}
	var wantT []TrackStat
	for r := 0; r < 2; r++ {
		wantT = append(wantT,
			TrackStat{Rank: r, Tid: 0, Label: "ch 0", Active: 40},
			TrackStat{Rank: r, Tid: 1, Label: "ch 1", Active: 35},
			TrackStat{Rank: r, Tid: 100, Label: "proxy ch 0", Active: 30, Busy: 20, Steps: 2, Util: 2.0 / 3},
			TrackStat{Rank: r, Tid: 101, Label: "proxy ch 1", Active: 20, Busy: 10, Steps: 1, Util: 0.5})
	}
	checkTracks(t, tr.TrackStats(-1), wantT)
	checkTracks(t, tr.TrackStats(1), wantT)
	rs := tr.RankStats(-1)
	if len(rs) != 2 || rs[0].Tracks != 4 || !near(rs[0].Op, 50) || !near(rs[0].Active, 125) || !near(rs[0].Busy, 30) || !near(rs[0].Util, 30.0/125) {
		t.Errorf("ranks %+v", rs)
	}
	p, err := tr.CriticalPath(1)
	if err != nil {
		t.Fatal(err)
	}
	wantL := []Link{
		{Kind: LinkLate, Rank: 1, Tid: tef.RankTrack, Track: "rank", Name: "late arrival", Peer: -1, Start: 2, Dur: 1, Explained: true},
		{Kind: LinkWork, Rank: 1, Tid: 100, Track: "proxy ch 0", Name: "ProxyStep", Peer: -1, Start: 3, Dur: 50, Explained: true},
	}
	if !reflect.DeepEqual(p.Links, wantL) || !near(p.Frac, 1) {
		t.Errorf("path %+v", p.Links)
	}
	per, _ := tr.Stragglers()
	if per[0].Last != 1 || !near(per[0].Late, 1) || per[0].WaitedOn != -1 {
		t.Errorf("straggler %+v", per[0])
	}
	rows, err := tr.Timeline(1)
	if err != nil {
		t.Fatal(err)
	}
	var labels []string
	for _, r := range rows {
		labels = append(labels, r.Label)
	}
	if wantR := []string{"r0 ch 0", "r0 ch 1", "r0 proxy ch 0", "r0 proxy ch 1", "r1 ch 0", "r1 ch 1", "r1 proxy ch 0", "r1 proxy ch 1"}; !reflect.DeepEqual(labels, wantR) {
		t.Errorf("timeline rows %v, want %v", labels, wantR)
	}
}

// The ring with one slow rank: the others wait on it most, the path
// tiles the operation and is explained in full (every wait names its
// peer), and the slow rank's work is most of it.
func TestRingSlowRank(t *testing.T) {
	const n, slow = 4, 2
	work := []float64{3, 3, 10, 3}
	evs, ends := ring(n, 3, []float64{0, 0, 0, 0}, work, 0.5)
	tr := read(t, evs)
	per, blame := tr.Stragglers()
	if len(per) != 3 {
		t.Fatalf("%d operations, want 3", len(per))
	}
	for _, s := range per {
		if s.WaitedOn != slow || s.Last != -1 {
			t.Errorf("op %d: straggler %+v, want waited on rank %d and no late arrival", s.Seq, s, slow)
		}
	}
	if blame[slow].MostWaitedOn != 3 {
		t.Errorf("blame %+v", blame)
	}
	for seq := int64(0); seq < 3; seq++ {
		p, err := tr.CriticalPath(seq)
		if err != nil {
			t.Fatal(err)
		}
		checkTiling(t, p)
		if !near(p.Frac, 1) {
			t.Errorf("op %d: explains %v, want all", seq, p.Frac)
		}
		// The slow rank is the last to finish and never waits (the
		// others are always ahead): the path is its work alone.
		if len(p.Links) != 1 || p.Links[0].Kind != LinkWork || p.Links[0].Rank != slow || !near(p.Links[0].Dur, 2*(n-1)*10) {
			t.Errorf("op %d: path %+v, want rank %d's work for %d us", seq, p.Links, slow, 2*(n-1)*10)
		}
		if last := math.Max(math.Max(ends[seq][0], ends[seq][1]), math.Max(ends[seq][2], ends[seq][3])); !near(p.End, last) {
			t.Errorf("op %d ends %v, want %v", seq, p.End, last)
		}
	}
	// Every rank but the slow one waits; the slow one never does after
	// its first step's data (it is always last).
	for _, ts := range tr.TrackStats(-1) {
		if ts.Rank == slow && ts.Wait != 0 {
			t.Errorf("the slow rank waits %v us", ts.Wait)
		}
		if ts.Rank != slow && ts.Wait == 0 {
			t.Errorf("rank %d never waits", ts.Rank)
		}
		if ts.Steps != 3*2*(n-1) {
			t.Errorf("rank %d: %d steps, want %d", ts.Rank, ts.Steps, 3*2*(n-1))
		}
	}
}

// A late rank in the ring: the last to arrive, and the path starts with
// its late arrival.
func TestRingLateRank(t *testing.T) {
	evs, _ := ring(4, 1, []float64{0, 7, 0, 0}, []float64{2, 2, 2, 2}, 0.25)
	tr := read(t, evs)
	per, _ := tr.Stragglers()
	if per[0].Last != 1 || !near(per[0].Late, 7) {
		t.Errorf("straggler %+v, want rank 1 late by 7", per[0])
	}
	p, err := tr.CriticalPath(0)
	if err != nil {
		t.Fatal(err)
	}
	checkTiling(t, p)
	if l := p.Links[0]; l.Kind != LinkLate || l.Rank != 1 || !near(l.Dur, 7) {
		t.Errorf("path starts %+v, want rank 1 late by 7", l)
	}
	// Then the delay goes round the ring: rank 1's step 0, 0.25 us of
	// latency, rank 2's step 1, ..., rank 2's step 5 (the last).
	if len(p.Links) != 1+6+5 {
		t.Fatalf("%d links, want 12: %+v", len(p.Links), p.Links)
	}
	for k := 0; k < 6; k++ {
		rank := (1 + k) % 4
		w := p.Links[1+2*k]
		if w.Kind != LinkWork || w.Rank != rank || w.Name != stepName(k, 4) || !near(w.Dur, 2) {
			t.Errorf("link %d: %+v, want rank %d's %s for 2 us", 1+2*k, w, rank, stepName(k, 4))
		}
		if k < 5 {
			l := p.Links[2+2*k]
			if l.Kind != LinkWait || l.Rank != (rank+1)%4 || l.Peer != rank || !near(l.Dur, 0.25) || !l.Explained {
				t.Errorf("link %d: %+v, want rank %d waiting 0.25 us on %d", 2+2*k, l, (rank+1)%4, rank)
			}
		}
	}
	if !near(p.End-p.Start, 7+6*2+5*0.25) || !near(p.Frac, 1) {
		t.Errorf("op of %v us explained %v, want %v and 1", p.End-p.Start, p.Frac, 7+6*2+5*0.25)
	}
}

// checkTiling: the links lie end to end from the operation's start to its
// end, and Explained sums the explained ones.
func checkTiling(t *testing.T, p *Path) {
	t.Helper()
	at, sum := p.Start, 0.0
	for i, l := range p.Links {
		if !near(l.Start, at) || l.Dur < 0 {
			t.Errorf("link %d %+v starts at %v, want %v", i, l, l.Start, at)
		}
		at = l.Start + l.Dur
		if l.Explained {
			sum += l.Dur
		}
	}
	if !near(at, p.End) || !near(sum, p.Explained) {
		t.Errorf("links end at %v (want %v), explain %v (path says %v)", at, p.End, sum, p.Explained)
	}
}

func TestSlowestAndSummarize(t *testing.T) {
	evs, _ := ring(3, 2, []float64{0, 0, 0}, []float64{1, 1, 1}, 0)
	evs = append(evs, chain3()...) // seq 7, 40 us: the slowest
	tr0 := read(t, shiftChain(evs))
	s, err := tr0.Summarize(Options{Op: -1, Top: 2})
	if err != nil {
		t.Fatal(err)
	}
	if s.Path == nil || s.Path.Seq != 7 || len(s.Ops) != 3 || s.Ranks != 3 || len(s.Waits) != 2 || len(s.Stragglers) != 3 {
		t.Errorf("summary: path %+v, %d ops, %d ranks, %d waits", s.Path, len(s.Ops), s.Ranks, len(s.Waits))
	}
	if _, err := tr0.Summarize(Options{Op: 9, Top: 2}); err == nil || !strings.Contains(err.Error(), "seq 0 to 7") {
		t.Errorf("summarize an absent op: %v", err)
	}
	empty, err := FromEvents(nil)
	if err != nil {
		t.Fatal(err)
	}
	if s, err := empty.Summarize(Options{Op: -1}); err != nil || s.Path != nil || len(s.Ops) != 0 {
		t.Errorf("an empty trace: %+v, %v", s, err)
	}
}

// shiftChain moves chain3's events, at the end of evs, 1000 us later
// (after the ring's operations).
func shiftChain(evs []tef.Event) []tef.Event {
	out := append([]tef.Event(nil), evs...)
	for i := len(out) - len(chain3()); i < len(out); i++ {
		if out[i].Ph == "X" {
			out[i].Ts += 1000
		}
	}
	return out
}
