package cli

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
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

// TestTarPython: Python's tarfile writes a WebDataset shard (npy tensors,
// labels, JSON, a directory entry, a member named ../escape.npy); depthspace
// runs s2d on it from a file to a file and from a pipe to a pipe; tarfile
// and numpy check that every member kept its name, order, mode, owner and
// time, that the tensors are numpy's s2d and the rest the same bytes, and
// nothing was written outside the output.
func TestTarPython(t *testing.T) {
	py := testpeer.Python(t, "numpy")
	dir := t.TempDir()
	script := filepath.Join("..", "..", "testdata", "interop", "tar_peer.py")
	if out, err := exec.Command(py, script, "gen", dir).CombinedOutput(); err != nil {
		t.Fatalf("gen: %v\n%s", err, out)
	}
	shard := filepath.Join(dir, "shard.tar")
	var stderr bytes.Buffer
	if code := run([]string{"s2d", "-b", "2", shard, "-o", filepath.Join(dir, "file.tar")}, nil, &bytes.Buffer{}, &stderr); code != 0 {
		t.Fatalf("file to file: exit %d: %s", code, stderr.String())
	}
	in, err := os.Open(shard)
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close()
	var piped bytes.Buffer
	if code := run([]string{"s2d", "-b", "2", "--from", "tar", "-"}, io.MultiReader(in), &piped, &stderr); code != 0 {
		t.Fatalf("pipe to pipe: exit %d: %s", code, stderr.String())
	}
	if err := os.WriteFile(filepath.Join(dir, "pipe.tar"), piped.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(py, script, "check", dir, "file.tar", "pipe.tar").CombinedOutput()
	t.Logf("check:\n%s", out)
	if err != nil {
		t.Fatalf("tar check failed: %v", err)
	}
	if _, err := os.Stat(filepath.Join(filepath.Dir(dir), "escape.npy")); err == nil {
		t.Fatal("a member named ../escape.npy was written outside the output")
	}
}

// TestCompareStatsNumpy: compare's mean, median and quantile of |B - A|
// against numpy's own on random pairs of every numeric kind, with NaN,
// ±Inf, -0.0, zeros and int64 beyond 2^53, small and large (several
// chunks, several selection passes), in isclose and exact mode.
func TestCompareStatsNumpy(t *testing.T) {
	py := testpeer.Python(t, "numpy")
	dir := t.TempDir()
	script := filepath.Join("..", "..", "testdata", "interop", "stats_peer.py")
	if out, err := exec.Command(py, script, "gen", dir).CombinedOutput(); err != nil {
		t.Fatalf("gen: %v\n%s", err, out)
	}
	var exp struct {
		Q     float64                    `json:"q"`
		Cases map[string]json.RawMessage `json:"cases"`
	}
	b, err := os.ReadFile(filepath.Join(dir, "expected.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &exp); err != nil {
		t.Fatal(err)
	}
	// Each pair tolerant (with the quantile) and bit for bit (mean and
	// median are in every report); the exact report is got_exact_*.
	modes := map[string][]string{
		"got_":       {"--atol", "1e-9", "--check-error-stat", "quantile", "--error-quantile", fmt.Sprint(exp.Q)},
		"got_exact_": nil,
	}
	for k := range exp.Cases {
		for prefix, flags := range modes {
			var first []byte // the report must not depend on -j
			for _, threads := range []string{"1", "2"} {
				var out, stderr bytes.Buffer
				args := append(append([]string{"compare", "--json", "-j", threads}, flags...),
					filepath.Join(dir, "a_"+k+".npy"), filepath.Join(dir, "b_"+k+".npy"))
				if code := run(args, nil, &out, &stderr); code == 2 {
					t.Fatalf("%v: exit 2: %s", args, stderr.String())
				}
				if first == nil {
					first = append([]byte(nil), out.Bytes()...)
				} else if !bytes.Equal(first, out.Bytes()) {
					t.Errorf("%s%s: -j 1 and -j 2 reports differ", prefix, k)
				}
				if err := os.WriteFile(filepath.Join(dir, prefix+k+".json"), out.Bytes(), 0o644); err != nil {
					t.Fatal(err)
				}
			}
		}
	}
	if out, err := exec.Command(py, script, "check", dir).CombinedOutput(); err != nil {
		t.Fatalf("check: %v\n%s", err, out)
	} else {
		t.Logf("%s", out)
	}
}
