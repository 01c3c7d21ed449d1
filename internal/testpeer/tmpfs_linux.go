package testpeer

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"
)

// Tmpfs mounts a tmpfs of the given size ("4m") at a new directory for a
// full-disk test and unmounts it when the test ends. Without root, or when
// the mount is refused, the test is skipped saying why; under CI (CI set,
// where .ci/run runs as root) that is a failure instead, so the full-disk
// promises cannot go untested unnoticed.
func Tmpfs(t testing.TB, size string) string {
	t.Helper()
	skip := t.Skipf
	if os.Getenv("CI") != "" {
		skip = t.Fatalf
	}
	if os.Geteuid() != 0 {
		skip("full-disk tests mount a tmpfs and need root (CI runs as root)")
	}
	dir := filepath.Join(t.TempDir(), "full")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mount("tmpfs", dir, "tmpfs", 0, "size="+size); err != nil {
		skip("cannot mount a %s tmpfs at %s: %v", size, dir, err)
	}
	t.Cleanup(func() {
		if err := syscall.Unmount(dir, 0); err != nil {
			t.Errorf("unmount %s: %v", dir, err)
			_ = syscall.Unmount(dir, syscall.MNT_DETACH)
		}
	})
	return dir
}
