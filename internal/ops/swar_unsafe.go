package ops

import "unsafe"

// Pointer-walking versions of the hottest SWAR kernels. The slice versions
// in swar.go pay a bounds check on every 8-byte access; these check the
// lengths once and then walk pointers. They are sound because:
//   - every access is inside the slices sliced (and so checked) at entry;
//   - they are only chosen when each buffer is aligned for the word it is
//     read or written as (alignedFor), which typed pointers require.

func aligned(b []byte, a uintptr) bool {
	return uintptr(unsafe.Pointer(unsafe.SliceData(b)))%a == 0
}

func deint4x2p(d [][]byte, src []byte, count int) {
	d0, d1 := d[0][:4*count], d[1][:4*count]
	s := src[:8*count]
	if count == 0 || !aligned(s, 8) || !aligned(d0, 4) || !aligned(d1, 4) {
		deint4x2(d, src, count)
		return
	}
	sp, p0, p1 := unsafe.Pointer(&s[0]), unsafe.Pointer(&d0[0]), unsafe.Pointer(&d1[0])
	x := 0
	for ; x+2 <= count; x += 2 {
		a := *(*uint64)(unsafe.Add(sp, 8*x))
		b := *(*uint64)(unsafe.Add(sp, 8*x+8))
		*(*uint64)(unsafe.Add(p0, 4*x)) = a&low32 | b<<32
		*(*uint64)(unsafe.Add(p1, 4*x)) = a>>32 | b&^low32
	}
	for ; x < count; x++ {
		v := *(*uint64)(unsafe.Add(sp, 8*x))
		*(*uint32)(unsafe.Add(p0, 4*x)) = uint32(v)
		*(*uint32)(unsafe.Add(p1, 4*x)) = uint32(v >> 32)
	}
}

func inter4x2p(dst []byte, s [][]byte, count int) {
	s0, s1 := s[0][:4*count], s[1][:4*count]
	d := dst[:8*count]
	if count == 0 || !aligned(d, 8) || !aligned(s0, 4) || !aligned(s1, 4) {
		inter4x2(dst, s, count)
		return
	}
	dp, p0, p1 := unsafe.Pointer(&d[0]), unsafe.Pointer(&s0[0]), unsafe.Pointer(&s1[0])
	for x := 0; x < count; x++ {
		*(*uint64)(unsafe.Add(dp, 8*x)) = uint64(*(*uint32)(unsafe.Add(p0, 4*x))) | uint64(*(*uint32)(unsafe.Add(p1, 4*x)))<<32
	}
}

func deint1x4p(d [][]byte, src []byte, count int) {
	d0, d1, d2, d3 := d[0][:count], d[1][:count], d[2][:count], d[3][:count]
	s := src[:4*count]
	n := count &^ 7
	if n == 0 || !aligned(s, 8) || !aligned(d0, 8) || !aligned(d1, 8) || !aligned(d2, 8) || !aligned(d3, 8) {
		deint1x4(d, src, count)
		return
	}
	sp := unsafe.Pointer(&s[0])
	p0, p1, p2, p3 := unsafe.Pointer(&d0[0]), unsafe.Pointer(&d1[0]), unsafe.Pointer(&d2[0]), unsafe.Pointer(&d3[0])
	for x := 0; x < n; x += 8 {
		q := unsafe.Add(sp, 4*x)
		a, b := *(*uint64)(q), *(*uint64)(unsafe.Add(q, 8))
		c, d := *(*uint64)(unsafe.Add(q, 16)), *(*uint64)(unsafe.Add(q, 24))
		e01, e23 := unzip8(a)|unzip8(b)<<32, unzip8(c)|unzip8(d)<<32
		o01, o23 := unzip8(a>>8)|unzip8(b>>8)<<32, unzip8(c>>8)|unzip8(d>>8)<<32
		*(*uint64)(unsafe.Add(p0, x)) = unzip8(e01) | unzip8(e23)<<32
		*(*uint64)(unsafe.Add(p2, x)) = unzip8(e01>>8) | unzip8(e23>>8)<<32
		*(*uint64)(unsafe.Add(p1, x)) = unzip8(o01) | unzip8(o23)<<32
		*(*uint64)(unsafe.Add(p3, x)) = unzip8(o01>>8) | unzip8(o23>>8)<<32
	}
	for x := n; x < count; x++ {
		d0[x], d1[x], d2[x], d3[x] = s[4*x], s[4*x+1], s[4*x+2], s[4*x+3]
	}
}

func deint2x2p(d [][]byte, src []byte, count int) {
	d0, d1 := d[0][:2*count], d[1][:2*count]
	s := src[:4*count]
	n := count &^ 3
	if n == 0 || !aligned(s, 8) || !aligned(d0, 8) || !aligned(d1, 8) {
		deint2x2(d, src, count)
		return
	}
	sp, p0, p1 := unsafe.Pointer(&s[0]), unsafe.Pointer(&d0[0]), unsafe.Pointer(&d1[0])
	for x := 0; x < n; x += 4 {
		a, b := *(*uint64)(unsafe.Add(sp, 4*x)), *(*uint64)(unsafe.Add(sp, 4*x+8))
		*(*uint64)(unsafe.Add(p0, 2*x)) = unzip16(a) | unzip16(b)<<32
		*(*uint64)(unsafe.Add(p1, 2*x)) = unzip16(a>>16) | unzip16(b>>16)<<32
	}
	if n < count {
		deint2x2([][]byte{d0[2*n:], d1[2*n:]}, src[4*n:], count-n)
	}
}
