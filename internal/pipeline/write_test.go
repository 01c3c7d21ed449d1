package pipeline

import (
	"bytes"
	"math/rand"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/depthspace/depthspace/internal/format"
	"github.com/depthspace/depthspace/internal/ops"
)

// One write path: a piped npy input written as any writable format,
// to a file (by position) or to standard output (in order), in chunks
// small enough that the run takes many, gives the bytes the plan run
// directly gives, in that format's layout; and, but for npz's data
// descriptors, the same bytes either way. A container output of a streamed input used to read the stream
// whole first.
func TestOneWritePathEveryFormat(t *testing.T) {
	dir := t.TempDir()
	shape := []int{3, 4, 32, 32}
	data := make([]byte, 3*4*32*32*2)
	rand.New(rand.NewSource(3)).Read(data)
	src := append(format.EncodeNpy(format.Header{DType: mustDType(t, "uint16"), Shape: shape}), data...)
	req := ops.Request{Op: ops.SpaceToDepth, Order: ops.CRD, Block: ops.Block{2}}
	plan, err := ops.NewPlan(req, shape, 2, false)
	if err != nil {
		t.Fatal(err)
	}
	want := make([]byte, plan.Bytes())
	if err := plan.Run(want, data, 1); err != nil {
		t.Fatal(err)
	}
	for _, f := range format.All() {
		if !format.Writable(f) || f.Kind == format.KindTar || (f.CanWrite != nil && f.CanWrite(format.Header{DType: mustDType(t, "uint16"), Shape: plan.Out}) != nil) {
			continue
		}
		var outs [2][]byte
		for i, toFile := range []bool{true, false} {
			in := &countingReader{r: bytes.NewReader(src)} // a pipe: Read only
			var stdout bytes.Buffer
			out := "-"
			if toFile {
				out = filepath.Join(dir, "out."+string(f.Kind))
			}
			o := Options{Request: req, Source: Source{Path: "-", Stdin: in, Stream: true}, Output: out, To: f.Kind,
				Threads: 2, ChunkBytes: 4 << 10, Stdout: &stdout}
			if _, err := Transform(o); err != nil {
				t.Fatalf("%s (to a file %v): %v", f.Kind, toFile, err)
			}
			if in.n != int64(len(src)) {
				t.Errorf("%s: read %d of the %d input bytes", f.Kind, in.n, len(src))
			}
			outs[i] = stdout.Bytes()
			if toFile {
				if outs[i], err = os.ReadFile(out); err != nil {
					t.Fatal(err)
				}
			}
		}
		for i, b := range outs {
			// Read back, the result is the plan's: the layouts may differ
			// (an npz written in order has data descriptors), the data not.
			back := filepath.Join(dir, "back."+string(f.Kind))
			if err := os.WriteFile(back, b, 0o644); err != nil {
				t.Fatal(err)
			}
			ts, err := LoadAll(Source{Path: back, From: f.Kind, DType: "uint16", Shape: shapeFlag(plan.Out)})
			if err != nil {
				t.Fatalf("%s: reading the output back: %v", f.Kind, err)
			}
			if err := ts[0].load(false); err != nil {
				t.Fatal(err)
			}
			if got := ts[0].Data; len(ts) != 1 || !bytes.Equal(got, want) || format.ShapeString(ts[0].Shape) != format.ShapeString(plan.Out) {
				t.Errorf("%s (to a file %v): the data read back differ from the plan's (shape %v)", f.Kind, i == 0, ts[0].Shape)
			}
			closeAll(ts)
		}
		if f.Kind != format.KindNpz && !bytes.Equal(outs[0], outs[1]) {
			t.Errorf("%s: a file and standard output differ", f.Kind)
		}
	}
}

func shapeFlag(shape []int) string {
	s := make([]string, len(shape))
	for i, d := range shape {
		s[i] = strings.TrimSpace(format.ShapeString([]int{d}))
	}
	return strings.Join(s, ",")
}
