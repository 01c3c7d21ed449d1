//go:build amd64

package ops

import (
	"math/rand"
	"testing"

	"golang.org/x/sys/cpu"
)

// eachISA runs f once on the SSE2 kernels and once on the AVX2 kernels,
// whatever the machine would pick, so that both stay tested on a machine
// with AVX2. Without AVX2 the second run cannot execute and is skipped.
func eachISA(t *testing.T, f func(t *testing.T)) {
	defer func(old bool) { useAVX2 = old }(useAVX2)
	for _, isa := range []struct {
		name string
		avx2 bool
	}{{"SSE2", false}, {"AVX2", true}} {
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
