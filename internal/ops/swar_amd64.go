package ops

import (
	"fmt"

	"golang.org/x/sys/cpu"
)

// SSE2 and AVX2 kernels (swar_amd64.s, written by swar_amd64_gen.py).
// Each runs a batch of tiles in one call; the wrapper (vecDeint, vecInter)
// checks the bounds of every tile in the batch once, runs the assembly on
// whole 16-byte output rows and the portable kernel on the tails. Batches
// marked stream use the non-temporal variant (SSE2) when every output row
// is 16-byte aligned; the others use AVX2 where the CPU has it.

//go:generate python3 swar_amd64_gen.py swar_amd64.s

//go:noescape
func deint1x2SSE2(dst *byte, rs int, src *byte, n int, t *tiles)

//go:noescape
func deint1x2NT(dst *byte, rs int, src *byte, n int, t *tiles)

//go:noescape
func deint1x2AVX2(dst *byte, rs int, src *byte, n int, t *tiles)

//go:noescape
func deint1x4SSE2(dst *byte, rs int, src *byte, n int, t *tiles)

//go:noescape
func deint1x4NT(dst *byte, rs int, src *byte, n int, t *tiles)

//go:noescape
func deint1x4AVX2(dst *byte, rs int, src *byte, n int, t *tiles)

//go:noescape
func deint2x2SSE2(dst *byte, rs int, src *byte, n int, t *tiles)

//go:noescape
func deint2x2NT(dst *byte, rs int, src *byte, n int, t *tiles)

//go:noescape
func deint2x2AVX2(dst *byte, rs int, src *byte, n int, t *tiles)

//go:noescape
func deint4x2SSE2(dst *byte, rs int, src *byte, n int, t *tiles)

//go:noescape
func deint4x2NT(dst *byte, rs int, src *byte, n int, t *tiles)

//go:noescape
func deint4x2AVX2(dst *byte, rs int, src *byte, n int, t *tiles)

//go:noescape
func inter1x2SSE2(dst *byte, src *byte, rs int, n int, t *tiles)

//go:noescape
func inter1x2NT(dst *byte, src *byte, rs int, n int, t *tiles)

//go:noescape
func inter1x2AVX2(dst *byte, src *byte, rs int, n int, t *tiles)

//go:noescape
func inter1x4SSE2(dst *byte, src *byte, rs int, n int, t *tiles)

//go:noescape
func inter1x4NT(dst *byte, src *byte, rs int, n int, t *tiles)

//go:noescape
func inter1x4AVX2(dst *byte, src *byte, rs int, n int, t *tiles)

//go:noescape
func inter2x2SSE2(dst *byte, src *byte, rs int, n int, t *tiles)

//go:noescape
func inter2x2NT(dst *byte, src *byte, rs int, n int, t *tiles)

//go:noescape
func inter2x2AVX2(dst *byte, src *byte, rs int, n int, t *tiles)

//go:noescape
func inter4x2SSE2(dst *byte, src *byte, rs int, n int, t *tiles)

//go:noescape
func inter4x2NT(dst *byte, src *byte, rs int, n int, t *tiles)

//go:noescape
func inter4x2AVX2(dst *byte, src *byte, rs int, n int, t *tiles)

//go:noescape
func copyTilesSSE2(dst *byte, src *byte, n int, t *tiles)

//go:noescape
func copyTilesNT(dst *byte, src *byte, n int, t *tiles)

// useAVX2 picks the AVX2 kernels over the SSE2 ones (the cache-bypassing
// ones stay SSE2). It is read at every batch, not when a kernel is built,
// so that tests can turn it off and run the SSE2 kernels on a machine that
// has AVX2; x/sys/cpu reports AVX2 only where the OS saves the YMM state.
var useAVX2 = cpu.X86.HasAVX2

func archDeint(e, n int) deintRowsFunc {
	switch {
	case e == 1 && n == 2:
		return vecDeint(1, 2, deint1x2SSE2, deint1x2AVX2, deint1x2NT, deint1x2)
	case e == 1 && n == 4:
		return vecDeint(1, 4, deint1x4SSE2, deint1x4AVX2, deint1x4NT, deint1x4p)
	case e == 2 && n == 2:
		return vecDeint(2, 2, deint2x2SSE2, deint2x2AVX2, deint2x2NT, deint2x2p)
	case e == 4 && n == 2:
		return vecDeint(4, 2, deint4x2SSE2, deint4x2AVX2, deint4x2NT, deint4x2p)
	}
	return nil
}

func archInter(e, n int) interRowsFunc {
	switch {
	case e == 1 && n == 2:
		return vecInter(1, 2, inter1x2SSE2, inter1x2AVX2, inter1x2NT, inter1x2)
	case e == 1 && n == 4:
		return vecInter(1, 4, inter1x4SSE2, inter1x4AVX2, inter1x4NT, inter1x4)
	case e == 2 && n == 2:
		return vecInter(2, 2, inter2x2SSE2, inter2x2AVX2, inter2x2NT, inter2x2)
	case e == 4 && n == 2:
		return vecInter(4, 2, inter4x2SSE2, inter4x2AVX2, inter4x2NT, inter4x2p)
	}
	return nil
}

// vecDeint wraps an assembly de-interleave of e-byte elements by factor f.
// The assembly does the first n bytes of every output row, n = e·count
// rounded down to whole 16-byte vectors (the AVX2 kernels do 32 bytes a
// step and a last 16 themselves); tail finishes each tile. The
// assembly walks rows and tiles with signed strides, so rows and tiles may
// lie before the first; the bounds of all of them are checked here, once.
func vecDeint(e, f int, asm, asmAVX2, asmNT func(dst *byte, rs int, src *byte, n int, t *tiles), tail deintFunc) deintRowsFunc {
	return func(dst []byte, off, rs int, src []byte, soff, count int, t *tiles) {
		if t.n1 <= 0 || t.n2 <= 0 || count <= 0 {
			return
		}
		oLo, oHi, iLo, iHi := t.span()
		checkTile(dst, off+oLo, off+oHi, rs, f, e*count)
		checkTile(src, soff+iLo, soff+iHi, 0, 1, f*e*count)
		n := (e * count) &^ 15
		if n > 0 {
			walk := t.forAsm()
			switch {
			case t.stream && aligned16(dst[off:], rs, t):
				asmNT(&dst[off], rs, &src[soff], n, &walk)
			case useAVX2:
				asmAVX2(&dst[off], rs, &src[soff], n, &walk)
			default:
				asm(&dst[off], rs, &src[soff], n, &walk)
			}
		}
		if done := n / e; done < count {
			var r [4][]byte
			t.each(func(o, i int) { tail(rowsAt(&r, dst, off+o+n, rs, f, e*(count-done)), src[soff+i+f*n:], count-done) })
		}
	}
}

// vecInter is vecDeint's inverse.
func vecInter(e, f int, asm, asmAVX2, asmNT func(dst *byte, src *byte, rs int, n int, t *tiles), tail interFunc) interRowsFunc {
	return func(dst []byte, off int, src []byte, soff, rs, count int, t *tiles) {
		if t.n1 <= 0 || t.n2 <= 0 || count <= 0 {
			return
		}
		oLo, oHi, iLo, iHi := t.span()
		checkTile(dst, off+oLo, off+oHi, 0, 1, f*e*count)
		checkTile(src, soff+iLo, soff+iHi, rs, f, e*count)
		n := (e * count) &^ 15
		if n > 0 {
			walk := t.forAsm()
			switch {
			case t.stream && aligned16(dst[off:], 0, t):
				asmNT(&dst[off], &src[soff], rs, n, &walk)
			case useAVX2:
				asmAVX2(&dst[off], &src[soff], rs, n, &walk)
			default:
				asm(&dst[off], &src[soff], rs, n, &walk)
			}
		}
		if done := n / e; done < count {
			var r [4][]byte
			t.each(func(o, i int) { tail(dst[off+o+f*n:], rowsAt(&r, src, soff+i+n, rs, f, e*(count-done)), count-done) })
		}
	}
}

// forAsm is the batch as the assembly walks it: the outer steps are applied
// after the inner steps of a whole group, so they are reduced by those.
func (t *tiles) forAsm() tiles {
	w := *t
	w.dstep1 -= t.n2 * t.dstep2
	w.sstep1 -= t.n2 * t.sstep2
	return w
}

// checkTile panics unless every tile whose start lies in [lo, hi], each
// `lines` lines of `width` bytes rs apart (rs may be negative), lies within
// len(b) (not merely its capacity: a chunk buffer is a prefix of a larger
// one).
func checkTile(b []byte, lo, hi, rs, lines, width int) {
	first, last := lo, hi+(lines-1)*rs
	if rs < 0 {
		first, last = lo+(lines-1)*rs, hi
	}
	if first < 0 || width < 0 || last+width > len(b) {
		panic(fmt.Sprintf("ops: tiles [%d, %d) outside a %d-byte buffer", first, last+width, len(b)))
	}
}

// aligned16 reports whether every output row of a batch starts on a
// 16-byte boundary, as the non-temporal stores require.
func aligned16(dst []byte, rs int, t *tiles) bool {
	return aligned(dst, 16) && (rs|t.dstep1|t.dstep2)%16 == 0
}

// archCopy copies n bytes for every tile of the batch, or reports false
// (having done nothing) when n is not a whole number of 16-byte vectors.
func archCopy(dst []byte, off int, src []byte, soff, n int, t *tiles) bool {
	if n%16 != 0 || n == 0 || t.n1 <= 0 || t.n2 <= 0 {
		return false
	}
	oLo, oHi, iLo, iHi := t.span()
	checkTile(dst, off+oLo, off+oHi, 0, 1, n)
	checkTile(src, soff+iLo, soff+iHi, 0, 1, n)
	walk := t.forAsm()
	if t.stream && aligned16(dst[off:], 0, t) {
		copyTilesNT(&dst[off], &src[soff], n, &walk)
	} else {
		copyTilesSSE2(&dst[off], &src[soff], n, &walk)
	}
	return true
}
