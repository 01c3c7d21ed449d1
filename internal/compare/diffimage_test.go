package compare

import (
	"bytes"
	"encoding/binary"
	"image/png"
	"math"
	"math/rand"
	"testing"

	"github.com/depthspace/depthspace/internal/format"
)

func f32Tensor(shape []int, vals []float32, fortran bool) Tensor {
	d, _ := format.ParseDType("float32")
	b := make([]byte, 4*len(vals))
	for i, v := range vals {
		binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(v))
	}
	return Tensor{Header: format.Header{DType: d, Shape: shape, Fortran: fortran}, Data: b}
}

// The picture is W wide and H high (the two last axes), its brightest
// pixel is where the largest difference is, whatever the other axes, and
// a NaN that does not match is cyan.
func TestDiffImage(t *testing.T) {
	rng := rand.New(rand.NewSource(22))
	for _, shape := range [][]int{{2, 3, 5, 7}, {9, 4}, {6}, {3, 1, 8, 8}} {
		n := 1
		for _, d := range shape {
			n *= d
		}
		a := make([]float32, n)
		b := make([]float32, n)
		for i := range a {
			a[i] = rng.Float32()
			b[i] = a[i] + rng.Float32()*1e-3
		}
		hot := rng.Intn(n)
		b[hot] += 5
		nan := (hot + 1 + rng.Intn(n-1)) % n
		b[nan] = float32(math.NaN())
		var buf bytes.Buffer
		top, err := DiffImage(f32Tensor(shape, a, false), f32Tensor(shape, b, false), 2, &buf)
		if err != nil {
			t.Fatal(err)
		}
		if top < 5 {
			t.Fatalf("%v: top %v", shape, top)
		}
		img, err := png.Decode(&buf)
		if err != nil {
			t.Fatal(err)
		}
		H, W := 1, shape[len(shape)-1]
		if len(shape) >= 2 {
			H = shape[len(shape)-2]
		}
		if img.Bounds().Dx() != W || img.Bounds().Dy() != H {
			t.Fatalf("%v: picture %v, want %dx%d", shape, img.Bounds(), W, H)
		}
		best, bx, by := -1.0, -1, -1
		for y := 0; y < H; y++ {
			for x := 0; x < W; x++ {
				r, g, bl, _ := img.At(x, y).RGBA()
				if r == 0 && g == 0xffff && bl == 0xffff {
					if (nan % (H * W)) != y*W+x {
						t.Fatalf("%v: cyan at %d,%d, the NaN is at pixel %d", shape, x, y, nan%(H*W))
					}
					continue
				}
				if l := 0.3*float64(r) + 0.59*float64(g) + 0.11*float64(bl); l > best {
					best, bx, by = l, x, y
				}
			}
		}
		if want := hot % (H * W); by*W+bx != want && nan%(H*W) != want {
			t.Fatalf("%v: brightest pixel %d,%d, the largest difference is at pixel %d", shape, bx, by, want)
		}
	}
}
