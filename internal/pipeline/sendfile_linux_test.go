package pipeline

import (
	"os"
	"path/filepath"
	"testing"

	"golang.org/x/sys/unix"
)

// growPipe gives a pipe a 1 MiB buffer and leaves other files alone.
func TestGrowPipe(t *testing.T) {
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	defer w.Close()
	growPipe(w)
	size, err := unix.FcntlInt(w.Fd(), unix.F_GETPIPE_SZ, 0)
	if err != nil {
		t.Fatal(err)
	}
	if size != 1<<20 {
		if _, err := unix.FcntlInt(w.Fd(), unix.F_SETPIPE_SZ, 1<<20); err != nil {
			t.Skipf("this kernel refuses 1 MiB pipes here: %v", err)
		}
		t.Errorf("pipe buffer %d bytes after growPipe, want 1 MiB", size)
	}
	f, err := os.Create(filepath.Join(t.TempDir(), "plain"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	growPipe(f) // must not fail or change anything
	if _, err := f.Write([]byte("ok")); err != nil {
		t.Error(err)
	}
}
