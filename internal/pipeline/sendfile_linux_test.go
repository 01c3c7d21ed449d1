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

// dropSent frees the sent part of a scratch file, whole pages only, and
// leaves what is not sent yet as it was; a file that cannot punch holes
// is left alone for good.
func TestDropSent(t *testing.T) {
	f, err := os.CreateTemp(t.TempDir(), "spool")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	data := make([]byte, 4<<20)
	for i := range data {
		data[i] = byte(i*7 + 1)
	}
	if _, err := f.WriteAt(data, 0); err != nil {
		t.Fatal(err)
	}
	var dropped int64
	dropSent(f, &dropped, 3<<20+100)
	if dropped == -1 {
		t.Skip("no hole punching in", filepath.Dir(f.Name()))
	}
	if dropped != 3<<20 {
		t.Fatalf("dropped up to %d, want %d (whole pages before the offset)", dropped, 3<<20)
	}
	var st unix.Stat_t
	if err := unix.Fstat(int(f.Fd()), &st); err != nil {
		t.Fatal(err)
	}
	if held := st.Blocks * 512; held > 1<<20+64<<10 {
		t.Errorf("the file still holds %d bytes after dropping 3 MiB of 4", held)
	}
	rest := make([]byte, 1<<20)
	if _, err := f.ReadAt(rest, 3<<20); err != nil {
		t.Fatal(err)
	}
	for i, b := range rest {
		if b != data[3<<20+i] {
			t.Fatalf("byte %d after the dropped part changed", 3<<20+i)
		}
	}
	dropSent(f, &dropped, 1<<20) // behind what is dropped: nothing
	if dropped != 3<<20 {
		t.Errorf("dropped moved back to %d", dropped)
	}
}
