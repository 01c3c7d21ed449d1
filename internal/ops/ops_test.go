package ops

import (
	"bytes"
	"fmt"
	"math"
	"math/rand"
	"strings"
	"testing"
)

// reference is the oracle: a direct loop over SPEC's index formula, one
// element at a time, with no simplification of any kind. The block order
// is SPEC's p: channel group j holds block offset kk = p[j].
func reference(req Request, blocks, in []int, elem int, fortran bool, src []byte) ([]int, []byte) {
	// The layouts without a batch or channel axis are NCHW or NHWC with
	// axes of extent 1 (SPEC: hw is hwc with C = 1 on both sides).
	one := []int{1}
	switch {
	case req.Layout == CHW || req.Layout == HWC:
		r := req
		r.Layout = NCHW
		if req.Layout == HWC {
			r.Layout = NHWC
		}
		out, dst := reference(r, blocks, append(one, in...), elem, fortran, src)
		return out[1:], dst
	case req.Layout == HW && req.Op == SpaceToDepth:
		r := req
		r.Layout = NHWC
		out, dst := reference(r, blocks, append(append(one, in...), 1), elem, fortran, src)
		return out[1:], dst // [H/b, W/b, B]
	case req.Layout == HW:
		r := req
		r.Layout = NHWC
		out, dst := reference(r, blocks, append(one, in...), elem, fortran, src)
		return out[1 : len(out)-1], dst // [H, W]
	}
	rank := len(in)
	k := rank - 2
	chAxis, sp := 1, 2
	if req.Layout == NHWC {
		chAxis, sp = rank-1, 1
	}
	B := 1
	for _, b := range blocks {
		B *= b
	}
	p, err := req.BlockOrder.Offsets(blocks)
	if err != nil {
		panic(err)
	}
	var pinv []int
	if p != nil {
		pinv = make([]int, B)
		for j, kk := range p {
			pinv[kk] = j
		}
	}
	// p and pinv as functions: row-major (nil) is the identity, for any B.
	at := func(t []int, v int) int {
		if t == nil {
			return v
		}
		return t[v]
	}
	out := append([]int(nil), in...)
	if req.Op == SpaceToDepth {
		out[chAxis] *= B
		for i := 0; i < k; i++ {
			out[sp+i] /= blocks[i]
		}
	} else {
		out[chAxis] /= B
		for i := 0; i < k; i++ {
			out[sp+i] *= blocks[i]
		}
	}
	inStride := denseStrides(in, fortran)
	total := product(out)
	dst := make([]byte, total*elem)
	idx := make([]int, rank)
	for flat := 0; flat < total; flat++ {
		r := flat
		for a := rank - 1; a >= 0; a-- {
			idx[a] = r % out[a]
			r /= out[a]
		}
		src_ := make([]int, rank)
		src_[0] = idx[0]
		if req.Op == SpaceToDepth {
			// out[n, ch, o] = in[n, c, o·b + k]
			C := in[chAxis]
			ch := idx[chAxis]
			var c, j int
			if req.Order == DCR {
				j, c = ch/C, ch%C
			} else {
				c, j = ch/B, ch%B
			}
			kk := at(p, j)
			ks := make([]int, k)
			for i := k - 1; i >= 0; i-- {
				ks[i] = kk % blocks[i]
				kk /= blocks[i]
			}
			src_[chAxis] = c
			for i := 0; i < k; i++ {
				src_[sp+i] = idx[sp+i]*blocks[i] + ks[i]
			}
		} else {
			// out[n, c, o·b + k] = in[n, ch, o]
			C := out[chAxis]
			c := idx[chAxis]
			kk := 0
			for i := 0; i < k; i++ {
				kk = kk*blocks[i] + idx[sp+i]%blocks[i]
				src_[sp+i] = idx[sp+i] / blocks[i]
			}
			j := at(pinv, kk)
			if req.Order == DCR {
				src_[chAxis] = j*C + c
			} else {
				src_[chAxis] = c*B + j
			}
		}
		off := 0
		for a := 0; a < rank; a++ {
			off += src_[a] * inStride[a]
		}
		copy(dst[flat*elem:(flat+1)*elem], src[off*elem:(off+1)*elem])
	}
	return out, dst
}

type testCase struct {
	req     Request
	blocks  []int
	in      []int
	elem    int
	fortran bool
}

func (c testCase) String() string {
	return fmt.Sprintf("%s/%s/%s/%s/b%v/in%v/e%d/F%v", c.req.Op, c.req.Order, c.req.Layout, c.req.BlockOrder, c.blocks, c.in, c.elem, c.fortran)
}

// randomCase draws a valid request: K = 1..3 spatial axes, square or
// rectangular blocks, element sizes from bool to complex128 and odd sizes
// like S3, U5 (20 bytes) or V6.
func randomCase(rng *rand.Rand) testCase {
	var c testCase
	c.req.Op = Op(rng.Intn(2))
	c.req.Order = Order(rng.Intn(2))
	c.req.Layout = Layout(rng.Intn(2))
	k := 1 + rng.Intn(3)
	c.blocks = make([]int, k)
	square := rng.Intn(2) == 0
	for i := range c.blocks {
		c.blocks[i] = 1 + rng.Intn(4)
		if square {
			c.blocks[i] = c.blocks[0]
		}
	}
	sizes := []int{1, 2, 4, 8, 16, 3, 5, 6, 12, 20}
	c.elem = sizes[rng.Intn(len(sizes))]
	c.fortran = rng.Intn(4) == 0
	B := 1
	for _, b := range c.blocks {
		B *= b
	}
	rank := k + 2
	c.in = make([]int, rank)
	chAxis, sp := 1, 2
	if c.req.Layout == NHWC {
		chAxis, sp = rank-1, 1
	}
	c.in[0] = 1 + rng.Intn(3)
	c.in[chAxis] = 1 + rng.Intn(4)
	maxO := []int{0, 9, 5, 3}[k]
	for i := 0; i < k; i++ {
		c.in[sp+i] = (1 + rng.Intn(maxO)) * c.blocks[i]
	}
	if c.req.Op == DepthToSpace {
		c.in[chAxis] *= B
		for i := 0; i < k; i++ {
			c.in[sp+i] /= c.blocks[i]
		}
	}
	if rng.Intn(25) == 0 {
		c.in[rng.Intn(rank)] = 0 // zero-size tensors are valid and empty
	}
	c.req.BlockOrder = randomBlockOrder(rng, c.blocks)
	if rng.Intn(3) == 0 && c.in[0] != 0 {
		// The same without a batch axis, or a bare mosaic.
		c.in = c.in[1:]
		switch {
		case c.req.Layout == NCHW:
			c.req.Layout = CHW
		case rng.Intn(2) == 0:
			c.req.Layout = HWC
		case c.req.Op == SpaceToDepth:
			c.req.Layout = HW
			c.in = c.in[:len(c.in)-1]
		default:
			c.req.Layout = HW
			c.in[len(c.in)-1] = B
		}
	}
	return c
}

// randomBlockOrder draws row-major (half the cases), col-major, a Bayer
// pattern where the block allows one, or a random permutation.
func randomBlockOrder(rng *rand.Rand, blocks []int) BlockOrder {
	B := product(blocks)
	switch rng.Intn(6) {
	case 0:
		return BlockOrder{Name: "col-major"}
	case 1:
		if len(blocks) == 2 && blocks[0] == 2 && blocks[1] == 2 {
			return BlockOrder{Name: []string{"rggb", "bggr", "grbg", "gbrg"}[rng.Intn(4)]}
		}
		fallthrough
	case 2:
		return BlockOrder{Perm: rng.Perm(B)}
	}
	return BlockOrder{}
}

func randomBytes(rng *rand.Rand, n int) []byte {
	b := make([]byte, n)
	rng.Read(b)
	return b
}

// oracleCase draws a random case and plans it, with random input bytes and
// the oracle's output for them.
func oracleCase(t *testing.T, rng *rand.Rand) (c testCase, p *Plan, src, want []byte) {
	t.Helper()
	c = randomCase(rng)
	c.req.Block = Block(c.blocks)
	p, err := NewPlan(c.req, c.in, c.elem, c.fortran)
	if err != nil {
		t.Fatalf("%v: %v", c, err)
	}
	src = randomBytes(rng, p.Bytes())
	wantShape, want := reference(c.req, c.blocks, c.in, c.elem, c.fortran, src)
	if fmt.Sprint(wantShape) != fmt.Sprint(p.Out) {
		t.Fatalf("%v: shape %v, reference %v", c, p.Out, wantShape)
	}
	return c, p, src, want
}

func TestKernelMatchesReference(t *testing.T) {
	rng := rand.New(rand.NewSource(1))
	n := 3000
	if testing.Short() {
		n = 300
	}
	for i := 0; i < n; i++ {
		c, p, src, want := oracleCase(t, rng)
		for _, threads := range []int{1, 2, 3, 8} {
			// Odd -j also runs the cache-bypassing kernels, which
			// large outputs use.
			stream := threads%2 == 1
			dst := make([]byte, p.Bytes())
			oldBatch := batchBytes
			if threads == 8 {
				// Batches cut to a tile or two, as large tensors cut them.
				batchBytes = 1 + rng.Intn(256)
			}
			err := runStreaming(p, dst, src, threads, stream)
			batchBytes = oldBatch
			if err != nil {
				t.Fatalf("%v -j %d: %v", c, threads, err)
			}
			if !bytes.Equal(dst, want) {
				t.Fatalf("%v -j %d stream %v: output differs from the reference", c, threads, stream)
			}
		}
	}
}

// The engine on the portable kernels (what arm64 and others run) against
// the oracle, on fewer cases.
func TestKernelPortableMatchesReference(t *testing.T) {
	defer func() { archKernels = true }()
	archKernels = false
	rng := rand.New(rand.NewSource(11))
	for i := 0; i < 500; i++ {
		c, p, src, want := oracleCase(t, rng)
		dst := make([]byte, p.Bytes())
		if err := p.Run(dst, src, 1+i%3); err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(dst, want) {
			t.Fatalf("%v: portable kernels differ from the reference", c)
		}
	}
}

// runStreaming runs p with the cache-bypassing stores on or off whatever
// the output size.
func runStreaming(p *Plan, dst, src []byte, threads int, stream bool) error {
	defer func(old int) { streamBytes = old }(streamBytes)
	streamBytes = math.MaxInt
	if stream {
		streamBytes = 0
	}
	return p.Run(dst, src, threads)
}

// Buffers not aligned to the element size (a hand-made npy header of odd
// length, mapped as is) must still give the right bytes.
func TestKernelMisaligned(t *testing.T) {
	rng := rand.New(rand.NewSource(2))
	for i := 0; i < 400; i++ {
		c := randomCase(rng)
		c.req.Block = Block(c.blocks)
		p, err := NewPlan(c.req, c.in, c.elem, c.fortran)
		if err != nil {
			t.Fatal(err)
		}
		srcBuf := randomBytes(rng, p.Bytes()+7)
		src := srcBuf[1+rng.Intn(7):][:p.Bytes()]
		_, want := reference(c.req, c.blocks, c.in, c.elem, c.fortran, src)
		dstBuf := make([]byte, p.Bytes()+7)
		dst := dstBuf[1+rng.Intn(7):][:p.Bytes()]
		if err := p.Run(dst, src, 2); err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(dst, want) {
			t.Fatalf("%v: misaligned output differs from the reference", c)
		}
	}
}

func TestRunItemsMatchesRun(t *testing.T) {
	rng := rand.New(rand.NewSource(3))
	for i := 0; i < 500; i++ {
		c := randomCase(rng)
		c.req.Block = Block(c.blocks)
		p, err := NewPlan(c.req, c.in, c.elem, c.fortran)
		if err != nil {
			t.Fatal(err)
		}
		src := randomBytes(rng, p.Bytes())
		want := make([]byte, p.Bytes())
		if err := p.Run(want, src, 1); err != nil {
			t.Fatal(err)
		}
		N := p.Items()
		if N == 0 {
			continue
		}
		item := p.Bytes() / N
		var got []byte
		for n := 0; n < N; n++ {
			buf := make([]byte, item)
			if err := p.RunItems(buf, src, n, 1, 1+rng.Intn(3)); err != nil {
				t.Fatal(err)
			}
			got = append(got, buf...)
		}
		if !bytes.Equal(got, want) {
			t.Fatalf("%v: item-by-item output differs", c)
		}
	}
}

// s2d then d2s with the same order and layout is the identity.
func TestRoundTrip(t *testing.T) {
	rng := rand.New(rand.NewSource(4))
	for i := 0; i < 500; i++ {
		c := randomCase(rng)
		for c.req.Op != SpaceToDepth {
			c = randomCase(rng)
		}
		c.fortran = false
		c.req.Block = Block(c.blocks)
		p, err := NewPlan(c.req, c.in, c.elem, false)
		if err != nil {
			t.Fatalf("%v: %v", c, err)
		}
		src := randomBytes(rng, p.Bytes())
		mid := make([]byte, p.Bytes())
		if err := p.Run(mid, src, 2); err != nil {
			t.Fatal(err)
		}
		back := c.req
		back.Op = DepthToSpace
		q, err := NewPlan(back, p.Out, c.elem, false)
		if err != nil {
			t.Fatalf("%v: inverse: %v", c, err)
		}
		got := make([]byte, q.Bytes())
		if err := q.Run(got, mid, 2); err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, src) || fmt.Sprint(q.Out) != fmt.Sprint(c.in) {
			t.Fatalf("%v: d2s(s2d(x)) != x", c)
		}
	}
}

func TestBlockOneIsIdentity(t *testing.T) {
	for _, layout := range []Layout{NCHW, NHWC} {
		for _, op := range []Op{SpaceToDepth, DepthToSpace} {
			p, err := NewPlan(Request{Op: op, Layout: layout, Block: Block{1}}, []int{2, 3, 4, 5}, 4, false)
			if err != nil {
				t.Fatal(err)
			}
			src := randomBytes(rand.New(rand.NewSource(5)), p.Bytes())
			dst := make([]byte, len(src))
			if err := p.Run(dst, src, 2); err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(src, dst) {
				t.Fatalf("%s %s with block 1 is not the identity", op, layout)
			}
		}
	}
}

func TestPlanErrors(t *testing.T) {
	cases := []struct {
		req   Request
		shape []int
		want  string
	}{
		{Request{Block: Block{2}}, []int{1, 1, 5, 4}, "height 5 is not divisible by block 2"},
		{Request{Block: Block{2}}, []int{1, 1, 4, 7}, "width 7 is not divisible by block 2"},
		{Request{Block: Block{2, 3}}, []int{1, 1, 4, 4}, "width 4 is not divisible by block 3"},
		{Request{Block: Block{2}}, []int{1, 1, 3, 4, 4}, "depth 3 is not divisible by block 2"},
		{Request{Block: Block{2}, Layout: NHWC}, []int{1, 4, 5, 3}, "width 5 is not divisible by block 2"},
		{Request{Op: DepthToSpace, Block: Block{2}}, []int{1, 6, 2, 3}, "channels 6 is not divisible by 4 (block 2x2)"},
		{Request{Op: DepthToSpace, Block: Block{2}, Layout: NHWC}, []int{1, 2, 3, 6}, "channels 6 is not divisible by 4 (block 2x2)"},
		{Request{Block: Block{2, 2, 2}}, []int{1, 1, 4, 4}, "block 2x2x2 has 3 edges but the tensor has 2 spatial axes"},
		{Request{Block: Block{2}}, []int{4, 4}, "rank 2 tensor [4,4]: space-to-depth needs at least 3 axes"},
		{Request{Block: Block{1 << 20, 1 << 20, 1 << 20, 1 << 20}}, []int{1, 1, 1 << 20, 1 << 20, 1 << 20, 1 << 20}, "too large"},
		{Request{Op: DepthToSpace, Block: Block{1 << 20}}, []int{0, 1 << 40, 1 << 30, 1 << 30}, "too large"},
		{Request{Block: Block{1 << 20}}, []int{1, 1 << 40, 0, 1 << 20}, "channels 1099511627776 times block 1099511627776 overflows"},
		{Request{Block: Block{2}}, []int{1, -1, 4, 4}, "negative"},
		{Request{Block: Block{1 << 20}}, []int{0, 1 << 40, 1 << 20, 1 << 20}, "too large"},
	}
	for _, c := range cases {
		_, err := NewPlan(c.req, c.shape, 4, false)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v %v: got %v, want %q", c.req, c.shape, err, c.want)
		}
	}
}

func TestParseBlock(t *testing.T) {
	good := map[string]string{"2": "2", "2x3": "2x3", "1x1x4": "1x1x4", "2,3": "2x3"}
	for in, want := range good {
		b, err := ParseBlock(in)
		if err != nil || b.String() != want {
			t.Errorf("ParseBlock(%q) = %v, %v; want %s", in, b, err, want)
		}
	}
	bad := map[string]string{
		"0": "block 0 must be at least 1", "-2": "block -2 must be at least 1", "": "empty",
		"2x": "not an integer", "x2": "not an integer", "two": "not an integer", "2xx3": "not an integer",
		"99999999999999999999": "too large", "2097152": "too large", "2x0": "block 0 must be at least 1",
	}
	for in, want := range bad {
		if _, err := ParseBlock(in); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("ParseBlock(%q) = %v, want error containing %q", in, err, want)
		}
	}
}

func TestZeroSize(t *testing.T) {
	p, err := NewPlan(Request{Block: Block{2}}, []int{0, 3, 4, 4}, 4, false)
	if err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(p.Out) != "[0 12 2 2]" || p.Bytes() != 0 {
		t.Fatalf("got %v, %d bytes", p.Out, p.Bytes())
	}
	if err := p.Run(nil, nil, 2); err != nil {
		t.Fatal(err)
	}
}

// One plan run again and again, as a batch runs it on every file of its
// shape, with buffers of every alignment and several thread counts in
// turn: each run matches the reference (Run keeps the gathers it cut for
// one alignment and -j, and must not use them for another).
func TestRunAgainMatchesReference(t *testing.T) {
	rng := rand.New(rand.NewSource(36))
	for i := 0; i < 200; i++ {
		c, p, src, want := oracleCase(t, rng)
		for round := 0; round < 12; round++ {
			threads := 1 + rng.Intn(3)
			off, ioff := rng.Intn(8), rng.Intn(8)
			dst := make([]byte, p.Bytes()+off)[off:]
			in := append(make([]byte, ioff, ioff+len(src)), src...)[ioff:]
			if err := p.Run(dst, in, threads); err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(dst, want) {
				t.Fatalf("%v, run %d (-j %d, buffers at +%d, +%d): output differs from the reference", c, round, threads, off, ioff)
			}
		}
	}
}

// Running a plan again allocates nothing for its gathers: a batch of
// small files of one shape runs one plan thousands of times.
func TestRunAgainAllocates(t *testing.T) {
	p, err := NewPlan(Request{Op: SpaceToDepth, Layout: NCHW, Block: Block{2}}, []int{1, 3, 64, 64}, 4, false)
	if err != nil {
		t.Fatal(err)
	}
	src, dst := make([]byte, p.InBytes()), make([]byte, p.Bytes())
	if err := p.Run(dst, src, 1); err != nil {
		t.Fatal(err)
	}
	// What is left is the kernel's call (its function value, its
	// tiles): 3. Making the gathers again took 28 more, and the
	// goroutines' closure and counter 3 more.
	if n := testing.AllocsPerRun(50, func() { _ = p.Run(dst, src, 1) }); n > 4 {
		t.Errorf("Run allocates %v times a run, once its gathers are made", n)
	}
}
