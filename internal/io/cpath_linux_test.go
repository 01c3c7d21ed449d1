package fileio

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// longDir makes a directory under dir whose path is too long for cpath.
func longDir(t *testing.T, dir string) string {
	long := filepath.Join(dir, strings.Repeat("d", 200), strings.Repeat("e", 200), strings.Repeat("f", 200))
	if err := os.MkdirAll(long, 0o755); err != nil {
		t.Fatal(err)
	}
	return long
}

// openPath answers as unix.Open does: a file, a missing one, a directory
// opened for O_TMPFILE, a path too long for the stack copy and one
// holding a NUL.
func TestOpenPathAsOpen(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "a.npy")
	if err := os.WriteFile(file, []byte("abc"), 0o644); err != nil {
		t.Fatal(err)
	}
	long := longDir(t, dir)
	for _, c := range []struct {
		name  string
		flags int
	}{
		{file, unix.O_RDONLY | unix.O_CLOEXEC},
		{filepath.Join(dir, "missing"), unix.O_RDONLY | unix.O_CLOEXEC},
		{dir, unix.O_RDWR | unix.O_CLOEXEC | unix.O_TMPFILE},
		{long, unix.O_RDWR | unix.O_CLOEXEC | unix.O_TMPFILE},
		{file + "\x00x", unix.O_RDONLY | unix.O_CLOEXEC},
	} {
		want, werr := unix.Open(c.name, c.flags, 0o666)
		got, gerr := openPath(c.name, c.flags, 0o666)
		if gerr != werr {
			t.Errorf("openPath(%q) = %d, %v; unix.Open: %d, %v", c.name, got, gerr, want, werr)
		}
		if werr != nil || gerr != nil {
			continue
		}
		if c.flags&unix.O_TMPFILE != unix.O_TMPFILE {
			var st unix.Stat_t
			if err := unix.Fstat(got, &st); err != nil || st.Size != 3 {
				t.Errorf("openPath(%q): fstat %v, size %d", c.name, err, st.Size)
			}
		}
		unix.Close(want)
		unix.Close(got)
	}
	allocs := testing.AllocsPerRun(50, func() {
		fd, err := openPath(file, unix.O_RDONLY|unix.O_CLOEXEC, 0)
		if err != nil {
			t.Fatal(err)
		}
		unix.Close(fd)
	})
	if allocs != 0 {
		t.Errorf("openPath: %v allocations, want 0", allocs)
	}
}

// linkEmptyPath answers as unix.Linkat with AT_EMPTY_PATH does (which
// may be refused without privileges): a new name, an existing one, a
// path too long for the stack copy.
func TestLinkEmptyPathAsLinkat(t *testing.T) {
	dir := t.TempDir()
	long := longDir(t, dir)
	anon := func() int {
		fd, err := unix.Open(dir, unix.O_RDWR|unix.O_CLOEXEC|unix.O_TMPFILE, 0o644)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { unix.Close(fd) })
		return fd
	}
	for _, base := range []string{dir, long} {
		want, got := filepath.Join(base, "want"), filepath.Join(base, "got")
		werr := unix.Linkat(anon(), "", unix.AT_FDCWD, want, unix.AT_EMPTY_PATH)
		gerr := linkEmptyPath(anon(), got)
		if gerr != werr {
			t.Errorf("linkEmptyPath(%q): %v; unix.Linkat: %v", got, gerr, werr)
		}
		_, werr = os.Stat(want)
		_, gerr = os.Stat(got)
		if (werr == nil) != (gerr == nil) {
			t.Errorf("after linking: stat %v; unix.Linkat's: %v", gerr, werr)
		}
		werr = unix.Linkat(anon(), "", unix.AT_FDCWD, want, unix.AT_EMPTY_PATH)
		gerr = linkEmptyPath(anon(), got)
		if gerr != werr {
			t.Errorf("linkEmptyPath(%q) again: %v; unix.Linkat: %v", got, gerr, werr)
		}
	}
	fd, name := anon(), filepath.Join(dir, "got")
	allocs := testing.AllocsPerRun(50, func() {
		if err := linkEmptyPath(fd, name); err == nil {
			t.Fatalf("linkEmptyPath(%q): the name was free", name)
		}
	})
	if allocs != 0 {
		t.Errorf("linkEmptyPath: %v allocations, want 0", allocs)
	}
}
