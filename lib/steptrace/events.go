package steptrace

import (
	"fmt"
	"time"

	"github.com/gccl/gccl/lib/tef"
)

// Events converts a rank's records to trace events (pid: the rank; tid:
// the channel, or tef.RankTrack for the calls), their times shifted by
// offsetNs (the clock alignment of a process of a job: 0 in process 0),
// with the metadata that names the process and its tracks. The events are
// in record order; File sorts them for the format's track rules.
func (s *Snapshot) Events(offsetNs int64) []tef.Event {
	pid := s.Rank
	evs := []tef.Event{
		tef.ProcessName(pid, fmt.Sprintf("rank %d", pid)),
		tef.ThreadName(pid, tef.RankTrack, fmt.Sprintf("rank %d calls", pid)),
		tef.SortIndex(pid, tef.RankTrack, -1), // above the channels
	}
	for ch := range s.Channels {
		evs = append(evs, tef.ThreadName(pid, ch, fmt.Sprintf("channel %d", ch)))
	}
	for i := range s.Calls {
		evs = append(evs, event(&s.Calls[i], pid, tef.RankTrack, offsetNs))
	}
	for ch, recs := range s.Channels {
		for i := range recs {
			evs = append(evs, event(&recs[i], pid, ch, offsetNs))
		}
	}
	return evs
}

// event is one record as a complete event.
func event(r *Record, pid, tid int, offsetNs int64) tef.Event {
	start, dur := r.Start+offsetNs, r.End-r.Start
	switch r.Kind {
	case KindOp:
		args := map[string]any{tef.ArgSeq: r.Seq, tef.ArgBytes: r.Bytes, tef.ArgChannels: int(r.Index)}
		if r.Algo != "" {
			args[tef.ArgAlgo] = r.Algo
		}
		if r.Proto != "" {
			args[tef.ArgProto] = r.Proto
		}
		if tid == tef.RankTrack {
			args[tef.ArgQueued] = tef.Micros(r.Queued)
		}
		return tef.Complete(r.Name, tef.CatOp, pid, tid, start, dur, args)
	case KindStep:
		// peer is the rank the step sends to, else the one it receives
		// from; from is set beside a peer it sends to.
		args := map[string]any{tef.ArgSeq: r.Seq, tef.ArgBytes: r.Bytes, tef.ArgProto: r.Proto, tef.ArgStep: int(r.Index)}
		switch {
		case r.To >= 0:
			args[tef.ArgPeer] = int(r.To)
			if r.From >= 0 {
				args[tef.ArgFrom] = int(r.From)
			}
		default:
			args[tef.ArgPeer] = int(r.From)
		}
		return tef.Complete(r.Name, tef.CatStep, pid, tid, start, dur, args)
	default:
		args := map[string]any{tef.ArgSeq: r.Seq, tef.ArgPeer: int(r.To), tef.ArgOn: r.On.String()}
		if r.What != "" {
			args[tef.ArgWhat] = r.What
		}
		return tef.Complete(WaitName(r.On, int(r.To)), tef.CatWait, pid, tid, start, dur, args)
	}
}

// WaitName is a wait event's name: "wait peer tail" for a wait on one
// peer's FIFO tail, "wait barrier" for one on every rank, and so on.
func WaitName(on On, peer int) string {
	if peer >= 0 && on != OnBarrier && on != OnOther {
		return "wait peer " + on.String()
	}
	return "wait " + on.String()
}

// Clock is how a process's trace clock was aligned with process 0's:
// OffsetNs was added to its times, and the alignment is good to within
// BoundNs either way.
type Clock struct {
	Process  int
	OffsetNs int64
	BoundNs  int64
	Method   string
}

// File builds the trace of ranks' snapshots, their times shifted by
// clock.OffsetNs, sorted for the format's track rules. Its otherData
// says how it was recorded: the recorder, each track's capacity, the
// records dropped by full tracks (per rank), the trace clock's epoch and
// the clock alignment; extra adds keys of the caller's.
func File(snaps []Snapshot, clock Clock, extra map[string]any) *tef.File {
	var evs []tef.Event
	dropped := map[string]int64{}
	capacity := 0
	for i := range snaps {
		evs = append(evs, snaps[i].Events(clock.OffsetNs)...)
		dropped[fmt.Sprint(snaps[i].Rank)] = snaps[i].Dropped
		capacity = max(capacity, snaps[i].Capacity)
	}
	tef.SortForTracks(evs)
	other := map[string]any{
		"recorder":       "gccl steptrace (embedded stack)",
		"track_capacity": capacity,
		"dropped":        dropped,
		"epoch":          Epoch().Format(time.RFC3339Nano),
		"clock": map[string]any{
			"process": clock.Process, "offset_ns": clock.OffsetNs, "bound_ns": clock.BoundNs, "method": clock.Method,
		},
	}
	for k, v := range extra {
		other[k] = v
	}
	return &tef.File{TraceEvents: evs, DisplayTimeUnit: "ns", OtherData: other}
}
