// Package ops plans and runs the space-to-depth and depth-to-space
// permutations. A Plan validates a request against an input shape with
// overflow-checked arithmetic and describes the operation as a gather over
// the output; the engine (engine.go) executes that gather on bytes.
package ops

import (
	"fmt"
	"math"
	"math/bits"
	"strconv"
	"strings"
	"sync/atomic"
)

// Op is the operation.
type Op int

const (
	SpaceToDepth Op = iota
	DepthToSpace
)

func (o Op) String() string {
	if o == DepthToSpace {
		return "depth-to-space"
	}
	return "space-to-depth"
}

// Order says how a block offset kk and an input channel c combine into a
// depth channel: DCR puts the block offset first (ch = kk·C + c), CRD the
// channel (ch = c·B + kk).
type Order int

const (
	DCR Order = iota
	CRD
)

func (o Order) String() string {
	if o == CRD {
		return "crd"
	}
	return "dcr"
}

// ParseOrder accepts the SPEC's names and aliases.
func ParseOrder(s string) (Order, error) {
	switch strings.ToLower(s) {
	case "dcr", "depth-column-row", "blocks-first":
		return DCR, nil
	case "crd", "column-row-depth", "depth-first":
		return CRD, nil
	}
	return 0, fmt.Errorf("unknown order %q (want dcr, crd, depth-column-row, column-row-depth, blocks-first or depth-first)", s)
}

// Layout says where the batch and channel axes are. NCHW and NHWC have
// both; CHW and HWC have no batch axis; HW (a camera mosaic, a grayscale
// image) has neither: space-to-depth writes it as HWC, and depth-to-space
// with HW reads HWC and writes the bare spatial axes.
type Layout int

const (
	NCHW Layout = iota
	NHWC
	CHW
	HWC
	HW
)

func (l Layout) String() string {
	return [...]string{"nchw", "nhwc", "chw", "hwc", "hw"}[l]
}

// ParseLayout accepts the SPEC's names and aliases.
func ParseLayout(s string) (Layout, error) {
	switch strings.ToLower(s) {
	case "nchw", "channels-first", "ncw", "ncdhw":
		return NCHW, nil
	case "nhwc", "channels-last", "nwc", "ndhwc":
		return NHWC, nil
	case "chw", "cw", "cdhw":
		return CHW, nil
	case "hwc", "wc", "dhwc":
		return HWC, nil
	case "hw", "w", "dhw":
		return HW, nil
	}
	return 0, fmt.Errorf("unknown layout %q (want nchw, nhwc, chw, hwc, hw, channels-first or channels-last)", s)
}

// channelsLast reports whether the layout's channel axis is last: the
// gather form knows two layouts, and the others are these with axes of
// extent 1 added (normalize).
func (l Layout) channelsLast() bool { return l == NHWC || l == HWC || l == HW }

// normalize turns a shape of layout l into the [N, C, S…] or [N, S…, C]
// shape the gather form works on, and back: lead and trail are the axes
// of extent 1 added in front and at the end.
func (l Layout) normalize(op Op, shape []int) (norm []int, lead, trail int) {
	switch {
	case l == CHW || l == HWC || (l == HW && op == DepthToSpace):
		lead = 1 // HW's depth side is HWC
	case l == HW:
		lead, trail = 1, 1
	}
	norm = make([]int, 0, lead+len(shape)+trail)
	for i := 0; i < lead; i++ {
		norm = append(norm, 1)
	}
	norm = append(norm, shape...)
	for i := 0; i < trail; i++ {
		norm = append(norm, 1)
	}
	return norm, lead, trail
}

// MaxBlock bounds one block edge. It is far above any real use and keeps
// every product of blocks well inside int64 before shapes are even looked at.
const MaxBlock = 1 << 20

// Block holds one block edge per spatial axis, or a single edge for all.
type Block []int

// ParseBlock reads "2" or "2x3" (also "2,3").
func ParseBlock(s string) (Block, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return nil, fmt.Errorf("empty block size")
	}
	parts := strings.FieldsFunc(s, func(r rune) bool { return r == 'x' || r == 'X' || r == ',' || r == '*' })
	if len(parts) == 0 || strings.HasPrefix(s, "x") || strings.HasSuffix(s, "x") || strings.Contains(s, "xx") {
		return nil, fmt.Errorf("block %q is not an integer or a list like 2x3", s)
	}
	b := make(Block, len(parts))
	for i, p := range parts {
		v, err := strconv.ParseInt(strings.TrimSpace(p), 10, 64)
		if err != nil {
			if ne, ok := err.(*strconv.NumError); ok && ne.Err == strconv.ErrRange {
				if strings.HasPrefix(strings.TrimSpace(p), "-") {
					return nil, fmt.Errorf("block %s must be at least 1", strings.TrimSpace(p))
				}
				return nil, fmt.Errorf("block %s is too large (at most %d)", p, MaxBlock)
			}
			return nil, fmt.Errorf("block %q is not an integer or a list like 2x3", s)
		}
		if v < 1 {
			return nil, fmt.Errorf("block %d must be at least 1", v)
		}
		if v > MaxBlock {
			return nil, fmt.Errorf("block %d is too large (at most %d)", v, MaxBlock)
		}
		b[i] = int(v)
	}
	return b, nil
}

func (b Block) String() string {
	s := make([]string, len(b))
	for i, v := range b {
		s[i] = strconv.Itoa(v)
	}
	return strings.Join(s, "x")
}

// Request is what a user asks for, before it meets a shape.
type Request struct {
	Op         Op
	Order      Order
	Layout     Layout
	Block      Block
	BlockOrder BlockOrder
	// Sizes that are not a multiple of the block (edges.go): Crop drops
	// the rows and columns that do not fill a block, Pad fills them
	// (space-to-depth); CropTo cuts the output's spatial axes
	// (depth-to-space).
	Crop   bool
	Pad    PadMode
	CropTo []int
}

// Plan is a validated request for one input shape. Its gather form says, for
// every axis of the output expanded into labels (batch, channel, and each
// spatial axis split into an outer position and a block offset), how far one
// step along it moves in the input.
type Plan struct {
	Request
	Blocks   []int // one per spatial axis
	In, Out  []int // logical shapes, C order, as the layout has them
	ElemSize int
	items    int // the batch extent (1 for layouts without a batch axis)
	// normIn and normOut are In and Out with the axes of extent 1 that
	// make them NCHW or NHWC (Layout.normalize).
	normIn, normOut []int

	dims    []int  // gather form: extents in output order
	stride  []int  // input stride in elements of each dim
	isBlock []bool // the dim is a block offset ki (see chunk.go)
	role    []role // what each dim is (edges.go)
	fortran bool
	// A plan whose sizes are not a multiple of the block (edges.go): the
	// kernels run the box of whole blocks inside the input and the
	// output, ostride gives the output strides of the dims (nil: dense
	// over dims) and edges the slabs around the box, moved element by
	// element.
	inBytes int
	box     []int
	ostride []int
	edges   *edgeSet
	// pinv is the inverse of the block order (pinv[kk] is the group that
	// holds block offset kk), nil for row-major (blockorder.go). It
	// permutes the output's groups, or with groupInput the input's; the
	// group axis is the block dims, or groupDims where set (reorder).
	pinv       []int
	groupInput bool
	groupDims  []int
	// whole is Run's gathers, kept for the next Run (wholeRun).
	whole atomic.Pointer[wholeRun]
}

// NormIn and NormOut are the shapes as NCHW or NHWC: the layouts without a
// batch or channel axis with those axes, of extent 1, added.
func (p *Plan) NormIn() []int  { return append([]int(nil), p.normIn...) }
func (p *Plan) NormOut() []int { return append([]int(nil), p.normOut...) }

// Groups is the block order as SPEC writes it, p[j] for every channel
// group j, or nil for row-major.
func (p *Plan) Groups() []int {
	if p.pinv == nil {
		return nil
	}
	g := make([]int, len(p.pinv))
	for kk, j := range p.pinv {
		g[j] = kk
	}
	return g
}

// Items is the extent of the batch axis, the first axis of the gather form:
// RunItems and the pipeline cut the output into these (1 for the layouts
// without a batch axis).
func (p *Plan) Items() int { return p.items }

// Elements is the number of elements of input and output alike.
func (p *Plan) Elements() int { return product(p.Out) }

// Bytes is the size in bytes of the output (and of the input, but for a
// plan that crops or pads: InBytes).
func (p *Plan) Bytes() int { return p.Elements() * p.ElemSize }

// InBytes is the size in bytes of the input tensor data.
func (p *Plan) InBytes() int {
	if p.edges != nil || p.box != nil {
		return p.inBytes
	}
	return p.Bytes()
}

// axisNames names the spatial axes in error messages the way users name
// them: a 2-D image has a height and a width.
func axisNames(k int) []string {
	switch k {
	case 1:
		return []string{"width"}
	case 2:
		return []string{"height", "width"}
	case 3:
		return []string{"depth", "height", "width"}
	}
	n := make([]string, k)
	for i := range n {
		n[i] = "spatial axis " + strconv.Itoa(i+1)
	}
	return n
}

// NewPlan validates req against an input of the given shape and element size.
// fortran says the input bytes are in Fortran (column-major) order; the
// output is always C order.
func NewPlan(req Request, in []int, elemSize int, fortran bool) (*Plan, error) {
	userIn := in
	in, lead, trail := req.Layout.normalize(req.Op, in)
	if len(in) < 3 {
		return nil, rankError(req, userIn)
	}
	k := len(in) - 2
	blocks, err := expandBlock(req.Block, k)
	if err != nil {
		return nil, err
	}
	total, err := checkShape(in, elemSize)
	if err != nil {
		return nil, err
	}
	bTotal, ok := checkedProduct(blocks)
	if !ok {
		return nil, fmt.Errorf("block %s: the product of the block edges overflows", Block(blocks))
	}
	if err := req.checkEdges(k); err != nil {
		return nil, err
	}
	out, space, err := req.shapes(in, blocks, bTotal)
	if err != nil {
		return nil, err
	}
	if t, ok := checkedProduct(out); !ok || (t != total && !req.changesSize()) {
		return nil, fmt.Errorf("output shape %v overflows", shapeString(out))
	}
	p := &Plan{Request: req, Blocks: blocks, In: append([]int(nil), userIn...), Out: userOut(req, out, lead, trail),
		ElemSize: elemSize, items: in[0], normIn: in, normOut: out, fortran: fortran}
	p.setGather(space)
	if req.changesSize() {
		if err := p.planEdges(in, out, space); err != nil {
			return nil, err
		}
	}
	if err := p.setBlockOrder(); err != nil {
		return nil, err
	}
	return p, nil
}

// rankError says how many axes the layout needs, and for the batched
// layouts how to do without a batch axis: a bare image is the usual cause.
func rankError(req Request, userIn []int) error {
	need := map[Layout]string{NCHW: "at least 3 axes (batch, channel and one spatial axis)", NHWC: "at least 3 axes (batch, one spatial axis and channel)",
		CHW: "at least 2 axes (channel and one spatial axis)", HWC: "at least 2 axes (one spatial axis and channel)", HW: "at least 1 spatial axis"}[req.Layout]
	if req.Layout == HW && req.Op == DepthToSpace {
		need = "at least 2 axes (one spatial axis and the depth channels, as hwc)"
	}
	hint := ""
	if req.Layout == NCHW || req.Layout == NHWC {
		hint = "; without a batch axis use --layout chw or hwc, for a bare [H, W] --layout hw"
	}
	return fmt.Errorf("rank %d tensor %v: %s needs %s%s", len(userIn), shapeString(userIn), req.Op, need, hint)
}

// checkShape refuses what no plan can hold: elements of no size, negative
// dimensions, and tensors whose byte size overflows an int. total is the
// number of elements.
func checkShape(in []int, elemSize int) (total int, err error) {
	if elemSize < 1 {
		return 0, fmt.Errorf("element size %d", elemSize)
	}
	for i, d := range in {
		if d < 0 {
			return 0, fmt.Errorf("dimension %d of shape %v is negative", i, shapeString(in))
		}
	}
	total, ok := checkedProduct(in)
	if !ok || total > math.MaxInt/elemSize {
		return 0, fmt.Errorf("shape %v of %d-byte elements is too large", shapeString(in), elemSize)
	}
	return total, nil
}

// axes is where a normalized shape has its channel axis and its first
// spatial axis.
func (l Layout) axes(rank int) (ch, sp int) {
	if l.channelsLast() {
		return rank - 1, 1
	}
	return 1, 2
}

// shapes computes the normalized output shape and the space tensor as
// the gather sees it: the side whose spatial axes are whole blocks (the
// input after a crop or pad, the output before --crop-to).
func (req Request) shapes(in, blocks []int, bTotal int) (out, space []int, err error) {
	switch req.Op {
	case SpaceToDepth:
		return req.s2dShapes(in, blocks, bTotal)
	case DepthToSpace:
		return req.d2sShapes(in, blocks, bTotal)
	}
	return nil, nil, fmt.Errorf("unknown operation %d", req.Op)
}

// s2dShapes divides each spatial axis by its block, cropping or padding
// it to whole blocks if asked, and multiplies the channels by the block.
func (req Request) s2dShapes(in, blocks []int, bTotal int) (out, space []int, err error) {
	chAxis, spAxis := req.Layout.axes(len(in))
	names := axisNames(len(in) - 2)
	out = append([]int(nil), in...)
	space = append([]int(nil), in...)
	for i := range names {
		s := in[spAxis+i]
		if r := s % blocks[i]; r != 0 {
			switch {
			case req.Crop:
				s -= r
			case req.Pad != PadNone:
				s += blocks[i] - r
			default:
				return nil, nil, fmt.Errorf("%s %d is not divisible by block %d", names[i], s, blocks[i])
			}
		}
		out[spAxis+i] = s / blocks[i]
		space[spAxis+i] = s
	}
	c, ok := mulOK(in[chAxis], bTotal)
	if !ok {
		return nil, nil, fmt.Errorf("channels %d times block %d overflows", in[chAxis], bTotal)
	}
	out[chAxis] = c
	return out, space, nil
}

// d2sShapes divides the channels by the block and multiplies each spatial
// axis by its block, then cuts them to --crop-to.
func (req Request) d2sShapes(in, blocks []int, bTotal int) (out, space []int, err error) {
	chAxis, spAxis := req.Layout.axes(len(in))
	names := axisNames(len(in) - 2)
	out = append([]int(nil), in...)
	if in[chAxis]%bTotal != 0 {
		return nil, nil, fmt.Errorf("channels %d is not divisible by %d (block %s)", in[chAxis], bTotal, Block(blocks))
	}
	out[chAxis] = in[chAxis] / bTotal
	for i := range names {
		s, ok := mulOK(in[spAxis+i], blocks[i])
		if !ok {
			return nil, nil, fmt.Errorf("%s %d times block %d overflows", names[i], in[spAxis+i], blocks[i])
		}
		out[spAxis+i] = s
	}
	space = append([]int(nil), out...)
	if req.CropTo != nil {
		if len(req.CropTo) != len(names) {
			return nil, nil, fmt.Errorf("--crop-to %s has %d sizes but the tensor has %d spatial axes", sizesString(req.CropTo), len(req.CropTo), len(names))
		}
		for i, d := range req.CropTo {
			if d > out[spAxis+i] {
				return nil, nil, fmt.Errorf("--crop-to %s: %s %d is larger than the output's %d", sizesString(req.CropTo), names[i], d, out[spAxis+i])
			}
			out[spAxis+i] = d
		}
	}
	return out, space, nil
}

// userOut is the output shape as the user's layout has it: the axes that
// normalize added are dropped, and HW's space side drops the channel axis
// of extent 1 (depth-to-space); its depth side keeps it (space-to-depth).
func userOut(req Request, out []int, lead, trail int) []int {
	u := out[lead:]
	if req.Op == DepthToSpace {
		u = out[lead : len(out)-trail-boolInt(req.Layout == HW)]
	}
	return append([]int(nil), u...)
}

// setGather computes the gather form from the normalized shapes, with the
// space tensor on the side the operation has it.
func (p *Plan) setGather(space []int) {
	st := denseStrides(p.normIn, p.fortran)
	if p.Op == SpaceToDepth {
		p.dims, p.stride, p.isBlock, p.role = gatherForm(p.Request, p.Blocks, space, p.normOut, st)
	} else {
		p.dims, p.stride, p.isBlock, p.role = gatherForm(p.Request, p.Blocks, p.normIn, space, st)
	}
}

// setBlockOrder keeps the inverse of a block order other than row-major
// (blockorder.go), read on the input's groups for depth-to-space.
func (p *Plan) setBlockOrder() error {
	perm, err := p.BlockOrder.Offsets(p.Blocks)
	if err != nil {
		return err
	}
	p.groupInput = p.Op == DepthToSpace
	if !isIdentity(perm) {
		p.pinv = make([]int, len(perm))
		for j, kk := range perm {
			p.pinv[kk] = j
		}
	}
	return nil
}

// NewCopy plans the identity on a tensor: a C-order copy, which for a
// Fortran-order input is the reordering of its bytes.
func NewCopy(shape []int, elemSize int, fortran bool) (*Plan, error) {
	total, ok := checkedProduct(shape)
	if !ok || elemSize < 1 || total > math.MaxInt/elemSize {
		return nil, fmt.Errorf("shape %v of %d-byte elements is too large", shapeString(shape), elemSize)
	}
	items := 0
	if len(shape) > 0 {
		items = shape[0]
	}
	return &Plan{
		In: append([]int(nil), shape...), Out: append([]int(nil), shape...), ElemSize: elemSize, items: items,
		dims: append([]int(nil), shape...), stride: denseStrides(shape, fortran),
		isBlock: make([]bool, len(shape)), role: make([]role, len(shape)), fortran: fortran,
	}, nil
}

func expandBlock(b Block, k int) ([]int, error) {
	for _, v := range b {
		if v < 1 {
			return nil, fmt.Errorf("block %d must be at least 1", v)
		}
		if v > MaxBlock {
			return nil, fmt.Errorf("block %d is too large (at most %d)", v, MaxBlock)
		}
	}
	switch {
	case len(b) == 0:
		return nil, fmt.Errorf("no block size")
	case len(b) == 1:
		out := make([]int, k)
		for i := range out {
			out[i] = b[0]
		}
		return out, nil
	case len(b) != k:
		return nil, fmt.Errorf("block %s has %d edges but the tensor has %d spatial axes", b, len(b), k)
	}
	return append([]int(nil), b...), nil
}

// denseStrides gives the element stride of each logical axis of a dense
// tensor stored in C (row-major) or Fortran (column-major) order.
func denseStrides(shape []int, fortran bool) []int {
	st := make([]int, len(shape))
	acc := 1
	if fortran {
		for i := range shape {
			st[i] = acc
			acc *= max(shape[i], 1)
		}
		return st
	}
	for i := len(shape) - 1; i >= 0; i-- {
		st[i] = acc
		acc *= max(shape[i], 1)
	}
	return st
}

// gatherForm expresses the operation as a gather: the output, in C order,
// expanded into labelled axes, each with its stride in the input. The two
// tensors involved are the "space" tensor [N, C, S1…SK] (or NHWC) with each
// Si = Oi·bi split into (oi, ki), and the "depth" tensor [N, C·B, O1…OK]
// whose channel splits into (kk, c) for DCR or (c, kk) for CRD, kk itself
// split row-major into (k1…kK). SPEC's formula is exactly this relabelling.
func gatherForm(req Request, b, in, out []int, inStride []int) (dims, stride []int, isBlock []bool, roles []role) {
	space := in
	if req.Op == DepthToSpace {
		space = out
	}
	l := newGatherLabels(req.Layout, b, space, in[0], inStride[0])
	if req.Op == SpaceToDepth {
		l.spaceStrides(b, inStride)
	} else {
		l.depthStrides(req.Order, b, inStride)
	}
	for _, a := range l.outputOrder(req) {
		dims = append(dims, a.extent)
		stride = append(stride, a.stride)
		isBlock = append(isBlock, a.block)
		roles = append(roles, a.role)
	}
	return dims, stride, isBlock, roles
}

// gatherAxis is one label of the gather form.
type gatherAxis struct {
	extent, stride int
	block          bool
	role           role
}

// gatherLabels are the labels both tensors are made of: the batch n, the
// channel c, and each spatial axis's outer position o[i] and block offset
// kb[i]. Their extents come from the space tensor; their input strides
// from whichever tensor is the input (spaceStrides, depthStrides).
type gatherLabels struct {
	n, c           gatherAxis
	o, kb          []gatherAxis
	chAxis, spAxis int
	last           bool // channels last
}

// newGatherLabels makes the labels of space, a normalized shape in layout
// l, whose batch of extent items is at input stride nStride.
func newGatherLabels(l Layout, b, space []int, items, nStride int) *gatherLabels {
	k := len(space) - 2
	g := &gatherLabels{o: make([]gatherAxis, k), kb: make([]gatherAxis, k), last: l.channelsLast()}
	g.chAxis, g.spAxis = l.axes(len(space))
	g.n = gatherAxis{extent: items, stride: nStride, role: role{kind: 'n'}}
	g.c = gatherAxis{extent: space[g.chAxis], role: role{kind: 'c'}}
	for i := range k {
		g.o[i] = gatherAxis{extent: space[g.spAxis+i] / b[i], role: role{kind: 'o', axis: i}}
		g.kb[i] = gatherAxis{extent: b[i], block: true, role: role{kind: 'k', axis: i}}
	}
	return g
}

// spaceStrides sets the strides when the input is the space tensor: a
// spatial index is oi·bi + ki.
func (g *gatherLabels) spaceStrides(b, inStride []int) {
	g.c.stride = inStride[g.chAxis]
	for i := range g.kb {
		g.kb[i].stride = inStride[g.spAxis+i]
		g.o[i].stride = inStride[g.spAxis+i] * b[i]
	}
}

// depthStrides sets the strides when the input is the depth tensor: its
// channel index is a mixed-radix number over (k1…kK, c) for DCR or
// (c, k1…kK) for CRD.
func (g *gatherLabels) depthStrides(order Order, b, inStride []int) {
	chs := inStride[g.chAxis]
	inner := 1
	if order == DCR {
		g.c.stride = chs
		inner = g.c.extent
	}
	for i := len(g.kb) - 1; i >= 0; i-- {
		g.kb[i].stride = chs * inner
		inner *= b[i]
	}
	if order == CRD {
		g.c.stride = chs * inner
	}
	for i := range g.o {
		g.o[i].stride = inStride[g.spAxis+i]
	}
}

// outputOrder lists the labels as the output tensor has them: the depth
// tensor for space-to-depth, the space tensor for depth-to-space.
func (g *gatherLabels) outputOrder(req Request) []gatherAxis {
	var seq []gatherAxis
	add := func(a ...gatherAxis) { seq = append(seq, a...) }
	add(g.n)
	if req.Op == SpaceToDepth {
		if g.last {
			add(g.o...)
		}
		if req.Order == DCR {
			add(g.kb...)
			add(g.c)
		} else {
			add(g.c)
			add(g.kb...)
		}
		if !g.last {
			add(g.o...)
		}
		return seq
	}
	if !g.last {
		add(g.c)
	}
	for i := range g.o {
		add(g.o[i], g.kb[i])
	}
	if g.last {
		add(g.c)
	}
	return seq
}

func product(s []int) int {
	p := 1
	for _, v := range s {
		p *= v
	}
	return p
}

// checkedProduct multiplies non-negative values, reporting overflow of int.
// A zero dimension makes the product 0 but does not hide an overflow of the
// others: such a shape could not be described in any real file either.
func checkedProduct(s []int) (int, bool) {
	p, zero := 1, false
	for _, v := range s {
		if v == 0 {
			zero = true
			continue
		}
		var ok bool
		if p, ok = mulOK(p, v); !ok {
			return 0, false
		}
	}
	if zero {
		return 0, true
	}
	return p, true
}

func mulOK(a, b int) (int, bool) {
	if a < 0 || b < 0 {
		return 0, false
	}
	hi, lo := bits.Mul64(uint64(a), uint64(b))
	if hi != 0 || lo > math.MaxInt64 {
		return 0, false
	}
	return int(lo), true
}

func shapeString(s []int) string {
	p := make([]string, len(s))
	for i, v := range s {
		p[i] = strconv.Itoa(v)
	}
	return "[" + strings.Join(p, ",") + "]"
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

// sizesString writes sizes as the flags take them: 4,6.
func sizesString(s []int) string {
	return strings.Trim(shapeString(s), "[]")
}
