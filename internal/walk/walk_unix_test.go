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
