//go:build linux && amd64

#include "textflag.h"

// trampoline is called by runtime.cgocall on the system stack as a C
// function of one argument: DI points at a cFrame {fn, a[8], r}. It calls
// fn with a[0..5] in DI, SI, DX, CX, R8, R9 and a[6], a[7] on the stack
// (the System V ABI), and stores fn's RAX in r. On entry SP is 8 mod 16;
// after the two pushes and 24 bytes, 0 mod 16 at the call, as the ABI
// wants. BX and BP are callee-saved: restored.
TEXT trampoline<>(SB), NOSPLIT|NOFRAME, $0-0
	PUSHQ BP
	MOVQ  SP, BP
	PUSHQ BX
	SUBQ  $24, SP
	MOVQ  DI, BX
	MOVQ  56(BX), AX // a[6]
	MOVQ  AX, 0(SP)
	MOVQ  64(BX), AX // a[7]
	MOVQ  AX, 8(SP)
	MOVQ  8(BX), DI  // a[0]
	MOVQ  16(BX), SI
	MOVQ  24(BX), DX
	MOVQ  32(BX), CX
	MOVQ  40(BX), R8
	MOVQ  48(BX), R9 // a[5]
	XORL  AX, AX     // no vector registers, for a variadic callee
	MOVQ  0(BX), R10 // fn
	CALL  R10
	MOVQ  AX, 72(BX) // r
	ADDQ  $24, SP
	POPQ  BX
	POPQ  BP
	RET

GLOBL ·trampolineABI0(SB), NOPTR|RODATA, $8
DATA ·trampolineABI0(SB)/8, $trampoline<>(SB)
