package pipeline

import (
	"archive/tar"
	"bytes"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/depthspace/depthspace/internal/format"
	"github.com/depthspace/depthspace/internal/format/npy"
	tarfmt "github.com/depthspace/depthspace/internal/format/tar"
	"github.com/depthspace/depthspace/internal/ops"
)

// benchShard is a WebDataset shard of n samples, each a [1, 4, 16, 16]
// float32 .npy member (4 KiB) and a .cls label: the members are small,
// so the shard's per-member work is what is measured.
func benchShard(b *testing.B, n int) []byte {
	b.Helper()
	dt, err := format.ParseDType("<f4")
	if err != nil {
		b.Fatal(err)
	}
	h := format.Header{DType: dt, Shape: []int{1, 4, 16, 16}}
	member := append(npy.EncodeNpy(h), make([]byte, 4*16*16*4)...)
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for i := range n {
		for _, m := range []struct {
			name string
			data []byte
		}{{fmt.Sprintf("%06d.input.npy", i), member}, {fmt.Sprintf("%06d.cls", i), []byte("7")}} {
			if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: m.name, Size: int64(len(m.data)), Mode: 0o644}); err != nil {
				b.Fatal(err)
			}
			tw.Write(m.data)
		}
	}
	if err := tw.Close(); err != nil {
		b.Fatal(err)
	}
	return buf.Bytes()
}

// A shard of 1,000 samples worked on (go test -bench TarShard -benchmem),
// from a file (mapped, headers sliced from it) and from a pipe (read by
// archive/tar).
func BenchmarkTarShard(b *testing.B) {
	shard := benchShard(b, 1000)
	path := filepath.Join(b.TempDir(), "in.tar")
	if err := os.WriteFile(path, shard, 0o644); err != nil {
		b.Fatal(err)
	}
	req := ops.Request{Op: ops.SpaceToDepth, Block: ops.Block{2}}
	for _, piped := range []bool{false, true} {
		b.Run(map[bool]string{false: "file", true: "pipe"}[piped], func(b *testing.B) {
			b.SetBytes(int64(len(shard)))
			b.ReportAllocs()
			for b.Loop() {
				src := Source{Path: path}
				if piped {
					src = Source{Path: "-", From: tarfmt.KindTar, Stdin: bytes.NewReader(shard)}
				}
				if _, err := Transform(Options{Request: req, Source: src, Output: "-", Stdout: io.Discard, Threads: 1}); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
