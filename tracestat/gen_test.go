package tracestat

import (
	"fmt"
	"math"
	"testing"

	"github.com/gccl/gccl/lib/tef"
)

// Builders of synthetic traces, times in microseconds.

func opEv(name string, rank, tid int, seq int64, start, end float64) tef.Event {
	return tef.Event{Name: name, Cat: tef.CatOp, Ph: "X", Ts: start, Dur: end - start, Pid: rank, Tid: tid,
		Args: map[string]any{tef.ArgSeq: seq, tef.ArgBytes: 4096, tef.ArgAlgo: "Ring", tef.ArgProto: "Simple", tef.ArgChannels: 1}}
}

func stepEv(name string, rank, tid, peer int, start, end float64) tef.Event {
	return tef.Event{Name: name, Cat: tef.CatStep, Ph: "X", Ts: start, Dur: end - start, Pid: rank, Tid: tid,
		Args: map[string]any{tef.ArgPeer: peer, tef.ArgBytes: 1024, tef.ArgProto: "Simple"}}
}

func waitEv(rank, tid, peer int, on string, start, end float64) tef.Event {
	return tef.Event{Name: "wait " + on, Cat: tef.CatWait, Ph: "X", Ts: start, Dur: end - start, Pid: rank, Tid: tid,
		Args: map[string]any{tef.ArgPeer: peer, tef.ArgOn: on}}
}

// read validates the events as tef does and reads them.
func read(t *testing.T, evs []tef.Event) *Trace {
	t.Helper()
	f := &tef.File{TraceEvents: evs}
	tef.SortForTracks(f.TraceEvents)
	if errs := tef.Validate(f); errs != nil {
		t.Fatalf("the synthetic trace is not valid: %v", errs)
	}
	tr, err := FromEvents(f.TraceEvents)
	if err != nil {
		t.Fatal(err)
	}
	return tr
}

// chain3 is three ranks on one channel, each waiting on the one before:
// rank 0 sends for 10 us; rank 1 waits on it until 12 (2 us of latency),
// then works to 20 and sends to rank 2 until 30; rank 2 waits on rank 1
// until 31, then works to 40. The critical path is rank 0 [0,10], the
// signal [10,12], rank 1 [12,30], the signal [30,31], rank 2 [31,40].
func chain3() []tef.Event {
	const seq = 7
	return []tef.Event{
		tef.ProcessName(0, "rank 0"), tef.ThreadName(0, 0, "channel 0"),
		opEv("allreduce", 0, tef.RankTrack, seq, 0, 10), opEv("allreduce", 0, 0, seq, 0, 10),
		stepEv("send", 0, 0, 1, 0, 10),

		opEv("allreduce", 1, tef.RankTrack, seq, 0, 30), opEv("allreduce", 1, 0, seq, 0, 30),
		stepEv("recv", 1, 0, 0, 0, 20), waitEv(1, 0, 0, "tail", 0, 12),
		stepEv("send", 1, 0, 2, 20, 30),

		opEv("allreduce", 2, tef.RankTrack, seq, 0, 40), opEv("allreduce", 2, 0, seq, 0, 40),
		stepEv("recv", 2, 0, 1, 0, 40), waitEv(2, 0, 1, "tail", 0, 31),
	}
}

// ring simulates a ring allreduce on n ranks and one channel, ops times:
// rank r arrives at arrive[r]; at step k it waits for the data its
// predecessor sent at step k-1 (ready lat us after that step's end), then
// works work[r] us. Steps talk to the next rank (the last receives from
// the previous). It returns the events and each rank's end.
func ring(n, ops int, arrive, work []float64, lat float64) ([]tef.Event, [][]float64) {
	steps := 2 * (n - 1)
	var evs []tef.Event
	for r := 0; r < n; r++ {
		evs = append(evs, tef.ProcessName(r, fmt.Sprintf("rank %d", r)), tef.ThreadName(r, 0, "channel 0"))
	}
	ends := make([][]float64, ops)
	t0 := 0.0
	for o := 0; o < ops; o++ {
		seq := int64(o)
		fin := make([][]float64, n) // fin[r][k]: end of rank r's step k
		for r := range fin {
			fin[r] = make([]float64, steps)
		}
		cur := make([]float64, n)
		for r := range cur {
			cur[r] = t0 + arrive[r]
		}
		for k := 0; k < steps; k++ {
			for r := 0; r < n; r++ {
				prev, next := (r+n-1)%n, (r+1)%n
				s := cur[r]
				ready := s
				if k > 0 {
					ready = math.Max(s, fin[prev][k-1]+lat)
				}
				name, peer := stepName(k, n), next
				if k == steps-1 {
					peer = prev
				}
				fin[r][k] = ready + work[r]
				evs = append(evs, stepEv(name, r, 0, peer, s, fin[r][k]))
				if ready > s {
					evs = append(evs, waitEv(r, 0, prev, "tail", s, ready))
				}
				cur[r] = fin[r][k]
			}
		}
		ends[o] = make([]float64, n)
		last := 0.0
		for r := 0; r < n; r++ {
			ends[o][r] = cur[r]
			evs = append(evs, opEv("allreduce", r, tef.RankTrack, seq, t0+arrive[r], cur[r]), opEv("allreduce", r, 0, seq, t0+arrive[r], cur[r]))
			last = math.Max(last, cur[r])
		}
		t0 = last + 5
	}
	return evs, ends
}

func stepName(k, n int) string {
	switch {
	case k == 0:
		return "send"
	case k < n-1:
		return "recvReduceSend"
	case k == n-1:
		return "recvReduceCopySend"
	case k < 2*(n-1)-1:
		return "recvCopySend"
	}
	return "recv"
}

// ncclLike is a two-rank trace shaped as the NCCL profiler plugin writes
// it: the collective on RankTrack (seq 1), a kernel per channel (tids 0
// and 1, no seq), proxy operations on tracks of their own ("proxy ch C",
// tid 100+C) holding proxy steps with peers but no waits, a group
// around the collective, and an event of a category tracestat does not
// know, and an instant event.
func ncclLike() []tef.Event {
	kernel := func(rank, ch int, start, end float64) tef.Event {
		return tef.Event{Name: "KernelCh", Cat: tef.CatKernel, Ph: "X", Ts: start, Dur: end - start, Pid: rank, Tid: ch, Args: map[string]any{"channel": ch, tef.ArgNcclEvent: "KernelCh"}}
	}
	proxy := func(rank, ch, peer int, start, end float64) tef.Event {
		return tef.Event{Name: "ProxyOp send", Cat: tef.CatProxy, Ph: "X", Ts: start, Dur: end - start, Pid: rank, Tid: 100 + ch, Args: map[string]any{tef.ArgPeer: peer, tef.ArgNcclEvent: "ProxyOp"}}
	}
	pstep := func(rank, ch, peer, step int, start, end float64) tef.Event {
		return tef.Event{Name: "ProxyStep", Cat: tef.CatStep, Ph: "X", Ts: start, Dur: end - start, Pid: rank, Tid: 100 + ch, Args: map[string]any{tef.ArgPeer: peer, tef.ArgStep: step, tef.ArgNcclEvent: "ProxyStep"}}
	}
	var evs []tef.Event
	for r := 0; r < 2; r++ {
		peer := 1 - r
		off := float64(r) // rank 1 is 1 us later in everything
		evs = append(evs,
			tef.ProcessName(r, fmt.Sprintf("rank %d", r)),
			tef.ThreadName(r, 100, "proxy ch 0"), tef.ThreadName(r, 101, "proxy ch 1"),
			tef.Event{Name: "Group", Cat: tef.CatGroup, Ph: "X", Ts: off, Dur: 60, Pid: r, Tid: tef.RankTrack},
			tef.Event{Name: "AllReduce", Cat: tef.CatOp, Ph: "X", Ts: 2 + off, Dur: 50, Pid: r, Tid: tef.RankTrack,
				Args: map[string]any{tef.ArgSeq: 1.0, tef.ArgBytes: 1048576.0, tef.ArgAlgo: "Ring", tef.ArgProto: "Simple", tef.ArgChannels: 2.0, tef.ArgNcclEvent: "Coll"}},
			kernel(r, 0, 5+off, 45+off), kernel(r, 1, 5+off, 40+off),
			proxy(r, 0, peer, 10+off, 40+off), pstep(r, 0, peer, 0, 10+off, 20+off), pstep(r, 0, peer, 1, 25+off, 35+off),
			proxy(r, 1, peer, 10+off, 30+off), pstep(r, 1, peer, 0, 12+off, 22+off),
			tef.Event{Name: "NetPlugin", Cat: "net", Ph: "X", Ts: 14 + off, Dur: 2, Pid: r, Tid: 200},
			tef.Event{Name: "mark", Ph: "i", S: "t", Ts: 3 + off, Pid: r, Tid: tef.RankTrack},
		)
	}
	return evs
}
