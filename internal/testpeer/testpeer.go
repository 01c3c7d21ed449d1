// Package testpeer gives tests what lies outside the project: the
// independent peers they check depthspace against (Debian's /usr/bin/python3
// with numpy or onnx) and system fixtures (a small tmpfs for full-disk
// tests). It is imported by tests only. Under CI (CI set) a missing peer or
// fixture fails the test instead of skipping it.
package testpeer

import (
	"os"
	"os/exec"
	"testing"
)

// Python returns Debian's python3 when it can import module, or skips the
// test. Under CI (CI set) a missing peer fails the run instead of skipping:
// .ci/run installs python3-numpy and python3-onnx.
func Python(t testing.TB, module string) string {
	t.Helper()
	const py = "/usr/bin/python3"
	if err := exec.Command(py, "-c", "import "+module).Run(); err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("%s with %s is required under CI: %v", py, module, err)
		}
		t.Skipf("%s with %s is not available: %v", py, module, err)
	}
	return py
}
