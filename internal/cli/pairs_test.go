package cli

import (
	"bytes"
	"math/rand"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/depthspace/depthspace/internal/format"
	"github.com/depthspace/depthspace/internal/format/npy"
	"github.com/depthspace/depthspace/internal/format/onnx"
	"github.com/depthspace/depthspace/internal/format/png"
	"github.com/depthspace/depthspace/internal/format/safetensors"
)

// TestFormatPairs: a tensor converted into format A, then from A into B,
// then back to npy keeps its bytes, dtype and shape, for every pair of
// formats that can hold it (png: uint8/uint16 [H, W, C]; safetensors: no
// big-endian; the rest: every dtype here).
func TestFormatPairs(t *testing.T) {
	dir := t.TempDir()
	rng := rand.New(rand.NewSource(20))
	formats := []string{"npy", "raw", "json", "onnx", "npz", "safetensors", "png"}
	cases := []struct {
		descr string
		shape []int
	}{
		{"|u1", []int{2, 3, 4}}, {"<u2", []int{3, 2, 2}}, {"<f4", []int{1, 2, 3}},
		{"<i8", []int{2, 2}}, {"<f2", []int{4}}, {"|b1", []int{2, 2, 1}}, {"<c8", []int{1, 3}},
	}
	canHold := func(f string, d format.DType, shape []int) bool {
		switch f {
		case "png":
			_, _, err := png.PNGShape(format.Header{DType: d, Shape: shape})
			return err == nil
		case "safetensors":
			_, err := safetensors.SafetensorsName(d)
			return err == nil
		case "onnx":
			_, err := onnx.ONNXDataType(d)
			return err == nil
		}
		return true
	}
	conv := func(in, out string, d format.DType, shape []int) {
		t.Helper()
		args := []string{"convert", in, out}
		if strings.HasSuffix(in, ".raw") {
			args = append(args, "--dtype", d.Descr(), "--shape", format.ShapeString(shape))
		}
		var stderr bytes.Buffer
		if code := run(args, nil, &bytes.Buffer{}, &stderr); code != 0 {
			t.Fatalf("%v: exit %d: %s", args, code, stderr.String())
		}
	}
	pairs := 0
	for ci, c := range cases {
		d, err := format.ParseDescr(c.descr)
		if err != nil {
			t.Fatal(err)
		}
		h := format.Header{DType: d, Shape: c.shape}
		data := make([]byte, h.DataBytes())
		rng.Read(data)
		if d.Kind == 'b' {
			for i := range data {
				data[i] &= 1
			}
		}
		if d.Kind == 'f' || d.Kind == 'c' {
			// No NaN: JSON prints every NaN as "NaN" (SPEC), dropping its
			// sign and payload. Clearing the lowest exponent bit of each
			// little-endian float keeps it finite.
			w := d.Size
			if d.Kind == 'c' {
				w /= 2
			}
			expBit := map[int]int{2: 10, 4: 23, 8: 52}[w]
			for i := 0; i < len(data); i += w {
				data[i+expBit/8] &^= 1 << (expBit % 8)
			}
		}
		src := filepath.Join(dir, "src.npy")
		if err := os.WriteFile(src, append(npy.EncodeNpy(h), data...), 0o644); err != nil {
			t.Fatal(err)
		}
		for _, a := range formats {
			if !canHold(a, d, c.shape) {
				continue
			}
			for _, b := range formats {
				if !canHold(b, d, c.shape) {
					continue
				}
				ext := map[string]string{"onnx": "pb"}
				ea, eb := a, b
				if e, ok := ext[a]; ok {
					ea = e
				}
				if e, ok := ext[b]; ok {
					eb = e
				}
				pa := filepath.Join(dir, "a."+ea)
				pb := filepath.Join(dir, "b."+eb)
				back := filepath.Join(dir, "back.npy")
				conv(src, pa, d, c.shape)
				conv(pa, pb, d, c.shape)
				conv(pb, back, d, c.shape)
				got, err := os.ReadFile(back)
				if err != nil {
					t.Fatal(err)
				}
				npy, err := npy.ParseNpy(got)
				if err != nil {
					t.Fatal(err)
				}
				wantShape := c.shape
				if (a == "png" || b == "png") && len(c.shape) == 3 && c.shape[2] == 1 {
					wantShape = c.shape[:2] // a one-channel PNG is gray: [H, W]
				}
				if !npy.DType.SameLayout(d) || format.ShapeString(npy.Shape) != format.ShapeString(wantShape) ||
					!bytes.Equal(got[npy.DataOffset:], data) {
					t.Errorf("case %d %s %v: %s -> %s -> npy gives %s %v", ci, c.descr, c.shape, a, b, npy.DType.Descr(), npy.Shape)
				}
				pairs++
			}
		}
	}
	t.Logf("%d format pairs round-tripped", pairs)
}
