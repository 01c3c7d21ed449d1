package ops

// SSE2 kernels (swar_amd64.s). Each wrapper slices its buffers to the
// exact ranges the assembly touches (so Go checks them once), runs the
// assembly on whole 16-byte output rows and the portable kernel on the
// tail.

//go:noescape
func deint1x2SSE2(d0, d1, src *byte, n int)

//go:noescape
func deint1x4SSE2(d0, d1, d2, d3, src *byte, n int)

//go:noescape
func deint2x2SSE2(d0, d1, src *byte, n int)

//go:noescape
func deint4x2SSE2(d0, d1, src *byte, n int)

//go:noescape
func inter1x2SSE2(dst, s0, s1 *byte, n int)

//go:noescape
func inter1x4SSE2(dst, s0, s1, s2, s3 *byte, n int)

//go:noescape
func inter2x2SSE2(dst, s0, s1 *byte, n int)

//go:noescape
func inter4x2SSE2(dst, s0, s1 *byte, n int)

func archDeint(e, n int) deintFunc {
	switch {
	case e == 1 && n == 2:
		return deint1x2v
	case e == 1 && n == 4:
		return deint1x4v
	case e == 2 && n == 2:
		return deint2x2v
	case e == 4 && n == 2:
		return deint4x2v
	}
	return nil
}

func archInter(e, n int) interFunc {
	switch {
	case e == 1 && n == 2:
		return inter1x2v
	case e == 1 && n == 4:
		return inter1x4v
	case e == 2 && n == 2:
		return inter2x2v
	case e == 4 && n == 2:
		return inter4x2v
	}
	return nil
}

// rowsDone is how many bytes of each row the assembly does: whole
// 16-byte vectors.
func rowsDone(rowBytes int) int { return rowBytes &^ 15 }

func deint1x2v(dst []byte, rs int, src []byte, count int) {
	n := rowsDone(count)
	if n > 0 {
		d0, d1, s := dst[:n], dst[rs:rs+n], src[:2*n]
		deint1x2SSE2(&d0[0], &d1[0], &s[0], n)
	}
	if n < count {
		deint1x2(dst[n:], rs, src[2*n:], count-n)
	}
}

func deint1x4v(dst []byte, rs int, src []byte, count int) {
	n := rowsDone(count)
	if n > 0 {
		d0, d1, d2, d3, s := dst[:n], dst[rs:rs+n], dst[2*rs:2*rs+n], dst[3*rs:3*rs+n], src[:4*n]
		deint1x4SSE2(&d0[0], &d1[0], &d2[0], &d3[0], &s[0], n)
	}
	if n < count {
		deint1x4(dst[n:], rs, src[4*n:], count-n)
	}
}

func deint2x2v(dst []byte, rs int, src []byte, count int) {
	n := rowsDone(2 * count)
	if n > 0 {
		d0, d1, s := dst[:n], dst[rs:rs+n], src[:2*n]
		deint2x2SSE2(&d0[0], &d1[0], &s[0], n)
	}
	if done := n / 2; done < count {
		deint2x2(dst[n:], rs, src[2*n:], count-done)
	}
}

func deint4x2v(dst []byte, rs int, src []byte, count int) {
	n := rowsDone(4 * count)
	if n > 0 {
		d0, d1, s := dst[:n], dst[rs:rs+n], src[:2*n]
		deint4x2SSE2(&d0[0], &d1[0], &s[0], n)
	}
	if done := n / 4; done < count {
		deint4x2p(dst[n:], rs, src[2*n:], count-done)
	}
}

func inter1x2v(dst []byte, src []byte, rs int, count int) {
	n := rowsDone(count)
	if n > 0 {
		d, s0, s1 := dst[:2*n], src[:n], src[rs:rs+n]
		inter1x2SSE2(&d[0], &s0[0], &s1[0], n)
	}
	if n < count {
		inter1x2(dst[2*n:], src[n:], rs, count-n)
	}
}

func inter1x4v(dst []byte, src []byte, rs int, count int) {
	n := rowsDone(count)
	if n > 0 {
		d, s0, s1, s2, s3 := dst[:4*n], src[:n], src[rs:rs+n], src[2*rs:2*rs+n], src[3*rs:3*rs+n]
		inter1x4SSE2(&d[0], &s0[0], &s1[0], &s2[0], &s3[0], n)
	}
	if n < count {
		inter1x4(dst[4*n:], src[n:], rs, count-n)
	}
}

func inter2x2v(dst []byte, src []byte, rs int, count int) {
	n := rowsDone(2 * count)
	if n > 0 {
		d, s0, s1 := dst[:2*n], src[:n], src[rs:rs+n]
		inter2x2SSE2(&d[0], &s0[0], &s1[0], n)
	}
	if done := n / 2; done < count {
		inter2x2(dst[2*n:], src[n:], rs, count-done)
	}
}

func inter4x2v(dst []byte, src []byte, rs int, count int) {
	n := rowsDone(4 * count)
	if n > 0 {
		d, s0, s1 := dst[:2*n], src[:n], src[rs:rs+n]
		inter4x2SSE2(&d[0], &s0[0], &s1[0], n)
	}
	if done := n / 4; done < count {
		inter4x2p(dst[2*n:], src[n:], rs, count-done)
	}
}
