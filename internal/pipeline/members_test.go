package pipeline

import (
	"archive/zip"
	"bytes"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/depthspace/depthspace/internal/format"
	npyfmt "github.com/depthspace/depthspace/internal/format/npy"
	"github.com/depthspace/depthspace/internal/format/npz"
	"github.com/depthspace/depthspace/internal/format/onnx"
	"github.com/depthspace/depthspace/internal/ops"
)

func writeNpz(t *testing.T, path string, compress bool, names ...string) {
	t.Helper()
	var buf bytes.Buffer
	w := npz.NewNpzWriter(&buf, compress)
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
	os.WriteFile(npy, append(npyfmt.EncodeNpy(format.Header{DType: dt, Shape: []int{1, 1, 2}}), 1, 2), 0o644)
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
	os.WriteFile(c, append(npyfmt.EncodeNpy(format.Header{DType: dt, Shape: []int{1, 2, 2, 2}}), data...), 0o644)
	// The same logical tensor, stored in Fortran order.
	f := filepath.Join(dir, "f.npy")
	fdata := make([]byte, len(data))
	for i := 0; i < 8; i++ { // C index i = ((n*2+c)*2+h)*2+w; Fortran index w*4+h*2+c
		cc, h, w := i/4%2, i/2%2, i%2
		copy(fdata[(w*4+h*2+cc)*4:], data[i*4:i*4+4])
	}
	os.WriteFile(f, append(npyfmt.EncodeNpy(format.Header{DType: dt, Shape: []int{1, 2, 2, 2}, Fortran: true}), fdata...), 0o644)
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
	got, err := onnx.DecodeONNX(outs[0])
	if err != nil || format.ShapeString(got.Shape) != "1,8,1,1" {
		t.Fatalf("%v %v", got, err)
	}
}

// A stored npz written to a file has each member's bytes put in place by
// position and archive/zip writing only the headers around them: members
// of sizes that are not multiples of the zip writer's buffer, read back
// with archive/zip (which checks every CRC-32) and with ReadNpz, hold the
// operator's result, as the same archive streamed to stdout does.
func TestStoredNpzPlaced(t *testing.T) {
	dir := t.TempDir()
	var buf bytes.Buffer
	w := npz.NewNpzWriter(&buf, false)
	shapes := map[string][]int{"a": {1, 4, 2, 2}, "big": {1, 3, 130, 66}, "z": {2, 1, 2, 2}}
	names := []string{"a", "big", "z"}
	want := map[string][]byte{}
	s2d := ops.Request{Op: ops.SpaceToDepth, Block: ops.Block{2}}
	for i, n := range names {
		dt, _ := format.ParseDType([]string{"int16", "float32", "uint8"}[i])
		h := format.Header{DType: dt, Shape: shapes[n]}
		data := make([]byte, h.DataBytes())
		for k := range data {
			data[k] = byte(k*7 + i)
		}
		mw, err := w.Member(n, h)
		if err != nil {
			t.Fatal(err)
		}
		mw.Write(data)
		p, err := ops.NewPlan(s2d, h.Shape, dt.Size, false)
		if err != nil {
			t.Fatal(err)
		}
		want[n] = make([]byte, p.Bytes())
		if err := p.Run(want[n], data, 1); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	in := filepath.Join(dir, "in.npz")
	if err := os.WriteFile(in, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "out.npz")
	if _, err := Transform(Options{Request: s2d, Source: Source{Path: in}, Output: out, Threads: 2}); err != nil {
		t.Fatal(err)
	}
	var stdout bytes.Buffer
	if _, err := Transform(Options{Request: s2d, Source: Source{Path: in}, Output: "-", To: npz.KindNpz, Stdout: &stdout}); err != nil {
		t.Fatal(err)
	}
	file, _ := os.ReadFile(out)
	for _, arch := range []struct {
		name string
		b    []byte
	}{{"file", file}, {"stdout", stdout.Bytes()}} {
		zr, err := zip.NewReader(bytes.NewReader(arch.b), int64(len(arch.b)))
		if err != nil {
			t.Fatalf("%s: %v", arch.name, err)
		}
		for _, f := range zr.File {
			r, err := f.Open()
			if err != nil {
				t.Fatal(err)
			}
			if _, err := io.ReadAll(r); err != nil {
				t.Errorf("%s: member %s: %v", arch.name, f.Name, err)
			}
			r.Close()
		}
		ms, err := npz.ReadNpz(arch.b)
		if err != nil {
			t.Fatalf("%s: %v", arch.name, err)
		}
		if len(ms) != len(names) {
			t.Fatalf("%s: %d members, want %d", arch.name, len(ms), len(names))
		}
		for i, m := range ms {
			if m.Name != names[i] || m.Compressed || !bytes.Equal(m.Data, want[m.Name]) {
				t.Errorf("%s: member %d (%s) is not the s2d of %s", arch.name, i, m.Name, names[i])
			}
		}
	}
}
