package ops

import (
	"bytes"
	"math/rand"
	"testing"
)

func TestSWARKernels(t *testing.T) {
	rng := rand.New(rand.NewSource(7))
	kinds := []struct {
		name  string
		deint func(e, n int) deintFunc
		inter func(e, n int) interFunc
	}{{"fast", fastDeint, fastInter}, {"portable", portableDeint, portableInter}}
	for _, kind := range kinds {
		for _, e := range []int{1, 2, 4, 8} {
			for _, n := range []int{2, 3, 4} {
				deint, inter := kind.deint(e, n), kind.inter(e, n)
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
						t.Fatalf("%s deint e%d n%d count %d: wrong bytes", kind.name, e, n, count)
					}
					back := randomBytes(rng, len(src))
					inter(back, got, rs, count)
					if !bytes.Equal(back, src) {
						t.Fatalf("%s inter e%d n%d count %d: not the inverse", kind.name, e, n, count)
					}
				}
			}
		}
	}
}

// The pointer versions equal the slice versions, aligned or not.
func TestSWARPointerKernels(t *testing.T) {
	rng := rand.New(rand.NewSource(8))
	pairs := []struct {
		name       string
		e, n       int
		fast, slow deintFunc
	}{
		{"4x2", 4, 2, deint4x2p, deint4x2}, {"1x4", 1, 4, deint1x4p, deint1x4}, {"2x2", 2, 2, deint2x2p, deint2x2},
	}
	for _, p := range pairs {
		for count := 0; count < 70; count++ {
			for shift := 0; shift < 3; shift++ {
				rs := p.e*count + 8*rng.Intn(2)
				src := randomBytes(rng, p.n*p.e*count+8)[shift:][:p.n*p.e*count]
				a := make([]byte, rs*(p.n-1)+p.e*count+8)[shift:]
				b := append([]byte(nil), a...)
				p.fast(a, rs, src, count)
				p.slow(b, rs, src, count)
				if !bytes.Equal(a, b) {
					t.Fatalf("%s count %d shift %d: pointer kernel differs", p.name, count, shift)
				}
			}
		}
	}
	for count := 0; count < 70; count++ {
		rs := 4*count + 8*rng.Intn(2)
		src := randomBytes(rng, rs+4*count)
		a, b := make([]byte, 8*count), make([]byte, 8*count)
		inter4x2p(a, src, rs, count)
		inter4x2(b, src, rs, count)
		if !bytes.Equal(a, b) {
			t.Fatalf("inter4x2p count %d differs", count)
		}
	}
}

func BenchmarkSWAR(b *testing.B) {
	const count = 512 // one 4 KiB input row of float32, as in W1: in L1
	for _, k := range []struct {
		name string
		f    deintFunc
		e, n int
	}{{"deint4x2-slices", deint4x2, 4, 2}, {"deint4x2-pointers", deint4x2p, 4, 2},
		{"deint1x4-slices", deint1x4, 1, 4}, {"deint1x4-pointers", deint1x4p, 1, 4},
		{"deint2x2-slices", deint2x2, 2, 2}, {"deint2x2-pointers", deint2x2p, 2, 2},
		{"deint4x2-fast", fastDeint(4, 2), 4, 2}, {"deint1x4-fast", fastDeint(1, 4), 1, 4}, {"deint2x2-fast", fastDeint(2, 2), 2, 2}} {
		b.Run(k.name, func(b *testing.B) {
			src := make([]byte, k.e*k.n*count)
			dst := make([]byte, k.e*k.n*count)
			b.SetBytes(int64(len(src)))
			for b.Loop() {
				k.f(dst, k.e*count, src, count)
			}
		})
	}
	b.Run("copy", func(b *testing.B) {
		src, dst := make([]byte, 4096), make([]byte, 4096)
		b.SetBytes(4096)
		for b.Loop() {
			copy(dst, src)
		}
	})
}
