package reduce

import (
	"fmt"
	"math"
	"testing"
)

// Benchmarks report the bytes of one buffer (dst) per op via SetBytes; a
// Reduce reads two such buffers and writes one.

var benchSizes = []int{64 << 10, 64 << 20}

func sizeName(n int) string {
	if n >= 1<<20 {
		return fmt.Sprintf("%dMiB", n>>20)
	}
	return fmt.Sprintf("%dKiB", n>>10)
}

func benchReduce(b *testing.B, t DataType, op Op, post bool, off int, sizes []int) {
	k, err := NewKernel(t, op, 2, 4)
	if err != nil {
		b.Fatal(err)
	}
	for _, n := range sizes {
		b.Run(sizeName(n), func(b *testing.B) {
			acc := make([]byte, n+off)[off:]
			local := make([]byte, n+off)[off:]
			benchFill(t, acc, 1)
			benchFill(t, local, 7)
			dst := make([]byte, n+off)[off:]
			b.SetBytes(int64(n))
			b.ResetTimer()
			for b.Loop() {
				k.Reduce(dst, acc, local, post)
			}
		})
	}
}

// benchFill writes typical values: normal floats of moderate magnitude,
// small integers.
func benchFill(t DataType, b []byte, seed int) {
	size := t.Size()
	for i := 0; i < len(b)/size; i++ {
		v := float64((i*seed)%2001-1000) / 16
		e := b[i*size : (i+1)*size]
		switch t {
		case Float16:
			putLE(e, uint64(F16FromFloat64(v)))
		case Bfloat16:
			putLE(e, uint64(BF16FromFloat64(v)))
		case Float32:
			putLE(e, uint64(math.Float32bits(float32(v))))
		case Float64:
			putLE(e, math.Float64bits(v))
		default:
			putLE(e, uint64(int64(v)))
		}
	}
}

func BenchmarkReduceFloat32Sum(b *testing.B) { benchReduce(b, Float32, Sum, false, 0, benchSizes) }

// BenchmarkCopy is the memory-bandwidth yardstick for the reductions.
func BenchmarkCopy(b *testing.B) {
	for _, n := range benchSizes {
		b.Run(sizeName(n), func(b *testing.B) {
			src, dst := make([]byte, n), make([]byte, n)
			b.SetBytes(int64(n))
			for b.Loop() {
				copy(dst, src)
			}
		})
	}
}

var small = benchSizes[:1]

func BenchmarkReduceFloat16Sum(b *testing.B)  { benchReduce(b, Float16, Sum, false, 0, small) }
func BenchmarkReduceBfloat16Sum(b *testing.B) { benchReduce(b, Bfloat16, Sum, false, 0, small) }
func BenchmarkReduceFloat32SumUnaligned(b *testing.B) {
	benchReduce(b, Float32, Sum, false, 1, small)
}
func BenchmarkReduceFloat32Max(b *testing.B)     { benchReduce(b, Float32, Max, false, 0, small) }
func BenchmarkReduceFloat32AvgPost(b *testing.B) { benchReduce(b, Float32, Avg, true, 0, small) }
func BenchmarkReduceFloat32PreMulSum(b *testing.B) {
	benchReduce(b, Float32, PreMulSum, false, 0, small)
}
func BenchmarkReduceFloat64Sum(b *testing.B)   { benchReduce(b, Float64, Sum, false, 0, small) }
func BenchmarkReduceInt8Sum(b *testing.B)      { benchReduce(b, Int8, Sum, false, 0, small) }
func BenchmarkReduceInt32AvgPost(b *testing.B) { benchReduce(b, Int32, Avg, true, 0, small) }
