package pipeline

import (
	"path/filepath"
	"testing"

	"github.com/depthspace/depthspace/internal/ops"
)

// A tiny file's job, whole: what a batch of many small files pays per
// file in the pipeline (go test -bench TransformTiny -benchmem).
func BenchmarkTransformTiny(b *testing.B) {
	dir := b.TempDir()
	in := filepath.Join(dir, "in.npy")
	data := make([]byte, 1*4*4*4*2)
	writeNpy(b, in, "<u2", []int{1, 4, 4, 4}, false, data)
	out := filepath.Join(dir, "out.npy")
	o := Options{Request: ops.Request{Op: ops.SpaceToDepth, Block: ops.Block{2}}, Source: Source{Path: in}, Output: out, Threads: 1}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Transform(o); err != nil {
			b.Fatal(err)
		}
	}
}
