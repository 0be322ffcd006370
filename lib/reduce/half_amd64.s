//go:build !purego

#include "textflag.h"

// float16 sum with F16C: widen to float32 (exact), add in float32, narrow
// back rounding to nearest even (immediate 0, whatever MXCSR says). That is
// the portable f16Sum's computation exactly; NaN sums come out quiet.

// func avx2SumF16(d, a, b *byte, nbytes int)
TEXT ·avx2SumF16(SB), NOSPLIT, $0-32
	MOVQ	d+0(FP), DI
	MOVQ	a+8(FP), SI
	MOVQ	b+16(FP), DX
	MOVQ	nbytes+24(FP), CX

loop:
	// 16 elements: both halves of each operand loaded before any store,
	// so d may be exactly a or b.
	VCVTPH2PS	0(SI), Y0
	VCVTPH2PS	16(SI), Y1
	VCVTPH2PS	0(DX), Y2
	VCVTPH2PS	16(DX), Y3
	VADDPS	Y2, Y0, Y0
	VADDPS	Y3, Y1, Y1
	VCVTPS2PH	$0, Y0, 0(DI)
	VCVTPS2PH	$0, Y1, 16(DI)
	ADDQ	$32, SI
	ADDQ	$32, DX
	ADDQ	$32, DI
	SUBQ	$32, CX
	JNZ	loop
	VZEROUPPER
	RET
