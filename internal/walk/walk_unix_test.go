//go:build unix

package walk

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// A tree deeper than the open-file limit is walked: a directory is closed
// before its subdirectories are read (found in review: 300 levels under
// ulimit -n 128 failed with "too many open files"). In a process of its
// own, which lowers its limit.
func TestWalkDeepTreeFewFiles(t *testing.T) {
	root := os.Getenv("DEPTHSPACE_TEST_DEEP")
	if root == "" {
		root = t.TempDir()
		p := root
		for i := 0; i < 300; i++ {
			p = filepath.Join(p, "d")
		}
		if err := os.MkdirAll(p, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(p, "x.npy"), []byte("not read"), 0o644); err != nil {
			t.Fatal(err)
		}
		cmd := exec.Command(os.Args[0], "-test.run=^TestWalkDeepTreeFewFiles$", "-test.v")
		// One P: the walk has one token for a goroutine, so the chain is
		// walked inline, where open directories would pile up.
		cmd.Env = append(os.Environ(), "DEPTHSPACE_TEST_DEEP="+root, "GOMAXPROCS=1")
		out, err := cmd.CombinedOutput()
		if err != nil || !strings.Contains(string(out), "--- PASS") {
			t.Fatalf("%v\n%s", err, out)
		}
		return
	}
	if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &syscall.Rlimit{Cur: 64, Max: 64}); err != nil {
		t.Skip("cannot lower the open-file limit:", err)
	}
	files, err := Files(root)
	if err != nil {
		t.Fatal(err)
	}
	if len(files) != 1 || files[0].Err != nil || !strings.HasSuffix(files[0].Rel, "/d/x.npy") {
		t.Fatalf("found %+v, want the one file at the bottom", files)
	}
}

// An argument that is a directory the walk cannot read is a failure item
// of its own, first for that argument (it was dropped: a batch over it
// said 0 failed, compare of it with an empty directory said equal). Root
// reads any directory: the test then runs itself again as nobody.
func TestUnreadableArgument(t *testing.T) {
	root := os.Getenv("DEPTHSPACE_TEST_LOCKED")
	if root == "" {
		dir, err := os.MkdirTemp("", "walk-locked")
		if err != nil {
			t.Fatal(err)
		}
		defer func() { os.Chmod(filepath.Join(dir, "locked"), 0o755); os.RemoveAll(dir) }()
		for _, d := range []string{"ok", "locked"} {
			if err := os.Mkdir(filepath.Join(dir, d), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(dir, d, "x.npy"), nil, 0o644); err != nil {
				t.Fatal(err)
			}
		}
		if err := os.Chmod(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(filepath.Join(dir, "locked"), 0); err != nil {
			t.Fatal(err)
		}
		if os.Getuid() != 0 {
			checkUnreadable(t, dir)
			return
		}
		// The test binary, where nobody may run it.
		self, err := os.ReadFile(os.Args[0])
		if err != nil {
			t.Fatal(err)
		}
		bin := filepath.Join(dir, "walk.test")
		if err := os.WriteFile(bin, self, 0o755); err != nil {
			t.Fatal(err)
		}
		cmd := exec.Command(bin, "-test.run=^TestUnreadableArgument$", "-test.v")
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "DEPTHSPACE_TEST_LOCKED="+dir)
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
		out, err := cmd.CombinedOutput()
		if err != nil || !strings.Contains(string(out), "--- PASS") {
			t.Fatalf("as nobody: %v\n%s", err, out)
		}
		return
	}
	checkUnreadable(t, root)
}

func checkUnreadable(t *testing.T, dir string) {
	w, err := New([]string{filepath.Join(dir, "ok"), filepath.Join(dir, "locked")}, "", nil)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for it, ok := w.Next(); ok; it, ok = w.Next() {
		s := filepath.Base(filepath.Dir(it.Input)) + "/" + filepath.Base(it.Input)
		if it.Err != nil {
			s = it.Err.Error()
		}
		got = append(got, s)
	}
	want := filepath.Join(dir, "locked") + ": cannot read the directory: permission denied"
	if len(got) != 2 || got[0] != want || got[1] != "ok/x.npy" {
		t.Fatalf("walk of ok and locked: %q; want the failure of locked, then ok/x.npy", got)
	}
}
