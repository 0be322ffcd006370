package ccl

import (
	"encoding/binary"
	"math"
	"sync"
	"testing"
	"time"
)

func f32s(v []float32) []byte {
	b := make([]byte, 4*len(v))
	for i, x := range v {
		binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(x))
	}
	return b
}

func TestSmokeAllReduce(t *testing.T) {
	for _, p := range []string{"LL", "LL128", "Simple"} {
		for _, n := range []int{1, 2, 3, 5} {
			for _, count := range []int{0, 1, 7, 1000, 300000} {
				comms, err := InitAll(n, Config{Proto: p, NChannels: 2, Timeout: 5 * time.Second, BuffSize: 64 << 10, LLBuffSize: 4096, LL128BuffSize: 16384 * 2})
				if err != nil {
					t.Fatal(err)
				}
				var wg sync.WaitGroup
				outs := make([][]byte, n)
				for r := 0; r < n; r++ {
					wg.Add(1)
					go func(r int) {
						defer wg.Done()
						v := make([]float32, count)
						for i := range v {
							v[i] = float32(r + i%7)
						}
						outs[r] = make([]byte, 4*count)
						if err := comms[r].AllReduce(f32s(v), outs[r], count, Float32, Sum); err != nil {
							t.Error(err)
						}
						if err := comms[r].Synchronize(); err != nil {
							t.Error(err)
						}
					}(r)
				}
				wg.Wait()
				for r := 0; r < n; r++ {
					for i := 0; i < count; i++ {
						got := math.Float32frombits(binary.LittleEndian.Uint32(outs[r][4*i:]))
						want := float32(n*(n-1)/2 + n*(i%7))
						if got != want {
							t.Fatalf("%s n=%d count=%d rank %d [%d] = %v want %v", p, n, count, r, i, got, want)
						}
					}
				}
				for _, c := range comms {
					c.Destroy()
				}
			}
		}
	}
}
