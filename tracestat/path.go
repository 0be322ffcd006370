package tracestat

import (
	"fmt"
	"math"
	"strings"

	"github.com/gccl/gccl/lib/tef"
)

// Link kinds of a critical path.
const (
	LinkWork = "work" // a rank running on a track: its steps, or the time between them
	LinkWait = "wait" // a wait: followed, its tail after the peer's step ended; else the whole wait
	LinkLate = "late" // a rank not yet in the operation: from the first rank's start to its own
)

// Link is one stretch of a critical path.
type Link struct {
	Kind string `json:"kind"`
	Rank int    `json:"rank"`
	Tid  int    `json:"tid"`
	// Track is the track's name (Trace.TrackLabel): "ch 2", "rank", or
	// a producer's own, such as NCCL's "proxy ch 0".
	Track string `json:"track"`
	// Name is the steps of a work link ("recv+send"), the wait's name,
	// or "late arrival".
	Name  string  `json:"name"`
	Peer  int     `json:"peer"` // a wait's peer, -1 for the others
	On    string  `json:"on"`   // a wait's on
	Start float64 `json:"start_us"`
	Dur   float64 `json:"dur_us"`
	// Explained is false for a wait the walk could not follow (no peer,
	// or no step of the peer ending before it).
	Explained bool `json:"explained"`
}

// Path is the critical path of one operation.
type Path struct {
	Seq       int64   `json:"seq"`
	Op        string  `json:"op"`
	Start     float64 `json:"start_us"` // the operation's: the first rank's start
	End       float64 `json:"end_us"`   // the last rank's end
	Links     []Link  `json:"links"`    // in time order, tiling Start to End
	Explained float64 `json:"explained_us"`
	Frac      float64 `json:"explained_frac"` // Explained over End-Start (1 for an operation of no time)
}

// CriticalPath walks back the chain of waits that made operation seq as
// long as it was.
//
// The walk starts at the rank that finished last (the latest end; ties,
// the lower rank) at its end, on its track whose last step or wait ends
// latest (tef.RankTrack when it has none). At rank r, track c and time t
// it takes W, the latest-ending wait not yet taken that ends by t, on
// track c or on r's tef.RankTrack:
//
//   - none: r worked on c from its start to t (a work link), and if r
//     started after the operation's first rank, the time between is r's
//     late arrival (a late link). The walk ends.
//   - otherwise r worked on c from W's end to t (a work link). If W names
//     a peer p (not r), S is the step of p that released r: p's latest
//     step of the operation that ended by W's end, preferring one on c that
//     talks to r (its peer arg), then one on c, then one on any track that
//     talks to r, then any; when p has none, the step p was in when W
//     ended (the latest to start by W's end, in the same order of
//     preference: a sender that finishes its step after the receiver saw
//     the data). W's tail from min(S's end, W's end) to W's end is a
//     followed wait link (the signal's latency), and the walk goes on at
//     p, S's track, min(S's end, W's end). When p has no step started by
//     W's end, or W names no peer, W is a wait link the walk cannot
//     follow (unexplained), and the walk goes on at r, c, W's start.
//
// The links tile the operation from its start to its end; Explained is
// the time of all but the unfollowed waits. Each step of the walk takes a
// wait and t never grows, so the walk ends.
func (t *Trace) CriticalPath(seq int64) (*Path, error) {
	var op *Op
	ops := t.Ops()
	for i := range ops {
		if ops[i].Seq == seq {
			op = &ops[i]
		}
	}
	if op == nil {
		return nil, fmt.Errorf("no operation with seq %d in the trace (%s)", seq, seqRange(ops))
	}
	w := walker{t: t, op: op, used: map[int]bool{}, waits: map[int][]int{}, steps: map[int][]int{}}
	for i := range t.Spans {
		s := &t.Spans[i]
		switch {
		case s.Seq != seq:
		case s.Cat == tef.CatWait:
			w.waits[s.Rank] = append(w.waits[s.Rank], i)
		case s.Cat == tef.CatStep:
			w.steps[s.Rank] = append(w.steps[s.Rank], i)
		}
	}
	path := &Path{Seq: op.Seq, Op: op.Name, Start: op.Start, End: op.End}
	last := op.Ranks[0]
	for _, r := range op.Ranks {
		if r.End > last.End {
			last = r
		}
	}
	r, c, now := last.Rank, w.lastTrack(last.Rank), last.End
	for {
		wi := w.lastWait(r, c, now)
		if wi < 0 {
			ro, _ := op.Rank(r)
			from := min(ro.Start, now)
			w.work(r, c, from, now)
			if from-op.Start >= eps {
				w.add(Link{Kind: LinkLate, Rank: r, Tid: tef.RankTrack, Name: "late arrival", Peer: -1, Start: op.Start, Dur: from - op.Start, Explained: true})
			}
			break
		}
		ws := &t.Spans[wi]
		w.used[wi] = true
		w.work(r, c, ws.End, now)
		link := Link{Kind: LinkWait, Rank: r, Tid: ws.Tid, Name: ws.Name, Peer: ws.Peer, On: ws.On}
		si := -1
		if ws.Peer >= 0 && ws.Peer != r {
			si = w.peerStep(ws.Peer, r, c, ws.End)
		}
		if si < 0 {
			link.Start, link.Dur = ws.Start, math.Min(ws.End, now)-ws.Start
			w.add(link)
			now = ws.Start
			continue
		}
		s := &t.Spans[si]
		end := min(s.End, ws.End)
		link.Start, link.Dur, link.Explained = end, ws.End-end, true
		w.add(link)
		r, c, now = s.Rank, s.Tid, end
	}
	// Built backwards: reverse into time order.
	for i, j := 0, len(w.links)-1; i < j; i, j = i+1, j-1 {
		w.links[i], w.links[j] = w.links[j], w.links[i]
	}
	path.Links = w.links
	for i, l := range path.Links {
		path.Links[i].Track = t.TrackLabel(l.Rank, l.Tid)
		if l.Explained {
			path.Explained += l.Dur
		}
	}
	path.Frac = 1
	if d := op.Dur(); d > 0 {
		path.Frac = path.Explained / d
	}
	return path, nil
}

// walker holds a critical path's walk.
type walker struct {
	t     *Trace
	op    *Op
	used  map[int]bool // waits taken (indices in t.Spans)
	links []Link       // latest first
	// waits and steps of the operation by rank: indices in t.Spans.
	waits, steps map[int][]int
}

func (w *walker) add(l Link) {
	if l.Dur >= eps || l.Kind == LinkWait {
		w.links = append(w.links, l)
	}
}

// lastTrack is rank r's track whose last step or wait of the operation
// ends latest; tef.RankTrack when none.
func (w *walker) lastTrack(r int) int {
	best, end := tef.RankTrack, math.Inf(-1)
	for _, list := range [][]int{w.steps[r], w.waits[r]} {
		for _, i := range list {
			if s := &w.t.Spans[i]; s.End > end || (s.End == end && s.Tid < best) {
				best, end = s.Tid, s.End
			}
		}
	}
	return best
}

// lastWait is the index of the latest-ending wait not yet taken that ends
// by t on rank r's track c or its tef.RankTrack (ties: the later start);
// -1 when none.
func (w *walker) lastWait(r, c int, t float64) int {
	best := -1
	for _, i := range w.waits[r] {
		s := &w.t.Spans[i]
		if w.used[i] || s.End > t+eps {
			continue
		}
		if s.Tid != c && s.Tid != tef.RankTrack {
			continue
		}
		if best < 0 || s.End > w.t.Spans[best].End || (s.End == w.t.Spans[best].End && s.Start > w.t.Spans[best].Start) {
			best = i
		}
	}
	return best
}

// peerStep is the index of the step of peer p that released waiter on
// track c at t (see CriticalPath); -1 when p has no step started by t.
func (w *walker) peerStep(p, waiter, c int, t float64) int {
	class := func(s *Span) int {
		switch {
		case s.Tid == c && s.Peer == waiter:
			return 0
		case s.Tid == c:
			return 1
		case s.Peer == waiter:
			return 2
		}
		return 3
	}
	// ended: the latest end by t per class; running: the latest start by t.
	ended, running := [4]int{-1, -1, -1, -1}, [4]int{-1, -1, -1, -1}
	for _, i := range w.steps[p] {
		s := &w.t.Spans[i]
		if s.Start > t+eps {
			continue
		}
		k := class(s)
		if s.End <= t+eps {
			if b := ended[k]; b < 0 || s.End > w.t.Spans[b].End {
				ended[k] = i
			}
		}
		if b := running[k]; b < 0 || s.Start > w.t.Spans[b].Start {
			running[k] = i
		}
	}
	for _, set := range [][4]int{ended, running} {
		for _, b := range set {
			if b >= 0 {
				return b
			}
		}
	}
	return -1
}

// work adds the link of rank r working on track c from a to b, named by
// the steps it overlaps.
func (w *walker) work(r, c int, a, b float64) {
	if b-a < eps {
		return
	}
	var names []string
	for _, i := range w.steps[r] {
		s := &w.t.Spans[i]
		if s.Tid != c || s.End <= a+eps || s.Start >= b-eps {
			continue
		}
		if len(names) == 0 || names[len(names)-1] != s.Name {
			names = append(names, s.Name)
		}
	}
	name := w.op.Name + " (no step traced)"
	switch {
	case len(names) > 3:
		name = strings.Join(names[:3], "+") + fmt.Sprintf("+%d more", len(names)-3)
	case len(names) > 0:
		name = strings.Join(names, "+")
	}
	w.add(Link{Kind: LinkWork, Rank: r, Tid: c, Name: name, Peer: -1, Start: a, Dur: b - a, Explained: true})
}

// seqRange says which seqs a trace has, for an error.
func seqRange(ops []Op) string {
	switch len(ops) {
	case 0:
		return "it has no operations"
	case 1:
		return fmt.Sprintf("it has seq %d only", ops[0].Seq)
	}
	return fmt.Sprintf("it has %d operations, seq %d to %d", len(ops), ops[0].Seq, ops[len(ops)-1].Seq)
}

// Slowest is the seq of the longest operation (ties: the lower seq); false
// when the trace has none.
func (t *Trace) Slowest() (int64, bool) {
	ops := t.Ops()
	if len(ops) == 0 {
		return 0, false
	}
	best := ops[0]
	for _, o := range ops[1:] {
		if o.Dur() > best.Dur() {
			best = o
		}
	}
	return best.Seq, true
}
