package ops

import (
	"bytes"
	"fmt"
	"hash/fnv"
	"math"
	"math/big"
	"math/rand"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// Fuzz targets for what a user controls before any data is read: the
// --block text and the request a shape meets. Seed corpora are in
// testdata/fuzz/<FuzzName>/; plain `go test` runs them.

var canonicalBlock = regexp.MustCompile(`^[0-9]+(x[0-9]+)*$`)

// FuzzParseBlock: never panics; accepts only edges in 1..MaxBlock; an
// accepted block prints (Block.String) as text that reads back the same; a
// canonical "N" or "N1xN2…" with every edge in range is always accepted.
func FuzzParseBlock(f *testing.F) {
	for _, s := range []string{"2", "2x3", "1x1x4", "2,3", "0", "-2", "", "x", "2x", "x2", "2xx3", "two",
		"99999999999999999999", "1048576", "1048577", "9223372036854775807", "-9223372036854775808", "2X3", "2*3", " 2", "+2", "2,,3", "\xff"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		b, err := ParseBlock(s)
		if canonicalBlock.MatchString(s) {
			inRange := true
			for _, p := range strings.Split(s, "x") {
				v, perr := strconv.ParseInt(p, 10, 64)
				inRange = inRange && perr == nil && v >= 1 && v <= MaxBlock
			}
			if inRange != (err == nil) {
				t.Fatalf("ParseBlock(%q) = %v, %v", s, b, err)
			}
		}
		if err != nil {
			// The command line prints errors on one line whatever they
			// hold; the message itself may echo a newline the user typed.
			if msg := err.Error(); msg == "" || strings.ContainsAny(msg, "\n\r") && !strings.ContainsAny(s, "\n\r") {
				t.Fatalf("ParseBlock(%q): error is not one line: %q", s, msg)
			}
			return
		}
		if len(b) == 0 {
			t.Fatalf("ParseBlock(%q) = empty block", s)
		}
		for _, v := range b {
			if v < 1 || v > MaxBlock {
				t.Fatalf("ParseBlock(%q) = %v: edge out of range", s, b)
			}
		}
		back, err := ParseBlock(b.String())
		if err != nil || fmt.Sprint(back) != fmt.Sprint(b) {
			t.Fatalf("ParseBlock(%q) = %v prints as %q, which reads back as %v (%v)", s, b, b.String(), back, err)
		}
	})
}

// Values the fuzzer reaches with one byte: small ones (where plans succeed
// and can be run) and the edges where arithmetic overflows.
var edgeValues = []int{
	-1, math.MinInt64, math.MaxInt64, math.MaxInt64/2 + 1, math.MaxInt32, 1 << 31, 1 << 32, 1 << 40,
	1 << 62, 3 << 20, MaxBlock, MaxBlock + 1, MaxBlock - 1, 1 << 30, 1 << 42, 1 << 44,
}

// fuzzInt maps a byte to a value: mostly small (b & 63), the top quarter
// of the byte range to edgeValues.
func fuzzInt(b byte) int {
	if b < 0xc0 {
		return int(b & 63)
	}
	return edgeValues[int(b-0xc0)%len(edgeValues)]
}

var fuzzElemSizes = []int{1, 2, 4, 8, 16, 3, 5, 6, 12, 20, 0, 1 << 30}

// fuzzRequest decodes FuzzPlan's arguments. mode bits: 0 op, 1 order,
// 2 layout, 3 Fortran order, 4 misaligned buffers, 5 col-major block
// order, 6 the reversed block order (a permutation that is not linear
// for blocks with more than one axis of edge > 1... and is for others).
func fuzzRequest(mode, elem uint8, shape, block []byte) (req Request, in []int, elemSize int, fortran, misalign bool) {
	req.Op = Op(mode & 1)
	req.Order = Order(mode >> 1 & 1)
	req.Layout = Layout(mode >> 2 & 1)
	fortran, misalign = mode&8 != 0, mode&16 != 0
	defer func() {
		switch {
		case mode&64 != 0:
			if len(in) < 3 {
				return
			}
			if b, err := expandBlock(req.Block, len(in)-2); err == nil {
				if B, ok := checkedProduct(b); ok && B >= 1 && B <= 4096 {
					p := make([]int, B)
					for j := range p {
						p[j] = B - 1 - j
					}
					req.BlockOrder = BlockOrder{Perm: p}
				}
			}
		case mode&32 != 0:
			req.BlockOrder = BlockOrder{Name: "col-major"}
		}
	}()
	for _, b := range shape[:min(len(shape), 10)] {
		in = append(in, fuzzInt(b))
	}
	for _, b := range block[:min(len(block), 10)] {
		req.Block = append(req.Block, fuzzInt(b))
	}
	elemSize = fuzzElemSizes[int(elem)%len(fuzzElemSizes)]
	return
}

// planOracle says what NewPlan must do, computed in arbitrary precision
// straight from SPEC: "valid" requests must be planned with exactly this
// output shape, "invalid" ones refused; "gray" ones (a block product or an
// element size that overflows only for a tensor with a zero dimension,
// i.e. no data at all) may go either way.
func planOracle(req Request, in []int, elem int) (out []*big.Int, verdict string) {
	rank := len(in)
	if rank < 3 || elem < 1 {
		return nil, "invalid"
	}
	k := rank - 2
	blocks := req.Block
	switch {
	case len(blocks) == 1:
		blocks = make(Block, k)
		for i := range blocks {
			blocks[i] = req.Block[0]
		}
	case len(blocks) != k:
		return nil, "invalid"
	}
	B := big.NewInt(1)
	for _, b := range blocks {
		if b < 1 || b > MaxBlock {
			return nil, "invalid"
		}
		B.Mul(B, big.NewInt(int64(b)))
	}
	for _, d := range in {
		if d < 0 {
			return nil, "invalid"
		}
	}
	maxInt := big.NewInt(math.MaxInt64)
	fits := func(s []*big.Int) (bool, bool) { // non-zero product fits; has a zero
		p, zero := big.NewInt(int64(elem)), false
		for _, d := range s {
			if d.Sign() == 0 {
				zero = true
				continue
			}
			p.Mul(p, d)
		}
		return p.Cmp(maxInt) <= 0, zero
	}
	bigIn := make([]*big.Int, rank)
	for i, d := range in {
		bigIn[i] = big.NewInt(int64(d))
	}
	okIn, zero := fits(bigIn)
	if !okIn && !zero {
		return nil, "invalid"
	}
	ch, sp := 1, 2
	if req.Layout == NHWC {
		ch, sp = rank-1, 1
	}
	out = make([]*big.Int, rank)
	for i := range bigIn {
		out[i] = new(big.Int).Set(bigIn[i])
	}
	var rem big.Int
	if req.Op == SpaceToDepth {
		for i := 0; i < k; i++ {
			out[sp+i].QuoRem(bigIn[sp+i], big.NewInt(int64(blocks[i])), &rem)
			if rem.Sign() != 0 {
				return nil, "invalid"
			}
		}
		out[ch].Mul(bigIn[ch], B)
	} else {
		out[ch].QuoRem(bigIn[ch], B, &rem)
		if rem.Sign() != 0 {
			return nil, "invalid"
		}
		for i := 0; i < k; i++ {
			out[sp+i].Mul(bigIn[sp+i], big.NewInt(int64(blocks[i])))
		}
	}
	for _, d := range out {
		if d.Cmp(maxInt) > 0 {
			return nil, "invalid" // no int64 shape can hold it
		}
	}
	okOut, _ := fits(out)
	if !okIn || !okOut || !B.IsInt64() {
		return out, "gray"
	}
	return out, "valid"
}

// FuzzPlan: random shapes, blocks, operations, orders, layouts, element
// sizes and storage orders. NewPlan never panics and refuses exactly the
// requests SPEC makes impossible; an accepted plan has the output shape of
// SPEC and as many elements as its input; and, for a small tensor, the
// engine (one thread and three, whole and item by item, aligned or not)
// equals the reference oracle, and the inverse operation gives the input
// back in C order.
func FuzzPlan(f *testing.F) {
	f.Add(uint8(0), uint8(2), []byte{1, 2, 4, 6}, []byte{2})           // the DirectML example
	f.Add(uint8(1), uint8(2), []byte{1, 8, 2, 3}, []byte{2})           // and back
	f.Add(uint8(3), uint8(0), []byte{2, 12, 3, 2, 2}, []byte{2, 1, 3}) // 3-D, CRD
	f.Add(uint8(4+8), uint8(5), []byte{1, 6, 4, 3}, []byte{2, 3})      // NHWC, Fortran, S3
	f.Add(uint8(16+1), uint8(9), []byte{3, 8, 5}, []byte{4})           // 1-D, misaligned, 20-byte elements
	f.Add(uint8(0), uint8(0), []byte{0, 3, 4, 4}, []byte{2})           // empty batch
	f.Add(uint8(0), uint8(0), []byte{1, 1, 0, 0}, []byte{0})           // block 0
	f.Add(uint8(0), uint8(0), []byte{1, 1, 2, 2}, []byte{0xc0})        // block -1
	f.Add(uint8(0), uint8(3), []byte{1, 0xc7, 0, 0}, []byte{0xcf})     // channels times block overflows
	f.Add(uint8(1), uint8(0), []byte{1, 0, 0xcd, 0}, []byte{0xca})     // height times block overflows
	f.Add(uint8(0), uint8(0), []byte{1, 1, 0, 0, 0, 0}, []byte{0xca})  // block product overflows
	f.Add(uint8(0), uint8(11), []byte{1, 1, 0xc3, 2}, []byte{2})       // too large for the element size
	f.Add(uint8(0), uint8(10), []byte{1, 1, 2, 2}, []byte{2})          // element size 0
	f.Add(uint8(0), uint8(0), []byte{1, 2}, []byte{2})                 // rank 2
	f.Add(uint8(0), uint8(0), []byte{1, 0xc0, 2, 2}, []byte{2})        // negative dimension
	f.Fuzz(func(t *testing.T, mode, elem uint8, shape, block []byte) {
		req, in, elemSize, fortran, misalign := fuzzRequest(mode, elem, shape, block)
		what := fmt.Sprintf("%s %s %s %s -b %v %v×%dB fortran=%v", req.Op, req.Order, req.Layout, req.BlockOrder, []int(req.Block), in, elemSize, fortran)
		wantOut, verdict := planOracle(req, in, elemSize)
		p, err := NewPlan(req, in, elemSize, fortran)
		if err != nil {
			if msg := err.Error(); msg == "" || strings.ContainsAny(msg, "\n\r") {
				t.Fatalf("%s: error is not one line: %q", what, msg)
			}
			if !req.BlockOrder.IsDefault() && strings.Contains(err.Error(), "too many offsets to order") {
				return // a block order over a block of more than 2^20 offsets
			}
			if verdict == "valid" {
				t.Fatalf("%s: refused a valid request: %v", what, err)
			}
			return
		}
		if verdict == "invalid" {
			t.Fatalf("%s: accepted an impossible request as %v", what, p.Out)
		}
		if fmt.Sprint(p.Out) != fmt.Sprint(wantOut) || fmt.Sprint(p.In) != fmt.Sprint(in) {
			t.Fatalf("%s: planned %v -> %v, SPEC says %v", what, p.In, p.Out, wantOut)
		}
		nIn, okIn := checkedProduct(in)
		if !okIn || p.Elements() != nIn || p.Elements() < 0 {
			t.Fatalf("%s: %d elements out, %d in", what, p.Elements(), nIn)
		}
		if p.Bytes() > 1<<20 || p.Elements() > 1<<16 {
			return // the oracle is one element at a time: keep runs small
		}
		runAgainstReference(t, what, p, fortran, misalign)
	})
}

func runAgainstReference(t *testing.T, what string, p *Plan, fortran, misalign bool) {
	h := fnv.New64a()
	fmt.Fprint(h, what)
	rng := rand.New(rand.NewSource(int64(h.Sum64())))
	buf := func(n int) []byte {
		off := 0
		if misalign {
			off = 1 + rng.Intn(7)
		}
		b := make([]byte, n+off)
		rng.Read(b)
		return b[off:][:n:n]
	}
	src := buf(p.Bytes())
	shape, want := reference(p.Request, p.Blocks, p.In, p.ElemSize, fortran, src)
	if fmt.Sprint(shape) != fmt.Sprint(p.Out) {
		t.Fatalf("%s: reference shape %v, plan %v", what, shape, p.Out)
	}
	for _, threads := range []int{1, 3} {
		dst := buf(p.Bytes())
		if err := p.Run(dst, src, threads); err != nil {
			t.Fatalf("%s -j %d: %v", what, threads, err)
		}
		if !bytes.Equal(dst, want) {
			t.Fatalf("%s -j %d: the engine differs from the reference", what, threads)
		}
	}
	// Item by item, in two uneven slices, as the pipeline does for a pipe.
	if n := p.Out[0]; n > 0 {
		item := p.Bytes() / n
		cut := n - n/2
		for _, r := range [][2]int{{0, cut}, {cut, n - cut}} {
			dst := buf(r[1] * item)
			if err := p.RunItems(dst, src, r[0], r[1], 2); err != nil {
				t.Fatalf("%s items %v: %v", what, r, err)
			}
			if !bytes.Equal(dst, want[r[0]*item:(r[0]+r[1])*item]) {
				t.Fatalf("%s items %v: differ from the reference", what, r)
			}
		}
	}
	// The inverse, on the C-order result, gives back the input in C order
	// (the reference with blocks of 1 is a plain C-order copy).
	inv := p.Request
	inv.Op = 1 - p.Op
	inv.Block = Block(p.Blocks)
	q, err := NewPlan(inv, p.Out, p.ElemSize, false)
	if err != nil {
		t.Fatalf("%s: the inverse of a valid plan is refused: %v", what, err)
	}
	if fmt.Sprint(q.Out) != fmt.Sprint(p.In) {
		t.Fatalf("%s: the inverse maps %v to %v", what, p.Out, q.Out)
	}
	back := buf(q.Bytes())
	if err := q.Run(back, want, 2); err != nil {
		t.Fatal(err)
	}
	ones := make([]int, len(p.Blocks))
	for i := range ones {
		ones[i] = 1
	}
	_, inC := reference(Request{Layout: p.Layout}, ones, p.In, p.ElemSize, fortran, src)
	if !bytes.Equal(back, inC) {
		t.Fatalf("%s: %s then %s is not the identity", what, p.Op, q.Op)
	}
}

// Found by FuzzPlan: NewPlan checked the range of every block edge when the
// block had one edge per axis, but not when one edge stood for all axes:
// Block{0} divided by zero (a panic), and an edge over MaxBlock was
// accepted for an empty tensor. ParseBlock refuses both, so the command
// line could not reach it, but NewPlan is the package's entry point and
// promises an error.
func TestNewPlanSingleEdgeOutOfRange(t *testing.T) {
	cases := []struct {
		op    Op
		block int
		shape []int
	}{
		{SpaceToDepth, 0, []int{1, 1, 2, 2}},
		{DepthToSpace, 0, []int{1, 4, 2, 2}},
		{SpaceToDepth, -1, []int{1, 1, 2, 2}},
		{SpaceToDepth, MaxBlock + 1, []int{1, 0, 0}},
		{DepthToSpace, 1 << 40, []int{1, 0, 0}},
	}
	for _, c := range cases {
		func() {
			defer func() {
				if r := recover(); r != nil {
					t.Errorf("%s -b %d %v: panic: %v", c.op, c.block, c.shape, r)
				}
			}()
			p, err := NewPlan(Request{Op: c.op, Block: Block{c.block}}, c.shape, 4, false)
			if err == nil {
				t.Errorf("%s -b %d %v: accepted as %v", c.op, c.block, c.shape, p.Out)
			} else if !strings.Contains(err.Error(), "out of range") && !strings.Contains(err.Error(), "at least 1") && !strings.Contains(err.Error(), "too large") {
				t.Errorf("%s -b %d %v: %v", c.op, c.block, c.shape, err)
			}
		}()
	}
}

// Found by FuzzParseBlock: a 20-digit negative block was reported as "too
// large"; it is out of int64's range below, and the message says that a
// block must be at least 1, as it does for -2.
func TestParseBlockHugeNegativeMessage(t *testing.T) {
	for _, s := range []string{"-9223372036854775809", "2x-99999999999999999999"} {
		_, err := ParseBlock(s)
		if err == nil || !strings.Contains(err.Error(), "must be at least 1") {
			t.Errorf("ParseBlock(%q) = %v, want an error saying a block must be at least 1", s, err)
		}
	}
}
