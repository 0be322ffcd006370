// Loop skeletons for the AVX2 kernels. Each function loads its arguments
// into DI (dst), SI (a or src), DX (b), CX (bytes, a non-zero multiple of
// 32) and sets up any broadcast constant, then expands one of these with
// an OP(b, a, t) macro that sets register a = a OP b (t is a scratch
// register). Four vectors per iteration keep several independent
// operations in flight; a one-vector loop finishes the remaining blocks.
// Every block is loaded in full before its result is stored, so dst may be
// exactly a or b.

#define BINARY_LOOP(OP) \
	CMPQ	CX, $128; \
	JB	one; \
four: \
	VMOVDQU	0(SI), Y0; \
	VMOVDQU	32(SI), Y1; \
	VMOVDQU	64(SI), Y2; \
	VMOVDQU	96(SI), Y3; \
	VMOVDQU	0(DX), Y4; \
	VMOVDQU	32(DX), Y5; \
	VMOVDQU	64(DX), Y6; \
	VMOVDQU	96(DX), Y7; \
	OP(Y4, Y0, Y8); \
	OP(Y5, Y1, Y9); \
	OP(Y6, Y2, Y10); \
	OP(Y7, Y3, Y11); \
	VMOVDQU	Y0, 0(DI); \
	VMOVDQU	Y1, 32(DI); \
	VMOVDQU	Y2, 64(DI); \
	VMOVDQU	Y3, 96(DI); \
	ADDQ	$128, SI; \
	ADDQ	$128, DX; \
	ADDQ	$128, DI; \
	SUBQ	$128, CX; \
	CMPQ	CX, $128; \
	JAE	four; \
one: \
	TESTQ	CX, CX; \
	JZ	done; \
	VMOVDQU	0(SI), Y0; \
	VMOVDQU	0(DX), Y4; \
	OP(Y4, Y0, Y8); \
	VMOVDQU	Y0, 0(DI); \
	ADDQ	$32, SI; \
	ADDQ	$32, DX; \
	ADDQ	$32, DI; \
	SUBQ	$32, CX; \
	JMP	one; \
done: \
	VZEROUPPER; \
	RET

// UNARY_LOOP is BINARY_LOOP with b the broadcast constant in Y13.
#define UNARY_LOOP(OP) \
	CMPQ	CX, $128; \
	JB	one; \
four: \
	VMOVDQU	0(SI), Y0; \
	VMOVDQU	32(SI), Y1; \
	VMOVDQU	64(SI), Y2; \
	VMOVDQU	96(SI), Y3; \
	OP(Y13, Y0, Y8); \
	OP(Y13, Y1, Y9); \
	OP(Y13, Y2, Y10); \
	OP(Y13, Y3, Y11); \
	VMOVDQU	Y0, 0(DI); \
	VMOVDQU	Y1, 32(DI); \
	VMOVDQU	Y2, 64(DI); \
	VMOVDQU	Y3, 96(DI); \
	ADDQ	$128, SI; \
	ADDQ	$128, DI; \
	SUBQ	$128, CX; \
	CMPQ	CX, $128; \
	JAE	four; \
one: \
	TESTQ	CX, CX; \
	JZ	done; \
	VMOVDQU	0(SI), Y0; \
	OP(Y13, Y0, Y8); \
	VMOVDQU	Y0, 0(DI); \
	ADDQ	$32, SI; \
	ADDQ	$32, DI; \
	SUBQ	$32, CX; \
	JMP	one; \
done: \
	VZEROUPPER; \
	RET
