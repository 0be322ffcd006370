//go:build amd64 && !race

#include "textflag.h"

// func storeRelaxed64(addr *uint64, v uint64)
TEXT ·storeRelaxed64(SB), NOSPLIT, $0-16
	MOVQ addr+0(FP), AX
	MOVQ v+8(FP), BX
	MOVQ BX, 0(AX)
	RET

// func storeFullLines(words *uint64, data *byte, lines int, flag uint64)
// lines >= 1. Each 8-byte payload becomes two words: its low dword, then
// its high dword, each zero-extended and ORed with flag.
TEXT ·storeFullLines(SB), NOSPLIT, $0-32
	MOVQ words+0(FP), DI
	MOVQ data+8(FP), SI
	MOVQ lines+16(FP), CX
	MOVQ flag+24(FP), DX

line:
	MOVQ (SI), AX
	MOVL AX, BX // zero-extends the low dword
	ORQ DX, BX
	MOVQ BX, 0(DI)
	SHRQ $32, AX
	ORQ DX, AX
	MOVQ AX, 8(DI)
	ADDQ $8, SI
	ADDQ $16, DI
	DECQ CX
	JNZ line
	RET
