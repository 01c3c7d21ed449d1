//go:build amd64

package ops

import (
	"math/rand"
	"testing"

	"golang.org/x/sys/cpu"
)

// vectorISAs are the kernel sets a test or benchmark runs side by side.
var vectorISAs = []struct {
	name string
	avx2 bool
}{{"SSE2", false}, {"AVX2", true}}

// eachISA runs f once on the SSE2 kernels and once on the AVX2 kernels,
// whatever the machine would pick, so that both stay tested on a machine
// with AVX2. Without AVX2 the second run cannot execute and is skipped.
func eachISA(t *testing.T, f func(t *testing.T)) {
	defer func(old bool) { useAVX2 = old }(useAVX2)
	for _, isa := range vectorISAs {
		t.Run(isa.name, func(t *testing.T) {
			if isa.avx2 && !cpu.X86.HasAVX2 {
				t.Skip("this CPU has no AVX2")
			}
			useAVX2 = isa.avx2
			f(t)
		})
	}
}

// The oracle tests of the vector kernels (element-by-element loops, the
// reference permutation, the definition of a byte de-interleave), on each
// instruction set: rows of every length up to a few KiB, starts at every
// alignment, batches of tiles walking either way, both directions.
func TestVectorKernelsEachISA(t *testing.T) {
	eachISA(t, func(t *testing.T) {
		t.Run("SWARKernels", TestSWARKernels)
		t.Run("RowLengths", testVectorRowLengths)
		t.Run("DeinterleaveBytes", TestDeinterleaveBytes)
		t.Run("KernelMatchesReference", TestKernelMatchesReference)
		t.Run("KernelMisaligned", TestKernelMisaligned)
		t.Run("RunItemsMatchesRun", TestRunItemsMatchesRun)
		t.Run("BatchBoundsUseLength", TestBatchBoundsUseLength)
	})
}

// testVectorRowLengths runs the assembly kernels themselves on output rows
// of 0 to 200 bytes (every residue modulo 16 and 32, rows of one 16-byte
// block, of one 32-byte block plus 16), against element-by-element loops.
func testVectorRowLengths(t *testing.T) {
	rng := rand.New(rand.NewSource(36))
	for _, k := range []struct{ e, n int }{{1, 2}, {1, 4}, {2, 2}, {4, 2}} {
		deint, inter := archDeint(k.e, k.n), archInter(k.e, k.n)
		if deint == nil || inter == nil {
			t.Fatalf("e%d n%d: no vector kernel", k.e, k.n)
		}
		for count := 0; count*k.e <= 200; count++ {
			for _, groups := range [][2]int{{1, 1}, {1, 3}, {2, 2}} {
				checkSWARTiles(t, rng, "vector", deint, inter, k.e, k.n, count, groups[0], groups[1])
			}
		}
	}
}

// BenchmarkVectorISA runs whole plans whose rows go through the vector
// kernels on the SSE2 and on the AVX2 kernels, side by side: tensors of
// 48 KiB (in L1/L2, as a batch of small files has them) and of a few MiB.
func BenchmarkVectorISA(b *testing.B) {
	for _, w := range []workload{
		{"f32_s2d_48KiB", Request{Op: SpaceToDepth, Block: Block{2}}, []int{1, 3, 64, 64}, 4},
		{"f32_d2s_48KiB", Request{Op: DepthToSpace, Block: Block{2}}, []int{1, 12, 32, 32}, 4},
		{"u16_s2d_24KiB", Request{Op: SpaceToDepth, Block: Block{2}}, []int{1, 3, 64, 64}, 2},
		{"u16_d2s_24KiB", Request{Op: DepthToSpace, Block: Block{2}}, []int{1, 12, 32, 32}, 2},
		{"u8_s2d_48KiB", Request{Op: SpaceToDepth, Block: Block{2}}, []int{1, 3, 128, 128}, 1},
		{"u8_d2s_48KiB", Request{Op: DepthToSpace, Block: Block{2}}, []int{1, 12, 64, 64}, 1},
		{"u8_s2d_b4_48KiB", Request{Op: SpaceToDepth, Block: Block{4}}, []int{1, 3, 128, 128}, 1},
		{"u8_d2s_b4_48KiB", Request{Op: DepthToSpace, Block: Block{4}}, []int{1, 48, 32, 32}, 1},
		{"f32_s2d_3MiB", Request{Op: SpaceToDepth, Block: Block{2}}, []int{1, 3, 512, 512}, 4},
		{"f32_d2s_3MiB", Request{Op: DepthToSpace, Block: Block{2}}, []int{1, 12, 256, 256}, 4},
		{"u8_s2d_3MiB", Request{Op: SpaceToDepth, Block: Block{2}}, []int{1, 3, 1024, 1024}, 1},
		{"u8_s2d_b4_3MiB", Request{Op: SpaceToDepth, Block: Block{4}}, []int{1, 3, 1024, 1024}, 1},
		{"u16_s2d_6MiB", Request{Op: SpaceToDepth, Block: Block{2}}, []int{1, 3, 1024, 1024}, 2},
	} {
		p, err := NewPlan(w.req, w.shape, w.elem, false)
		if err != nil {
			b.Fatal(err)
		}
		for _, isa := range vectorISAs {
			b.Run(w.name+"/isa="+isa.name, func(b *testing.B) {
				if isa.avx2 && !cpu.X86.HasAVX2 {
					b.Skip("this CPU has no AVX2")
				}
				defer func(old bool) { useAVX2 = old }(useAVX2)
				useAVX2 = isa.avx2
				dst, src := buffers(p.Bytes())
				b.SetBytes(int64(p.Bytes()))
				for b.Loop() {
					if err := p.Run(dst, src, 1); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}

// BenchmarkVectorKernels runs each assembly kernel alone, SSE2 beside
// AVX2, on one tile of output rows of 64 bytes to 4 KiB (in L1) or on a
// batch of tiles of 128-byte rows (the rows of a 64-wide float32 image).
func BenchmarkVectorKernels(b *testing.B) {
	type deintAsm = func(dst *byte, rs int, src *byte, n int, t *tiles)
	type interAsm = func(dst *byte, src *byte, rs int, n int, t *tiles)
	kernels := []struct {
		name       string
		f          int
		deint      [2]deintAsm
		inter      [2]interAsm
		deintOrNot bool
	}{
		{"deint1x2", 2, [2]deintAsm{deint1x2SSE2, deint1x2AVX2}, [2]interAsm{}, true},
		{"deint1x4", 4, [2]deintAsm{deint1x4SSE2, deint1x4AVX2}, [2]interAsm{}, true},
		{"deint2x2", 2, [2]deintAsm{deint2x2SSE2, deint2x2AVX2}, [2]interAsm{}, true},
		{"deint4x2", 2, [2]deintAsm{deint4x2SSE2, deint4x2AVX2}, [2]interAsm{}, true},
		{"inter1x2", 2, [2]deintAsm{}, [2]interAsm{inter1x2SSE2, inter1x2AVX2}, false},
		{"inter1x4", 4, [2]deintAsm{}, [2]interAsm{inter1x4SSE2, inter1x4AVX2}, false},
		{"inter2x2", 2, [2]deintAsm{}, [2]interAsm{inter2x2SSE2, inter2x2AVX2}, false},
		{"inter4x2", 2, [2]deintAsm{}, [2]interAsm{inter4x2SSE2, inter4x2AVX2}, false},
	}
	for _, k := range kernels {
		for _, shape := range []struct {
			name       string
			row, tiles int
		}{{"64B", 64, 1}, {"512B", 512, 1}, {"4KiB", 4096, 1}, {"128Bx96", 128, 96}, {"32Bx384", 32, 384}, {"128Bx192", 128, 192}} {
			for i, isa := range vectorISAs {
				b.Run(k.name+"/"+shape.name+"/isa="+isa.name, func(b *testing.B) {
					if isa.avx2 && !cpu.X86.HasAVX2 {
						b.Skip("this CPU has no AVX2")
					}
					tile := k.f * shape.row
					dst, src := make([]byte, tile*shape.tiles), make([]byte, tile*shape.tiles)
					t := tiles{n1: 1, n2: shape.tiles, dstep2: tile, sstep2: tile}
					walk := t.forAsm()
					b.SetBytes(int64(len(src)))
					for b.Loop() {
						if k.deintOrNot {
							k.deint[i](&dst[0], shape.row, &src[0], shape.row, &walk)
						} else {
							k.inter[i](&dst[0], &src[0], shape.row, shape.row, &walk)
						}
					}
				})
			}
		}
	}
}
