package pipeline

import (
	"bytes"
	"io"
	"math/rand"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/depthspace/depthspace/internal/format"
	"github.com/depthspace/depthspace/internal/format/npy"
	"github.com/depthspace/depthspace/internal/ops"
)

func writeNpy(t testing.TB, path string, dt string, shape []int, fortran bool, data []byte) {
	t.Helper()
	d, err := format.ParseDescr(dt)
	if err != nil {
		t.Fatal(err)
	}
	pre := npy.EncodeNpy(format.Header{DType: d, Shape: shape, Fortran: fortran})
	if err := os.WriteFile(path, append(pre, data...), 0o644); err != nil {
		t.Fatal(err)
	}
}

// Every way of storing a result (items through a small buffer, the whole
// result in one buffer, a mapped file, standard output) gives the same
// bytes as running the plan directly.
func TestStoreStrategiesAgree(t *testing.T) {
	dir := t.TempDir()
	rng := rand.New(rand.NewSource(1))
	shape := []int{5, 3, 8, 12}
	data := make([]byte, 5*3*8*12*4)
	rng.Read(data)
	in := filepath.Join(dir, "in.npy")
	writeNpy(t, in, "<f4", shape, false, data)
	req := ops.Request{Op: ops.SpaceToDepth, Order: ops.CRD, Block: ops.Block{2, 3}}
	plan, want := planned(t, req, shape, 4, data)
	itemBytes := plan.Bytes() / 5
	for name, limit := range map[string]int{
		"one item per buffer":  itemBytes,
		"two items per buffer": 2*itemBytes + 7,
		"whole":                1 << 30,
		"mapped":               itemBytes - 1, // items over the limit: a mapped file
	} {
		for _, toStdout := range []bool{false, true} {
			out := filepath.Join(dir, "out.npy")
			var stdout bytes.Buffer
			o := Options{Request: req, Source: Source{Path: in}, Output: out, Threads: 2, BufferLimit: limit, Stdout: &stdout}
			if toStdout {
				o.Output = "-"
			}
			if _, err := Transform(o); err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			got := stdout.Bytes()
			if !toStdout {
				var err error
				if got, err = os.ReadFile(out); err != nil {
					t.Fatal(err)
				}
			}
			n, err := npy.ParseNpy(got)
			if err != nil {
				t.Fatal(err)
			}
			if format.ShapeString(n.Shape) != "5,18,4,4" || !bytes.Equal(got[n.DataOffset:], want) {
				t.Errorf("%s (stdout %v): result differs", name, toStdout)
			}
		}
	}
	// No temporary files are left behind.
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		if strings.Contains(e.Name(), ".tmp") {
			t.Errorf("left behind: %s", e.Name())
		}
	}
}

// A Fortran-order input item by item to stdout (the batch axis is not
// contiguous in the input) gives the same result as numpy's C-order copy.
func TestFortranItemwise(t *testing.T) {
	dir := t.TempDir()
	shape := []int{3, 2, 4, 4}
	n := 3 * 2 * 4 * 4
	c := make([]byte, n*2)
	for i := 0; i < n; i++ {
		c[2*i] = byte(i)
		c[2*i+1] = byte(i >> 8)
	}
	// Store the same logical tensor in Fortran order.
	f := make([]byte, n*2)
	idx := 0
	for w := 0; w < 4; w++ {
		for h := 0; h < 4; h++ {
			for ch := 0; ch < 2; ch++ {
				for b := 0; b < 3; b++ {
					src := ((b*2+ch)*4+h)*4 + w
					copy(f[2*idx:2*idx+2], c[2*src:2*src+2])
					idx++
				}
			}
		}
	}
	writeNpy(t, filepath.Join(dir, "c.npy"), "<i2", shape, false, c)
	writeNpy(t, filepath.Join(dir, "f.npy"), "<i2", shape, true, f)
	req := ops.Request{Op: ops.SpaceToDepth, Block: ops.Block{2}}
	var outs [2]bytes.Buffer
	for i, name := range []string{"c.npy", "f.npy"} {
		o := Options{Request: req, Source: Source{Path: filepath.Join(dir, name)}, Output: "-", Threads: 2, BufferLimit: 80, Stdout: &outs[i]}
		if _, err := Transform(o); err != nil {
			t.Fatal(err)
		}
	}
	if !bytes.Equal(outs[0].Bytes(), outs[1].Bytes()) {
		t.Fatal("Fortran-order input gives a different result")
	}
}

// A streamed run reports its progress chunk by chunk, and the reports add
// up to the tensor's data bytes, to a file or to standard output.
func TestProgressAddsUp(t *testing.T) {
	dir := t.TempDir()
	shape := []int{4, 8, 64, 64}
	data := make([]byte, 4*8*64*64*4)
	rand.New(rand.NewSource(2)).Read(data)
	in := filepath.Join(dir, "in.npy")
	writeNpy(t, in, "<f4", shape, false, data)
	for _, output := range []string{filepath.Join(dir, "out.npy"), "-"} {
		var calls int
		var sum int64
		var mu sync.Mutex
		o := Options{Request: ops.Request{Op: ops.SpaceToDepth, Block: ops.Block{2}}, Source: Source{Path: in},
			Output: output, Threads: 2, ChunkBytes: 16 << 10, Stdout: io.Discard,
			Progress: func(n int64) { mu.Lock(); calls++; sum += n; mu.Unlock() }}
		if _, err := Transform(o); err != nil {
			t.Fatal(err)
		}
		if sum != int64(len(data)) || calls < 2 {
			t.Errorf("-o %s: progress reported %d bytes in %d calls, want %d in several", output, sum, calls, len(data))
		}
	}
}

// planned plans req on a C-order tensor of shape and elements of
// elemSize bytes, and runs the plan on data: the oracle the pipeline's
// outputs are checked against.
func planned(t testing.TB, req ops.Request, shape []int, elemSize int, data []byte) (*ops.Plan, []byte) {
	t.Helper()
	plan, err := ops.NewPlan(req, shape, elemSize, false)
	if err != nil {
		t.Fatal(err)
	}
	want := make([]byte, plan.Bytes())
	if err := plan.Run(want, data, 1); err != nil {
		t.Fatal(err)
	}
	return plan, want
}
