package fileio

import (
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"syscall"
	"testing"
)

// An existing output in /dev/shm is an ordinary file on tmpfs: it is
// replaced atomically through a temporary file, not written in place as
// /dev/stdout or /dev/null are.
func TestCreateReplacesDevShmFile(t *testing.T) {
	dir, err := os.MkdirTemp("/dev/shm", "depthspace-test-")
	if err != nil {
		t.Skip("no /dev/shm here:", err)
	}
	defer os.RemoveAll(dir)
	name := filepath.Join(dir, "out.npy")
	o := createOver(t, name, "old")
	if !o.IsFile() || o.tmp == "" && !o.anon {
		t.Fatalf("an existing file in /dev/shm is written as a stream (IsFile %v, temporary %q)", o.IsFile(), o.tmp)
	}
	o.Abort()
	if b, _ := os.ReadFile(name); string(b) != "old" {
		t.Errorf("an aborted output changed the target: %q", b)
	}
	for _, p := range []string{"/dev/null", "/dev/zero"} {
		if !isDescriptorPath(p) {
			t.Errorf("%s is not seen as a device or descriptor", p)
		}
	}
}

// A new output is written unnamed where the system allows (O_TMPFILE)
// and appears complete under its name at Commit: nothing is seen in the
// directory before. A target made meanwhile is replaced as usual, and
// where the unnamed file cannot be linked its bytes are copied into a
// named temporary file; every way ends with the target whole and nothing
// else in the directory, and an aborted one leaves nothing.
func TestNewOutputs(t *testing.T) {
	data := []byte("the whole result")
	for _, c := range []struct {
		name   string
		before func(dir string)        // between Create and Commit
		link   func(int, string) error // nil: the real one
		fresh  bool                    // Target.Fresh: the path is not looked at
		old    bool                    // a target exists before Create
	}{
		{name: "linked"},
		{name: "linked through /proc", before: func(string) { procLink.Store(true) }},
		{name: "target made meanwhile", before: func(dir string) { os.WriteFile(filepath.Join(dir, "out.npy"), []byte("other"), 0o644) }},
		{name: "cannot link", link: func(int, string) error { return syscall.EPERM }},
		{name: "fresh", fresh: true},
		{name: "replacing", old: true},
		{name: "replacing, cannot link", old: true, link: func(int, string) error { return syscall.EPERM }},
		{name: "fresh, target made meanwhile", fresh: true, before: func(dir string) { os.WriteFile(filepath.Join(dir, "out.npy"), []byte("other"), 0o644) }},
	} {
		t.Run(c.name, func(t *testing.T) {
			if c.link != nil {
				defer func(f func(int, string) error) { linkAnonFunc = f; anonRefused.Store(false) }(linkAnonFunc)
				linkAnonFunc = c.link
			}
			dir := t.TempDir()
			name := filepath.Join(dir, "out.npy")
			if c.old {
				if err := os.WriteFile(name, []byte("previous"), 0o600); err != nil {
					t.Fatal(err)
				}
			}
			o, err := CreateFor(name, nil, Target{Fresh: c.fresh})
			if err != nil {
				t.Fatal(err)
			}
			if runtime.GOOS == "linux" && !o.anon {
				if fd, err := createAnon(dir); err != nil {
					t.Skipf("no unnamed files in %s: %v", dir, err)
				} else {
					closeFD(fd)
				}
				t.Fatal("a new output was not made unnamed")
			}
			if entries, _ := os.ReadDir(dir); len(entries) != boolInt(c.old) && o.anon {
				t.Errorf("an unnamed output shows in the directory: %v", entries)
			}
			if _, err := o.WriteAt(data, 0); err != nil {
				t.Fatal(err)
			}
			if c.before != nil {
				c.before(dir)
			}
			err = o.Commit()
			procLink.Store(false)
			if err != nil {
				t.Fatal(err)
			}
			if got, _ := os.ReadFile(name); string(got) != string(data) {
				t.Errorf("target holds %q", got)
			}
			if entries, _ := os.ReadDir(dir); len(entries) != 1 {
				t.Errorf("directory holds %v, want the target alone", entries)
			}
			if fi, _ := os.Stat(name); fi.Mode().Perm() != filePerm {
				t.Errorf("mode %v, want %v", fi.Mode().Perm(), os.FileMode(filePerm))
			}
		})
	}
	dir := t.TempDir()
	o, err := Create(filepath.Join(dir, "out.npy"), nil)
	if err != nil {
		t.Fatal(err)
	}
	o.WriteAt(data, 0)
	o.Abort()
	if entries, _ := os.ReadDir(dir); len(entries) != 0 {
		t.Errorf("an aborted new output left %v", entries)
	}
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

// A replacement whose rename is refused (another user's file in a sticky
// directory: EPERM) fails with that error: its bytes are not copied into
// a named file to be refused again, unnamed files stay in use, and
// nothing is left beside the target.
func TestReplaceRenameRefused(t *testing.T) {
	defer func(f func(string, string) error) { renameFunc = f }(renameFunc)
	renameFunc = func(string, string) error { return syscall.EPERM }
	dir := t.TempDir()
	name := filepath.Join(dir, "out.npy")
	o := createOver(t, name, "previous")
	if !o.anon {
		o.Abort()
		t.Skip("no unnamed files here")
	}
	o.WriteAt([]byte("new"), 0)
	if err := o.Commit(); !errors.Is(err, syscall.EPERM) {
		t.Errorf("Commit: %v, want EPERM", err)
	}
	if anonRefused.Load() {
		anonRefused.Store(false)
		t.Error("a refused rename turned unnamed files off")
	}
	if got, _ := os.ReadFile(name); string(got) != "previous" {
		t.Errorf("target holds %q", got)
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 1 {
		t.Errorf("directory holds %v", entries)
	}
}

// createOver writes previous to name and starts an output replacing it.
func createOver(t *testing.T, name, previous string) *Output {
	t.Helper()
	if err := os.WriteFile(name, []byte(previous), 0o644); err != nil {
		t.Fatal(err)
	}
	o, err := Create(name, nil)
	if err != nil {
		t.Fatal(err)
	}
	return o
}

// Size is the committed file's size, whichever way it was written: in
// order, by position (ranges out of order, one rewritten), sized first
// (Reserve), through a mapping, with blocks reserved past the end and
// trimmed (Expect), new or replacing a larger file.
func TestOutputSizeIsTheFiles(t *testing.T) {
	dir := t.TempDir()
	for _, c := range []struct {
		name  string
		old   string // the target's content before, "" for none
		write func(o *Output) error
	}{
		{"in order", "", func(o *Output) error {
			for _, p := range []string{"abc", "", "defgh"} {
				if _, err := o.Write([]byte(p)); err != nil {
					return err
				}
			}
			return nil
		}},
		{"by position", "", func(o *Output) error {
			for _, w := range []struct {
				p   string
				off int64
			}{{"xyz", 7}, {"ab", 0}, {"q", 3}} {
				if _, err := o.WriteAt([]byte(w.p), w.off); err != nil {
					return err
				}
			}
			return nil
		}},
		{"reserved", "a much longer old file than the new one", func(o *Output) error {
			if err := o.Reserve(12); err != nil {
				return err
			}
			_, err := o.WriteAt([]byte("abc"), 0)
			return err
		}},
		{"mapped", "", func(o *Output) error {
			m, err := o.Map(5000)
			if err == nil {
				copy(m, "mapped")
			}
			return err
		}},
		{"expected", "", func(o *Output) error {
			o.Expect(1 << 16)
			_, err := o.Write([]byte("short"))
			return err
		}},
	} {
		name := filepath.Join(dir, c.name)
		if c.old != "" {
			if err := os.WriteFile(name, []byte(c.old), 0o666); err != nil {
				t.Fatal(err)
			}
		}
		o, err := Create(name, nil)
		if err != nil {
			t.Fatal(err)
		}
		if err := c.write(o); err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if err := o.Commit(); err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		fi, err := os.Stat(name)
		if err != nil {
			t.Fatal(err)
		}
		if o.Size() != fi.Size() {
			t.Errorf("%s: Size %d, the file has %d bytes", c.name, o.Size(), fi.Size())
		}
	}
}

// An input read whole (a small regular file) is described by its fstat:
// SameFile knows it for the file itself and for a link to it, and tells
// it from another file, as os.SameFile does for os.Stat's.
func TestSmallInputInfo(t *testing.T) {
	dir := t.TempDir()
	a, b := filepath.Join(dir, "a.npy"), filepath.Join(dir, "b.npy")
	for _, n := range []string{a, b} {
		if err := os.WriteFile(n, []byte("small "+n), 0o640); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Link(a, filepath.Join(dir, "link.npy")); err != nil {
		t.Fatal(err)
	}
	in, err := Open(a, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close()
	if string(in.Data) != "small "+a || in.File != nil {
		t.Fatalf("Open read %q (file kept open: %v)", in.Data, in.File != nil)
	}
	st, _ := os.Stat(a)
	if in.Info.Name() != "a.npy" || in.Info.Size() != st.Size() || in.Info.Mode() != st.Mode() || !in.Info.ModTime().Equal(st.ModTime()) || in.Info.IsDir() {
		t.Errorf("Info %s %d %v %v, os.Stat %s %d %v %v", in.Info.Name(), in.Info.Size(), in.Info.Mode(), in.Info.ModTime(), st.Name(), st.Size(), st.Mode(), st.ModTime())
	}
	for name, want := range map[string]bool{a: true, filepath.Join(dir, "link.npy"): true, b: false} {
		fi, err := os.Stat(name)
		if err != nil {
			t.Fatal(err)
		}
		if SameFile(in.Info, fi) != want || SameFile(fi, in.Info) != want {
			t.Errorf("SameFile(input, %s) is %v", name, !want)
		}
	}
	if _, err := CreateFor(filepath.Join(dir, "link.npy"), nil, Target{Input: in.Info}); !errors.Is(err, ErrIsInput) {
		t.Errorf("an output that is a link to the small input: %v, want ErrIsInput", err)
	}
}

// A new output written by position and committed (a batch's small file)
// goes through its descriptor alone: no *os.File is made for it (its
// fcntl and finalizer, for each of thousands of files). Anything that
// needs one gets it, with the bytes written before.
func TestSmallOutputNeedsNoFile(t *testing.T) {
	dir := t.TempDir()
	name := filepath.Join(dir, "out.npy")
	o, err := CreateFor(name, nil, Target{Fresh: true})
	if err != nil {
		t.Fatal(err)
	}
	if !o.anon {
		o.Abort()
		t.Skip("no unnamed files here")
	}
	if _, err := o.WriteAt([]byte("whole"), 0); err != nil {
		t.Fatal(err)
	}
	if err := o.Commit(); err != nil {
		t.Fatal(err)
	}
	if o.f != nil {
		t.Error("an *os.File was made for a small output")
	}
	if b, _ := os.ReadFile(name); string(b) != "whole" || o.Size() != 5 {
		t.Errorf("the output holds %q (Size %d)", b, o.Size())
	}

	// Read back, then written in order after it: one file all along.
	o, err = CreateFor(filepath.Join(dir, "two.npy"), nil, Target{Fresh: true})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := o.WriteAt([]byte("ab"), 0); err != nil {
		t.Fatal(err)
	}
	got := make([]byte, 2)
	if _, err := o.ReadAt(got, 0); err != nil || string(got) != "ab" {
		t.Fatalf("read back %q, %v", got, err)
	}
	if _, err := o.Write([]byte("xyz")); err != nil { // Write starts at 0
		t.Fatal(err)
	}
	if err := o.Commit(); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "two.npy")); string(b) != "xyz" || o.Size() != 3 {
		t.Errorf("the output holds %q (Size %d)", b, o.Size())
	}
}
