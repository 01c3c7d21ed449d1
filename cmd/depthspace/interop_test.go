package main

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/depthspace/depthspace/internal/testpeer"
)

// TestNumpyInterop: numpy writes inputs of every dtype in SPEC (npy 1.0,
// 2.0 and 3.0 headers, Fortran order, big-endian, S/U/V, ml_dtypes' "<V2"),
// depthspace reads them and runs every op/order/layout on them, and numpy
// loads every output and compares it byte for byte with its own
// reshape/transpose.
func TestNumpyInterop(t *testing.T) {
	py := testpeer.Python(t, "numpy")
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
