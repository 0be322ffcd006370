// Package tef is the Trace Event Format (the JSON that chrome://tracing and
// Perfetto open) as gccl writes it: the event type, a reader and a writer,
// the format's rules as a validator, and the merge of per-process files.
//
// gccl's conventions, shared by the embedded stack's recorder and the NCCL
// profiler plugin, so that one reader (tune trace) reads both:
//   - one process per rank: pid is the global rank;
//   - one track per channel: tid is the channel index; tid RankTrack holds
//     what belongs to the rank as a whole (an operation from its call to its
//     completion on this rank);
//   - complete events ("ph":"X", ts and dur in microseconds on the grid of
//     1/1024 us, see Micros) of the categories below, nested by time on
//     their track: an operation holds its steps, a step holds its waits;
//   - args name the operation (seq: the same on every rank for one
//     operation), the peer (the rank a step talks to, or a wait waits on),
//     the bytes, the protocol and the algorithm.
package tef

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"os"
	"sort"
)

// Categories of gccl's events.
const (
	CatOp     = "op"     // an operation: its part on a channel, or on RankTrack the whole of it
	CatStep   = "step"   // a step of an operation: send, recv, reduce, copy, ...
	CatWait   = "wait"   // a wait inside a step or an operation: for a peer's head or tail, a flag, a barrier
	CatKernel = "kernel" // NCCL: a kernel's channel
	CatProxy  = "proxy"  // NCCL: a proxy operation (its steps are CatStep)
	CatGroup  = "group"  // a group of operations
)

// RankTrack is the tid of the track that holds a rank's operations as a
// whole; channels are the tids 0, 1, ...
const RankTrack = 1000

// Args keys gccl's events use.
const (
	ArgSeq       = "seq"       // int: the operation's sequence number in its communicator, equal on every rank
	ArgPeer      = "peer"      // int: the rank a step talks to or a wait waits on (-1: none, or several)
	ArgBytes     = "bytes"     // int: bytes of the operation or step
	ArgProto     = "proto"     // string: Simple, LL, LL128
	ArgAlgo      = "algo"      // string: Ring, Tree, OneShot, ...
	ArgOn        = "on"        // string: what a wait waits for: head, tail, flag, barrier, other
	ArgChannels  = "nchannels" // int: channels an operation runs on
	ArgStep      = "step"      // int: the step's index in its operation on its channel
	ArgWhat      = "what"      // string: a wait's own description
	ArgCollKind  = "coll"      // string: a step's operation name, when the step is not inside one
	ArgNcclEvent = "nccl"      // string: the NCCL profiler event type a plugin event came from
	ArgFrom      = "from"      // int: the rank a step receives from, when it sends too (peer is then the rank it sends to)
	ArgQueued    = "queued"    // float: microseconds an operation waited after its call for the ones before it (RankTrack)
)

// Event is one trace event. Timestamps are microseconds (the format's
// unit); gccl writes them on the grid of Micros.
type Event struct {
	Name string         `json:"name"`
	Cat  string         `json:"cat,omitempty"`
	Ph   string         `json:"ph"`
	Ts   float64        `json:"ts"`
	Dur  float64        `json:"dur,omitempty"`
	Pid  int            `json:"pid"`
	Tid  int            `json:"tid"`
	ID   string         `json:"id,omitempty"`
	S    string         `json:"s,omitempty"` // scope of an instant event: g, p or t
	Args map[string]any `json:"args,omitempty"`
}

// End is the event's end in microseconds (ts for all but complete events).
func (e *Event) End() float64 { return e.Ts + e.Dur }

// File is a trace in the JSON Object Format.
type File struct {
	TraceEvents     []Event        `json:"traceEvents"`
	DisplayTimeUnit string         `json:"displayTimeUnit,omitempty"`
	OtherData       map[string]any `json:"otherData,omitempty"`
}

// GridPerMicro is the fineness of the timestamps gccl writes: multiples of
// 1/GridPerMicro us (0.98 ns). Such numbers are exact binary fractions, so
// a viewer that adds ts and dur in floating point (speedscope does, in
// JavaScript) lands exactly on the next event's ts where the two touch;
// with nanosecond decimals (0.622 us is no binary fraction) it lands an
// ulp off, and sees events that overlap without nesting.
const GridPerMicro = 1024

// Micros converts nanoseconds to the format's microseconds, on the grid:
// the nearest multiple of 1/GridPerMicro us.
func Micros(ns int64) float64 { return float64(gridTicks(ns)) / GridPerMicro }

// gridTicks is ns in grid units, rounded to the nearest (ns * 1024/1000 =
// ns * 128/125, split so that it cannot overflow).
func gridTicks(ns int64) int64 {
	q, r := ns/125, ns%125
	t := q*128 + (r*128+62)/125
	if r < 0 {
		t = q*128 + (r*128-62)/125
	}
	return t
}

// OnGrid rounds microseconds to the grid.
func OnGrid(us float64) float64 { return math.Round(us*GridPerMicro) / GridPerMicro }

// Complete returns a complete event ("X") from start to start+dur, in
// nanoseconds. Its end (Event.End) is exactly Micros(startNs+durNs), as
// the start of an event that begins there is.
func Complete(name, cat string, pid, tid int, startNs, durNs int64, args map[string]any) Event {
	ts := Micros(startNs)
	return Event{Name: name, Cat: cat, Ph: "X", Ts: ts, Dur: Micros(startNs+durNs) - ts, Pid: pid, Tid: tid, Args: args}
}

// ProcessName and ThreadName are the metadata events that name a pid's
// process and a (pid, tid)'s track in the viewers.
func ProcessName(pid int, name string) Event {
	return Event{Name: "process_name", Ph: "M", Pid: pid, Args: map[string]any{"name": name}}
}

// ThreadName names the track (pid, tid).
func ThreadName(pid, tid int, name string) Event {
	return Event{Name: "thread_name", Ph: "M", Pid: pid, Tid: tid, Args: map[string]any{"name": name}}
}

// SortIndex orders the track (pid, tid) in the viewers.
func SortIndex(pid, tid, index int) Event {
	return Event{Name: "thread_sort_index", Ph: "M", Pid: pid, Tid: tid, Args: map[string]any{"sort_index": index}}
}

// Write writes f as JSON, one event a line (diffable, and streamable by
// line-oriented tools), its timestamps on the grid (Micros): an event read
// from another tool's file, or shifted by a merge, is rounded to it, its
// end to the grid point nearest its own end (where ends met starts in
// nanosecond decimals, they meet exactly on the grid for timestamps up to
// about 1e10 us, whose float errors stay far below the grid's spacing).
func Write(w io.Writer, f *File) error {
	bw := bufio.NewWriter(w)
	if _, err := io.WriteString(bw, "{\"traceEvents\":[\n"); err != nil {
		return err
	}
	for i := range f.TraceEvents {
		e := f.TraceEvents[i]
		if end := OnGrid(e.End()); e.Ph == "X" {
			e.Ts = OnGrid(e.Ts)
			e.Dur = end - e.Ts
		} else {
			e.Ts = OnGrid(e.Ts)
		}
		b, err := json.Marshal(&e)
		if err != nil {
			return fmt.Errorf("trace event %d (%s): %w", i, f.TraceEvents[i].Name, err)
		}
		if i > 0 {
			bw.WriteString(",\n")
		}
		bw.Write(b)
	}
	bw.WriteString("\n]")
	unit := f.DisplayTimeUnit
	if unit == "" {
		unit = "ns"
	}
	fmt.Fprintf(bw, ",\"displayTimeUnit\":%q", unit)
	if len(f.OtherData) > 0 {
		b, err := json.Marshal(f.OtherData)
		if err != nil {
			return fmt.Errorf("trace otherData: %w", err)
		}
		bw.WriteString(",\"otherData\":")
		bw.Write(b)
	}
	bw.WriteString("}\n")
	return bw.Flush()
}

// WriteFile writes f to path.
func WriteFile(path string, f *File) error {
	out, err := os.Create(path)
	if err != nil {
		return err
	}
	if err := Write(out, f); err != nil {
		out.Close()
		return fmt.Errorf("write trace %s: %w", path, err)
	}
	return out.Close()
}

// Read reads a trace in the JSON Object Format, or the JSON Array Format
// (a bare array of events) that some tools write.
func Read(r io.Reader) (*File, error) {
	data, err := io.ReadAll(r)
	if err != nil {
		return nil, err
	}
	i := 0
	for i < len(data) && (data[i] == ' ' || data[i] == '\n' || data[i] == '\r' || data[i] == '\t') {
		i++
	}
	if i < len(data) && data[i] == '[' {
		var evs []Event
		if err := json.Unmarshal(data, &evs); err != nil {
			return nil, fmt.Errorf("not a trace (a JSON array of events): %w", err)
		}
		return &File{TraceEvents: evs}, nil
	}
	var f File
	if err := json.Unmarshal(data, &f); err != nil {
		return nil, fmt.Errorf("not a trace (a JSON object with traceEvents): %w", err)
	}
	if f.TraceEvents == nil {
		return nil, fmt.Errorf("not a trace: the JSON object has no traceEvents array")
	}
	return &f, nil
}

// ReadFile reads the trace at path.
func ReadFile(path string) (*File, error) {
	in, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer in.Close()
	f, err := Read(in)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return f, nil
}

// Track is one (pid, tid) track.
type Track struct{ Pid, Tid int }

// epsilon is the slack, in microseconds, of the nesting rules: a
// nanosecond, the precision gccl writes.
const epsilon = 1e-3

// metadataNames are the metadata events the viewers know.
var metadataNames = map[string]bool{
	"process_name": true, "process_labels": true, "process_sort_index": true,
	"thread_name": true, "thread_sort_index": true,
}

// Validate checks f against the format's rules, as the viewers apply them
// and as gccl's reader relies on them: known phases; finite timestamps;
// complete events of non-negative duration; begin/end events paired by
// name on their track; per track, events in non-decreasing time order in
// the file; and complete events that nest (one that starts inside another
// ends inside it too). It returns every problem found (at most 20), nil
// when there is none.
func Validate(f *File) []error {
	var errs []error
	add := func(format string, a ...any) {
		if len(errs) < 20 {
			errs = append(errs, fmt.Errorf(format, a...))
		}
	}
	if f == nil {
		return []error{fmt.Errorf("no trace")}
	}
	switch f.DisplayTimeUnit {
	case "", "ms", "ns":
	default:
		add("displayTimeUnit %q: valid are \"ms\" and \"ns\"", f.DisplayTimeUnit)
	}
	type open struct {
		name string
		end  float64 // complete events: their end; begin events: +Inf
		ph   string
		idx  int
	}
	stacks := map[Track][]open{}
	last := map[Track]float64{}
	for i := range f.TraceEvents {
		e := &f.TraceEvents[i]
		if math.IsNaN(e.Ts) || math.IsInf(e.Ts, 0) {
			add("event %d (%s): ts %v is not a finite number", i, e.Name, e.Ts)
			continue
		}
		switch e.Ph {
		case "M":
			if !metadataNames[e.Name] {
				add("event %d: metadata %q: valid names are process_name, process_labels, process_sort_index, thread_name, thread_sort_index", i, e.Name)
			}
			if e.Args == nil {
				add("event %d: metadata %q has no args", i, e.Name)
			}
			continue
		case "X", "B", "E", "i", "I", "C":
		default:
			add("event %d (%s): phase %q: gccl writes X, B, E, i, I, C and M", i, e.Name, e.Ph)
			continue
		}
		if e.Name == "" && e.Ph != "E" {
			add("event %d: no name", i)
		}
		tr := Track{e.Pid, e.Tid}
		if prev, ok := last[tr]; ok && e.Ts < prev-epsilon {
			add("event %d (%s) on pid %d tid %d: ts %.3f before the track's previous event at %.3f (timestamps must not go back on a track)", i, e.Name, e.Pid, e.Tid, e.Ts, prev)
		}
		last[tr] = e.Ts
		st := stacks[tr]
		// Close what ended before this event starts.
		for len(st) > 0 && st[len(st)-1].ph == "X" && st[len(st)-1].end <= e.Ts+epsilon {
			st = st[:len(st)-1]
		}
		switch e.Ph {
		case "X":
			if math.IsNaN(e.Dur) || math.IsInf(e.Dur, 0) || e.Dur < 0 {
				add("event %d (%s): dur %v: a complete event needs a finite duration >= 0", i, e.Name, e.Dur)
				break
			}
			if len(st) > 0 && st[len(st)-1].ph == "X" && e.End() > st[len(st)-1].end+epsilon {
				top := st[len(st)-1]
				add("event %d (%s, %.3f-%.3f) on pid %d tid %d overlaps event %d (%s, ends %.3f) without nesting in it", i, e.Name, e.Ts, e.End(), e.Pid, e.Tid, top.idx, top.name, top.end)
				break
			}
			st = append(st, open{e.Name, e.End(), "X", i})
		case "B":
			st = append(st, open{e.Name, math.Inf(1), "B", i})
		case "E":
			if len(st) == 0 || st[len(st)-1].ph != "B" {
				add("event %d (E %s) on pid %d tid %d: no open begin event to end", i, e.Name, e.Pid, e.Tid)
				break
			}
			if e.Name != "" && e.Name != st[len(st)-1].name {
				add("event %d (E %s) on pid %d tid %d ends %q (event %d)", i, e.Name, e.Pid, e.Tid, st[len(st)-1].name, st[len(st)-1].idx)
			}
			st = st[:len(st)-1]
		}
		stacks[tr] = st
	}
	tracks := make([]Track, 0, len(stacks))
	for tr := range stacks {
		tracks = append(tracks, tr)
	}
	sort.Slice(tracks, func(a, b int) bool {
		if tracks[a].Pid != tracks[b].Pid {
			return tracks[a].Pid < tracks[b].Pid
		}
		return tracks[a].Tid < tracks[b].Tid
	})
	for _, tr := range tracks {
		for _, o := range stacks[tr] {
			if o.ph == "B" {
				add("event %d (B %s) on pid %d tid %d is never ended", o.idx, o.name, tr.Pid, tr.Tid)
			}
		}
	}
	return errs
}

// Merge joins per-process traces into one: their events (each file's
// order kept, files in the order given) and their otherData under
// "files". Two files with events of one pid (a rank traced twice) are an
// error: their timelines would interleave on one track.
func Merge(files []*File) (*File, error) {
	out := &File{DisplayTimeUnit: "ns"}
	owner := map[int]int{}
	var others []any
	for k, f := range files {
		for i := range f.TraceEvents {
			pid := f.TraceEvents[i].Pid
			if o, ok := owner[pid]; ok && o != k {
				return nil, fmt.Errorf("merge: pid %d (a rank) is in trace %d and trace %d: trace each rank once", pid, o+1, k+1)
			}
			owner[pid] = k
		}
		out.TraceEvents = append(out.TraceEvents, f.TraceEvents...)
		if f.OtherData != nil {
			others = append(others, f.OtherData)
		}
	}
	if len(others) > 0 {
		out.OtherData = map[string]any{"files": others}
	}
	return out, nil
}

// SortForTracks orders events so that Validate's track rules hold for
// events that nest: metadata first, then by pid, tid and start, and an
// event before the ones it contains (longer first at one start).
func SortForTracks(evs []Event) {
	sort.SliceStable(evs, func(a, b int) bool {
		x, y := &evs[a], &evs[b]
		if (x.Ph == "M") != (y.Ph == "M") {
			return x.Ph == "M"
		}
		if x.Pid != y.Pid {
			return x.Pid < y.Pid
		}
		if x.Tid != y.Tid {
			return x.Tid < y.Tid
		}
		if x.Ts != y.Ts {
			return x.Ts < y.Ts
		}
		return x.Dur > y.Dur
	})
}
