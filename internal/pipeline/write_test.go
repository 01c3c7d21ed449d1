package pipeline

import (
	"bytes"
	"io"
	"math/rand"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/depthspace/depthspace/internal/format"
	"github.com/depthspace/depthspace/internal/format/json"
	"github.com/depthspace/depthspace/internal/format/npy"
	"github.com/depthspace/depthspace/internal/format/npz"
	"github.com/depthspace/depthspace/internal/format/onnx"
	"github.com/depthspace/depthspace/internal/format/polygraphy"
	"github.com/depthspace/depthspace/internal/format/raw"
	"github.com/depthspace/depthspace/internal/format/safetensors"
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
	src := append(npy.EncodeNpy(format.Header{DType: mustDType(t, "uint16"), Shape: shape}), data...)
	req := ops.Request{Op: ops.SpaceToDepth, Order: ops.CRD, Block: ops.Block{2}}
	plan, want := planned(t, req, shape, 2, data)
	for _, f := range format.All() {
		if !format.Writable(f) || f.Shard != nil || f.Store != nil || (f.CanWrite != nil && f.CanWrite(format.Header{DType: mustDType(t, "uint16"), Shape: plan.Out}) != nil) {
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
				var err error
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
		if f.Kind != npz.KindNpz && !bytes.Equal(outs[0], outs[1]) {
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

// An error making a member says whom it is about as the writers before
// the one write path said it: a scratch file that cannot be made is
// TMPDIR's (documented as "DIR: writing a scratch file there (TMPDIR):
// ..."), not the input's; a piped single tensor cut short is stdin's,
// not a member's of the container it was going into (its name, arr_0,
// is the output's).
func TestMemberErrorAttribution(t *testing.T) {
	dir := t.TempDir()
	big := bigDeflatedNpz(t, dir)
	missing := filepath.Join(dir, "missing")
	t.Setenv("TMPDIR", missing)
	s2d := ops.Request{Op: ops.SpaceToDepth, Block: ops.Block{2}}
	for _, tc := range []struct {
		to   format.Kind
		want string
	}{
		{npy.KindNpy, missing + ": making a scratch file there (TMPDIR): "},
		{npz.KindNpz, filepath.Join(dir, "o.npz") + `: npz member "big": ` + missing + ": making a scratch file there (TMPDIR): "},
		{safetensors.KindSafetensors, filepath.Join(dir, "o.safetensors") + `: safetensors member "big": ` + missing + ": making a scratch file there (TMPDIR): "},
	} {
		out := filepath.Join(dir, "o."+string(tc.to))
		_, err := Transform(Options{Request: s2d, Source: Source{Path: big}, Output: out, To: tc.to, Threads: 2})
		if err == nil || !strings.HasPrefix(err.Error(), tc.want) {
			t.Errorf("%s with no TMPDIR: %v, want an error starting %q", tc.to, err, tc.want)
		}
	}

	shape := []int{1, 4, 8, 8}
	data := make([]byte, 4*8*8*4)
	src := append(npy.EncodeNpy(format.Header{DType: mustDType(t, "float32"), Shape: shape}), data...)
	for _, to := range []format.Kind{npy.KindNpy, npz.KindNpz, safetensors.KindSafetensors, polygraphy.KindPolygraphy} {
		for _, cut := range []struct {
			in   []byte
			want string
		}{
			{src[:len(src)-100], "stdin: truncated: the header describes 1024 data bytes but the input ended after 924"},
			{append(append([]byte{}, src...), 'x'), "stdin: bytes beyond the 1024 data bytes the header describes"},
		} {
			for _, out := range []string{"-", filepath.Join(dir, "cut."+string(to))} {
				var stdout bytes.Buffer
				o := Options{Request: s2d, Source: Source{Path: "-", Stdin: bytes.NewReader(cut.in), Stream: true}, Output: out, To: to,
					Threads: 2, Stdout: &stdout}
				if _, err := Transform(o); err == nil || err.Error() != cut.want {
					t.Errorf("a piped npy to %s %s: %v, want %q", to, out, err, cut.want)
				}
			}
		}
	}
}

// A deferred npz member that cannot be inflated (corrupt) fails before
// anything of its output is written in order: a single tensor to a pipe
// gets nothing, as before the one write path, not its npy header or
// ONNX preamble and then an error.
func TestCorruptMemberWritesNothingInOrder(t *testing.T) {
	dir := t.TempDir()
	s2d := ops.Request{Op: ops.SpaceToDepth, Block: ops.Block{2}}
	for _, shape := range [][]int{{1, 4, 64, 64}, {1, 16, 256, 256}} { // in memory; into a scratch file (4 MiB)
		var b bytes.Buffer
		nw := npz.NewNpzWriter(&b, true)
		h := format.Header{DType: format.DType{Kind: 'f', Size: 4, Order: '<'}, Shape: shape}
		w, err := nw.Member("arr_0", h)
		if err != nil {
			t.Fatal(err)
		}
		data := make([]byte, h.DataBytes())
		rand.New(rand.NewSource(1)).Read(data)
		w.Write(data)
		nw.Close()
		z := b.Bytes()
		for i := len(z) / 2; i < len(z)/2+40; i++ {
			z[i] ^= 0x5a
		}
		bad := filepath.Join(dir, "bad.npz")
		if err := os.WriteFile(bad, z, 0o644); err != nil {
			t.Fatal(err)
		}
		for _, to := range []format.Kind{npy.KindNpy, raw.KindRaw, onnx.KindONNX} {
			var stdout bytes.Buffer
			_, err := Transform(Options{Request: s2d, Source: Source{Path: bad}, Output: "-", To: to, Threads: 2, Stdout: &stdout})
			if err == nil || !strings.HasPrefix(err.Error(), bad+`: npz member "arr_0": `) {
				t.Errorf("%v to %s: %v, want an error about the member", shape, to, err)
			}
			if stdout.Len() != 0 {
				t.Errorf("%v to %s: %d bytes written before the error", shape, to, stdout.Len())
			}
		}
	}
}

// A JSON or PNG output is held whole in memory and encoded at the end:
// its data are made there whole (the input read whole), as before the
// one write path, not streamed in order through a spool in TMPDIR only
// to be gathered (a tensor whose batch item is over spoolAbove failed
// with no TMPDIR, and took 1.5x the time with one).
func TestGatheredOutputNeedsNoSpool(t *testing.T) {
	defer func(n int) { spoolAbove = n }(spoolAbove)
	spoolAbove = 1 << 10
	dir := t.TempDir()
	t.Setenv("TMPDIR", filepath.Join(dir, "missing"))
	shape := []int{1, 4, 32, 32}
	data := make([]byte, 4*32*32)
	rand.New(rand.NewSource(5)).Read(data)
	h := format.Header{DType: mustDType(t, "uint8"), Shape: shape}
	src := append(npy.EncodeNpy(h), data...)
	in := filepath.Join(dir, "in.npy")
	if err := os.WriteFile(in, src, 0o644); err != nil {
		t.Fatal(err)
	}
	s2d := ops.Request{Op: ops.SpaceToDepth, Block: ops.Block{2}}
	plan, want := planned(t, s2d, shape, 1, data)
	var ref bytes.Buffer
	if err := format.Lookup(json.KindJSON).Encode(&ref, format.Header{DType: h.DType, Shape: plan.Out}, "", want); err != nil {
		t.Fatal(err)
	}
	for _, piped := range []bool{false, true} {
		for _, out := range []string{"-", filepath.Join(dir, "out.json")} {
			src := Source{Path: in}
			if piped {
				src = Source{Path: "-", Stdin: bytes.NewReader(append([]byte{}, npy.EncodeNpy(h)...)), Stream: true}
				src.Stdin = io.MultiReader(src.Stdin, bytes.NewReader(data))
			}
			var stdout bytes.Buffer
			_, err := Transform(Options{Request: s2d, Source: src, Output: out, To: json.KindJSON, Threads: 2, ChunkBytes: 256, Stdout: &stdout})
			if err != nil {
				t.Errorf("piped %v, to %s, with no TMPDIR: %v", piped, out, err)
				continue
			}
			got := stdout.Bytes()
			if out != "-" {
				got, _ = os.ReadFile(out)
			}
			if !bytes.Equal(got, ref.Bytes()) {
				t.Errorf("piped %v, to %s: not the JSON of the plan's result", piped, out)
			}
		}
	}
}
