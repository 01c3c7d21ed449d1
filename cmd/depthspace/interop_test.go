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
	peerJobs(t, "numpy", "numpy_peer.py")
}

// TestBlockOrderNumpy: every block order (row-major, col-major, the four
// Bayer patterns, permutations) and the layouts chw, hwc and hw, against
// numpy's own slicing as pipelines write it (SID's pack_raw concatenate,
// YOLOv5's Focus cat), both ways: s2d of the image and d2s of numpy's
// packed array; and --pad in each mode against numpy.pad, --crop against
// numpy's slicing, --crop-to back to the image.
func TestBlockOrderNumpy(t *testing.T) {
	peerJobs(t, "numpy", "blockorder_peer.py")
}

// TestSafetensorsNumpy: numpy, with the format's few-line reference
// reader and writer, writes a safetensors file of every dtype the format
// has; depthspace runs s2d on every member, and on the members --member
// picks; numpy checks each tensor, the names, their order and
// __metadata__.
func TestSafetensorsNumpy(t *testing.T) {
	peerJobs(t, "numpy", "safetensors_peer.py")
}

// TestPNGPillow: Pillow writes PNGs of every mode (8- and 16-bit gray,
// gray+alpha, RGB, RGBA, palette with and without transparency);
// depthspace reads them (convert to npy, s2d of a gray and an RGB image)
// and writes them back; numpy and Pillow check the pixels both ways.
func TestPNGPillow(t *testing.T) {
	peerJobs(t, "PIL", "png_peer.py")
}

// peerJobs runs a Python peer's round trip: the peer script (in
// testdata/interop) writes inputs and a jobs.json ("gen DIR"), depthspace
// runs every job, and the peer checks every output ("check DIR").
func peerJobs(t *testing.T, module, script string) {
	py := testpeer.Python(t, module)
	dir := t.TempDir()
	script = filepath.Join("..", "..", "testdata", "interop", script)
	if out, err := exec.Command(py, script, "gen", dir).CombinedOutput(); err != nil {
		t.Fatalf("%s gen: %v\n%s", module, err, out)
	}
	var jobs []struct {
		Input, Output, Op, Order, Layout, Block, BlockOrder string
		Extra                                               []string
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
		if j.Op == "convert" {
			args = []string{"convert", filepath.Join(dir, j.Input), filepath.Join(dir, j.Output)}
		}
		if j.BlockOrder != "" {
			args = append(args, "--block-order", j.BlockOrder)
		}
		args = append(args, j.Extra...)
		if code := run(args, nil, &bytes.Buffer{}, &stderr); code != 0 {
			t.Errorf("depthspace %v: exit %d: %s", args, code, stderr.String())
		}
	}
	out, err := exec.Command(py, script, "check", dir).CombinedOutput()
	t.Logf("%s check:\n%s", module, out)
	if err != nil {
		t.Fatalf("%s check failed: %v", module, err)
	}
}
