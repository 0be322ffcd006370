package reduce

import (
	"fmt"
	"math"
	"testing"
)

// Benchmarks report the bytes of one buffer (dst) per op via SetBytes; a
// Reduce reads two such buffers and writes one.

var benchSizes = []int{4 << 10, 64 << 10, 1 << 20, 64 << 20}

// cacheSizes are the sizes that fit L1, L2 and the last-level cache, where
// the loops rather than memory bound a reduction.
var cacheSizes = benchSizes[:3]

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

// benchPaths runs benchReduce with the vector loops (where the CPU has
// them) and with the portable ones, as sub-benchmarks "vector" and
// "portable".
func benchPaths(b *testing.B, t DataType, op Op, sizes []int) {
	defer func(saved bool) { useVectorLoops = saved }(useVectorLoops)
	for _, vec := range []bool{true, false} {
		if vec && !hasVectorLoops {
			continue
		}
		useVectorLoops = vec
		name := "portable"
		if vec {
			name = "vector"
		}
		b.Run(name, func(b *testing.B) { benchReduce(b, t, op, false, 0, sizes) })
	}
}

func BenchmarkReduceFloat32Sum(b *testing.B) { benchPaths(b, Float32, Sum, benchSizes) }
func BenchmarkReduceFloat64Sum(b *testing.B) { benchPaths(b, Float64, Sum, cacheSizes) }
func BenchmarkReduceInt8Sum(b *testing.B)    { benchPaths(b, Int8, Sum, cacheSizes) }
func BenchmarkReduceUint8Sum(b *testing.B)   { benchPaths(b, Uint8, Sum, cacheSizes) }
func BenchmarkReduceInt32Sum(b *testing.B)   { benchPaths(b, Int32, Sum, cacheSizes) }
func BenchmarkReduceUint32Sum(b *testing.B)  { benchPaths(b, Uint32, Sum, cacheSizes) }
func BenchmarkReduceInt64Sum(b *testing.B)   { benchPaths(b, Int64, Sum, cacheSizes) }
func BenchmarkReduceUint64Sum(b *testing.B)  { benchPaths(b, Uint64, Sum, cacheSizes) }
func BenchmarkReduceFloat32Max(b *testing.B) { benchPaths(b, Float32, Max, cacheSizes) }
func BenchmarkReduceFloat16Sum(b *testing.B) { benchPaths(b, Float16, Sum, cacheSizes) }

// BenchmarkReduceBfloat16Sum has no vector loop yet: both paths are the same.
func BenchmarkReduceBfloat16Sum(b *testing.B) { benchPaths(b, Bfloat16, Sum, cacheSizes) }

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

var small = benchSizes[1:2] // 64 KiB

func BenchmarkReduceFloat32SumUnaligned(b *testing.B) {
	benchReduce(b, Float32, Sum, false, 1, small)
}
func BenchmarkReduceFloat32AvgPost(b *testing.B) { benchReduce(b, Float32, Avg, true, 0, small) }
func BenchmarkReduceFloat32PreMulSum(b *testing.B) {
	benchReduce(b, Float32, PreMulSum, false, 0, small)
}
func BenchmarkReduceInt32AvgPost(b *testing.B) { benchReduce(b, Int32, Avg, true, 0, small) }
