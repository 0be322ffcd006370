//go:build amd64 && !race

#include "textflag.h"

// func storeRelaxed64(addr *uint64, v uint64)
TEXT ·storeRelaxed64(SB), NOSPLIT, $0-16
	MOVQ addr+0(FP), AX
	MOVQ v+8(FP), BX
	MOVQ BX, 0(AX)
	RET
