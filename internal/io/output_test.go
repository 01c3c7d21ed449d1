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
		before func(dir string)             // between Create and Commit
		link   func(*os.File, string) error // nil: the real one
		fresh  bool                         // Target.Fresh: the path is not looked at
		old    bool                         // a target exists before Create
	}{
		{name: "linked"},
		{name: "linked through /proc", before: func(string) { procLink.Store(true) }},
		{name: "target made meanwhile", before: func(dir string) { os.WriteFile(filepath.Join(dir, "out.npy"), []byte("other"), 0o644) }},
		{name: "cannot link", link: func(*os.File, string) error { return syscall.EPERM }},
		{name: "fresh", fresh: true},
		{name: "replacing", old: true},
		{name: "replacing, cannot link", old: true, link: func(*os.File, string) error { return syscall.EPERM }},
		{name: "fresh, target made meanwhile", fresh: true, before: func(dir string) { os.WriteFile(filepath.Join(dir, "out.npy"), []byte("other"), 0o644) }},
	} {
		t.Run(c.name, func(t *testing.T) {
			if c.link != nil {
				defer func(f func(*os.File, string) error) { linkAnonFunc = f; anonRefused.Store(false) }(linkAnonFunc)
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
				if f, err := createAnon(dir); err != nil {
					t.Skipf("no unnamed files in %s: %v", dir, err)
				} else {
					f.Close()
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
