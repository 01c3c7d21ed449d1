package main

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// python returns Debian's python3 with numpy, or skips the test. Under CI
// (CI=true) a missing numpy fails the run instead: .ci/run installs it.
func python(t *testing.T, module string) string {
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

// TestNumpyInterop: numpy writes inputs of every dtype in SPEC (npy 1.0,
// 2.0 and 3.0 headers, Fortran order, big-endian, S/U/V, ml_dtypes' "<V2"),
// depthspace reads them and runs every op/order/layout on them, and numpy
// loads every output and compares it byte for byte with its own
// reshape/transpose.
func TestNumpyInterop(t *testing.T) {
	py := python(t, "numpy")
	dir := t.TempDir()
	script := filepath.Join("..", "..", "testdata", "interop", "numpy_peer.py")
	if out, err := exec.Command(py, script, "gen", dir).CombinedOutput(); err != nil {
		t.Fatalf("numpy gen: %v\n%s", err, out)
	}
	var jobs []struct {
		Input, Output, Op, Order, Layout, Block string
	}
	b, err := os.ReadFile(filepath.Join(dir, "jobs.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &jobs); err != nil {
		t.Fatal(err)
	}
	for _, j := range jobs {
		var stderr bytes.Buffer
		args := []string{j.Op, "-b", j.Block, "--order", j.Order, "--layout", j.Layout,
			filepath.Join(dir, j.Input), "-o", filepath.Join(dir, j.Output)}
		if code := run(args, nil, &bytes.Buffer{}, &stderr); code != 0 {
			t.Errorf("depthspace %v: exit %d: %s", args, code, stderr.String())
		}
	}
	out, err := exec.Command(py, script, "check", dir).CombinedOutput()
	t.Logf("numpy check:\n%s", out)
	if err != nil {
		t.Fatalf("numpy check failed: %v", err)
	}
}
