package ops

import (
	"encoding/binary"
	"sync"
)

// Specialised de-interleave and interleave kernels for the shapes that
// dominate real use: block 2 or 4 along the innermost axis, elements of 1,
// 2, 4 or 8 bytes. They work on bytes with 8-byte little-endian loads and
// stores and move several elements per instruction with shifts and masks
// (SWAR), where the generic loop moves one element per load and store.
// Byte order does not matter: bytes are regrouped, never interpreted, and
// loads and stores use the same order.
//
// deint splits count groups of n elements from src into n rows:
// row l receives element l of every group.
// inter is the inverse: it zips n rows into count groups.
//
// Rows are given as slices so that they may lie in any order in memory: a
// block order (plan.go) can make the row stride negative.
type (
	deintFunc func(rows [][]byte, src []byte, count int)
	interFunc func(dst []byte, rows [][]byte, count int)
)

// rowsAt slices n rows of width bytes from b, the first at off, the others
// rs apart (rs may be negative), into r.
func rowsAt(r *[4][]byte, b []byte, off, rs, n, width int) [][]byte {
	for m := 0; m < n; m++ {
		o := off + m*rs
		r[m] = b[o : o+width]
	}
	return r[:n]
}

// tiles is a batch of tiles at constant steps, so that the cost of a call
// and its bounds checks is paid once per batch, not per tile (W5's tiles
// are 256 bytes; per-tile calls cost more than the copying). The batch is
// n1 groups of n2 tiles; tile (r1, r2) starts at dst[r1*dstep1+r2*dstep2:]
// and src[r1*sstep1+r2*sstep2:]. Steps may be negative (a block order
// can walk groups backwards). The assembly reads the first six fields by
// offset.
type tiles struct {
	n1, dstep1, sstep1 int
	n2, dstep2, sstep2 int
	// stream asks for stores that bypass the cache, for outputs too large
	// to be read back from it.
	stream bool
}

// each calls f with the dst and src offsets of every tile, in order.
func (t *tiles) each(f func(o, i int)) {
	for r1 := range t.n1 {
		for r2 := range t.n2 {
			f(r1*t.dstep1+r2*t.dstep2, r1*t.sstep1+r2*t.sstep2)
		}
	}
}

// span is the least and the greatest offset of a tile's start from the
// first tile's, on the output side (o) and the input side (i).
func (t *tiles) span() (oLo, oHi, iLo, iHi int) {
	oLo, oHi = reach(t.n1, t.dstep1, t.n2, t.dstep2)
	iLo, iHi = reach(t.n1, t.sstep1, t.n2, t.sstep2)
	return
}

// reach is the least and greatest of r1*s1 + r2*s2 over r1 < n1, r2 < n2.
func reach(n1, s1, n2, s2 int) (lo, hi int) {
	for _, v := range []int{(n1 - 1) * s1, (n2 - 1) * s2} {
		if v < 0 {
			lo += v
		} else {
			hi += v
		}
	}
	return lo, hi
}

// The batch kernels take whole buffers and the offsets of the first tile,
// so that tiles and rows may lie on either side of it.
type (
	deintRowsFunc func(dst []byte, off, rowStride int, src []byte, soff, count int, t *tiles)
	interRowsFunc func(dst []byte, off int, src []byte, soff, rowStride, count int, t *tiles)
)

// archKernels turns the architecture's kernels on; tests turn them off to
// run the engine on the portable kernels other architectures use.
var archKernels = true

// kernelCache holds fastDeint's and fastInter's answers by whether the
// architecture's kernels are on, element size and factor: building a
// kernel makes a closure, one allocation per run, and a batch of tiny
// tensors does a run per file.
type kernelCache[F any] [2][17][17]struct {
	once sync.Once
	f    F
}

var (
	deintKernels kernelCache[deintRowsFunc]
	interKernels kernelCache[interRowsFunc]
)

// cached returns build(e, n) from c, made on first use.
func cached[F any](c *kernelCache[F], e, n int, build func(e, n int) F) F {
	if e < 0 || e >= len(c[0]) || n < 0 || n >= len(c[0][0]) {
		return build(e, n)
	}
	arch := 0
	if archKernels {
		arch = 1
	}
	k := &c[arch][e][n]
	k.once.Do(func() { k.f = build(e, n) })
	return k.f
}

// fastDeint returns the kernel for element size e and factor n, or nil:
// an architecture's vector kernel where there is one, else a portable one.
func fastDeint(e, n int) deintRowsFunc { return cached(&deintKernels, e, n, newDeint) }

// fastInter is fastDeint's inverse.
func fastInter(e, n int) interRowsFunc { return cached(&interKernels, e, n, newInter) }

func newDeint(e, n int) deintRowsFunc {
	if archKernels {
		if f := archDeint(e, n); f != nil {
			return f
		}
	}
	if f := portableDeint(e, n); f != nil {
		return deintRows(f, e, n)
	}
	return nil
}

func newInter(e, n int) interRowsFunc {
	if archKernels {
		if f := archInter(e, n); f != nil {
			return f
		}
	}
	if f := portableInter(e, n); f != nil {
		return interRows(f, e, n)
	}
	return nil
}

// fastCopy copies n bytes for every tile of a batch with the
// architecture's kernel, or reports false (having done nothing) when there
// is none for this run length: the caller then copies in Go.
func fastCopy(dst []byte, off int, src []byte, soff, n int, t *tiles) bool {
	return archKernels && archCopy(dst, off, src, soff, n, t)
}

// deintRows runs a one-tile kernel of e-byte elements and factor n on a
// batch of tiles.
func deintRows(f deintFunc, e, n int) deintRowsFunc {
	return func(dst []byte, off, rs int, src []byte, soff, count int, t *tiles) {
		var r [4][]byte
		t.each(func(o, i int) { f(rowsAt(&r, dst, off+o, rs, n, e*count), src[soff+i:], count) })
	}
}

// interRows runs a one-tile kernel on a batch of tiles.
func interRows(f interFunc, e, n int) interRowsFunc {
	return func(dst []byte, off int, src []byte, soff, rs, count int, t *tiles) {
		var r [4][]byte
		t.each(func(o, i int) { f(dst[off+o:], rowsAt(&r, src, soff+i, rs, n, e*count), count) })
	}
}

func portableDeint(e, n int) deintFunc {
	switch {
	case e == 4 && n == 2:
		return deint4x2p
	case e == 2 && n == 2:
		return deint2x2p
	case e == 1 && n == 2:
		return deint1x2
	case e == 1 && n == 4:
		return deint1x4p
	case e == 2 && n == 4:
		return deint2x4
	case e == 8 && n == 2:
		return deint8x2
	case e == 4 && n == 4:
		return deint4x4
	}
	return nil
}

func portableInter(e, n int) interFunc {
	switch {
	case e == 4 && n == 2:
		return inter4x2p
	case e == 2 && n == 2:
		return inter2x2
	case e == 1 && n == 2:
		return inter1x2
	case e == 1 && n == 4:
		return inter1x4
	case e == 2 && n == 4:
		return inter2x4
	case e == 8 && n == 2:
		return inter8x2
	case e == 4 && n == 4:
		return inter4x4
	}
	return nil
}

var le = binary.LittleEndian

const (
	even8  = 0x00ff00ff00ff00ff
	even16 = 0x0000ffff0000ffff
	low32  = 0x00000000ffffffff
)

// unzip8 gathers the even bytes of v into the low 4 bytes.
func unzip8(v uint64) uint64 {
	v &= even8
	v = (v | v>>8) & even16
	return (v | v>>16) & low32
}

// zip8 spreads the low 4 bytes of v to the even bytes.
func zip8(v uint64) uint64 {
	v &= low32
	v = (v | v<<16) & even16
	return (v | v<<8) & even8
}

// unzip16 gathers the even 2-byte halves of v into the low 4 bytes.
func unzip16(v uint64) uint64 {
	v &= even16
	return (v | v>>16) & low32
}

// zip16 spreads the low two 2-byte halves of v to the even halves.
func zip16(v uint64) uint64 {
	v &= low32
	return (v | v<<16) & even16
}

func deint4x2(d [][]byte, src []byte, count int) {
	d0, d1 := d[0][:4*count], d[1][:4*count]
	s := src[:8*count]
	for x := 0; x < count; x++ {
		v := le.Uint64(s[8*x:])
		le.PutUint32(d0[4*x:], uint32(v))
		le.PutUint32(d1[4*x:], uint32(v>>32))
	}
}

func inter4x2(dst []byte, s [][]byte, count int) {
	s0, s1 := s[0][:4*count], s[1][:4*count]
	d := dst[:8*count]
	for x := 0; x < count; x++ {
		le.PutUint64(d[8*x:], uint64(le.Uint32(s0[4*x:]))|uint64(le.Uint32(s1[4*x:]))<<32)
	}
}

func deint8x2(d [][]byte, src []byte, count int) {
	d0, d1 := d[0][:8*count], d[1][:8*count]
	s := src[:16*count]
	for x := 0; x < count; x++ {
		le.PutUint64(d0[8*x:], le.Uint64(s[16*x:]))
		le.PutUint64(d1[8*x:], le.Uint64(s[16*x+8:]))
	}
}

func inter8x2(dst []byte, s [][]byte, count int) {
	s0, s1 := s[0][:8*count], s[1][:8*count]
	d := dst[:16*count]
	for x := 0; x < count; x++ {
		le.PutUint64(d[16*x:], le.Uint64(s0[8*x:]))
		le.PutUint64(d[16*x+8:], le.Uint64(s1[8*x:]))
	}
}

func deint4x4(d [][]byte, src []byte, count int) {
	d0, d1, d2, d3 := d[0][:4*count], d[1][:4*count], d[2][:4*count], d[3][:4*count]
	s := src[:16*count]
	for x := 0; x < count; x++ {
		a, b := le.Uint64(s[16*x:]), le.Uint64(s[16*x+8:])
		le.PutUint32(d0[4*x:], uint32(a))
		le.PutUint32(d1[4*x:], uint32(a>>32))
		le.PutUint32(d2[4*x:], uint32(b))
		le.PutUint32(d3[4*x:], uint32(b>>32))
	}
}

func inter4x4(dst []byte, s [][]byte, count int) {
	s0, s1, s2, s3 := s[0][:4*count], s[1][:4*count], s[2][:4*count], s[3][:4*count]
	d := dst[:16*count]
	for x := 0; x < count; x++ {
		le.PutUint64(d[16*x:], uint64(le.Uint32(s0[4*x:]))|uint64(le.Uint32(s1[4*x:]))<<32)
		le.PutUint64(d[16*x+8:], uint64(le.Uint32(s2[4*x:]))|uint64(le.Uint32(s3[4*x:]))<<32)
	}
}

// Two-byte elements, factor 2: 16 input bytes make 8 bytes of each row.
func deint2x2(d [][]byte, src []byte, count int) {
	d0, d1 := d[0][:2*count], d[1][:2*count]
	s := src[:4*count]
	x := 0
	for ; x+4 <= count; x += 4 {
		a, b := le.Uint64(s[4*x:]), le.Uint64(s[4*x+8:])
		le.PutUint64(d0[2*x:], unzip16(a)|unzip16(b)<<32)
		le.PutUint64(d1[2*x:], unzip16(a>>16)|unzip16(b>>16)<<32)
	}
	for ; x < count; x++ {
		copy(d0[2*x:2*x+2], s[4*x:])
		copy(d1[2*x:2*x+2], s[4*x+2:])
	}
}

func inter2x2(dst []byte, s [][]byte, count int) {
	s0, s1 := s[0][:2*count], s[1][:2*count]
	d := dst[:4*count]
	x := 0
	for ; x+4 <= count; x += 4 {
		a, b := le.Uint64(s0[2*x:]), le.Uint64(s1[2*x:])
		le.PutUint64(d[4*x:], zip16(a)|zip16(b)<<16)
		le.PutUint64(d[4*x+8:], zip16(a>>32)|zip16(b>>32)<<16)
	}
	for ; x < count; x++ {
		copy(d[4*x:4*x+2], s0[2*x:])
		copy(d[4*x+2:4*x+4], s1[2*x:])
	}
}

// Two-byte elements, factor 4: 32 input bytes make 8 bytes of each row.
func deint2x4(d [][]byte, src []byte, count int) {
	d0, d1, d2, d3 := d[0][:2*count], d[1][:2*count], d[2][:2*count], d[3][:2*count]
	s := src[:8*count]
	x := 0
	for ; x+4 <= count; x += 4 {
		a, b, c, d := le.Uint64(s[8*x:]), le.Uint64(s[8*x+8:]), le.Uint64(s[8*x+16:]), le.Uint64(s[8*x+24:])
		// Halves 0,2 of each word, then 0 and 1 of those.
		e01, e23 := unzip16(a)|unzip16(b)<<32, unzip16(c)|unzip16(d)<<32
		o01, o23 := unzip16(a>>16)|unzip16(b>>16)<<32, unzip16(c>>16)|unzip16(d>>16)<<32
		le.PutUint64(d0[2*x:], unzip16(e01)|unzip16(e23)<<32)
		le.PutUint64(d2[2*x:], unzip16(e01>>16)|unzip16(e23>>16)<<32)
		le.PutUint64(d1[2*x:], unzip16(o01)|unzip16(o23)<<32)
		le.PutUint64(d3[2*x:], unzip16(o01>>16)|unzip16(o23>>16)<<32)
	}
	for ; x < count; x++ {
		copy(d0[2*x:2*x+2], s[8*x:])
		copy(d1[2*x:2*x+2], s[8*x+2:])
		copy(d2[2*x:2*x+2], s[8*x+4:])
		copy(d3[2*x:2*x+2], s[8*x+6:])
	}
}

func inter2x4(dst []byte, s [][]byte, count int) {
	s0, s1, s2, s3 := s[0][:2*count], s[1][:2*count], s[2][:2*count], s[3][:2*count]
	d := dst[:8*count]
	x := 0
	for ; x+4 <= count; x += 4 {
		r0, r1, r2, r3 := le.Uint64(s0[2*x:]), le.Uint64(s1[2*x:]), le.Uint64(s2[2*x:]), le.Uint64(s3[2*x:])
		e02lo, e02hi := zip16(r0)|zip16(r2)<<16, zip16(r0>>32)|zip16(r2>>32)<<16
		o13lo, o13hi := zip16(r1)|zip16(r3)<<16, zip16(r1>>32)|zip16(r3>>32)<<16
		le.PutUint64(d[8*x:], zip16(e02lo)|zip16(o13lo)<<16)
		le.PutUint64(d[8*x+8:], zip16(e02lo>>32)|zip16(o13lo>>32)<<16)
		le.PutUint64(d[8*x+16:], zip16(e02hi)|zip16(o13hi)<<16)
		le.PutUint64(d[8*x+24:], zip16(e02hi>>32)|zip16(o13hi>>32)<<16)
	}
	for ; x < count; x++ {
		copy(d[8*x:8*x+2], s0[2*x:])
		copy(d[8*x+2:8*x+4], s1[2*x:])
		copy(d[8*x+4:8*x+6], s2[2*x:])
		copy(d[8*x+6:8*x+8], s3[2*x:])
	}
}

// One-byte elements, factor 2: 16 input bytes make 8 bytes of each row.
func deint1x2(d [][]byte, src []byte, count int) {
	d0, d1 := d[0][:count], d[1][:count]
	s := src[:2*count]
	x := 0
	for ; x+8 <= count; x += 8 {
		a, b := le.Uint64(s[2*x:]), le.Uint64(s[2*x+8:])
		le.PutUint64(d0[x:], unzip8(a)|unzip8(b)<<32)
		le.PutUint64(d1[x:], unzip8(a>>8)|unzip8(b>>8)<<32)
	}
	for ; x < count; x++ {
		d0[x], d1[x] = s[2*x], s[2*x+1]
	}
}

func inter1x2(dst []byte, s [][]byte, count int) {
	s0, s1 := s[0][:count], s[1][:count]
	d := dst[:2*count]
	x := 0
	for ; x+8 <= count; x += 8 {
		a, b := le.Uint64(s0[x:]), le.Uint64(s1[x:])
		le.PutUint64(d[2*x:], zip8(a)|zip8(b)<<8)
		le.PutUint64(d[2*x+8:], zip8(a>>32)|zip8(b>>32)<<8)
	}
	for ; x < count; x++ {
		d[2*x], d[2*x+1] = s0[x], s1[x]
	}
}

// One-byte elements, factor 4: 32 input bytes make 8 bytes of each row,
// by unzipping twice.
func deint1x4(d [][]byte, src []byte, count int) {
	d0, d1, d2, d3 := d[0][:count], d[1][:count], d[2][:count], d[3][:count]
	s := src[:4*count]
	x := 0
	for ; x+8 <= count; x += 8 {
		a, b, c, d := le.Uint64(s[4*x:]), le.Uint64(s[4*x+8:]), le.Uint64(s[4*x+16:]), le.Uint64(s[4*x+24:])
		e01, e23 := unzip8(a)|unzip8(b)<<32, unzip8(c)|unzip8(d)<<32
		o01, o23 := unzip8(a>>8)|unzip8(b>>8)<<32, unzip8(c>>8)|unzip8(d>>8)<<32
		le.PutUint64(d0[x:], unzip8(e01)|unzip8(e23)<<32)
		le.PutUint64(d2[x:], unzip8(e01>>8)|unzip8(e23>>8)<<32)
		le.PutUint64(d1[x:], unzip8(o01)|unzip8(o23)<<32)
		le.PutUint64(d3[x:], unzip8(o01>>8)|unzip8(o23>>8)<<32)
	}
	for ; x < count; x++ {
		d0[x], d1[x], d2[x], d3[x] = s[4*x], s[4*x+1], s[4*x+2], s[4*x+3]
	}
}

func inter1x4(dst []byte, s [][]byte, count int) {
	s0, s1, s2, s3 := s[0][:count], s[1][:count], s[2][:count], s[3][:count]
	d := dst[:4*count]
	x := 0
	for ; x+8 <= count; x += 8 {
		r0, r1, r2, r3 := le.Uint64(s0[x:]), le.Uint64(s1[x:]), le.Uint64(s2[x:]), le.Uint64(s3[x:])
		e02lo, e02hi := zip8(r0)|zip8(r2)<<8, zip8(r0>>32)|zip8(r2>>32)<<8
		o13lo, o13hi := zip8(r1)|zip8(r3)<<8, zip8(r1>>32)|zip8(r3>>32)<<8
		le.PutUint64(d[4*x:], zip8(e02lo)|zip8(o13lo)<<8)
		le.PutUint64(d[4*x+8:], zip8(e02lo>>32)|zip8(o13lo>>32)<<8)
		le.PutUint64(d[4*x+16:], zip8(e02hi)|zip8(o13hi)<<8)
		le.PutUint64(d[4*x+24:], zip8(e02hi>>32)|zip8(o13hi>>32)<<8)
	}
	for ; x < count; x++ {
		d[4*x], d[4*x+1], d[4*x+2], d[4*x+3] = s0[x], s1[x], s2[x], s3[x]
	}
}
