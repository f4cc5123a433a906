// SPDX-License-Identifier: MIT

#include "textflag.h"

// func prefetch(addr, n uintptr)
TEXT ·prefetch(SB), NOSPLIT, $0-16
	MOVQ addr+0(FP), AX
	MOVQ n+8(FP), CX
	LEAQ -1(AX)(CX*1), CX // the last byte
	ANDQ $-64, AX         // the first line
loop:
	PREFETCHT0 (AX)
	ADDQ $64, AX
	CMPQ AX, CX
	JLS  loop
	RET
