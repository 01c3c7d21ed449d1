#include "textflag.h"

// SSE2 de-interleave and interleave kernels (SSE2 is part of the amd64
// baseline). Each moves whole 16-byte output rows; the Go wrappers in
// swar_amd64.go check bounds and hand the tails to the portable kernels.
// X7 holds 0x00ff in every 16-bit lane for the byte kernels.

// func deint1x2SSE2(d0, d1, src *byte, n int)
// n bytes to each row (a multiple of 16), 2n bytes read.
TEXT ·deint1x2SSE2(SB), NOSPLIT, $0-32
	MOVQ d0+0(FP), DI
	MOVQ d1+8(FP), R8
	MOVQ src+16(FP), SI
	MOVQ n+24(FP), CX
	PCMPEQW X7, X7
	PSRLW $8, X7
	XORQ AX, AX
d12loop:
	CMPQ AX, CX
	JAE d12done
	MOVOU (SI), X0
	MOVOU 16(SI), X1
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
	ADDQ $32, SI
	ADDQ $16, AX
	JMP d12loop
d12done:
	RET

// func deint1x4SSE2(d0, d1, d2, d3, src *byte, n int)
// Two rounds of the even/odd split: bytes k0,k2 then k0 and k2.
TEXT ·deint1x4SSE2(SB), NOSPLIT, $0-48
	MOVQ d0+0(FP), DI
	MOVQ d1+8(FP), R8
	MOVQ d2+16(FP), R9
	MOVQ d3+24(FP), R10
	MOVQ src+32(FP), SI
	MOVQ n+40(FP), CX
	PCMPEQW X7, X7
	PSRLW $8, X7
	XORQ AX, AX
d14loop:
	CMPQ AX, CX
	JAE d14done
	MOVOU (SI), X0
	MOVOU 16(SI), X1
	MOVOU 32(SI), X2
	MOVOU 48(SI), X3
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
	ADDQ $64, SI
	ADDQ $16, AX
	JMP d14loop
d14done:
	RET

// func deint2x2SSE2(d0, d1, src *byte, n int)
// 16-bit elements: sign-extend each half and pack with signed saturation,
// which is exact for sign-extended values.
TEXT ·deint2x2SSE2(SB), NOSPLIT, $0-32
	MOVQ d0+0(FP), DI
	MOVQ d1+8(FP), R8
	MOVQ src+16(FP), SI
	MOVQ n+24(FP), CX
	XORQ AX, AX
d22loop:
	CMPQ AX, CX
	JAE d22done
	MOVOU (SI), X0
	MOVOU 16(SI), X1
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
	ADDQ $32, SI
	ADDQ $16, AX
	JMP d22loop
d22done:
	RET

// func deint4x2SSE2(d0, d1, src *byte, n int)
TEXT ·deint4x2SSE2(SB), NOSPLIT, $0-32
	MOVQ d0+0(FP), DI
	MOVQ d1+8(FP), R8
	MOVQ src+16(FP), SI
	MOVQ n+24(FP), CX
	XORQ AX, AX
d42loop:
	CMPQ AX, CX
	JAE d42done
	MOVOU (SI), X0
	MOVOU 16(SI), X1
	MOVO X0, X2
	SHUFPS $0x88, X1, X0
	SHUFPS $0xDD, X1, X2
	MOVOU X0, (DI)(AX*1)
	MOVOU X2, (R8)(AX*1)
	ADDQ $32, SI
	ADDQ $16, AX
	JMP d42loop
d42done:
	RET

// func inter1x2SSE2(dst, s0, s1 *byte, n int)
// n bytes from each row (a multiple of 16), 2n bytes written.
TEXT ·inter1x2SSE2(SB), NOSPLIT, $0-32
	MOVQ dst+0(FP), DI
	MOVQ s0+8(FP), R8
	MOVQ s1+16(FP), R9
	MOVQ n+24(FP), CX
	XORQ AX, AX
i12loop:
	CMPQ AX, CX
	JAE i12done
	MOVOU (R8)(AX*1), X0
	MOVOU (R9)(AX*1), X1
	MOVO X0, X2
	PUNPCKLBW X1, X0
	PUNPCKHBW X1, X2
	MOVOU X0, (DI)
	MOVOU X2, 16(DI)
	ADDQ $32, DI
	ADDQ $16, AX
	JMP i12loop
i12done:
	RET

// func inter1x4SSE2(dst, s0, s1, s2, s3 *byte, n int)
TEXT ·inter1x4SSE2(SB), NOSPLIT, $0-48
	MOVQ dst+0(FP), DI
	MOVQ s0+8(FP), R8
	MOVQ s1+16(FP), R9
	MOVQ s2+24(FP), R10
	MOVQ s3+32(FP), R11
	MOVQ n+40(FP), CX
	XORQ AX, AX
i14loop:
	CMPQ AX, CX
	JAE i14done
	MOVOU (R8)(AX*1), X0
	MOVOU (R9)(AX*1), X1
	MOVOU (R10)(AX*1), X2
	MOVOU (R11)(AX*1), X3
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
	MOVOU X0, (DI)
	MOVOU X6, 16(DI)
	MOVOU X4, 32(DI)
	MOVOU X1, 48(DI)
	ADDQ $64, DI
	ADDQ $16, AX
	JMP i14loop
i14done:
	RET

// func inter2x2SSE2(dst, s0, s1 *byte, n int)
TEXT ·inter2x2SSE2(SB), NOSPLIT, $0-32
	MOVQ dst+0(FP), DI
	MOVQ s0+8(FP), R8
	MOVQ s1+16(FP), R9
	MOVQ n+24(FP), CX
	XORQ AX, AX
i22loop:
	CMPQ AX, CX
	JAE i22done
	MOVOU (R8)(AX*1), X0
	MOVOU (R9)(AX*1), X1
	MOVO X0, X2
	PUNPCKLWL X1, X0
	PUNPCKHWL X1, X2
	MOVOU X0, (DI)
	MOVOU X2, 16(DI)
	ADDQ $32, DI
	ADDQ $16, AX
	JMP i22loop
i22done:
	RET

// func inter4x2SSE2(dst, s0, s1 *byte, n int)
TEXT ·inter4x2SSE2(SB), NOSPLIT, $0-32
	MOVQ dst+0(FP), DI
	MOVQ s0+8(FP), R8
	MOVQ s1+16(FP), R9
	MOVQ n+24(FP), CX
	XORQ AX, AX
i42loop:
	CMPQ AX, CX
	JAE i42done
	MOVOU (R8)(AX*1), X0
	MOVOU (R9)(AX*1), X1
	MOVO X0, X2
	UNPCKLPS X1, X0
	UNPCKHPS X1, X2
	MOVOU X0, (DI)
	MOVOU X2, 16(DI)
	ADDQ $32, DI
	ADDQ $16, AX
	JMP i42loop
i42done:
	RET
