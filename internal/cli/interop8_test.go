package cli

import (
	"bytes"
	"encoding/json"
	"math/rand"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/depthspace/depthspace/internal/explain"
	"github.com/depthspace/depthspace/internal/format"
	"github.com/depthspace/depthspace/internal/format/npy"
	"github.com/depthspace/depthspace/internal/format/npz"
	"github.com/depthspace/depthspace/internal/ops"
	"github.com/depthspace/depthspace/internal/testpeer"
)

// TestONNXInterop: Debian's python3-onnx writes TensorProtos of every
// fixed-size type (numpy_helper.from_array: raw_data; helper.make_tensor:
// the typed fields), and numpy writes savez and savez_compressed archives;
// depthspace runs the operators on them; onnx's numpy_helper.to_array and
// np.load read every output and numpy compares it with its own
// reshape/transpose.
func TestONNXInterop(t *testing.T) {
	peerJobs(t, "onnx", "onnx_peer.py")
}

// explainCases span ranks 3 to 5, square and rectangular blocks, both
// orders and layouts, and unit axes.
var explainCases = []struct {
	op, order, layout, block string
	shape                    []int
	blockOrder               string
}{
	{"d2s", "crd", "nchw", "2", []int{1, 8, 2, 3}, ""},
	{"d2s", "dcr", "nchw", "2", []int{1, 8, 2, 3}, ""},
	{"s2d", "dcr", "nchw", "2", []int{1, 2, 4, 6}, ""},
	{"s2d", "crd", "nchw", "2", []int{2, 3, 4, 4}, ""},
	{"s2d", "dcr", "nhwc", "2x3", []int{1, 6, 9, 4}, ""},
	{"d2s", "crd", "nhwc", "3x2", []int{2, 2, 3, 12}, ""},
	{"s2d", "crd", "nchw", "3", []int{2, 3, 9}, ""},
	{"d2s", "dcr", "nhwc", "4", []int{1, 5, 8}, ""},
	{"s2d", "dcr", "nchw", "2x1x3", []int{1, 2, 4, 3, 6}, ""},
	{"d2s", "crd", "nhwc", "2", []int{1, 2, 1, 2, 16}, ""},
	{"s2d", "crd", "nhwc", "1x2", []int{3, 1, 4, 1}, ""},
	{"d2s", "dcr", "nchw", "1", []int{1, 1, 1, 1}, ""},
	// Block orders and the layouts without batch or channel axes.
	{"s2d", "dcr", "hw", "2", []int{4, 6}, "0,1,3,2"},
	{"d2s", "dcr", "hw", "2", []int{2, 3, 4}, "bggr"},
	{"s2d", "dcr", "nchw", "2", []int{1, 3, 4, 4}, "col-major"},
	{"s2d", "crd", "nchw", "2", []int{2, 3, 4, 6}, "grbg"},
	{"d2s", "crd", "nhwc", "2x3", []int{1, 2, 2, 12}, "5,4,3,2,1,0"},
	{"s2d", "dcr", "chw", "2", []int{3, 4, 6}, "gbrg"},
	{"s2d", "crd", "hwc", "2", []int{4, 6, 3}, "col-major"},
	{"d2s", "dcr", "chw", "3x2", []int{12, 2, 3}, ""},
	{"s2d", "dcr", "hw", "2", []int{6, 8}, ""},
	{"s2d", "dcr", "nchw", "2", []int{1, 2, 4, 4, 4}, "col-major"},
	{"d2s", "crd", "hw", "3", []int{3, 2, 9}, "col-major"},
}

// TestExplainRecipeNumpy: the numpy recipe `depthspace explain` prints,
// run by numpy on a random array, gives the bytes depthspace's operator
// gives on that array (and so does the einops spelling where einops is
// installed).
func TestExplainRecipeNumpy(t *testing.T) {
	py := testpeer.Python(t, "numpy")
	dir := t.TempDir()
	rng := rand.New(rand.NewSource(88))
	type job struct {
		Input   string   `json:"input"`
		Output  string   `json:"output"`
		Numpy   string   `json:"numpy"`
		Einops  string   `json:"einops"`  // "" where it is the row-major part only
		Slicing string   `json:"slicing"` // space-to-depth only
		Args    []string `json:"args"`
	}
	var jobs []job
	for i, c := range explainCases {
		shape := format.ShapeString(c.shape)
		h := format.Header{DType: mustDType(t, "<i4"), Shape: c.shape}
		data := make([]byte, h.DataBytes())
		rng.Read(data)
		in := filepath.Join(dir, "in"+string(rune('a'+i))+".npy")
		if err := os.WriteFile(in, append(npy.EncodeNpy(h), data...), 0o644); err != nil {
			t.Fatal(err)
		}
		out := strings.TrimSuffix(in, ".npy") + ".out.npy"
		bo := c.blockOrder
		if bo == "" {
			bo = "row-major"
		}
		opArgs := []string{c.op, "-b", c.block, "--order", c.order, "--layout", c.layout, "--block-order", bo, in, "-o", out}
		var stderr, stdout bytes.Buffer
		if code := run(opArgs, nil, &stdout, &stderr); code != 0 {
			t.Fatalf("depthspace %v: exit %d: %s", opArgs, code, stderr.String())
		}
		exArgs := []string{"explain", "--json", c.op, "-b", c.block, "--order", c.order, "--layout", c.layout, "--block-order", bo, "--shape", shape}
		stdout.Reset()
		if code := run(exArgs, nil, &stdout, &stderr); code != 0 {
			t.Fatalf("depthspace %v: exit %d: %s", exArgs, code, stderr.String())
		}
		var e explain.Explanation
		if err := json.Unmarshal(stdout.Bytes(), &e); err != nil {
			t.Fatalf("%v: %v\n%s", exArgs, err, stdout.String())
		}
		j := job{Input: filepath.Base(in), Output: filepath.Base(out), Numpy: e.Recipe.Numpy, Einops: e.Recipe.Einops, Args: exArgs[2:]}
		if e.Groups != nil {
			j.Einops = ""
		}
		if c.op == "s2d" {
			if e.Slicing == "" {
				t.Fatalf("%v: no slicing", exArgs)
			}
			j.Slicing = e.Slicing
		}
		jobs = append(jobs, j)
	}
	b, _ := json.MarshalIndent(jobs, "", " ")
	if err := os.WriteFile(filepath.Join(dir, "jobs.json"), b, 0o644); err != nil {
		t.Fatal(err)
	}
	script := filepath.Join("..", "..", "testdata", "interop", "explain_peer.py")
	out, err := exec.Command(py, script, "check", dir).CombinedOutput()
	t.Logf("numpy check:\n%s", out)
	if err != nil {
		t.Fatalf("numpy check of the explained recipes failed: %v", err)
	}
}

func mustDType(t *testing.T, s string) format.DType {
	t.Helper()
	d, err := format.ParseDType(s)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// TestNpzMembersCLI: an archive of several arrays (stored or deflated) goes
// through s2d, d2s and reorder member by member; the output keeps the
// names, the order and the kind of archive; a single-tensor output is
// refused; an impossible member leaves no output.
func TestNpzMembersCLI(t *testing.T) {
	dir := t.TempDir()
	rng := rand.New(rand.NewSource(5))
	type member struct {
		name, descr string
		shape       []int
		data        []byte
	}
	members := []member{
		{name: "image", descr: "<f4", shape: []int{1, 8, 2, 3}},
		{name: "labels/odd name", descr: ">i2", shape: []int{2, 4, 1, 1}},
		{name: "s", descr: "|S3", shape: []int{1, 4, 2, 2}},
	}
	for _, compress := range []bool{false, true} {
		var buf bytes.Buffer
		w := npz.NewNpzWriter(&buf, compress)
		for i := range members {
			m := &members[i]
			h := format.Header{DType: mustDType(t, m.descr), Shape: m.shape}
			m.data = make([]byte, h.DataBytes())
			rng.Read(m.data)
			mw, err := w.Member(m.name, h)
			if err != nil {
				t.Fatal(err)
			}
			mw.Write(m.data)
		}
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
		in := filepath.Join(dir, "in.npz")
		if err := os.WriteFile(in, buf.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
		for _, c := range []struct {
			args []string
			plan func(shape []int, elem int) (*ops.Plan, error)
		}{
			{[]string{"d2s", "-b", "2", "--order", "crd"}, func(s []int, e int) (*ops.Plan, error) {
				return ops.NewPlan(ops.Request{Op: ops.DepthToSpace, Order: ops.CRD, Block: ops.Block{2}}, s, e, false)
			}},
			{[]string{"reorder", "--from-order", "dcr", "--to-order", "crd", "-b", "2", "--from-layout", "nchw", "--to-layout", "nhwc"}, func(s []int, e int) (*ops.Plan, error) {
				return ops.NewReorder(ops.ReorderRequest{FromOrder: ops.DCR, ToOrder: ops.CRD, ToLayout: ops.NHWC, Block: ops.Block{2}}, s, e, false)
			}},
		} {
			out := filepath.Join(dir, "out.npz")
			args := append(append([]string{}, c.args...), in, "-o", out)
			var stderr bytes.Buffer
			if code := run(args, nil, &bytes.Buffer{}, &stderr); code != 0 {
				t.Fatalf("%v: exit %d: %s", args, code, stderr.String())
			}
			b, err := os.ReadFile(out)
			if err != nil {
				t.Fatal(err)
			}
			got, err := npz.ReadNpz(b)
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != len(members) {
				t.Fatalf("%v: %d members", args, len(got))
			}
			for i, m := range members {
				p, err := c.plan(m.shape, len(m.data)/max(1, prod(m.shape)))
				if err != nil {
					t.Fatal(err)
				}
				want := make([]byte, len(m.data))
				if err := p.Run(want, m.data, 1); err != nil {
					t.Fatal(err)
				}
				g := got[i]
				if g.Name != m.name || g.Npy.DType.Descr() != m.descr || format.ShapeString(g.Npy.Shape) != format.ShapeString(p.Out) ||
					!bytes.Equal(g.Data, want) || g.Compressed != compress {
					t.Errorf("%v compress %v: member %d is %q %s [%s] compressed %v, want %q %s [%s]", args, compress, i,
						g.Name, g.Npy.DType.Descr(), format.ShapeString(g.Npy.Shape), g.Compressed, m.name, m.descr, format.ShapeString(p.Out))
				}
			}
		}
	}

	in := filepath.Join(dir, "in.npz")
	var stderr bytes.Buffer
	if code := run([]string{"d2s", "-b", "2", in, "-o", filepath.Join(dir, "one.npy")}, nil, &bytes.Buffer{}, &stderr); code != 2 ||
		!strings.Contains(stderr.String(), `in.npz: is an npz archive of 3 arrays (image, labels/odd name, s); npy output holds one tensor`) {
		t.Errorf("npz to npy: exit %d: %s", code, stderr.String())
	}
	stderr.Reset()
	bad := filepath.Join(dir, "bad.npz")
	if code := run([]string{"d2s", "-b", "3", in, "-o", bad}, nil, &bytes.Buffer{}, &stderr); code != 2 ||
		stderr.String() != "depthspace: "+in+": npz member \"image\": channels 8 is not divisible by 9 (block 3x3)\n" {
		t.Errorf("impossible member: exit %d: %q", code, stderr.String())
	}
	if _, err := os.Stat(bad); err == nil {
		t.Errorf("an impossible member left an output")
	}
}

func prod(s []int) int {
	p := 1
	for _, v := range s {
		p *= v
	}
	return p
}
