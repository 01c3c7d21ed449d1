package ops

// Byte (de)interleave entry points for other packages: Blosc's byte
// shuffle of f-byte elements is a de-interleave of bytes by f, its
// unshuffle the interleave, and the vector kernels the s2d engine uses
// for uint8 by 2 and by 4 (SSE2, or AVX2 where the CPU has it) do exactly
// that.

// byteBatch is the tile batch of one block: a single tile.
var byteBatch = tiles{n1: 1, n2: 1}

// The kernels are built once: building one makes a closure.
var (
	deintBy = [9]deintRowsFunc{2: archDeint(1, 2), 4: archDeint(1, 4)}
	interBy = [9]interRowsFunc{2: archInter(1, 2), 4: archInter(1, 4)}
)

// byteChunk is how many elements of 8 bytes go through the intermediate
// rows of the by-8 paths at a time: 4 KiB, so the intermediate stays in
// L1 and on the stack.
const byteChunk = 512

// DeinterleaveBytes writes byte j of every f-byte group of src to row j
// of dst, the rows n = len(src)/f bytes long and back to back (dst[j*n:]),
// for f of 2, 4 or 8, and reports true; bytes after the last whole group
// are not touched. It reports false, having done nothing, where the
// architecture has no kernel for f (the caller has its own loop).
func DeinterleaveBytes(dst, src []byte, f int) bool {
	n := len(src) / f
	if len(dst) < f*n {
		panic("ops: DeinterleaveBytes: dst shorter than src")
	}
	switch f {
	case 2, 4:
		k := deintBy[f]
		if k == nil {
			return false
		}
		if n > 0 {
			k(dst, 0, n, src, 0, n, &byteBatch)
		}
		return true
	case 8:
		by2, by4 := deintBy[2], deintBy[4]
		if by2 == nil || by4 == nil {
			return false
		}
		// By 2 (bytes 0,2,4,6 | 1,3,5,7 of each element) into tmp, then
		// each half by 4 into rows 2k and 2k+1: rows 2n apart.
		var tmp [8 * byteChunk]byte
		for at := 0; at < n; at += byteChunk {
			m := min(byteChunk, n-at)
			by2(tmp[:], 0, 4*m, src, 8*at, 4*m, &byteBatch)
			by4(dst, at, 2*n, tmp[:4*m], 0, m, &byteBatch)
			by4(dst, n+at, 2*n, tmp[4*m:8*m], 0, m, &byteBatch)
		}
		return true
	}
	return false
}

// InterleaveBytes is DeinterleaveBytes' inverse: byte j of group i of dst
// from src[j*n+i], n = len(src)/f; the bytes of dst after the f·n it
// writes are not touched.
func InterleaveBytes(dst, src []byte, f int) bool {
	n := len(src) / f
	if len(dst) < f*n {
		panic("ops: InterleaveBytes: dst shorter than src")
	}
	switch f {
	case 2, 4:
		k := interBy[f]
		if k == nil {
			return false
		}
		if n > 0 {
			k(dst, 0, src, 0, n, n, &byteBatch)
		}
		return true
	case 8:
		by2, by4 := interBy[2], interBy[4]
		if by2 == nil || by4 == nil {
			return false
		}
		var tmp [8 * byteChunk]byte
		for at := 0; at < n; at += byteChunk {
			m := min(byteChunk, n-at)
			by4(tmp[:4*m], 0, src, at, 2*n, m, &byteBatch)
			by4(tmp[4*m:8*m], 0, src, n+at, 2*n, m, &byteBatch)
			by2(dst, 8*at, tmp[:], 0, 4*m, 4*m, &byteBatch)
		}
		return true
	}
	return false
}
