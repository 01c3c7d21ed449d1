package ops

import (
	"bytes"
	"fmt"
	"math/rand"
	"testing"
)

// The oracle for --crop, --pad and --crop-to is the obvious one: crop or
// pad the space tensor element by element first (numpy's x[:H//b*b] and
// numpy.pad), then the reference operator; for --crop-to, the reference
// operator, then cut its output. Three separate passes over copies: what
// the engine does in one.

// spaceAxes gives the positions of the spatial axes of a normalized shape.
func spaceAxes(l Layout, rank int) (first int) {
	if l.channelsLast() {
		return 1
	}
	return 2
}

// resizeSpace copies a C-order tensor of normalized shape in to one whose
// spatial extents are to, taking each element from pick(axis, s) for a
// position s (or zero when pick says so).
func resizeSpace(in []int, to []int, sp int, elem int, src []byte, pick func(i, s int) (int, bool)) []byte {
	dst := make([]byte, product(to)*elem)
	inStride := denseStrides(in, false)
	idx := make([]int, len(to))
	for flat := 0; flat < product(to); flat++ {
		r := flat
		for a := len(to) - 1; a >= 0; a-- {
			idx[a] = r % to[a]
			r /= to[a]
		}
		off, zero := 0, false
		for a := range to {
			v := idx[a]
			if a >= sp && a < sp+len(to)-2 {
				var z bool
				v, z = pick(a-sp, v)
				zero = zero || z
			}
			off += v * inStride[a]
		}
		if !zero {
			copy(dst[flat*elem:(flat+1)*elem], src[off*elem:(off+1)*elem])
		}
	}
	return dst
}

// edgeReference runs the oracle on a request with crop, pad or crop-to,
// in the normalized layouts (NCHW, NHWC) only.
func edgeReference(req Request, blocks, in []int, elem int, src []byte) ([]int, []byte) {
	sp := spaceAxes(req.Layout, len(in))
	k := len(blocks)
	base := req
	base.Crop, base.Pad, base.CropTo = false, PadNone, nil
	if req.Op == SpaceToDepth {
		to := append([]int(nil), in...)
		for i := 0; i < k; i++ {
			s := in[sp+i]
			if r := s % blocks[i]; r != 0 {
				if req.Crop {
					to[sp+i] = s - r
				} else {
					to[sp+i] = s + blocks[i] - r
				}
			}
		}
		resized := resizeSpace(in, to, sp, elem, src, func(i, s int) (int, bool) {
			n := in[sp+i]
			if s < n {
				return s, false
			}
			switch req.Pad {
			case PadEdge:
				return n - 1, false
			case PadReflect:
				// numpy.pad reflect, one step at a time.
				for s >= n || s < 0 {
					if s >= n {
						s = 2*(n-1) - s
					}
					if s < 0 {
						s = -s
					}
					if n == 1 {
						s = 0
					}
				}
				return s, false
			}
			return 0, true
		})
		return reference(base, blocks, to, elem, false, resized)
	}
	full, out := reference(base, blocks, in, elem, false, src)
	to := append([]int(nil), full...)
	for i, d := range req.CropTo {
		to[sp+i] = d
	}
	return to, resizeSpace(full, to, sp, elem, out, func(i, s int) (int, bool) { return s, false })
}

func randomEdgeCase(rng *rand.Rand) testCase {
	for {
		c := randomCase(rng)
		if c.req.Layout != NCHW && c.req.Layout != NHWC || c.fortran {
			continue
		}
		sp := spaceAxes(c.req.Layout, len(c.in))
		k := len(c.blocks)
		if c.req.Op == SpaceToDepth {
			// Sizes that are not multiples, some of them.
			for i := 0; i < k; i++ {
				if rng.Intn(2) == 0 {
					c.in[sp+i] = max(0, c.in[sp+i]-rng.Intn(c.blocks[i]))
				}
			}
			if rng.Intn(3) == 0 {
				c.req.Crop = true
			} else {
				c.req.Pad = PadMode(1 + rng.Intn(3))
			}
		} else {
			c.req.CropTo = make([]int, k)
			for i := 0; i < k; i++ {
				full := c.in[sp+i] * c.blocks[i]
				c.req.CropTo[i] = full - rng.Intn(min(full, c.blocks[i])+1)
			}
		}
		return c
	}
}

func (c testCase) edgeString() string {
	return fmt.Sprintf("%v crop %v pad %v crop-to %v", c, c.req.Crop, c.req.Pad, c.req.CropTo)
}

func TestEdgesMatchReference(t *testing.T) {
	rng := rand.New(rand.NewSource(15))
	for i := 0; i < 3000; i++ {
		c := randomEdgeCase(rng)
		c.req.Block = Block(c.blocks)
		p, err := NewPlan(c.req, c.in, c.elem, false)
		if err != nil {
			t.Fatalf("%s: %v", c.edgeString(), err)
		}
		src := randomBytes(rng, p.InBytes())
		shape, want := edgeReference(c.req, c.blocks, c.in, c.elem, src)
		if fmt.Sprint(shape) != fmt.Sprint(p.Out) {
			t.Fatalf("%s: shape %v, reference %v", c.edgeString(), p.Out, shape)
		}
		for _, threads := range []int{1, 2, 3} {
			dst := randomBytes(rng, p.Bytes()) // every byte must be written
			if err := runStreaming(p, dst, src, threads, threads == 3); err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(dst, want) {
				t.Fatalf("%s -j %d: differs from the reference", c.edgeString(), threads)
			}
		}
		// Item by item, as the pipeline cuts a large output.
		if N := p.Items(); N > 0 {
			var got []byte
			for n := 0; n < N; n++ {
				buf := randomBytes(rng, p.Bytes()/N)
				if err := p.RunItems(buf, src, n, 1, 2); err != nil {
					t.Fatal(err)
				}
				got = append(got, buf...)
			}
			if !bytes.Equal(got, want) {
				t.Fatalf("%s: item by item differs from the reference", c.edgeString())
			}
		}
		if p.Streams() {
			t.Fatalf("%s: a plan that crops or pads claims to stream", c.edgeString())
		}
	}
}

// A padded s2d then d2s cropped back to the input's size is the identity
// (the super-resolution round trip).
func TestPadCropRoundTrip(t *testing.T) {
	rng := rand.New(rand.NewSource(16))
	for i := 0; i < 500; i++ {
		c := randomEdgeCase(rng)
		for c.req.Op != SpaceToDepth || c.req.Crop {
			c = randomEdgeCase(rng)
		}
		c.req.Block = Block(c.blocks)
		p, err := NewPlan(c.req, c.in, c.elem, false)
		if err != nil {
			t.Fatal(err)
		}
		src := randomBytes(rng, p.InBytes())
		mid := make([]byte, p.Bytes())
		if err := p.Run(mid, src, 2); err != nil {
			t.Fatal(err)
		}
		sp := spaceAxes(c.req.Layout, len(c.in))
		back := c.req
		back.Op, back.Pad = DepthToSpace, PadNone
		back.CropTo = append([]int(nil), c.in[sp:sp+len(c.blocks)]...)
		q, err := NewPlan(back, p.Out, c.elem, false)
		if err != nil {
			t.Fatalf("%s: inverse: %v", c.edgeString(), err)
		}
		got := make([]byte, q.Bytes())
		if err := q.Run(got, mid, 2); err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, src) || fmt.Sprint(q.Out) != fmt.Sprint(c.in) {
			t.Fatalf("%s: d2s --crop-to (s2d --pad (x)) != x", c.edgeString())
		}
	}
}

func TestEdgeErrors(t *testing.T) {
	in := []int{1, 1, 5, 7}
	for _, c := range []struct {
		req  Request
		want string
	}{
		{Request{Op: SpaceToDepth, Block: Block{2}}, "height 5 is not divisible by block 2"},
		{Request{Op: SpaceToDepth, Block: Block{2}, Crop: true, Pad: PadZero}, "--crop and --pad cannot be used together: --crop drops what does not fill a block, --pad fills it"},
		{Request{Op: DepthToSpace, Block: Block{1}, Crop: true}, "--crop and --pad are for space-to-depth; depth-to-space takes --crop-to"},
		{Request{Op: SpaceToDepth, Block: Block{1}, CropTo: []int{1, 1}}, "--crop-to is for depth-to-space; space-to-depth takes --crop or --pad"},
		{Request{Op: DepthToSpace, Block: Block{1}, CropTo: []int{6, 7}}, "--crop-to 6,7: height 6 is larger than the output's 5"},
		{Request{Op: DepthToSpace, Block: Block{1}, CropTo: []int{5}}, "--crop-to 5 has 1 sizes but the tensor has 2 spatial axes"},
	} {
		_, err := NewPlan(c.req, in, 1, false)
		if err == nil || err.Error() != c.want {
			t.Errorf("%+v: got %v, want %q", c.req, err, c.want)
		}
	}
	if _, err := ParsePadMode("mirror"); err == nil {
		t.Error("--pad mirror accepted")
	}
	if _, err := ParseSizes("4,x"); err == nil {
		t.Error("--crop-to 4,x accepted")
	}
}

// gatherRow and scatterRow walk strides of either sign.
func TestRowsAnyStride(t *testing.T) {
	src := make([]uint16, 64)
	for i := range src {
		src[i] = uint16(i)
	}
	for _, stride := range []int{-5, -3, -2, -1, 0, 1, 2, 3, 4, 7} {
		for n := 0; n < 6; n++ {
			at := 30
			d := make([]uint16, n)
			gatherRow(d, src, at, stride)
			back := make([]uint16, 64)
			scatterRow(back, at, stride, d)
			for x := 0; x < n; x++ {
				if d[x] != uint16(at+x*stride) {
					t.Fatalf("gatherRow stride %d n %d: d[%d] = %d", stride, n, x, d[x])
				}
				if stride != 0 && back[at+x*stride] != d[x] {
					t.Fatalf("scatterRow stride %d n %d: element %d misplaced", stride, n, x)
				}
			}
		}
	}
}
