//go:build !purego

package reduce

// Each AVX2 loop processes nbytes bytes, a non-zero multiple of vecBytes,
// of elements at d, a, b (or d, s): d[i] = a[i] OP b[i] (or OP(s[i], k)).
// d may be exactly a, b or s.

//go:noescape
func avx2Add8(d, a, b *byte, nbytes int)

//go:noescape
func avx2Add32(d, a, b *byte, nbytes int)

//go:noescape
func avx2Add64(d, a, b *byte, nbytes int)

//go:noescape
func avx2AddF32(d, a, b *byte, nbytes int)

//go:noescape
func avx2AddF64(d, a, b *byte, nbytes int)

//go:noescape
func avx2Mul32(d, a, b *byte, nbytes int)

//go:noescape
func avx2MulF32(d, a, b *byte, nbytes int)

//go:noescape
func avx2MulF64(d, a, b *byte, nbytes int)

//go:noescape
func avx2MaxI8(d, a, b *byte, nbytes int)

//go:noescape
func avx2MinI8(d, a, b *byte, nbytes int)

//go:noescape
func avx2MaxU8(d, a, b *byte, nbytes int)

//go:noescape
func avx2MinU8(d, a, b *byte, nbytes int)

//go:noescape
func avx2MaxI32(d, a, b *byte, nbytes int)

//go:noescape
func avx2MinI32(d, a, b *byte, nbytes int)

//go:noescape
func avx2MaxU32(d, a, b *byte, nbytes int)

//go:noescape
func avx2MinU32(d, a, b *byte, nbytes int)

//go:noescape
func avx2MaxI64(d, a, b *byte, nbytes int)

//go:noescape
func avx2MinI64(d, a, b *byte, nbytes int)

//go:noescape
func avx2MaxU64(d, a, b *byte, nbytes int)

//go:noescape
func avx2MinU64(d, a, b *byte, nbytes int)

//go:noescape
func avx2MaxF32(d, a, b *byte, nbytes int)

//go:noescape
func avx2MinF32(d, a, b *byte, nbytes int)

//go:noescape
func avx2MaxF64(d, a, b *byte, nbytes int)

//go:noescape
func avx2MinF64(d, a, b *byte, nbytes int)

// a + b*k, the product rounded first.
//
//go:noescape
func avx2AddScaled32(d, a, b *byte, nbytes int, k uint32)

//go:noescape
func avx2AddScaledF32(d, a, b *byte, nbytes int, k float32)

//go:noescape
func avx2AddScaledF64(d, a, b *byte, nbytes int, k float64)

// (a + b) / k, the sum rounded first.
//
//go:noescape
func avx2AddDivF32(d, a, b *byte, nbytes int, k float32)

//go:noescape
func avx2AddDivF64(d, a, b *byte, nbytes int, k float64)

// s * k.
//
//go:noescape
func avx2Scale32(d, s *byte, nbytes int, k uint32)

//go:noescape
func avx2ScaleF32(d, s *byte, nbytes int, k float32)

//go:noescape
func avx2ScaleF64(d, s *byte, nbytes int, k float64)

// s / k.
//
//go:noescape
func avx2DivF32(d, s *byte, nbytes int, k float32)

//go:noescape
func avx2DivF64(d, s *byte, nbytes int, k float64)

// float16 a + b, through float32; needs F16C as well as AVX2.
//
//go:noescape
func avx2SumF16(d, a, b *byte, nbytes int)
