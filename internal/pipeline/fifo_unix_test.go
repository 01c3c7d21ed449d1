//go:build unix

package pipeline

import (
	"bytes"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/depthspace/depthspace/internal/format"
	"github.com/depthspace/depthspace/internal/format/npy"
	"github.com/depthspace/depthspace/internal/format/raw"
	"github.com/depthspace/depthspace/internal/ops"
)

// An input named by a path that is a pipe — a FIFO, bash's <(cmd),
// /dev/stdin — is read once: the tar sniff took its first 512 bytes
// ("cannot tell the format"), or, from a FIFO, waited for ever for a
// writer that had gone.
func TestPipeNamedByAPath(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "in") // no extension: the format is sniffed
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Skip("no FIFO here:", err)
	}
	data := make([]byte, 2*4*8*8)
	for i := range data {
		data[i] = byte(i)
	}
	src := append(npy.EncodeNpy(format.Header{DType: mustDType(t, "uint8"), Shape: []int{2, 4, 8, 8}}), data...)
	go func() {
		f, err := os.OpenFile(fifo, os.O_WRONLY, 0)
		if err != nil {
			return
		}
		f.Write(src)
		f.Close()
	}()
	var out bytes.Buffer
	done := make(chan error, 1)
	go func() {
		_, err := Transform(Options{Request: ops.Request{Op: ops.SpaceToDepth, Block: ops.Block{2}},
			Source: Source{Path: fifo}, Output: "-", To: raw.KindRaw, Stdout: &out, Threads: 1})
		done <- err
	}()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("the job still waits on the FIFO after 20 s")
	}
	_, want := planned(t, ops.Request{Op: ops.SpaceToDepth, Block: ops.Block{2}}, []int{2, 4, 8, 8}, 1, data)
	if !bytes.Equal(out.Bytes(), want) {
		t.Error("the result differs from the plan's")
	}
}
