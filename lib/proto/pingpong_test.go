package proto

import (
	"testing"
	"time"
)

// BenchmarkLLPingPong is the floor under an 8-byte allreduce between two
// ranks: one LL line each way between two goroutines.
func BenchmarkLLPingPong(b *testing.B) {
	mk := func() (*SendEnd, *RecvEnd) {
		f, err := NewFifo(LL, DefaultLLBuffSize, FifoOptions{})
		if err != nil {
			b.Fatal(err)
		}
		f.RecvWaiter = NewWaiter(NewAbort(), time.Minute)
		f.SendWaiter = NewWaiter(NewAbort(), time.Minute)
		return NewEnds(f, "bench")
	}
	s01, r01 := mk()
	s10, r10 := mk()
	data := make([]byte, 8)
	got := make([]byte, 8)
	done := make(chan struct{})
	go func() {
		buf := make([]byte, 8)
		for i := 0; i < b.N; i++ {
			if err := r01.LLRecv(buf); err != nil {
				b.Error(err)
			}
			if err := s10.LLSend(buf); err != nil {
				b.Error(err)
			}
		}
		close(done)
	}()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if err := s01.LLSend(data); err != nil {
			b.Fatal(err)
		}
		if err := r10.LLRecv(got); err != nil {
			b.Fatal(err)
		}
	}
	<-done
}
