package ccl

import "testing"

// BenchmarkCallOneRank is the cost of the call path alone: validate,
// plan, post, run the local copy and Synchronize, with no peer.
func BenchmarkCallOneRank(b *testing.B) {
	comms := initT(b, 1, Config{Proto: protoReq("LL"), NChannels: 1})
	in, out := make([]byte, 8), make([]byte, 8)
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		if err := comms[0].AllReduce(in, out, 2, Float32, Sum); err != nil {
			b.Fatal(err)
		}
		if err := comms[0].Synchronize(); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkCallOneShotOneThread is the one-shot fast path's own cost: one
// goroutine drives 2 ranks (nccl-tests -g 2), so every post is there when
// each rank synchronizes and nothing waits. An op is both ranks' calls.
// "rotating" moves the buffers every call through 64 slots, as nccl-tests
// and perf do; "fixed" calls on the same buffers.
func BenchmarkCallOneShotOneThread(b *testing.B) {
	for _, bufs := range []struct {
		name  string
		slots int
	}{{"fixed", 1}, {"rotating", 64}} {
		b.Run(bufs.name, func(b *testing.B) {
			comms := initT(b, 2, Config{Algo: algoReq("OneShot")})
			in := [2][]byte{make([]byte, 8*bufs.slots), make([]byte, 8*bufs.slots)}
			out := [2][]byte{make([]byte, 8*bufs.slots), make([]byte, 8*bufs.slots)}
			b.ReportAllocs()
			for i := 0; i < b.N; i++ {
				off := 8 * (i % bufs.slots)
				for r, c := range comms {
					if err := c.AllReduce(in[r][off:off+8], out[r][off:off+8], 2, Float32, Sum); err != nil {
						b.Fatal(err)
					}
				}
				for _, c := range comms {
					if err := c.Synchronize(); err != nil {
						b.Fatal(err)
					}
				}
			}
		})
	}
}
