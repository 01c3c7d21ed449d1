package compare

import (
	"errors"
	"fmt"
	"io"
	"math"
	"sync/atomic"

	"github.com/depthspace/depthspace/internal/format"
	fileio "github.com/depthspace/depthspace/internal/io"
	"github.com/depthspace/depthspace/internal/pipeline"
)

// --diff-image: where two tensors differ, as a picture. Each pixel is one
// position of the two last axes (a rank-1 tensor is one row; a scalar one
// pixel); its value is the largest |B−A| over every other axis. The colour
// scale runs from black (no difference) through purple, red and yellow to
// white (the largest difference in the picture), linearly in |B−A|;
// positions where a NaN or an infinity does not match are cyan.

// maxDiffPixels bounds the picture: a float32 per pixel while it is made.
const maxDiffPixels = 1 << 24

// diffScale is the colour scale: stops at 0, 1/4, 1/2, 3/4 and 1 of the
// largest difference, interpolated linearly (after matplotlib's inferno).
var diffScale = [5][3]float64{{0, 0, 0}, {87, 16, 110}, {188, 55, 84}, {249, 142, 9}, {252, 255, 164}}

// DiffImage writes the heat map of |B−A| of a pair of numeric tensors of
// the same shape as an RGB PNG to w, and returns the largest difference
// drawn.
func DiffImage(a, b Tensor, threads int, w io.Writer) (float64, error) {
	if format.ShapeString(a.Shape) != format.ShapeString(b.Shape) {
		return 0, errors.New("--diff-image: the shapes differ, there is no picture of their difference")
	}
	ra, rb := newReader(a.DType), newReader(b.DType)
	if !ra.numeric() || !rb.numeric() {
		return 0, fmt.Errorf("--diff-image: %s and %s are not numbers", a.DType.Name(), b.DType.Name())
	}
	H, W := 1, 1
	switch r := len(a.Shape); {
	case r >= 2:
		H, W = a.Shape[r-2], a.Shape[r-1]
	case r == 1:
		W = a.Shape[0]
	}
	if H*W > maxDiffPixels || H == 0 || W == 0 {
		return 0, fmt.Errorf("--diff-image: the two last axes are %dx%d: a picture holds 1 to %d pixels", H, W, maxDiffPixels)
	}
	n := a.Elements()
	s := newScanner(a, b, n)
	px := make([]atomic.Uint32, H*W) // float32 bits of the largest |B−A| (non-negative: ordered as integers)
	bad := make([]atomic.Bool, H*W)
	err := s.errPass(max(threads, 1), false, func(_, _ int, e *errBatch) {
		for k := 0; k < e.n; k++ {
			p := e.at[k] % (H * W)
			v := math.Float32bits(float32(e.abs[k]))
			for {
				old := px[p].Load()
				if v <= old || px[p].CompareAndSwap(old, v) {
					break
				}
			}
		}
		for k := 0; k < e.nbad; k++ {
			bad[e.bad[k]%(H*W)].Store(true)
		}
	}, nil)
	if err != nil {
		return 0, err
	}
	top := float32(0)
	for i := range px {
		top = max(top, math.Float32frombits(px[i].Load()))
	}
	img := make([]byte, 3*H*W)
	for i := range px {
		c := img[3*i : 3*i+3]
		if bad[i].Load() {
			c[0], c[1], c[2] = 0, 255, 255
			continue
		}
		t := 0.0
		if top > 0 {
			t = float64(math.Float32frombits(px[i].Load()) / top)
		}
		seg := min(int(t*4), 3)
		f := t*4 - float64(seg)
		for ch := 0; ch < 3; ch++ {
			c[ch] = byte(math.Round(diffScale[seg][ch] + f*(diffScale[seg+1][ch]-diffScale[seg][ch])))
		}
	}
	u8, _ := format.ParseDType("uint8")
	img3 := format.Header{DType: u8, Shape: []int{H, W, 3}}
	f := format.ImageFormat()
	if f == nil {
		return 0, errors.New("internal error: no image format")
	}
	return float64(top), f.Encode(w, img3, "", img)
}

// writeDiffImage writes the picture of a pair's difference to
// j.DiffImage, atomically, and notes it in the report.
func writeDiffImage(j Job, a, b Tensor, rep *Report) error {
	out, err := fileio.Create(j.DiffImage, nil)
	if err != nil {
		return &pipeline.PathError{Path: j.DiffImage, Err: err}
	}
	top, err := DiffImage(a, b, j.Threads, out)
	if err != nil {
		out.Abort()
		return &pipeline.PathError{Path: j.DiffImage, Err: err}
	}
	if err := out.Commit(); err != nil {
		return &pipeline.PathError{Path: j.DiffImage, Err: err}
	}
	t := Float(top)
	rep.DiffImage, rep.DiffImageMax = j.DiffImage, &t
	return nil
}
