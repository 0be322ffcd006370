//go:build !purego

#include "textflag.h"
#include "vecloop_amd64.h"

// PreMulSum's and Avg's loops, with the scalar or the divisor k broadcast
// to every lane of Y13. The product is rounded before the sum (two
// instructions, never an FMA), and VDIVPS/VDIVPD divide correctly rounded,
// as the scalar loops do. "VDIVPS k, a, a" is Intel's VDIVPS a, a, k: a / k.
// The 32-bit integer k is broadcast with VBROADCASTSS too: a plain bit copy.

#define ADD_SCALED32(b, a, t) VPMULLD Y13, b, b; VPADDD b, a, a
#define ADD_SCALED_F32(b, a, t) VMULPS Y13, b, b; VADDPS b, a, a
#define ADD_SCALED_F64(b, a, t) VMULPD Y13, b, b; VADDPD b, a, a
#define ADD_DIV_F32(b, a, t) VADDPS b, a, a; VDIVPS Y13, a, a
#define ADD_DIV_F64(b, a, t) VADDPD b, a, a; VDIVPD Y13, a, a
#define MUL32(b, a, t) VPMULLD b, a, a
#define MULF32(b, a, t) VMULPS b, a, a
#define MULF64(b, a, t) VMULPD b, a, a
#define DIVF32(b, a, t) VDIVPS b, a, a
#define DIVF64(b, a, t) VDIVPD b, a, a

// func avx2AddScaled32(d, a, b *byte, nbytes int, k uint32)
TEXT ·avx2AddScaled32(SB), NOSPLIT, $0-36
	MOVQ	d+0(FP), DI
	MOVQ	a+8(FP), SI
	MOVQ	b+16(FP), DX
	MOVQ	nbytes+24(FP), CX
	VBROADCASTSS	k+32(FP), Y13
	BINARY_LOOP(ADD_SCALED32)

// func avx2AddScaledF32(d, a, b *byte, nbytes int, k float32)
TEXT ·avx2AddScaledF32(SB), NOSPLIT, $0-36
	MOVQ	d+0(FP), DI
	MOVQ	a+8(FP), SI
	MOVQ	b+16(FP), DX
	MOVQ	nbytes+24(FP), CX
	VBROADCASTSS	k+32(FP), Y13
	BINARY_LOOP(ADD_SCALED_F32)

// func avx2AddScaledF64(d, a, b *byte, nbytes int, k float64)
TEXT ·avx2AddScaledF64(SB), NOSPLIT, $0-40
	MOVQ	d+0(FP), DI
	MOVQ	a+8(FP), SI
	MOVQ	b+16(FP), DX
	MOVQ	nbytes+24(FP), CX
	VBROADCASTSD	k+32(FP), Y13
	BINARY_LOOP(ADD_SCALED_F64)

// func avx2AddDivF32(d, a, b *byte, nbytes int, k float32)
TEXT ·avx2AddDivF32(SB), NOSPLIT, $0-36
	MOVQ	d+0(FP), DI
	MOVQ	a+8(FP), SI
	MOVQ	b+16(FP), DX
	MOVQ	nbytes+24(FP), CX
	VBROADCASTSS	k+32(FP), Y13
	BINARY_LOOP(ADD_DIV_F32)

// func avx2AddDivF64(d, a, b *byte, nbytes int, k float64)
TEXT ·avx2AddDivF64(SB), NOSPLIT, $0-40
	MOVQ	d+0(FP), DI
	MOVQ	a+8(FP), SI
	MOVQ	b+16(FP), DX
	MOVQ	nbytes+24(FP), CX
	VBROADCASTSD	k+32(FP), Y13
	BINARY_LOOP(ADD_DIV_F64)

// func avx2Scale32(d, s *byte, nbytes int, k uint32)
TEXT ·avx2Scale32(SB), NOSPLIT, $0-28
	MOVQ	d+0(FP), DI
	MOVQ	s+8(FP), SI
	MOVQ	nbytes+16(FP), CX
	VBROADCASTSS	k+24(FP), Y13
	UNARY_LOOP(MUL32)

// func avx2ScaleF32(d, s *byte, nbytes int, k float32)
TEXT ·avx2ScaleF32(SB), NOSPLIT, $0-28
	MOVQ	d+0(FP), DI
	MOVQ	s+8(FP), SI
	MOVQ	nbytes+16(FP), CX
	VBROADCASTSS	k+24(FP), Y13
	UNARY_LOOP(MULF32)

// func avx2ScaleF64(d, s *byte, nbytes int, k float64)
TEXT ·avx2ScaleF64(SB), NOSPLIT, $0-32
	MOVQ	d+0(FP), DI
	MOVQ	s+8(FP), SI
	MOVQ	nbytes+16(FP), CX
	VBROADCASTSD	k+24(FP), Y13
	UNARY_LOOP(MULF64)

// func avx2DivF32(d, s *byte, nbytes int, k float32)
TEXT ·avx2DivF32(SB), NOSPLIT, $0-28
	MOVQ	d+0(FP), DI
	MOVQ	s+8(FP), SI
	MOVQ	nbytes+16(FP), CX
	VBROADCASTSS	k+24(FP), Y13
	UNARY_LOOP(DIVF32)

// func avx2DivF64(d, s *byte, nbytes int, k float64)
TEXT ·avx2DivF64(SB), NOSPLIT, $0-32
	MOVQ	d+0(FP), DI
	MOVQ	s+8(FP), SI
	MOVQ	nbytes+16(FP), CX
	VBROADCASTSD	k+24(FP), Y13
	UNARY_LOOP(DIVF64)
