package tracestat

import (
	"fmt"
	"sort"

	"github.com/gccl/gccl/lib/tef"
)

// RankOp is one rank's part of an operation: from its call to its
// completion on that rank.
type RankOp struct {
	Rank  int     `json:"rank"`
	Start float64 `json:"start_us"`
	End   float64 `json:"end_us"`
}

// Op is one operation (one seq) over every rank that traced it.
type Op struct {
	Seq      int64    `json:"seq"`
	Name     string   `json:"name"`
	Bytes    int64    `json:"bytes"` // -1: not said
	Algo     string   `json:"algo"`
	Proto    string   `json:"proto"`
	Channels int      `json:"nchannels"` // 0: not said
	Start    float64  `json:"start_us"`  // the earliest rank's start
	End      float64  `json:"end_us"`    // the latest rank's end
	Ranks    []RankOp `json:"ranks"`     // by rank
}

// Dur is the operation's time from the first rank's start to the last
// rank's end.
func (o *Op) Dur() float64 { return o.End - o.Start }

// Rank returns rank r's part, false when r did not trace the operation.
func (o *Op) Rank(r int) (RankOp, bool) {
	for _, x := range o.Ranks {
		if x.Rank == r {
			return x, true
		}
	}
	return RankOp{}, false
}

// Ops lists the operations by seq. A rank's part is its operation span on
// tef.RankTrack; without one, the hull of its operation-like spans
// (operations on channels, kernels, proxy operations) of that seq; without
// those, the hull of all its spans of that seq. Name, bytes, algorithm,
// protocol and channels come from the first span that says them,
// tef.RankTrack's first.
func (t *Trace) Ops() []Op {
	type acc struct {
		op    Op
		rank  map[int]*RankOp
		level map[int]int // how the rank's part was found: 2 RankTrack, 1 op-like, 0 any
	}
	bySeq := map[int64]*acc{}
	level := func(s *Span) int {
		switch {
		case s.Cat == tef.CatOp && s.Tid == tef.RankTrack:
			return 2
		case isOpLike(s):
			return 1
		}
		return 0
	}
	// Describing spans first: RankTrack operations, then other op-likes.
	order := make([]int, len(t.Spans))
	for i := range order {
		order[i] = i
	}
	sort.SliceStable(order, func(a, b int) bool { return level(&t.Spans[order[a]]) > level(&t.Spans[order[b]]) })
	for _, i := range order {
		s := &t.Spans[i]
		if s.Seq < 0 {
			continue
		}
		a := bySeq[s.Seq]
		if a == nil {
			a = &acc{op: Op{Seq: s.Seq, Bytes: -1}, rank: map[int]*RankOp{}, level: map[int]int{}}
			bySeq[s.Seq] = a
		}
		lv := level(s)
		if lv > 0 {
			describe(&a.op, s)
		}
		ro := a.rank[s.Rank]
		switch {
		case ro == nil:
			a.rank[s.Rank] = &RankOp{Rank: s.Rank, Start: s.Start, End: s.End}
			a.level[s.Rank] = lv
		case lv == a.level[s.Rank]:
			ro.Start, ro.End = min(ro.Start, s.Start), max(ro.End, s.End)
		}
	}
	out := make([]Op, 0, len(bySeq))
	for _, a := range bySeq {
		op := a.op
		if op.Name == "" {
			op.Name = "unknown"
		}
		for _, ro := range a.rank {
			op.Ranks = append(op.Ranks, *ro)
		}
		sort.Slice(op.Ranks, func(x, y int) bool { return op.Ranks[x].Rank < op.Ranks[y].Rank })
		op.Start, op.End = op.Ranks[0].Start, op.Ranks[0].End
		for _, r := range op.Ranks {
			op.Start, op.End = min(op.Start, r.Start), max(op.End, r.End)
		}
		out = append(out, op)
	}
	sort.Slice(out, func(x, y int) bool { return out[x].Seq < out[y].Seq })
	return out
}

// describe fills what op does not say yet from an operation-like span.
func describe(op *Op, s *Span) {
	if op.Name == "" && s.Cat == tef.CatOp {
		op.Name = s.Name
	}
	if op.Bytes < 0 && s.Bytes >= 0 && s.Cat == tef.CatOp {
		op.Bytes = s.Bytes
	}
	if op.Algo == "" {
		op.Algo = s.Algo
	}
	if op.Proto == "" {
		op.Proto = s.Proto
	}
	if op.Channels == 0 {
		op.Channels = s.Channels
	}
}

// TrackStat is where one track's time went.
type TrackStat struct {
	Rank  int    `json:"rank"`
	Tid   int    `json:"tid"`
	Label string `json:"label"`
	// Active is the track's operation time: the union of its
	// operation-like spans (an operation's part on the channel, a kernel,
	// a proxy operation), or of all its spans when it has none.
	Active float64 `json:"active_us"`
	// Busy is the time in steps outside waits; Wait the union of the
	// waits (inside steps or not).
	Busy  float64 `json:"busy_us"`
	Wait  float64 `json:"wait_us"`
	Steps int     `json:"steps"`
	Waits int     `json:"waits"`
	// Util is Busy over Active (0 when Active is).
	Util float64 `json:"util"`
}

// RankStat sums a rank's tracks.
type RankStat struct {
	Rank   int `json:"rank"`
	Tracks int `json:"tracks"`
	// Op is the union of the rank's operations on tef.RankTrack (or of its
	// tracks' active time when it has none).
	Op     float64 `json:"op_us"`
	Active float64 `json:"active_us"` // summed over tracks
	Busy   float64 `json:"busy_us"`
	Wait   float64 `json:"wait_us"`
	Util   float64 `json:"util"` // Busy over Active
}

// keep says whether a span counts for seq (-1: every span).
func keep(s *Span, seq int64) bool { return seq < 0 || s.Seq == seq }

// TrackLabel names a track: its thread_name, else "ch N" for a channel
// and "rank" for tef.RankTrack.
func (t *Trace) TrackLabel(rank, tid int) string {
	if n := t.TrackNames[tef.Track{Pid: rank, Tid: tid}]; n != "" {
		return n
	}
	if tid == tef.RankTrack {
		return "rank"
	}
	return fmt.Sprintf("ch %d", tid)
}

// TrackStats returns each track's time, of operation seq (-1: of the whole
// trace), by rank and tid. tef.RankTrack is listed only when it holds
// steps or waits of its own.
func (t *Trace) TrackStats(seq int64) []TrackStat {
	type acc struct{ ops, steps, waits, all []interval }
	tracks := map[tef.Track]*acc{}
	for i := range t.Spans {
		s := &t.Spans[i]
		if !keep(s, seq) {
			continue
		}
		tr := tef.Track{Pid: s.Rank, Tid: s.Tid}
		a := tracks[tr]
		if a == nil {
			a = &acc{}
			tracks[tr] = a
		}
		iv := interval{s.Start, s.End}
		a.all = append(a.all, iv)
		switch {
		case isOpLike(s):
			a.ops = append(a.ops, iv)
		case s.Cat == tef.CatStep:
			a.steps = append(a.steps, iv)
		case s.Cat == tef.CatWait:
			a.waits = append(a.waits, iv)
		}
	}
	var out []TrackStat
	for tr, a := range tracks {
		if tr.Tid == tef.RankTrack && len(a.steps)+len(a.waits) == 0 {
			continue
		}
		ops := union(a.ops)
		if len(ops) == 0 {
			ops = union(a.all)
		}
		steps, waits := union(a.steps), union(a.waits)
		ts := TrackStat{Rank: tr.Pid, Tid: tr.Tid, Label: t.TrackLabel(tr.Pid, tr.Tid),
			Active: length(ops), Busy: length(steps) - overlap(steps, waits), Wait: length(waits),
			Steps: len(a.steps), Waits: len(a.waits)}
		if ts.Active > 0 {
			ts.Util = ts.Busy / ts.Active
		}
		out = append(out, ts)
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Rank != out[j].Rank {
			return out[i].Rank < out[j].Rank
		}
		return out[i].Tid < out[j].Tid
	})
	return out
}

// RankStats sums TrackStats per rank, with the rank's operation time.
func (t *Trace) RankStats(seq int64) []RankStat {
	byRank := map[int]*RankStat{}
	var ranks []int
	for _, ts := range t.TrackStats(seq) {
		r := byRank[ts.Rank]
		if r == nil {
			r = &RankStat{Rank: ts.Rank}
			byRank[ts.Rank] = r
			ranks = append(ranks, ts.Rank)
		}
		r.Tracks++
		r.Active += ts.Active
		r.Busy += ts.Busy
		r.Wait += ts.Wait
	}
	ops := map[int][]interval{}
	for i := range t.Spans {
		s := &t.Spans[i]
		if s.Cat == tef.CatOp && s.Tid == tef.RankTrack && keep(s, seq) {
			ops[s.Rank] = append(ops[s.Rank], interval{s.Start, s.End})
			if byRank[s.Rank] == nil {
				byRank[s.Rank] = &RankStat{Rank: s.Rank}
				ranks = append(ranks, s.Rank)
			}
		}
	}
	sort.Ints(ranks)
	out := make([]RankStat, 0, len(ranks))
	for _, rk := range ranks {
		r := byRank[rk]
		r.Op = length(union(ops[rk]))
		if len(ops[rk]) == 0 {
			r.Op = r.Active
		}
		if r.Active > 0 {
			r.Util = r.Busy / r.Active
		}
		out = append(out, *r)
	}
	return out
}

// Wait is one wait, for the list of the longest.
type Wait struct {
	Rank  int     `json:"rank"`
	Tid   int     `json:"tid"`
	Track string  `json:"track"` // the track's name (Trace.TrackLabel)
	Seq   int64   `json:"seq"`
	Op    string  `json:"op"`   // the operation's name, "unknown" when none
	Step  string  `json:"step"` // the step it is in, "" when in none
	Peer  int     `json:"peer"` // -1: none, several or not said
	On    string  `json:"on"`   // "" not said
	What  string  `json:"what"`
	Start float64 `json:"start_us"`
	Dur   float64 `json:"dur_us"`
}

// LongestWaits returns the n longest waits of operation seq (-1: all),
// longest first (then earliest, then by rank).
func (t *Trace) LongestWaits(n int, seq int64) []Wait {
	names := map[int64]string{}
	for _, op := range t.Ops() {
		names[op.Seq] = op.Name
	}
	var out []Wait
	for i := range t.Spans {
		s := &t.Spans[i]
		if s.Cat != tef.CatWait || !keep(s, seq) {
			continue
		}
		w := Wait{Rank: s.Rank, Tid: s.Tid, Seq: s.Seq, Op: names[s.Seq], Peer: s.Peer, On: s.On, What: s.What, Start: s.Start, Dur: s.Dur()}
		if w.Op == "" {
			w.Op = "unknown"
		}
		if st := t.within(i, tef.CatStep); st != nil {
			w.Step = st.Name
		}
		out = append(out, w)
	}
	sort.SliceStable(out, func(i, j int) bool {
		a, b := out[i], out[j]
		if a.Dur != b.Dur {
			return a.Dur > b.Dur
		}
		if a.Start != b.Start {
			return a.Start < b.Start
		}
		return a.Rank < b.Rank
	})
	if n >= 0 && len(out) > n {
		out = out[:n]
	}
	for i := range out {
		out[i].Track = t.TrackLabel(out[i].Rank, out[i].Tid)
	}
	return out
}

// OpStraggler says which rank held one operation up.
type OpStraggler struct {
	Seq int64   `json:"seq"`
	Op  string  `json:"op"`
	Dur float64 `json:"dur_us"`
	// Last is the rank whose part started last, Late how long after the
	// first rank's; Last is -1 when every rank started within a
	// nanosecond (or one rank traced the operation).
	Last int     `json:"last"`
	Late float64 `json:"late_us"`
	// WaitedOn is the rank the others waited on longest: the most wait
	// time, summed over the operation's waits naming it as their peer
	// (ties: the lower rank); -1 when no wait names a peer.
	WaitedOn   int     `json:"waited_on"`
	WaitedOnUs float64 `json:"waited_on_us"`
}

// RankBlame sums a rank's share of the delays over the operations.
type RankBlame struct {
	Rank         int     `json:"rank"`
	LastArrivals int     `json:"last_arrivals"` // operations it started last
	LateUs       float64 `json:"late_us"`       // how late, summed over those
	MostWaitedOn int     `json:"most_waited_on"`
	WaitedOnUs   float64 `json:"waited_on_us"` // waits naming it as peer, summed over every operation
}

// Stragglers returns each operation's straggler, by seq, and per rank the
// sums over the operations (every rank that traced one).
func (t *Trace) Stragglers() ([]OpStraggler, []RankBlame) {
	waitedOn := map[int64]map[int]float64{}
	for i := range t.Spans {
		s := &t.Spans[i]
		if s.Cat != tef.CatWait || s.Peer < 0 || s.Seq < 0 || s.Peer == s.Rank {
			continue
		}
		if waitedOn[s.Seq] == nil {
			waitedOn[s.Seq] = map[int]float64{}
		}
		waitedOn[s.Seq][s.Peer] += s.Dur()
	}
	blame := map[int]*RankBlame{}
	get := func(r int) *RankBlame {
		if blame[r] == nil {
			blame[r] = &RankBlame{Rank: r}
		}
		return blame[r]
	}
	var per []OpStraggler
	for _, op := range t.Ops() {
		st := OpStraggler{Seq: op.Seq, Op: op.Name, Dur: op.Dur(), Last: -1, WaitedOn: -1}
		first, last := op.Ranks[0], op.Ranks[0]
		for _, r := range op.Ranks {
			get(r.Rank)
			if r.Start < first.Start {
				first = r
			}
			if r.Start > last.Start {
				last = r
			}
		}
		if last.Start-first.Start >= eps {
			st.Last, st.Late = last.Rank, last.Start-first.Start
			b := get(st.Last)
			b.LastArrivals++
			b.LateUs += st.Late
		}
		for r, us := range waitedOn[op.Seq] {
			get(r).WaitedOnUs += us
			if us > st.WaitedOnUs || (us == st.WaitedOnUs && r < st.WaitedOn) {
				st.WaitedOn, st.WaitedOnUs = r, us
			}
		}
		if st.WaitedOn >= 0 {
			get(st.WaitedOn).MostWaitedOn++
		}
		per = append(per, st)
	}
	ranks := make([]RankBlame, 0, len(blame))
	for _, b := range blame {
		ranks = append(ranks, *b)
	}
	sort.Slice(ranks, func(i, j int) bool { return ranks[i].Rank < ranks[j].Rank })
	return per, ranks
}
