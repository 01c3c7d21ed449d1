package ops

import (
	"bytes"
	"math/rand"
	"testing"
)

func TestSWARKernels(t *testing.T) {
	rng := rand.New(rand.NewSource(7))
	for _, e := range []int{1, 2, 4, 8} {
		for _, n := range []int{2, 3, 4} {
			deint, inter := fastDeint(e, n), fastInter(e, n)
			if (deint == nil) != (inter == nil) {
				t.Fatalf("e%d n%d: de-interleave and interleave must come in pairs", e, n)
			}
			if deint == nil {
				continue
			}
			for count := 0; count < 70; count++ {
				rs := e*count + rng.Intn(3)*e // rows may have gaps between them
				src := randomBytes(rng, n*e*count)
				got := randomBytes(rng, rs*(n-1)+e*count)
				want := append([]byte(nil), got...)
				for l := 0; l < n; l++ {
					for x := 0; x < count; x++ {
						copy(want[l*rs+x*e:l*rs+x*e+e], src[(x*n+l)*e:])
					}
				}
				deint(got, rs, src, count)
				if !bytes.Equal(got, want) {
					t.Fatalf("deint e%d n%d count %d: wrong bytes", e, n, count)
				}
				back := randomBytes(rng, len(src))
				inter(back, got, rs, count)
				if !bytes.Equal(back, src) {
					t.Fatalf("inter e%d n%d count %d: not the inverse", e, n, count)
				}
			}
		}
	}
}
