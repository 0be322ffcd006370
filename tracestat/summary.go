package tracestat

import (
	"fmt"
	"sort"

	"github.com/gccl/gccl/lib/tef"
)

// Summary is everything tune trace reports, as one value (its --json).
type Summary struct {
	Ranks   int            `json:"ranks"`
	Events  int            `json:"spans"`
	Skipped map[string]int `json:"skipped,omitempty"`
	Notes   []string       `json:"notes,omitempty"`
	Ops     []Op           `json:"ops"`
	Tracks  []TrackStat    `json:"tracks"`
	PerRank []RankStat     `json:"per_rank"`
	Waits   []Wait         `json:"longest_waits"`
	// Stragglers is each operation's; Blame the sums per rank.
	Stragglers []OpStraggler `json:"stragglers"`
	Blame      []RankBlame   `json:"blame"`
	// Path is the critical path of the chosen operation (Options.Op, else
	// the slowest); nil when the trace has no operation.
	Path *Path `json:"critical_path,omitempty"`
}

// Options choose what Summarize reports.
type Options struct {
	// Op is the seq of the operation whose critical path to walk; -1: the
	// slowest.
	Op int64
	// Top is how many of the longest waits to list.
	Top int
}

// Summarize reports on the whole trace: its operations, tracks, longest
// waits, stragglers, and the critical path of one operation. An Op that
// is not in the trace is an error naming the seqs it has.
func (t *Trace) Summarize(o Options) (*Summary, error) {
	s := &Summary{Events: len(t.Spans), Notes: t.Notes, Ops: t.Ops(), Tracks: t.TrackStats(-1), PerRank: t.RankStats(-1), Waits: t.LongestWaits(o.Top, -1)}
	if len(t.Skipped) > 0 {
		s.Skipped = t.Skipped
	}
	s.Ranks = len(t.Ranks())
	s.Stragglers, s.Blame = t.Stragglers()
	seq := o.Op
	if seq < 0 {
		var ok bool
		if seq, ok = t.Slowest(); !ok {
			return s, nil
		}
	}
	p, err := t.CriticalPath(seq)
	if err != nil {
		return nil, err
	}
	s.Path = p
	return s, nil
}

// Ranks lists the ranks (pids) with spans, in order.
func (t *Trace) Ranks() []int {
	seen := map[int]bool{}
	var out []int
	for i := range t.Spans {
		if r := t.Spans[i].Rank; !seen[r] {
			seen[r] = true
			out = append(out, r)
		}
	}
	sort.Ints(out)
	return out
}

// TrackSpans is one track's spans of an operation, for a timeline.
type TrackSpans struct {
	Rank  int
	Tid   int
	Label string
	Spans []Span // in start order, an enclosing span first
}

// Timeline returns the tracks of operation seq that hold steps, waits or
// operation-like spans other than the rank's whole operation: the rows of
// a timeline, by rank and tid (tef.RankTrack last of a rank, and only
// when it holds steps or waits).
func (t *Trace) Timeline(seq int64) ([]TrackSpans, error) {
	var out []TrackSpans
	for i := range t.Spans {
		s := &t.Spans[i]
		if s.Seq != seq {
			continue
		}
		if n := len(out); n == 0 || out[n-1].Rank != s.Rank || out[n-1].Tid != s.Tid {
			out = append(out, TrackSpans{Rank: s.Rank, Tid: s.Tid, Label: fmt.Sprintf("r%d %s", s.Rank, t.TrackLabel(s.Rank, s.Tid))})
		}
		out[len(out)-1].Spans = append(out[len(out)-1].Spans, *s)
	}
	keep := out[:0]
	for _, tr := range out {
		if tr.Tid != tef.RankTrack || hasStepOrWait(tr.Spans) {
			keep = append(keep, tr)
		}
	}
	if len(keep) == 0 {
		keep = out // an operation without steps: its ranks' operations
	}
	if len(keep) == 0 {
		return nil, fmt.Errorf("operation seq %d has no spans to draw (%s)", seq, seqRange(t.Ops()))
	}
	return keep, nil
}

func hasStepOrWait(spans []Span) bool {
	for _, s := range spans {
		if s.Cat == tef.CatStep || s.Cat == tef.CatWait {
			return true
		}
	}
	return false
}
