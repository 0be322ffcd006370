package ccl

import "testing"

func BenchmarkTmpOneThreadSize(b *testing.B) {
	for _, size := range []int{8, 64, 1024} {
		b.Run(sizeName(size), func(b *testing.B) {
			comms := initT(b, 2, Config{Algo: "OneShot"})
			in := [2][]byte{ownLines(size), ownLines(size)}
			out := [2][]byte{ownLines(size), ownLines(size)}
			for i := 0; i < b.N; i++ {
				for r, c := range comms {
					if err := c.AllReduce(in[r], out[r], size/4, Float32, Sum); err != nil {
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
