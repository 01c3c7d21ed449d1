package fileio

import (
	"os"
	"path/filepath"
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
	if err := os.WriteFile(name, []byte("old"), 0o644); err != nil {
		t.Fatal(err)
	}
	o, err := Create(name, nil)
	if err != nil {
		t.Fatal(err)
	}
	if !o.IsFile() || o.tmp == "" {
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
