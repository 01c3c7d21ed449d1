#include "textflag.h"

// SSE2 de-interleave and interleave kernels (SSE2 is part of the amd64
// baseline). Each moves whole 16-byte output rows for a batch of tiles in
// one call, so the cost of a Go call and its bounds checks is paid once per
// batch, not per tile. The batch is t.n1 groups of t.n2 tiles (a tiles
// struct, swar.go): after each tile the pointers advance by the inner steps
// (t+32: dst, t+40: src), after each group by the outer steps (t+8, t+16),
// which the caller has already reduced by the group's inner advance. The Go
// wrappers in swar_amd64.go check bounds for every tile, guarantee n > 0
// (a multiple of 16), n1 > 0 and n2 > 0, and hand the tails to the portable
// kernels. X7 holds 0x00ff in every 16-bit lane for the byte kernels.

// func deint1x2SSE2(dst *byte, rs int, src *byte, n int, t *tiles)
// n bytes to each row (a multiple of 16), 2n bytes read per tile.
TEXT ·deint1x2SSE2(SB), NOSPLIT, $0-40
	MOVQ dst+0(FP), DI
	MOVQ rs+8(FP), AX
	LEAQ (AX)(DI*1), R8
	MOVQ src+16(FP), SI
	MOVQ n+24(FP), CX
	MOVQ t+32(FP), R12
	MOVQ 0(R12), DX
	PCMPEQW X7, X7
	PSRLW $8, X7
deint1x2group:
	MOVQ 24(R12), R11
deint1x2tile:
	MOVQ SI, BX
	XORQ AX, AX
deint1x2loop:
	MOVOU (BX), X0
	MOVOU 16(BX), X1
	MOVO X0, X2
	MOVO X1, X3
	PAND X7, X0
	PAND X7, X1
	PACKUSWB X1, X0
	PSRLW $8, X2
	PSRLW $8, X3
	PACKUSWB X3, X2
	MOVOU X0, (DI)(AX*1)
	MOVOU X2, (R8)(AX*1)
	ADDQ $32, BX
	ADDQ $16, AX
	CMPQ AX, CX
	JB deint1x2loop
	ADDQ 32(R12), DI
	ADDQ 32(R12), R8
	ADDQ 40(R12), SI
	DECQ R11
	JNZ deint1x2tile
	ADDQ 8(R12), DI
	ADDQ 8(R12), R8
	ADDQ 16(R12), SI
	DECQ DX
	JNZ deint1x2group
	RET

// func deint1x4SSE2(dst *byte, rs int, src *byte, n int, t *tiles)
// Two rounds of the even/odd split: bytes k0,k2 then k0 and k2.
TEXT ·deint1x4SSE2(SB), NOSPLIT, $0-40
	MOVQ dst+0(FP), DI
	MOVQ rs+8(FP), AX
	LEAQ (AX)(DI*1), R8
	LEAQ (AX)(R8*1), R9
	LEAQ (AX)(R9*1), R10
	MOVQ src+16(FP), SI
	MOVQ n+24(FP), CX
	MOVQ t+32(FP), R12
	MOVQ 0(R12), DX
	PCMPEQW X7, X7
	PSRLW $8, X7
deint1x4group:
	MOVQ 24(R12), R11
deint1x4tile:
	MOVQ SI, BX
	XORQ AX, AX
deint1x4loop:
	MOVOU (BX), X0
	MOVOU 16(BX), X1
	MOVOU 32(BX), X2
	MOVOU 48(BX), X3
	MOVO X0, X4
	MOVO X1, X5
	PAND X7, X0
	PAND X7, X1
	PACKUSWB X1, X0 // E01: k0,k2 of groups 0-7
	PSRLW $8, X4
	PSRLW $8, X5
	PACKUSWB X5, X4 // O01: k1,k3 of groups 0-7
	MOVO X2, X5
	MOVO X3, X6
	PAND X7, X2
	PAND X7, X3
	PACKUSWB X3, X2 // E23
	PSRLW $8, X5
	PSRLW $8, X6
	PACKUSWB X6, X5 // O23
	MOVO X0, X1
	MOVO X2, X3
	PAND X7, X0
	PAND X7, X2
	PACKUSWB X2, X0 // k0
	PSRLW $8, X1
	PSRLW $8, X3
	PACKUSWB X3, X1 // k2
	MOVO X4, X2
	MOVO X5, X3
	PAND X7, X4
	PAND X7, X5
	PACKUSWB X5, X4 // k1
	PSRLW $8, X2
	PSRLW $8, X3
	PACKUSWB X3, X2 // k3
	MOVOU X0, (DI)(AX*1)
	MOVOU X4, (R8)(AX*1)
	MOVOU X1, (R9)(AX*1)
	MOVOU X2, (R10)(AX*1)
	ADDQ $64, BX
	ADDQ $16, AX
	CMPQ AX, CX
	JB deint1x4loop
	ADDQ 32(R12), DI
	ADDQ 32(R12), R8
	ADDQ 32(R12), R9
	ADDQ 32(R12), R10
	ADDQ 40(R12), SI
	DECQ R11
	JNZ deint1x4tile
	ADDQ 8(R12), DI
	ADDQ 8(R12), R8
	ADDQ 8(R12), R9
	ADDQ 8(R12), R10
	ADDQ 16(R12), SI
	DECQ DX
	JNZ deint1x4group
	RET

// func deint2x2SSE2(dst *byte, rs int, src *byte, n int, t *tiles)
// 16-bit elements: sign-extend each half and pack with signed saturation,
// which is exact for sign-extended values.
TEXT ·deint2x2SSE2(SB), NOSPLIT, $0-40
	MOVQ dst+0(FP), DI
	MOVQ rs+8(FP), AX
	LEAQ (AX)(DI*1), R8
	MOVQ src+16(FP), SI
	MOVQ n+24(FP), CX
	MOVQ t+32(FP), R12
	MOVQ 0(R12), DX
deint2x2group:
	MOVQ 24(R12), R11
deint2x2tile:
	MOVQ SI, BX
	XORQ AX, AX
deint2x2loop:
	MOVOU (BX), X0
	MOVOU 16(BX), X1
	MOVO X0, X2
	MOVO X1, X3
	PSLLL $16, X0
	PSLLL $16, X1
	PSRAL $16, X0
	PSRAL $16, X1
	PACKSSLW X1, X0
	PSRAL $16, X2
	PSRAL $16, X3
	PACKSSLW X3, X2
	MOVOU X0, (DI)(AX*1)
	MOVOU X2, (R8)(AX*1)
	ADDQ $32, BX
	ADDQ $16, AX
	CMPQ AX, CX
	JB deint2x2loop
	ADDQ 32(R12), DI
	ADDQ 32(R12), R8
	ADDQ 40(R12), SI
	DECQ R11
	JNZ deint2x2tile
	ADDQ 8(R12), DI
	ADDQ 8(R12), R8
	ADDQ 16(R12), SI
	DECQ DX
	JNZ deint2x2group
	RET

// func deint4x2SSE2(dst *byte, rs int, src *byte, n int, t *tiles)
TEXT ·deint4x2SSE2(SB), NOSPLIT, $0-40
	MOVQ dst+0(FP), DI
	MOVQ rs+8(FP), AX
	LEAQ (AX)(DI*1), R8
	MOVQ src+16(FP), SI
	MOVQ n+24(FP), CX
	MOVQ t+32(FP), R12
	MOVQ 0(R12), DX
deint4x2group:
	MOVQ 24(R12), R11
deint4x2tile:
	MOVQ SI, BX
	XORQ AX, AX
deint4x2loop:
	MOVOU (BX), X0
	MOVOU 16(BX), X1
	MOVO X0, X2
	SHUFPS $0x88, X1, X0
	SHUFPS $0xDD, X1, X2
	MOVOU X0, (DI)(AX*1)
	MOVOU X2, (R8)(AX*1)
	ADDQ $32, BX
	ADDQ $16, AX
	CMPQ AX, CX
	JB deint4x2loop
	ADDQ 32(R12), DI
	ADDQ 32(R12), R8
	ADDQ 40(R12), SI
	DECQ R11
	JNZ deint4x2tile
	ADDQ 8(R12), DI
	ADDQ 8(R12), R8
	ADDQ 16(R12), SI
	DECQ DX
	JNZ deint4x2group
	RET

// func inter1x2SSE2(dst *byte, src *byte, rs int, n int, t *tiles)
// n bytes from each row (a multiple of 16), 2n bytes written per tile.
TEXT ·inter1x2SSE2(SB), NOSPLIT, $0-40
	MOVQ dst+0(FP), DI
	MOVQ src+8(FP), R8
	MOVQ rs+16(FP), AX
	LEAQ (AX)(R8*1), R9
	MOVQ n+24(FP), CX
	MOVQ t+32(FP), R12
	MOVQ 0(R12), DX
inter1x2group:
	MOVQ 24(R12), R11
inter1x2tile:
	MOVQ DI, BX
	XORQ AX, AX
inter1x2loop:
	MOVOU (R8)(AX*1), X0
	MOVOU (R9)(AX*1), X1
	MOVO X0, X2
	PUNPCKLBW X1, X0
	PUNPCKHBW X1, X2
	MOVOU X0, (BX)
	MOVOU X2, 16(BX)
	ADDQ $32, BX
	ADDQ $16, AX
	CMPQ AX, CX
	JB inter1x2loop
	ADDQ 32(R12), DI
	ADDQ 40(R12), R8
	ADDQ 40(R12), R9
	DECQ R11
	JNZ inter1x2tile
	ADDQ 8(R12), DI
	ADDQ 16(R12), R8
	ADDQ 16(R12), R9
	DECQ DX
	JNZ inter1x2group
	RET

// func inter1x4SSE2(dst *byte, src *byte, rs int, n int, t *tiles)
TEXT ·inter1x4SSE2(SB), NOSPLIT, $0-40
	MOVQ dst+0(FP), DI
	MOVQ src+8(FP), R8
	MOVQ rs+16(FP), AX
	LEAQ (AX)(R8*1), R9
	LEAQ (AX)(R9*1), R10
	LEAQ (AX)(R10*1), R13
	MOVQ n+24(FP), CX
	MOVQ t+32(FP), R12
	MOVQ 0(R12), DX
inter1x4group:
	MOVQ 24(R12), R11
inter1x4tile:
	MOVQ DI, BX
	XORQ AX, AX
inter1x4loop:
	MOVOU (R8)(AX*1), X0
	MOVOU (R9)(AX*1), X1
	MOVOU (R10)(AX*1), X2
	MOVOU (R13)(AX*1), X3
	MOVO X0, X4
	PUNPCKLBW X1, X0 // r0 r1 pairs, groups 0-7
	PUNPCKHBW X1, X4 // groups 8-15
	MOVO X2, X5
	PUNPCKLBW X3, X2 // r2 r3 pairs, groups 0-7
	PUNPCKHBW X3, X5
	MOVO X0, X6
	PUNPCKLWL X2, X0 // groups 0-3
	PUNPCKHWL X2, X6 // groups 4-7
	MOVO X4, X1
	PUNPCKLWL X5, X4 // groups 8-11
	PUNPCKHWL X5, X1 // groups 12-15
	MOVOU X0, (BX)
	MOVOU X6, 16(BX)
	MOVOU X4, 32(BX)
	MOVOU X1, 48(BX)
	ADDQ $64, BX
	ADDQ $16, AX
	CMPQ AX, CX
	JB inter1x4loop
	ADDQ 32(R12), DI
	ADDQ 40(R12), R8
	ADDQ 40(R12), R9
	ADDQ 40(R12), R10
	ADDQ 40(R12), R13
	DECQ R11
	JNZ inter1x4tile
	ADDQ 8(R12), DI
	ADDQ 16(R12), R8
	ADDQ 16(R12), R9
	ADDQ 16(R12), R10
	ADDQ 16(R12), R13
	DECQ DX
	JNZ inter1x4group
	RET

// func inter2x2SSE2(dst *byte, src *byte, rs int, n int, t *tiles)
TEXT ·inter2x2SSE2(SB), NOSPLIT, $0-40
	MOVQ dst+0(FP), DI
	MOVQ src+8(FP), R8
	MOVQ rs+16(FP), AX
	LEAQ (AX)(R8*1), R9
	MOVQ n+24(FP), CX
	MOVQ t+32(FP), R12
	MOVQ 0(R12), DX
inter2x2group:
	MOVQ 24(R12), R11
inter2x2tile:
	MOVQ DI, BX
	XORQ AX, AX
inter2x2loop:
	MOVOU (R8)(AX*1), X0
	MOVOU (R9)(AX*1), X1
	MOVO X0, X2
	PUNPCKLWL X1, X0
	PUNPCKHWL X1, X2
	MOVOU X0, (BX)
	MOVOU X2, 16(BX)
	ADDQ $32, BX
	ADDQ $16, AX
	CMPQ AX, CX
	JB inter2x2loop
	ADDQ 32(R12), DI
	ADDQ 40(R12), R8
	ADDQ 40(R12), R9
	DECQ R11
	JNZ inter2x2tile
	ADDQ 8(R12), DI
	ADDQ 16(R12), R8
	ADDQ 16(R12), R9
	DECQ DX
	JNZ inter2x2group
	RET

// func inter4x2SSE2(dst *byte, src *byte, rs int, n int, t *tiles)
TEXT ·inter4x2SSE2(SB), NOSPLIT, $0-40
	MOVQ dst+0(FP), DI
	MOVQ src+8(FP), R8
	MOVQ rs+16(FP), AX
	LEAQ (AX)(R8*1), R9
	MOVQ n+24(FP), CX
	MOVQ t+32(FP), R12
	MOVQ 0(R12), DX
inter4x2group:
	MOVQ 24(R12), R11
inter4x2tile:
	MOVQ DI, BX
	XORQ AX, AX
inter4x2loop:
	MOVOU (R8)(AX*1), X0
	MOVOU (R9)(AX*1), X1
	MOVO X0, X2
	UNPCKLPS X1, X0
	UNPCKHPS X1, X2
	MOVOU X0, (BX)
	MOVOU X2, 16(BX)
	ADDQ $32, BX
	ADDQ $16, AX
	CMPQ AX, CX
	JB inter4x2loop
	ADDQ 32(R12), DI
	ADDQ 40(R12), R8
	ADDQ 40(R12), R9
	DECQ R11
	JNZ inter4x2tile
	ADDQ 8(R12), DI
	ADDQ 16(R12), R8
	ADDQ 16(R12), R9
	DECQ DX
	JNZ inter4x2group
	RET
