//go:build !purego

#include "textflag.h"
#include "vecloop_amd64.h"

// Max and min, lane by lane: a > b ? a : b and a < b ? a : b.
//
// Go's operand order is the reverse of Intel's: "VMAXPS b, a, r" is Intel's
// VMAXPS r, a, b, which returns its first source a only where a > b holds,
// and b otherwise (NaN in either, or equal values such as -0 and +0): the
// documented semantics exactly. Integer lanes have no such subtlety.
//
// AVX2 has no 64-bit max or min: a signed compare gives a lane mask and a
// byte blend picks a where it is set. Unsigned lanes compare signed after
// flipping their top bits (the flip is undone before the blend).

#define MAXI8(b, a, t) VPMAXSB b, a, a
#define MINI8(b, a, t) VPMINSB b, a, a
#define MAXU8(b, a, t) VPMAXUB b, a, a
#define MINU8(b, a, t) VPMINUB b, a, a
#define MAXI32(b, a, t) VPMAXSD b, a, a
#define MINI32(b, a, t) VPMINSD b, a, a
#define MAXU32(b, a, t) VPMAXUD b, a, a
#define MINU32(b, a, t) VPMINUD b, a, a
#define MAXF32(b, a, t) VMAXPS b, a, a
#define MINF32(b, a, t) VMINPS b, a, a
#define MAXF64(b, a, t) VMAXPD b, a, a
#define MINF64(b, a, t) VMINPD b, a, a

// t = a > b; a = t ? a : b
#define MAXI64(b, a, t) VPCMPGTQ b, a, t; VPBLENDVB t, a, b, a
// t = b > a; a = t ? a : b
#define MINI64(b, a, t) VPCMPGTQ a, b, t; VPBLENDVB t, a, b, a

// As MAXI64 and MINI64 on top-bit-flipped lanes; Y12 holds the top bits.
#define MAXU64(b, a, t) VPXOR Y12, b, t; VPXOR Y12, a, a; VPCMPGTQ t, a, t; VPXOR Y12, a, a; VPBLENDVB t, a, b, a
#define MINU64(b, a, t) VPXOR Y12, b, t; VPXOR Y12, a, a; VPCMPGTQ a, t, t; VPXOR Y12, a, a; VPBLENDVB t, a, b, a

// TOP_BITS sets every 64-bit lane of Y12 to 1<<63.
#define TOP_BITS VPCMPEQQ Y12, Y12, Y12; VPSLLQ $63, Y12, Y12

// func avx2MaxI8(d, a, b *byte, nbytes int)
TEXT ·avx2MaxI8(SB), NOSPLIT, $0-32
	MOVQ	d+0(FP), DI
	MOVQ	a+8(FP), SI
	MOVQ	b+16(FP), DX
	MOVQ	nbytes+24(FP), CX
	BINARY_LOOP(MAXI8)

// func avx2MinI8(d, a, b *byte, nbytes int)
TEXT ·avx2MinI8(SB), NOSPLIT, $0-32
	MOVQ	d+0(FP), DI
	MOVQ	a+8(FP), SI
	MOVQ	b+16(FP), DX
	MOVQ	nbytes+24(FP), CX
	BINARY_LOOP(MINI8)

// func avx2MaxU8(d, a, b *byte, nbytes int)
TEXT ·avx2MaxU8(SB), NOSPLIT, $0-32
	MOVQ	d+0(FP), DI
	MOVQ	a+8(FP), SI
	MOVQ	b+16(FP), DX
	MOVQ	nbytes+24(FP), CX
	BINARY_LOOP(MAXU8)

// func avx2MinU8(d, a, b *byte, nbytes int)
TEXT ·avx2MinU8(SB), NOSPLIT, $0-32
	MOVQ	d+0(FP), DI
	MOVQ	a+8(FP), SI
	MOVQ	b+16(FP), DX
	MOVQ	nbytes+24(FP), CX
	BINARY_LOOP(MINU8)

// func avx2MaxI32(d, a, b *byte, nbytes int)
TEXT ·avx2MaxI32(SB), NOSPLIT, $0-32
	MOVQ	d+0(FP), DI
	MOVQ	a+8(FP), SI
	MOVQ	b+16(FP), DX
	MOVQ	nbytes+24(FP), CX
	BINARY_LOOP(MAXI32)

// func avx2MinI32(d, a, b *byte, nbytes int)
TEXT ·avx2MinI32(SB), NOSPLIT, $0-32
	MOVQ	d+0(FP), DI
	MOVQ	a+8(FP), SI
	MOVQ	b+16(FP), DX
	MOVQ	nbytes+24(FP), CX
	BINARY_LOOP(MINI32)

// func avx2MaxU32(d, a, b *byte, nbytes int)
TEXT ·avx2MaxU32(SB), NOSPLIT, $0-32
	MOVQ	d+0(FP), DI
	MOVQ	a+8(FP), SI
	MOVQ	b+16(FP), DX
	MOVQ	nbytes+24(FP), CX
	BINARY_LOOP(MAXU32)

// func avx2MinU32(d, a, b *byte, nbytes int)
TEXT ·avx2MinU32(SB), NOSPLIT, $0-32
	MOVQ	d+0(FP), DI
	MOVQ	a+8(FP), SI
	MOVQ	b+16(FP), DX
	MOVQ	nbytes+24(FP), CX
	BINARY_LOOP(MINU32)

// func avx2MaxI64(d, a, b *byte, nbytes int)
TEXT ·avx2MaxI64(SB), NOSPLIT, $0-32
	MOVQ	d+0(FP), DI
	MOVQ	a+8(FP), SI
	MOVQ	b+16(FP), DX
	MOVQ	nbytes+24(FP), CX
	BINARY_LOOP(MAXI64)

// func avx2MinI64(d, a, b *byte, nbytes int)
TEXT ·avx2MinI64(SB), NOSPLIT, $0-32
	MOVQ	d+0(FP), DI
	MOVQ	a+8(FP), SI
	MOVQ	b+16(FP), DX
	MOVQ	nbytes+24(FP), CX
	BINARY_LOOP(MINI64)

// func avx2MaxU64(d, a, b *byte, nbytes int)
TEXT ·avx2MaxU64(SB), NOSPLIT, $0-32
	MOVQ	d+0(FP), DI
	MOVQ	a+8(FP), SI
	MOVQ	b+16(FP), DX
	MOVQ	nbytes+24(FP), CX
	TOP_BITS
	BINARY_LOOP(MAXU64)

// func avx2MinU64(d, a, b *byte, nbytes int)
TEXT ·avx2MinU64(SB), NOSPLIT, $0-32
	MOVQ	d+0(FP), DI
	MOVQ	a+8(FP), SI
	MOVQ	b+16(FP), DX
	MOVQ	nbytes+24(FP), CX
	TOP_BITS
	BINARY_LOOP(MINU64)

// func avx2MaxF32(d, a, b *byte, nbytes int)
TEXT ·avx2MaxF32(SB), NOSPLIT, $0-32
	MOVQ	d+0(FP), DI
	MOVQ	a+8(FP), SI
	MOVQ	b+16(FP), DX
	MOVQ	nbytes+24(FP), CX
	BINARY_LOOP(MAXF32)

// func avx2MinF32(d, a, b *byte, nbytes int)
TEXT ·avx2MinF32(SB), NOSPLIT, $0-32
	MOVQ	d+0(FP), DI
	MOVQ	a+8(FP), SI
	MOVQ	b+16(FP), DX
	MOVQ	nbytes+24(FP), CX
	BINARY_LOOP(MINF32)

// func avx2MaxF64(d, a, b *byte, nbytes int)
TEXT ·avx2MaxF64(SB), NOSPLIT, $0-32
	MOVQ	d+0(FP), DI
	MOVQ	a+8(FP), SI
	MOVQ	b+16(FP), DX
	MOVQ	nbytes+24(FP), CX
	BINARY_LOOP(MAXF64)

// func avx2MinF64(d, a, b *byte, nbytes int)
TEXT ·avx2MinF64(SB), NOSPLIT, $0-32
	MOVQ	d+0(FP), DI
	MOVQ	a+8(FP), SI
	MOVQ	b+16(FP), DX
	MOVQ	nbytes+24(FP), CX
	BINARY_LOOP(MINF64)
