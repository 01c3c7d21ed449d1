package batch

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
)

// A batch of small files into a new --out-dir, as a dataset of crops
// runs: what the batch pays per file, the file's own work included
// (go test -run XXX -bench BatchTiny -benchmem ./internal/batch/; the
// allocations and ns are per file).
func BenchmarkBatchTiny(b *testing.B) {
	const files = 500
	src := b.TempDir()
	for i := range files {
		writeNpy(b, filepath.Join(src, fmt.Sprintf("d%02d", i/50), fmt.Sprintf("f%02d.npy", i%50)), 1, 3, 64, 64)
	}
	job := s2d(b)
	b.ReportAllocs()
	n := 0
	for b.Loop() {
		out := filepath.Join(b.TempDir(), "out")
		s, err := Run(Options{Inputs: []string{src}, OutDir: out, Job: job, Threads: 2, Stderr: os.Stderr})
		if err != nil || s.Done != files {
			b.Fatal(err, s)
		}
		n++
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(n*files), "ns/file")
}
