package steptrace

import "testing"

var sink int64

// BenchmarkNow is the trace clock's cost.
func BenchmarkNow(b *testing.B) {
	for b.Loop() {
		sink += Now()
	}
}

// BenchmarkStep is a step record's cost: a clock read and the record,
// on a track that never fills.
func BenchmarkStep(b *testing.B) {
	t := NewBuf(1 << 12)
	for i := 0; b.Loop(); i++ {
		if i%(1<<12) == 0 {
			t.Reset()
		}
		t.Step("recvReduceSend", "LL", 1, 2, 8)
	}
}

// BenchmarkOp is an operation record's cost, its clock read included.
func BenchmarkOp(b *testing.B) {
	t := NewBuf(1 << 12)
	o := OpInfo{Name: "allreduce", Algo: "Ring", Proto: "LL", Seq: 1, Bytes: 8, Channels: 1}
	for i := 0; b.Loop(); i++ {
		if i%(1<<12) == 0 {
			t.Reset()
		}
		t.Op(&o, 0)
	}
}
