package ops

import (
	"bytes"
	"math/rand"
	"strings"
	"testing"
)

// reorderReference is the oracle for reorder: one element at a time, the
// output channel split by the target order into (c, kk), joined again by
// the source order, the layout handled by naming the channel axis.
func reorderReference(r ReorderRequest, B int, in []int, elem int, fortran bool, src []byte) ([]int, []byte) {
	rank := len(in)
	k := rank - 2
	chIn, spIn := 1, 2
	if r.FromLayout == NHWC {
		chIn, spIn = rank-1, 1
	}
	CB := in[chIn]
	C := CB / B
	out := []int{in[0]}
	if r.ToLayout == NCHW {
		out = append(out, CB)
	}
	out = append(out, in[spIn:spIn+k]...)
	if r.ToLayout == NHWC {
		out = append(out, CB)
	}
	chOut, spOut := 1, 2
	if r.ToLayout == NHWC {
		chOut, spOut = rank-1, 1
	}
	inStride := denseStrides(in, fortran)
	total := product(out)
	dst := make([]byte, total*elem)
	idx := make([]int, rank)
	for flat := 0; flat < total; flat++ {
		rem := flat
		for a := rank - 1; a >= 0; a-- {
			idx[a] = rem % out[a]
			rem /= out[a]
		}
		ch := idx[chOut]
		if r.FromOrder != r.ToOrder {
			var c, kk int
			if r.ToOrder == DCR { // ch = kk·C + c
				kk, c = ch/C, ch%C
			} else { // ch = c·B + kk
				c, kk = ch/B, ch%B
			}
			if r.FromOrder == DCR {
				ch = kk*C + c
			} else {
				ch = c*B + kk
			}
		}
		off := idx[0]*inStride[0] + ch*inStride[chIn]
		for i := 0; i < k; i++ {
			off += idx[spOut+i] * inStride[spIn+i]
		}
		copy(dst[flat*elem:], src[off*elem:(off+1)*elem])
	}
	return out, dst
}

type reorderCase struct {
	r       ReorderRequest
	blocks  []int
	in      []int
	elem    int
	fortran bool
}

func randomReorder(rng *rand.Rand) reorderCase {
	var c reorderCase
	c.r.FromOrder, c.r.ToOrder = Order(rng.Intn(2)), Order(rng.Intn(2))
	c.r.FromLayout, c.r.ToLayout = Layout(rng.Intn(2)), Layout(rng.Intn(2))
	k := 1 + rng.Intn(3)
	B := 1
	if c.r.ChangesOrder() || rng.Intn(2) == 0 {
		c.blocks = make([]int, k)
		for i := range c.blocks {
			c.blocks[i] = 1 + rng.Intn(3)
			B *= c.blocks[i]
		}
		c.r.Block = Block(c.blocks)
	}
	sizes := []int{1, 2, 4, 8, 16, 3, 6, 20}
	c.elem = sizes[rng.Intn(len(sizes))]
	c.fortran = rng.Intn(4) == 0
	rank := k + 2
	c.in = make([]int, rank)
	for i := range c.in {
		c.in[i] = 1 + rng.Intn([]int{0, 6, 4, 3}[k])
	}
	c.in[0] = 1 + rng.Intn(3)
	ch := 1
	if c.r.FromLayout == NHWC {
		ch = rank - 1
	}
	c.in[ch] = (1 + rng.Intn(4)) * B
	if rng.Intn(25) == 0 {
		c.in[rng.Intn(rank)] = 0
	}
	return c
}

func (c reorderCase) B() int {
	B := 1
	for _, b := range c.blocks {
		B *= b
	}
	return B
}

// Run, RunItems and the chunked path all give the oracle's bytes.
func TestReorderMatchesReference(t *testing.T) {
	rng := rand.New(rand.NewSource(8))
	n := 3000
	if testing.Short() {
		n = 300
	}
	for i := 0; i < n; i++ {
		c := randomReorder(rng)
		p, err := NewReorder(c.r, c.in, c.elem, c.fortran)
		if err != nil {
			t.Fatalf("%+v: %v", c, err)
		}
		src := randomBytes(rng, p.Bytes())
		wantShape, want := reorderReference(c.r, c.B(), c.in, c.elem, c.fortran, src)
		if shapeString(p.Out) != shapeString(wantShape) {
			t.Fatalf("%+v: shape %v, want %v", c, p.Out, wantShape)
		}
		got := make([]byte, p.Bytes())
		if err := p.Run(got, src, 1+rng.Intn(4)); err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, want) {
			t.Fatalf("%+v: Run differs from the reference", c)
		}
		if p.Out[0] > 1 {
			first := rng.Intn(p.Out[0])
			count := 1 + rng.Intn(p.Out[0]-first)
			item := p.Bytes() / p.Out[0]
			part := make([]byte, count*item)
			if err := p.RunItems(part, src, first, count, 2); err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(part, want[first*item:(first+count)*item]) {
				t.Fatalf("%+v: RunItems(%d, %d) differs", c, first, count)
			}
		}
	}
}

// The chunker cuts reorder plans correctly, every output byte written
// once, and sequential chunkings read or write front to back: the isBlock
// marks keep the labels it cuts in the same order on both sides.
func TestReorderChunked(t *testing.T) {
	rng := rand.New(rand.NewSource(9))
	for i := 0; i < 2000; i++ {
		c := randomReorder(rng)
		c.fortran = false
		p, err := NewReorder(c.r, c.in, c.elem, false)
		if err != nil {
			t.Fatal(err)
		}
		src := randomBytes(rng, p.Bytes())
		_, want := reorderReference(c.r, c.B(), c.in, c.elem, false, src)
		budget := 1 + rng.Intn(4*p.Bytes()+8)
		seqIn, seqOut := rng.Intn(3) == 0, rng.Intn(3) == 0
		ck, err := p.Chunker(budget, seqIn, seqOut)
		if err != nil {
			t.Fatal(err)
		}
		got := make([]byte, p.Bytes())
		written := make([]int, p.Bytes())
		var inPos, outPos int64
		for k := 0; k < ck.Len(); k++ {
			ch := ck.Chunk(k)
			if ch.Bytes > ck.MaxBytes() {
				t.Fatalf("%+v: chunk of %d bytes over MaxBytes %d", c, ch.Bytes, ck.MaxBytes())
			}
			in := make([]byte, 0, ch.Bytes)
			for _, s := range ch.In {
				if seqIn && s.Len > 0 && s.Off != inPos {
					t.Fatalf("%+v: sequential input reads %d after %d", c, s.Off, inPos)
				}
				if s.Len > 0 {
					inPos = s.Off + s.Len
				}
				in = append(in, src[s.Off:s.Off+s.Len]...)
			}
			out := make([]byte, ch.Bytes)
			if err := ck.Run(ch, out, in, 1+rng.Intn(3)); err != nil {
				t.Fatal(err)
			}
			o := out
			for _, s := range ch.Out {
				if seqOut && s.Len > 0 && s.Off != outPos {
					t.Fatalf("%+v: sequential output writes %d after %d", c, s.Off, outPos)
				}
				if s.Len > 0 {
					outPos = s.Off + s.Len
				}
				copy(got[s.Off:], o[:s.Len])
				for x := s.Off; x < s.Off+s.Len; x++ {
					written[x]++
				}
				o = o[s.Len:]
			}
		}
		for x, n := range written {
			if n != 1 {
				t.Fatalf("%+v budget %d: output byte %d written %d times", c, budget, x, n)
			}
		}
		if !bytes.Equal(got, want) {
			t.Fatalf("%+v budget %d seq %v/%v: chunked result differs", c, budget, seqIn, seqOut)
		}
	}
}

// A reorder is the composition of the operators: d2s in one order then
// s2d in the other gives the same bytes as reorder between them; and a
// layout reorder is the identity on the values (checked through s2d).
func TestReorderEqualsOperatorComposition(t *testing.T) {
	rng := rand.New(rand.NewSource(10))
	for i := 0; i < 300; i++ {
		layout := Layout(rng.Intn(2))
		from := Order(rng.Intn(2))
		to := 1 - from
		if i%2 == 1 {
			to = from // a block order change alone
		}
		k := 1 + rng.Intn(2)
		blocks := make([]int, k)
		for j := range blocks {
			blocks[j] = 1 + rng.Intn(3)
		}
		// Block orders too: reorder --from-block-order A --to-block-order
		// B is d2s with A then s2d with B.
		fromBO, toBO := randomBlockOrder(rng, blocks), randomBlockOrder(rng, blocks)
		if i%2 == 1 && fromBO.String() == toBO.String() {
			toBO = BlockOrder{Name: "col-major"}
		}
		B := product(blocks)
		in := make([]int, k+2)
		for j := range in {
			in[j] = 1 + rng.Intn(3)
		}
		ch := 1
		if layout == NHWC {
			ch = k + 1
		}
		in[ch] *= B
		elem := []int{1, 2, 4}[rng.Intn(3)]
		d2s, err := NewPlan(Request{Op: DepthToSpace, Order: from, Layout: layout, Block: blocks, BlockOrder: fromBO}, in, elem, false)
		if err != nil {
			t.Fatal(err)
		}
		src := randomBytes(rng, d2s.Bytes())
		space := make([]byte, len(src))
		if err := d2s.Run(space, src, 1); err != nil {
			t.Fatal(err)
		}
		s2d, err := NewPlan(Request{Op: SpaceToDepth, Order: to, Layout: layout, Block: blocks, BlockOrder: toBO}, d2s.Out, elem, false)
		if err != nil {
			t.Fatal(err)
		}
		want := make([]byte, len(src))
		if err := s2d.Run(want, space, 1); err != nil {
			t.Fatal(err)
		}
		re, err := NewReorder(ReorderRequest{FromOrder: from, ToOrder: to, FromLayout: layout, ToLayout: layout, Block: blocks,
			FromBlockOrder: fromBO, ToBlockOrder: toBO}, in, elem, false)
		if err != nil {
			t.Fatal(err)
		}
		got := make([]byte, len(src))
		if err := re.Run(got, src, 2); err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, want) {
			t.Fatalf("%v %v→%v %v→%v b%v in%v: reorder differs from d2s then s2d", layout, from, to, fromBO, toBO, blocks, in)
		}
		if got := runChunked(t, re, src, 1+rng.Intn(len(src)+8)); !bytes.Equal(got, want) {
			t.Fatalf("%v %v→%v %v→%v b%v in%v: chunked reorder differs from d2s then s2d", layout, from, to, fromBO, toBO, blocks, in)
		}
	}
}

// runChunked runs p chunk by chunk with the given budget.
func runChunked(t *testing.T, p *Plan, src []byte, budget int) []byte {
	t.Helper()
	ck, err := p.Chunker(budget, false, false)
	if err != nil {
		t.Fatal(err)
	}
	got := make([]byte, p.Bytes())
	for k := 0; k < ck.Len(); k++ {
		ch := ck.Chunk(k)
		var in []byte
		for _, s := range ch.In {
			in = append(in, src[s.Off:s.Off+s.Len]...)
		}
		out := make([]byte, ch.Bytes)
		if err := ck.Run(ch, out, in, 2); err != nil {
			t.Fatal(err)
		}
		for _, s := range ch.Out {
			copy(got[s.Off:], out[:s.Len])
			out = out[s.Len:]
		}
	}
	return got
}

func TestReorderErrors(t *testing.T) {
	for _, c := range []struct {
		r    ReorderRequest
		in   []int
		want string
	}{
		{ReorderRequest{FromOrder: CRD, ToOrder: DCR}, []int{1, 8, 2, 2}, "needs the block size"},
		{ReorderRequest{FromOrder: CRD, ToOrder: DCR, Block: Block{2}}, []int{1, 6, 2, 2}, "channels 6 is not divisible by 4 (block 2)"},
		{ReorderRequest{FromOrder: CRD, ToOrder: DCR, Block: Block{2, 3, 4}}, []int{1, 6, 2, 2}, "block 2x3x4 has 3 edges but the tensor has 2 spatial axes"},
		{ReorderRequest{FromLayout: NHWC, ToLayout: NCHW}, []int{4, 4}, "rank 2 tensor [4,4]: reorder needs at least 3 axes"},
		{ReorderRequest{FromLayout: NHWC, ToLayout: NCHW}, []int{1 << 40, 1 << 20, 1 << 10}, "too large"},
		{ReorderRequest{FromOrder: DCR, ToOrder: CRD, FromLayout: NHWC, Block: Block{2}}, []int{1, 2, 2, 6}, "channels 6 is not divisible by 4"},
	} {
		_, err := NewReorder(c.r, c.in, 4, false)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v %v: got %v, want %q", c.r, c.in, err, c.want)
		}
	}
}

// The smallest concrete case, by hand: 2 channel groups of B=4 offsets.
func TestReorderByHand(t *testing.T) {
	// CRD channels c·4+kk hold value 10·c+kk; DCR wants kk·2+c.
	src := []byte{0, 1, 2, 3, 10, 11, 12, 13}
	p, err := NewReorder(ReorderRequest{FromOrder: CRD, ToOrder: DCR, Block: Block{2}}, []int{1, 8, 1, 1}, 1, false)
	if err != nil {
		t.Fatal(err)
	}
	got := make([]byte, 8)
	if err := p.Run(got, src, 1); err != nil {
		t.Fatal(err)
	}
	if want := []byte{0, 10, 1, 11, 2, 12, 3, 13}; !bytes.Equal(got, want) {
		t.Fatalf("got %v, want %v", got, want)
	}
}
