// Package tracestat reads a step timeline in gccl's Trace Event Format
// (package lib/tef: one process per rank, one track per channel, an
// operation holding its steps, a step its waits) and says where the time
// went: per track the busy and waiting time, the longest waits and on
// whom, the straggler rank of each operation, and the critical path of
// one operation.
//
// It reads both of gccl's producers, the embedded stack's recorder and
// the NCCL profiler plugin (whose kernel, proxy and group events it
// counts as spans of their track), and tolerates what it does not know:
// unknown categories are counted and left out, missing args read as
// unknown (peer -1, bytes -1, strings ""), never as an error.
//
// Everything here is a pure function of the events; tune trace does the
// files, the tables and the plot.
package tracestat

import (
	"encoding/json"
	"fmt"
	"math"
	"sort"
	"strconv"

	"github.com/gccl/gccl/lib/tef"
)

// eps is the slack of time comparisons, in microseconds: a nanosecond,
// the precision gccl writes.
const eps = 1e-3

// Span is one complete event as tracestat reads it: times in microseconds,
// args decoded, the operation it belongs to resolved.
type Span struct {
	Name  string
	Cat   string
	Rank  int // pid
	Tid   int // channel index, tef.RankTrack, or a producer's own track
	Start float64
	End   float64
	// Seq is the operation the span belongs to: its seq arg, else that of
	// the innermost operation around it on its track, else that of the
	// rank's operation (on tef.RankTrack) around its start; -1 when none.
	Seq   int64
	Peer  int   // -1: none, several, or not said
	Bytes int64 // -1: not said
	Step  int   // -1: not said
	Proto string
	Algo  string
	On    string // a wait's: head, tail, flag, barrier, other; "" not said
	What  string
	// Channels is an operation's nchannels arg, 0 when not said.
	Channels int
	// parent is the index in Trace.Spans of the innermost span around
	// this one on its track, -1 at the top.
	parent int
}

// Dur is the span's duration in microseconds.
func (s *Span) Dur() float64 { return s.End - s.Start }

// Trace is a trace read for analysis.
type Trace struct {
	Spans []Span // by rank, track, start (longer first at one start)
	// TrackNames and RankNames are the thread_name and process_name
	// metadata, where the trace has them.
	TrackNames map[tef.Track]string
	RankNames  map[int]string
	// Skipped counts events left out, by a reason ("category kernel",
	// "phase i"): what the reader does not analyse, said rather than
	// dropped silently.
	Skipped map[string]int
	// Notes say how odd input was read (ops numbered by their order when
	// they had no seq).
	Notes []string
}

// Categories tracestat analyses; the others are counted in Skipped.
var known = map[string]bool{tef.CatOp: true, tef.CatStep: true, tef.CatWait: true, tef.CatKernel: true, tef.CatProxy: true, tef.CatGroup: true}

// FromEvents reads events: complete events, and begin/end pairs joined
// into complete ones. Events are expected valid (tef.Validate); an end
// without its begin, or a begin never ended, is an error.
func FromEvents(evs []tef.Event) (*Trace, error) {
	t := &Trace{TrackNames: map[tef.Track]string{}, RankNames: map[int]string{}, Skipped: map[string]int{}}
	open := map[tef.Track][]tef.Event{}
	var spans []tef.Event
	for _, e := range evs {
		switch e.Ph {
		case "M":
			t.metadata(e)
			continue
		case "X":
			spans = append(spans, e)
		case "B":
			tr := tef.Track{Pid: e.Pid, Tid: e.Tid}
			open[tr] = append(open[tr], e)
		case "E":
			tr := tef.Track{Pid: e.Pid, Tid: e.Tid}
			st := open[tr]
			if len(st) == 0 {
				return nil, fmt.Errorf("end event at %.3f us on pid %d tid %d has no begin event", e.Ts, e.Pid, e.Tid)
			}
			b := st[len(st)-1]
			open[tr] = st[:len(st)-1]
			b.Ph, b.Dur = "X", e.Ts-b.Ts
			if b.Args == nil {
				b.Args = e.Args
			}
			spans = append(spans, b)
		default:
			t.Skipped["phase "+e.Ph]++
		}
	}
	for tr, st := range open {
		if len(st) > 0 {
			return nil, fmt.Errorf("begin event %q on pid %d tid %d is never ended", st[0].Name, tr.Pid, tr.Tid)
		}
	}
	for _, e := range spans {
		if !known[e.Cat] {
			t.Skipped["category "+strconv.Quote(e.Cat)]++
			continue
		}
		if !finite(e.Ts) || !finite(e.Dur) || e.Dur < 0 {
			return nil, fmt.Errorf("event %q on pid %d tid %d: ts %v dur %v: want finite times and a duration >= 0", e.Name, e.Pid, e.Tid, e.Ts, e.Dur)
		}
		t.Spans = append(t.Spans, spanOf(e))
	}
	sortSpans(t.Spans)
	t.resolveSeqs()
	return t, nil
}

func finite(v float64) bool { return !math.IsNaN(v) && !math.IsInf(v, 0) }

// metadata keeps the names the viewers show.
func (t *Trace) metadata(e tef.Event) {
	name, _ := e.Args["name"].(string)
	switch e.Name {
	case "process_name":
		t.RankNames[e.Pid] = name
	case "thread_name":
		t.TrackNames[tef.Track{Pid: e.Pid, Tid: e.Tid}] = name
	}
}

// spanOf decodes an event's args; a missing or mistyped arg reads as not
// said.
func spanOf(e tef.Event) Span {
	s := Span{Name: e.Name, Cat: e.Cat, Rank: e.Pid, Tid: e.Tid, Start: e.Ts, End: e.Ts + e.Dur, Seq: -1, Peer: -1, Bytes: -1, Step: -1}
	if v, ok := argInt(e.Args, tef.ArgSeq); ok {
		s.Seq = v
	}
	if v, ok := argInt(e.Args, tef.ArgPeer); ok && v >= 0 {
		s.Peer = int(v)
	}
	if v, ok := argInt(e.Args, tef.ArgBytes); ok && v >= 0 {
		s.Bytes = v
	}
	if v, ok := argInt(e.Args, tef.ArgStep); ok && v >= 0 {
		s.Step = int(v)
	}
	if v, ok := argInt(e.Args, tef.ArgChannels); ok && v > 0 {
		s.Channels = int(v)
	}
	s.Proto = argStr(e.Args, tef.ArgProto)
	s.Algo = argStr(e.Args, tef.ArgAlgo)
	s.On = argStr(e.Args, tef.ArgOn)
	s.What = argStr(e.Args, tef.ArgWhat)
	return s
}

// argInt reads an integer arg: a JSON number (float64 after decoding,
// or an int from a Go caller) or a decimal string.
func argInt(args map[string]any, key string) (int64, bool) {
	switch v := args[key].(type) {
	case float64:
		if v == math.Trunc(v) && math.Abs(v) < 1<<53 {
			return int64(v), true
		}
	case int:
		return int64(v), true
	case int64:
		return v, true
	case json.Number:
		n, err := v.Int64()
		return n, err == nil
	case string:
		n, err := strconv.ParseInt(v, 10, 64)
		return n, err == nil
	}
	return 0, false
}

// argStr reads a string arg; a number is written out.
func argStr(args map[string]any, key string) string {
	switch v := args[key].(type) {
	case string:
		return v
	case float64:
		return strconv.FormatFloat(v, 'g', -1, 64)
	case nil:
		return ""
	default:
		return fmt.Sprint(v)
	}
}

// sortSpans orders spans by rank, track and start, an enclosing span
// before those it holds.
func sortSpans(s []Span) {
	sort.SliceStable(s, func(a, b int) bool {
		x, y := &s[a], &s[b]
		if x.Rank != y.Rank {
			return x.Rank < y.Rank
		}
		if x.Tid != y.Tid {
			return x.Tid < y.Tid
		}
		if x.Start != y.Start {
			return x.Start < y.Start
		}
		return x.End > y.End
	})
}

// isOpLike reports whether a span stands for an operation's part on its
// track: an operation, an NCCL kernel channel or proxy operation.
func isOpLike(s *Span) bool {
	return s.Cat == tef.CatOp || s.Cat == tef.CatKernel || s.Cat == tef.CatProxy
}

// resolveSeqs gives every span its operation. Operations on
// tef.RankTrack without a seq are numbered by their order on their rank
// (noted); other spans take the seq of the innermost operation-like span
// around them on their track, else of their rank's operation around
// their start.
func (t *Trace) resolveSeqs() {
	unnumbered := 0
	ord := map[int]int64{}
	for i := range t.Spans {
		s := &t.Spans[i]
		if s.Cat == tef.CatOp && s.Tid == tef.RankTrack && s.Seq < 0 {
			s.Seq = ord[s.Rank]
			unnumbered++
		}
		if s.Cat == tef.CatOp && s.Tid == tef.RankTrack {
			ord[s.Rank]++
		}
	}
	if unnumbered > 0 {
		t.Notes = append(t.Notes, fmt.Sprintf("%d operations have no seq arg: numbered by their order on their rank (0, 1, ...), so matched across ranks by that order", unnumbered))
	}
	rankOps := map[int][]*Span{}
	for i := range t.Spans {
		if s := &t.Spans[i]; s.Cat == tef.CatOp && s.Tid == tef.RankTrack {
			rankOps[s.Rank] = append(rankOps[s.Rank], s)
		}
	}
	// The spans around the current one on its track, outermost first.
	var stack []int
	track := tef.Track{Pid: -1, Tid: -1}
	for i := range t.Spans {
		s := &t.Spans[i]
		if tr := (tef.Track{Pid: s.Rank, Tid: s.Tid}); tr != track {
			track, stack = tr, stack[:0]
		}
		for len(stack) > 0 {
			top := &t.Spans[stack[len(stack)-1]]
			if top.End > s.Start+eps || top.End >= s.End {
				break
			}
			stack = stack[:len(stack)-1]
		}
		s.parent = -1
		if len(stack) > 0 {
			s.parent = stack[len(stack)-1]
		}
		if s.Seq < 0 {
			for k := len(stack) - 1; k >= 0; k-- {
				if o := &t.Spans[stack[k]]; isOpLike(o) && o.Seq >= 0 {
					s.Seq = o.Seq
					break
				}
			}
		}
		if s.Seq < 0 {
			for _, op := range rankOps[s.Rank] {
				if op.Start-eps <= s.Start && s.Start <= op.End+eps {
					s.Seq = op.Seq
					break
				}
			}
		}
		stack = append(stack, i)
	}
}

// within returns the innermost span of category cat around span i on its
// track (i itself excluded), nil when none.
func (t *Trace) within(i int, cat string) *Span {
	for p := t.Spans[i].parent; p >= 0; p = t.Spans[p].parent {
		if t.Spans[p].Cat == cat {
			return &t.Spans[p]
		}
	}
	return nil
}
