package tracestat

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/gccl/gccl/lib/tef"
)

// Args as JSON decodes them (float64), as strings, mistyped or missing:
// the known ones read, the rest as not said.
func TestArgsToleratesTypes(t *testing.T) {
	raw := `{"traceEvents":[
{"name":"allreduce","cat":"op","ph":"X","ts":0,"dur":10,"pid":0,"tid":1000,"args":{"seq":"5","bytes":64,"algo":"Ring","nchannels":2.5}},
{"name":"send","cat":"step","ph":"X","ts":1,"dur":5,"pid":0,"tid":0,"args":{"peer":"x","step":3,"proto":7}},
{"name":"wait","cat":"wait","ph":"X","ts":2,"dur":1,"pid":0,"tid":0},
{"name":"recv","cat":"step","ph":"X","ts":6,"dur":2,"pid":0,"tid":0,"args":{"peer":-4,"bytes":1.5,"seq":"nope"}}
]}`
	f, err := tef.Read(strings.NewReader(raw))
	if err != nil {
		t.Fatal(err)
	}
	tr, err := FromEvents(f.TraceEvents)
	if err != nil {
		t.Fatal(err)
	}
	want := []Span{
		{Name: "send", Cat: "step", Rank: 0, Tid: 0, Start: 1, End: 6, Seq: 5, Peer: -1, Bytes: -1, Step: 3, Proto: "7", parent: -1},
		{Name: "wait", Cat: "wait", Rank: 0, Tid: 0, Start: 2, End: 3, Seq: 5, Peer: -1, Bytes: -1, Step: -1, parent: 0},
		{Name: "recv", Cat: "step", Rank: 0, Tid: 0, Start: 6, End: 8, Seq: 5, Peer: -1, Bytes: -1, Step: -1, parent: -1},
		{Name: "allreduce", Cat: "op", Rank: 0, Tid: tef.RankTrack, Start: 0, End: 10, Seq: 5, Peer: -1, Bytes: 64, Step: -1, Algo: "Ring", parent: -1},
	}
	if len(tr.Spans) != len(want) {
		t.Fatalf("spans %+v", tr.Spans)
	}
	for i := range want {
		if tr.Spans[i] != want[i] {
			t.Errorf("span %d: %+v\nwant %+v", i, tr.Spans[i], want[i])
		}
	}
	w := tr.LongestWaits(1, -1)
	if len(w) != 1 || w[0].Peer != -1 || w[0].On != "" || w[0].Step != "send" || w[0].Op != "allreduce" {
		t.Errorf("wait %+v", w)
	}
	// Through JSON: the summary marshals (no NaN or Inf anywhere).
	s, err := tr.Summarize(Options{Op: -1, Top: 5})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := json.Marshal(s); err != nil {
		t.Errorf("summary does not marshal: %v", err)
	}
}

// Begin/end pairs are read as complete events; an unpaired end or an
// unended begin is an error, not a guess.
func TestBeginEnd(t *testing.T) {
	evs := []tef.Event{
		{Name: "allreduce", Cat: "op", Ph: "B", Ts: 0, Pid: 1, Tid: tef.RankTrack, Args: map[string]any{"seq": 2}},
		{Name: "send", Cat: "step", Ph: "B", Ts: 1, Pid: 1, Tid: tef.RankTrack},
		{Ph: "E", Ts: 4, Pid: 1, Tid: tef.RankTrack},
		{Ph: "E", Ts: 9, Pid: 1, Tid: tef.RankTrack},
	}
	tr, err := FromEvents(evs)
	if err != nil {
		t.Fatal(err)
	}
	ops := tr.Ops()
	if len(tr.Spans) != 2 || len(ops) != 1 || ops[0].Seq != 2 || ops[0].End != 9 || tr.Spans[1].Seq != 2 || tr.Spans[1].End != 4 {
		t.Errorf("spans %+v ops %+v", tr.Spans, ops)
	}
	if _, err := FromEvents(evs[:3]); err == nil || !strings.Contains(err.Error(), "never ended") {
		t.Errorf("an unended begin: %v", err)
	}
	if _, err := FromEvents(evs[2:]); err == nil || !strings.Contains(err.Error(), "no begin") {
		t.Errorf("a stray end: %v", err)
	}
}

// Operations without seq are numbered by their order on each rank, and
// a note says so.
func TestOpsWithoutSeq(t *testing.T) {
	var evs []tef.Event
	for r := 0; r < 2; r++ {
		for k := 0; k < 2; k++ {
			start := float64(10*k + r)
			evs = append(evs, tef.Event{Name: "bcast", Cat: "op", Ph: "X", Ts: start, Dur: 5, Pid: r, Tid: tef.RankTrack},
				tef.Event{Name: "copy", Cat: "step", Ph: "X", Ts: start + 1, Dur: 2, Pid: r, Tid: 0})
		}
	}
	tr := read(t, evs)
	ops := tr.Ops()
	if len(ops) != 2 || ops[0].Seq != 0 || ops[1].Seq != 1 || ops[1].Start != 10 || ops[1].End != 16 || len(ops[1].Ranks) != 2 {
		t.Errorf("ops %+v", ops)
	}
	if len(tr.Notes) != 1 || !strings.Contains(tr.Notes[0], "4 operations have no seq") {
		t.Errorf("notes %v", tr.Notes)
	}
	if ts := tr.TrackStats(1); len(ts) != 2 || ts[0].Busy != 2 {
		t.Errorf("tracks of op 1: %+v", ts)
	}
}

func TestIntervals(t *testing.T) {
	u := union([]interval{{5, 7}, {0, 2}, {1, 3}, {7, 8}, {10, 10}})
	if len(u) != 3 || u[0] != (interval{0, 3}) || u[1] != (interval{5, 8}) || length(u) != 6 {
		t.Errorf("union %v", u)
	}
	if o := overlap(u, union([]interval{{2, 6}, {7.5, 20}})); o != 2.5 {
		t.Errorf("overlap %v, want 2.5", o)
	}
	if union(nil) != nil || overlap(nil, u) != 0 {
		t.Error("empty")
	}
}
