//go:build !purego

#include "textflag.h"
#include "vecloop_amd64.h"

// Sums and products, lane by lane. The integer instructions wrap like Go,
// and the low half of a product is the same for signed and unsigned lanes.

#define ADD8(b, a, t) VPADDB b, a, a
#define ADD32(b, a, t) VPADDD b, a, a
#define ADD64(b, a, t) VPADDQ b, a, a
#define ADDF32(b, a, t) VADDPS b, a, a
#define ADDF64(b, a, t) VADDPD b, a, a
#define MUL32(b, a, t) VPMULLD b, a, a
#define MULF32(b, a, t) VMULPS b, a, a
#define MULF64(b, a, t) VMULPD b, a, a

// func avx2Add8(d, a, b *byte, nbytes int)
TEXT ·avx2Add8(SB), NOSPLIT, $0-32
	MOVQ	d+0(FP), DI
	MOVQ	a+8(FP), SI
	MOVQ	b+16(FP), DX
	MOVQ	nbytes+24(FP), CX
	BINARY_LOOP(ADD8)

// func avx2Add32(d, a, b *byte, nbytes int)
TEXT ·avx2Add32(SB), NOSPLIT, $0-32
	MOVQ	d+0(FP), DI
	MOVQ	a+8(FP), SI
	MOVQ	b+16(FP), DX
	MOVQ	nbytes+24(FP), CX
	BINARY_LOOP(ADD32)

// func avx2Add64(d, a, b *byte, nbytes int)
TEXT ·avx2Add64(SB), NOSPLIT, $0-32
	MOVQ	d+0(FP), DI
	MOVQ	a+8(FP), SI
	MOVQ	b+16(FP), DX
	MOVQ	nbytes+24(FP), CX
	BINARY_LOOP(ADD64)

// func avx2AddF32(d, a, b *byte, nbytes int)
TEXT ·avx2AddF32(SB), NOSPLIT, $0-32
	MOVQ	d+0(FP), DI
	MOVQ	a+8(FP), SI
	MOVQ	b+16(FP), DX
	MOVQ	nbytes+24(FP), CX
	BINARY_LOOP(ADDF32)

// func avx2AddF64(d, a, b *byte, nbytes int)
TEXT ·avx2AddF64(SB), NOSPLIT, $0-32
	MOVQ	d+0(FP), DI
	MOVQ	a+8(FP), SI
	MOVQ	b+16(FP), DX
	MOVQ	nbytes+24(FP), CX
	BINARY_LOOP(ADDF64)

// func avx2Mul32(d, a, b *byte, nbytes int)
TEXT ·avx2Mul32(SB), NOSPLIT, $0-32
	MOVQ	d+0(FP), DI
	MOVQ	a+8(FP), SI
	MOVQ	b+16(FP), DX
	MOVQ	nbytes+24(FP), CX
	BINARY_LOOP(MUL32)

// func avx2MulF32(d, a, b *byte, nbytes int)
TEXT ·avx2MulF32(SB), NOSPLIT, $0-32
	MOVQ	d+0(FP), DI
	MOVQ	a+8(FP), SI
	MOVQ	b+16(FP), DX
	MOVQ	nbytes+24(FP), CX
	BINARY_LOOP(MULF32)

// func avx2MulF64(d, a, b *byte, nbytes int)
TEXT ·avx2MulF64(SB), NOSPLIT, $0-32
	MOVQ	d+0(FP), DI
	MOVQ	a+8(FP), SI
	MOVQ	b+16(FP), DX
	MOVQ	nbytes+24(FP), CX
	BINARY_LOOP(MULF64)
