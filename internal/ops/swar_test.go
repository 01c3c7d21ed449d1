package ops

import (
	"bytes"
	"math/rand"
	"runtime"
	"testing"
)

func TestSWARKernels(t *testing.T) {
	rng := rand.New(rand.NewSource(7))
	kinds := []struct {
		name  string
		deint func(e, n int) deintRowsFunc
		inter func(e, n int) interRowsFunc
	}{{"fast", fastDeint, fastInter}, {"portable", func(e, n int) deintRowsFunc {
		if f := portableDeint(e, n); f != nil {
			return deintRows(f, e, n)
		}
		return nil
	}, func(e, n int) interRowsFunc {
		if f := portableInter(e, n); f != nil {
			return interRows(f, e, n)
		}
		return nil
	}}}
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
					for _, groups := range [][2]int{{1, 1}, {1, 5}, {3, 1}, {2, 3}} {
						checkSWARTiles(t, rng, kind.name, deint, inter, e, n, count, groups[0], groups[1])
					}
				}
			}
		}
	}
}

// checkSWARTiles runs a kernel on n1 groups of n2 tiles laid out with
// random gaps (between rows of a tile, between tiles, between groups) and
// random directions (rows, tiles and groups may each step backwards, as a
// block order makes them), against element-by-element loops, and checks
// that bytes outside the tiles are untouched.
func checkSWARTiles(t *testing.T, rng *rand.Rand, name string, deint deintRowsFunc, inter interRowsFunc, e, n, count, n1, n2 int) {
	t.Helper()
	sign := func() int { return 1 - 2*rng.Intn(2) }
	// Every output row 16-byte aligned (Go allocates these buffers 16-byte
	// aligned) in half the cases: the cache-bypassing kernels take these.
	stream := rng.Intn(2) == 0
	up := func(v int) int {
		if stream {
			return (v + 15) &^ 15
		}
		return v
	}
	rsAbs := up(e*count + rng.Intn(3)*e)
	rs := rsAbs * sign()
	tileOut, tileIn := rsAbs*(n-1)+e*count, n*e*count
	d2 := up(tileOut + rng.Intn(3)*e)
	d1 := up(n2*d2 + rng.Intn(3)*e)
	s2 := tileIn + rng.Intn(3)*e
	s1 := n2*s2 + rng.Intn(3)*e
	out := tiles{n1: n1, n2: n2, dstep1: d1 * sign(), dstep2: d2 * sign(), sstep1: s1 * sign(), sstep2: s2 * sign(), stream: stream}
	oLo, oHi, iLo, iHi := out.span()
	off := up(-oLo - min(0, (n-1)*rs))
	soff := -iLo
	src := randomBytes(rng, soff+iHi+tileIn)
	got := randomBytes(rng, off+oHi+max(0, (n-1)*rs)+e*count)
	want := append([]byte(nil), got...)
	out.each(func(o, i int) {
		for l := 0; l < n; l++ {
			for x := 0; x < count; x++ {
				at := off + o + l*rs + x*e
				copy(want[at:at+e], src[soff+i+(x*n+l)*e:])
			}
		}
	})
	batch := out
	deint(got, off, rs, src, soff, count, &batch)
	if !bytes.Equal(got, want) {
		t.Fatalf("%s deint e%d n%d count %d tiles %dx%d rs %d steps %+v: wrong bytes", name, e, n, count, n1, n2, rs, out)
	}
	back := randomBytes(rng, len(src))
	wantBack := append([]byte(nil), back...)
	out.each(func(o, i int) { copy(wantBack[soff+i:soff+i+tileIn], src[soff+i:]) })
	in := tiles{n1: n1, n2: n2, dstep1: out.sstep1, sstep1: out.dstep1, dstep2: out.sstep2, sstep2: out.dstep2, stream: out.stream}
	inter(back, soff, got, off, rs, count, &in)
	if !bytes.Equal(back, wantBack) {
		t.Fatalf("%s inter e%d n%d count %d tiles %dx%d rs %d: not the inverse", name, e, n, count, n1, n2, rs)
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
				var ra, rb [4][]byte
				p.fast(rowsAt(&ra, a, 0, rs, p.n, p.e*count), src, count)
				p.slow(rowsAt(&rb, b, 0, rs, p.n, p.e*count), src, count)
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
		var r [4][]byte
		inter4x2p(a, rowsAt(&r, src, 0, rs, 2, 4*count), count)
		inter4x2(b, rowsAt(&r, src, 0, rs, 2, 4*count), count)
		if !bytes.Equal(a, b) {
			t.Fatalf("inter4x2p count %d differs", count)
		}
	}
}

func BenchmarkSWAR(b *testing.B) {
	const count = 512 // one 4 KiB input row of float32, as in W1: in L1
	for _, k := range []struct {
		name string
		f    deintRowsFunc
		e, n int
	}{{"deint4x2-slices", deintRows(deint4x2, 4, 2), 4, 2}, {"deint4x2-pointers", deintRows(deint4x2p, 4, 2), 4, 2},
		{"deint1x4-slices", deintRows(deint1x4, 1, 4), 1, 4}, {"deint1x4-pointers", deintRows(deint1x4p, 1, 4), 1, 4},
		{"deint2x2-slices", deintRows(deint2x2, 2, 2), 2, 2}, {"deint2x2-pointers", deintRows(deint2x2p, 2, 2), 2, 2},
		{"deint4x2-fast", fastDeint(4, 2), 4, 2}, {"deint1x4-fast", fastDeint(1, 4), 1, 4}, {"deint2x2-fast", fastDeint(2, 2), 2, 2}} {
		b.Run(k.name, func(b *testing.B) {
			src := make([]byte, k.e*k.n*count)
			dst := make([]byte, k.e*k.n*count)
			b.SetBytes(int64(len(src)))
			for b.Loop() {
				k.f(dst, 0, k.e*count, src, 0, count, &tiles{n1: 1, n2: 1})
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

// A batch reaching past len(dst) panics even where the slice's capacity
// would hold it (a chunk buffer is a prefix of a larger one).
func TestBatchBoundsUseLength(t *testing.T) {
	big := make([]byte, 256)
	src := make([]byte, 256)
	cases := map[string]func(){
		"deint": func() { fastDeint(4, 2)(big[:40], 0, 16, src, 0, 4, &tiles{n1: 1, n2: 2, dstep2: 32, sstep2: 32}) },
		"inter": func() { fastInter(4, 2)(big[:40], 0, src, 0, 16, 4, &tiles{n1: 1, n2: 2, dstep2: 32, sstep2: 32}) },
	}
	if runtime.GOARCH == "amd64" { // elsewhere archCopy declines and the engine copies in Go
		cases["copy"] = func() { archCopy(big[:16], 0, src, 0, 32, &tiles{n1: 1, n2: 2, dstep2: 32, sstep2: 32}) }
	}
	for name, f := range cases {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("%s: a batch past len(dst) did not panic", name)
				}
			}()
			f()
		}()
	}
}
