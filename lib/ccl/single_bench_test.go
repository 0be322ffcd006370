package ccl

import "testing"

// BenchmarkCallOneRank is the cost of the call path alone: validate,
// plan, post, run the local copy and Synchronize, with no peer.
func BenchmarkCallOneRank(b *testing.B) {
	comms := initT(b, 1, Config{Proto: "LL", NChannels: 1})
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
