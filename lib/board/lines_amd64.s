//go:build amd64 && !race && !purego

#include "textflag.h"

// func packLines(words *uint64, data *byte, blocks int, flag uint64)
// Writes blocks x 16 payload bytes as blocks x 4 LL words: each 4-byte
// dword of data zero-extended to a quadword and ORed with flag (already
// shifted to the high half). One 32-byte store per block: each of its
// aligned quadwords lands whole, and the reader checks every word's flag.
TEXT ·packLines(SB), NOSPLIT, $0-32
	MOVQ words+0(FP), DI
	MOVQ data+8(FP), SI
	MOVQ blocks+16(FP), CX
	MOVQ flag+24(FP), AX
	VMOVQ AX, X1
	VPBROADCASTQ X1, Y1

pack:
	VPMOVZXDQ (SI), Y0
	VPOR Y1, Y0, Y0
	VMOVDQU Y0, (DI)
	ADDQ $16, SI
	ADDQ $32, DI
	DECQ CX
	JNZ pack
	VZEROUPPER
	RET

// func unpackLines(data *byte, words *uint64, blocks int, flag uint32) int
// Copies the payload of up to blocks x 4 LL words into data and returns
// how many whole lines (2 words each) carried flag: the first line that
// did not stops it (its payload is not copied).
TEXT ·unpackLines(SB), NOSPLIT, $0-40
	MOVQ data+0(FP), DI
	MOVQ words+8(FP), SI
	MOVQ blocks+16(FP), CX
	MOVL flag+24(FP), AX
	VMOVD AX, X2
	VPBROADCASTD X2, Y2
	XORQ DX, DX // lines done

unpack:
	VMOVDQU (SI), Y0
	VPCMPEQD Y2, Y0, Y3
	VMOVMSKPS Y3, AX
	ANDL $0xAA, AX // the flag dwords: 1, 3 (line 0) and 5, 7 (line 1)
	CMPL AX, $0xAA
	JNE partial
	VPSHUFD $0x08, Y0, Y0
	VPERMQ $0x08, Y0, Y0
	VMOVDQU X0, (DI)
	ADDQ $2, DX
	ADDQ $32, SI
	ADDQ $16, DI
	DECQ CX
	JNZ unpack
	JMP done

partial:
	ANDL $0x0A, AX
	CMPL AX, $0x0A
	JNE done
	// Line 0 of the block is whole: copy its 8 payload bytes.
	VPSHUFD $0x08, Y0, Y0
	VMOVQ X0, (DI)
	INCQ DX

done:
	VZEROUPPER
	MOVQ DX, ret+32(FP)
	RET

// func prefetchLines(p *uint64, n int)
// PREFETCHT0 on n cache lines from p on (n >= 1).
TEXT ·prefetchLines(SB), NOSPLIT, $0-16
	MOVQ p+0(FP), AX
	MOVQ n+8(FP), CX

fetch:
	PREFETCHT0 (AX)
	ADDQ $64, AX
	DECQ CX
	JNZ fetch
	RET
