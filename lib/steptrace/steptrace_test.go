package steptrace

import (
	"testing"

	"github.com/gccl/gccl/lib/tef"
)

// TestFullTrackDropsAndCounts: a full track keeps its first records and
// counts the rest; Reset empties it and its count, keeping its memory.
func TestFullTrackDropsAndCounts(t *testing.T) {
	b := NewBuf(chunkLen + 5) // two chunks
	b.BeginOp(7)
	for range chunkLen + 20 {
		b.Step("send", "LL", 1, -1, 8)
	}
	if b.Len() != chunkLen+5 || b.Dropped() != 15 {
		t.Fatalf("kept %d, dropped %d: want %d and 15", b.Len(), b.Dropped(), chunkLen+5)
	}
	recs := b.Records(nil)
	if len(recs) != chunkLen+5 || recs[0].Index != 0 || recs[len(recs)-1].Index != chunkLen+4 || recs[3].Seq != 7 {
		t.Fatalf("records %d, first index %d, last %d, seq %d: want the first %d of operation 7", len(recs), recs[0].Index, recs[len(recs)-1].Index, recs[3].Seq, chunkLen+5)
	}
	chunks := len(b.chunks)
	b.Reset()
	if b.Len() != 0 || b.Dropped() != 0 || len(b.chunks) != chunks {
		t.Fatalf("after Reset: %d records, %d dropped, %d chunks: want 0, 0, %d", b.Len(), b.Dropped(), len(b.chunks), chunks)
	}
	if NewBuf(0).Capacity() != DefaultCapacity {
		t.Errorf("NewBuf(0) keeps %d records, want DefaultCapacity", NewBuf(0).Capacity())
	}
}

// TestStepsChainFromTheirOperation: a step starts where the one before
// it ended, the first where its operation began; the operation holds them.
func TestStepsChainFromTheirOperation(t *testing.T) {
	b := NewBuf(16)
	begin := b.BeginOp(3)
	b.Step("send", "Simple", 1, -1, 100)
	b.NameWait(OnHead, 1)
	b.Wait("credits", Now(), Now())
	b.Step("recvReduceSend", "Simple", 1, 2, 100)
	b.Op(&OpInfo{Name: "allreduce", Seq: 3}, begin)
	r := b.Records(nil)
	if len(r) != 4 {
		t.Fatalf("%d records, want 4", len(r))
	}
	if r[0].Start != begin || r[2].Start != r[0].End || r[2].Index != 1 {
		t.Errorf("steps from %d-%d and %d-%d (index %d): want the first from the operation's begin %d, the second from the first's end", r[0].Start, r[0].End, r[2].Start, r[2].End, r[2].Index, begin)
	}
	if r[3].Start != begin || r[3].End < r[2].End || r[1].Start < r[0].End {
		t.Errorf("operation %d-%d does not hold its steps (last ends %d)", r[3].Start, r[3].End, r[2].End)
	}
}

// TestFileFollowsTheConventions: a rank's records become a valid trace of
// one process per rank, channels and the calls track named, with the
// args gccl's reader expects and the drops in otherData.
func TestFileFollowsTheConventions(t *testing.T) {
	r := NewRank(2, 2, 8)
	called := Now()
	begin := r.Channels[1].BeginOp(5)
	r.Channels[1].Step("recvCopySend", "LL128", 0, 1, 64)
	w0 := Now()
	r.Channels[1].NameWait(OnFlag, 1)
	r.Channels[1].Wait("rank 1's data", w0, Now())
	r.Channels[1].Step("recv", "LL128", -1, 1, 64)
	r.Channels[1].Op(&OpInfo{Name: "broadcast", Algo: "Ring", Proto: "LL128", Seq: 5, Bytes: 128, Channels: 2}, begin)
	r.Calls.OpAt(&OpInfo{Name: "broadcast", Seq: 5, Bytes: 256, Channels: 2}, called, Now(), 0)
	for range 10 {
		r.Calls.OpAt(&OpInfo{Name: "broadcast", Seq: 6}, Now(), Now(), 0) // 7 fit, 3 drop
	}
	s := r.Snapshot()
	f := File([]Snapshot{s}, Clock{OffsetNs: 1000, BoundNs: 50, Method: "test"}, map[string]any{"run": "x"})
	for _, err := range tef.Validate(f) {
		t.Error(err)
	}
	names := map[[2]int]string{}
	var step, wait, op *tef.Event
	for i := range f.TraceEvents {
		e := &f.TraceEvents[i]
		if e.Pid != 2 {
			t.Errorf("event %s of pid %d: want 2, the rank", e.Name, e.Pid)
		}
		switch {
		case e.Ph == "M" && e.Name != "thread_sort_index":
			names[[2]int{e.Tid, len(e.Name)}] = e.Args["name"].(string)
		case e.Cat == tef.CatStep && e.Name == "recvCopySend":
			step = e
		case e.Cat == tef.CatWait:
			wait = e
		case e.Cat == tef.CatOp && e.Tid == 1:
			op = e
		}
	}
	if names[[2]int{0, len("process_name")}] != "rank 2" || names[[2]int{tef.RankTrack, len("thread_name")}] != "rank 2 calls" || names[[2]int{1, len("thread_name")}] != "channel 1" {
		t.Errorf("metadata names %v", names)
	}
	if step == nil || step.Args[tef.ArgPeer] != 0 || step.Args[tef.ArgFrom] != 1 || step.Args[tef.ArgStep] != 0 || step.Args[tef.ArgSeq] != uint64(5) {
		t.Errorf("step %+v: want peer 0, from 1, step 0, seq 5", step)
	}
	if wait == nil || wait.Name != "wait peer flag" || wait.Args[tef.ArgOn] != "flag" || wait.Args[tef.ArgPeer] != 1 || wait.Args[tef.ArgWhat] != "rank 1's data" {
		t.Errorf("wait %+v: want \"wait peer flag\" on 1 with its description", wait)
	}
	if op == nil || op.Ts != tef.Micros(begin+1000) || op.Args[tef.ArgAlgo] != "Ring" || op.Args[tef.ArgChannels] != 2 {
		t.Errorf("operation %+v: want it at %v (the offset applied), Ring, 2 channels", op, tef.Micros(begin+1000))
	}
	clock := f.OtherData["clock"].(map[string]any)
	if f.OtherData["dropped"].(map[string]int64)["2"] != 3 || clock["bound_ns"] != int64(50) || f.OtherData["run"] != "x" {
		t.Errorf("otherData %v: want 3 dropped for rank 2, the clock's bound, the caller's key", f.OtherData)
	}
	if WaitName(OnBarrier, -1) != "wait barrier" || WaitName(OnTail, 3) != "wait peer tail" || WaitName(OnHead, -1) != "wait head" {
		t.Errorf("wait names %q %q %q", WaitName(OnBarrier, -1), WaitName(OnTail, 3), WaitName(OnHead, -1))
	}
}

// TestSnapshotAppend: recordings of one rank join track by track.
func TestSnapshotAppend(t *testing.T) {
	a := Snapshot{Rank: 1, Calls: make([]Record, 2), Channels: [][]Record{make([]Record, 3)}, Dropped: 1, Capacity: 8}
	b := Snapshot{Rank: 1, Calls: make([]Record, 1), Channels: [][]Record{make([]Record, 1), make([]Record, 4)}, Dropped: 2, Capacity: 8}
	a.Append(b)
	if len(a.Calls) != 3 || len(a.Channels) != 2 || len(a.Channels[0]) != 4 || len(a.Channels[1]) != 4 || a.Dropped != 3 || a.Records() != 11 {
		t.Errorf("appended: %d calls, channels %d, dropped %d, records %d: want 3, 2 (4 and 4), 3, 11", len(a.Calls), len(a.Channels), a.Dropped, a.Records())
	}
}
