package ops

import (
	"fmt"
	"sync"
	"testing"
)

// The five workloads of docs/performance.md (W1-W5). Each benchmark reports MB/s of tensor moved
// (b.SetBytes), beside BenchmarkCopy of the same bytes on the same number
// of goroutines: the floor a permutation copy can hope to reach.
type workload struct {
	name  string
	req   Request
	shape []int
	elem  int
}

var workloads = []workload{
	{"W1_f32_s2d_dcr", Request{Op: SpaceToDepth, Block: Block{2}}, []int{4, 64, 1024, 1024}, 4},
	{"W1_f32_d2s_dcr", Request{Op: DepthToSpace, Block: Block{2}}, []int{4, 256, 512, 512}, 4},
	{"W2_f32_s2d_crd", Request{Op: SpaceToDepth, Order: CRD, Block: Block{2}}, []int{4, 64, 1024, 1024}, 4},
	{"W2_f32_d2s_crd", Request{Op: DepthToSpace, Order: CRD, Block: Block{2}}, []int{4, 256, 512, 512}, 4},
	{"W3_u8_s2d_b4", Request{Op: SpaceToDepth, Block: Block{4}}, []int{16, 3, 2048, 2048}, 1},
	{"W4_f16_s2d_nhwc", Request{Op: SpaceToDepth, Layout: NHWC, Block: Block{2}}, []int{8, 1024, 1024, 32}, 2},
	{"W5_f32_s2d_small", Request{Op: SpaceToDepth, Block: Block{2}}, []int{256, 16, 64, 64}, 4},
	// A block order is a different table, not a second pass.
	{"W1_f32_s2d_colmajor", Request{Op: SpaceToDepth, Block: Block{2}, BlockOrder: BlockOrder{Name: "col-major"}}, []int{4, 64, 1024, 1024}, 4},
	{"W1_f32_s2d_bggr", Request{Op: SpaceToDepth, Block: Block{2}, BlockOrder: BlockOrder{Name: "bggr"}}, []int{4, 64, 1024, 1024}, 4},
	{"W1_f32_s2d_sid", Request{Op: SpaceToDepth, Block: Block{2}, BlockOrder: BlockOrder{Perm: []int{0, 1, 3, 2}}}, []int{4, 64, 1024, 1024}, 4},
	{"W1_f32_d2s_bggr", Request{Op: DepthToSpace, Block: Block{2}, BlockOrder: BlockOrder{Name: "bggr"}}, []int{4, 256, 512, 512}, 4},
	{"RAW_u16_s2d_hw_rggb", Request{Op: SpaceToDepth, Layout: HW, Block: Block{2}}, []int{4096, 6144}, 2},
	{"RAW_u16_s2d_hw_sid", Request{Op: SpaceToDepth, Layout: HW, Block: Block{2}, BlockOrder: BlockOrder{Perm: []int{0, 1, 3, 2}}}, []int{4096, 6144}, 2},
	{"RAW_u16_s2d_hw_bggr", Request{Op: SpaceToDepth, Layout: HW, Block: Block{2}, BlockOrder: BlockOrder{Name: "bggr"}}, []int{4096, 6144}, 2},
	{"RAW_u16_s2d_hw_colmajor", Request{Op: SpaceToDepth, Layout: HW, Block: Block{2}, BlockOrder: BlockOrder{Name: "col-major"}}, []int{4096, 6144}, 2},
}

var benchBufs struct {
	sync.Mutex
	src, dst []byte
}

// buffers returns touched buffers of n bytes, reused across benchmarks so
// that page faults of fresh memory are not what is measured.
func buffers(n int) ([]byte, []byte) {
	benchBufs.Lock()
	defer benchBufs.Unlock()
	if len(benchBufs.src) < n {
		benchBufs.src, benchBufs.dst = make([]byte, n), make([]byte, n)
		for i := range benchBufs.src {
			benchBufs.src[i] = byte(i * 7)
		}
		copy(benchBufs.dst, benchBufs.src)
	}
	return benchBufs.dst[:n], benchBufs.src[:n]
}

func BenchmarkKernel(b *testing.B) {
	for _, w := range workloads {
		p, err := NewPlan(w.req, w.shape, w.elem, false)
		if err != nil {
			b.Fatal(err)
		}
		for _, threads := range []int{1, 2} {
			b.Run(fmt.Sprintf("%s/j%d", w.name, threads), func(b *testing.B) {
				dst, src := buffers(p.Bytes())
				b.SetBytes(int64(p.Bytes()))
				for b.Loop() {
					if err := p.Run(dst, src, threads); err != nil {
						b.Fatal(err)
					}
				}
			})
			b.Run(fmt.Sprintf("%s/copy/j%d", w.name, threads), func(b *testing.B) {
				dst, src := buffers(p.Bytes())
				b.SetBytes(int64(p.Bytes()))
				for b.Loop() {
					parallelCopy(dst, src, threads)
				}
			})
		}
	}
}

// parallelCopy is Go's copy split over goroutines: the memory-bus floor.
func parallelCopy(dst, src []byte, threads int) {
	var wg sync.WaitGroup
	n := len(src)
	for t := 0; t < threads; t++ {
		a, e := n*t/threads, n*(t+1)/threads
		wg.Add(1)
		go func() { defer wg.Done(); copy(dst[a:e], src[a:e]) }()
	}
	wg.Wait()
}
