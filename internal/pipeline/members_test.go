package pipeline

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/depthspace/depthspace/internal/format"
	"github.com/depthspace/depthspace/internal/ops"
)

func writeNpz(t *testing.T, path string, compress bool, names ...string) {
	t.Helper()
	var buf bytes.Buffer
	w := format.NewNpzWriter(&buf, compress)
	dt, _ := format.ParseDType("int16")
	for i, n := range names {
		mw, err := w.Member(n, format.Header{DType: dt, Shape: []int{1, 4, 1, 2}})
		if err != nil {
			t.Fatal(err)
		}
		mw.Write(bytes.Repeat([]byte{byte(i)}, 16))
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
}

// Load reads one tensor: an npz of one array is that array, an npz of
// several is refused by name; LoadAll gives every member, and the shared
// mapping outlives all but the last Close.
func TestLoadAndLoadAll(t *testing.T) {
	dir := t.TempDir()
	one, many := filepath.Join(dir, "one.npz"), filepath.Join(dir, "many.npz")
	writeNpz(t, one, false, "x")
	writeNpz(t, many, true, "a", "b", "c")

	tt, err := Load(Source{Path: one})
	if err != nil {
		t.Fatal(err)
	}
	if tt.Name != "x" || format.ShapeString(tt.Shape) != "1,4,1,2" || len(tt.Data) != 16 {
		t.Errorf("one-array npz: %q [%s] %d bytes", tt.Name, format.ShapeString(tt.Shape), len(tt.Data))
	}
	tt.Close()

	if _, err := Load(Source{Path: many}); err == nil || !strings.Contains(err.Error(), "is an npz archive of 3 arrays (a, b, c); this command reads one tensor") {
		t.Errorf("Load of 3 arrays: %v", err)
	}
	ts, err := LoadAll(Source{Path: many})
	if err != nil {
		t.Fatal(err)
	}
	if len(ts) != 3 || ts[2].Name != "c" || !ts[2].Compressed || ts[2].Data[0] != 2 {
		t.Fatalf("LoadAll: %d members", len(ts))
	}
	ts[0].Close()
	ts[1].Close()
	if ts[2].shared == nil || ts[2].shared.refs.Load() != 1 {
		t.Fatal("the last member lost its input")
	}
	ts[2].Close()

	// Any other format is one tensor.
	npy := filepath.Join(dir, "x.npy")
	dt, _ := format.ParseDType("uint8")
	os.WriteFile(npy, append(format.EncodeNpy(format.Header{DType: dt, Shape: []int{1, 1, 2}}), 1, 2), 0o644)
	ts, err = LoadAll(Source{Path: npy})
	if err != nil || len(ts) != 1 || ts[0].Name != "" {
		t.Fatalf("LoadAll npy: %v", err)
	}
	closeAll(ts)
}

// The ONNX output is the same file whether it is streamed (npy input) or
// stored from a buffer (JSON output path not involved: Fortran input).
func TestONNXOutputPaths(t *testing.T) {
	dir := t.TempDir()
	dt, _ := format.ParseDType("float32")
	data := make([]byte, 4*8)
	for i := range data {
		data[i] = byte(i)
	}
	c := filepath.Join(dir, "c.npy")
	os.WriteFile(c, append(format.EncodeNpy(format.Header{DType: dt, Shape: []int{1, 2, 2, 2}}), data...), 0o644)
	// The same logical tensor, stored in Fortran order.
	f := filepath.Join(dir, "f.npy")
	fdata := make([]byte, len(data))
	for i := 0; i < 8; i++ { // C index i = ((n*2+c)*2+h)*2+w; Fortran index w*4+h*2+c
		cc, h, w := i/4%2, i/2%2, i%2
		copy(fdata[(w*4+h*2+cc)*4:], data[i*4:i*4+4])
	}
	os.WriteFile(f, append(format.EncodeNpy(format.Header{DType: dt, Shape: []int{1, 2, 2, 2}, Fortran: true}), fdata...), 0o644)
	req := ops.Request{Op: ops.SpaceToDepth, Block: ops.Block{2}}
	var outs [][]byte
	for _, in := range []string{c, f} {
		out := in + ".pb"
		if _, err := Transform(Options{Request: req, Source: Source{Path: in}, Output: out, Threads: 2}); err != nil {
			t.Fatal(err)
		}
		b, _ := os.ReadFile(out)
		outs = append(outs, b)
	}
	if !bytes.Equal(outs[0], outs[1]) {
		t.Fatal("streamed and buffered ONNX outputs differ")
	}
	got, err := format.DecodeONNX(outs[0])
	if err != nil || format.ShapeString(got.Shape) != "1,8,1,1" {
		t.Fatalf("%v %v", got, err)
	}
}
