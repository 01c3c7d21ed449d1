package ops

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// Sizes that are not a multiple of the block (SPEC): --crop and --pad for
// space-to-depth, --crop-to for depth-to-space, in the same pass as the
// permutation.
//
// Every one of them leaves a box of whole blocks that lie inside both the
// input and the output: the kernels run that box as they run any plan
// (its strides are the real tensors' strides, only its extents are
// smaller). What is left is a slab at the end of each spatial axis, one
// block thick: it is moved element by element, each element's source found
// from SPEC's formula with the padding rule (numpy.pad's constant, edge and
// reflect). The slabs are a sliver of the tensor (one block row and one
// block column of a 2-D image), so the element loop costs little.

// PadMode is how --pad fills the positions past the end of an axis.
type PadMode int

const (
	PadNone    PadMode = iota
	PadZero            // numpy.pad mode "constant" with 0
	PadEdge            // numpy.pad mode "edge": the last element repeated
	PadReflect         // numpy.pad mode "reflect": mirrored about the last element
)

func (m PadMode) String() string {
	return [...]string{"none", "zero", "edge", "reflect"}[m]
}

// ParsePadMode reads zero (constant), edge or reflect.
func ParsePadMode(s string) (PadMode, error) {
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "", "none":
		return PadNone, nil
	case "zero", "zeros", "constant":
		return PadZero, nil
	case "edge":
		return PadEdge, nil
	case "reflect":
		return PadReflect, nil
	}
	return 0, fmt.Errorf("unknown --pad mode %q (want zero, edge or reflect)", s)
}

// ParseSizes reads --crop-to D1,D2,… (non-negative integers).
func ParseSizes(s string) ([]int, error) {
	var out []int
	for _, f := range strings.Split(s, ",") {
		v, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || v < 0 {
			return nil, fmt.Errorf("--crop-to %q: %q is not a size (a non-negative integer)", s, strings.TrimSpace(f))
		}
		out = append(out, v)
	}
	return out, nil
}

// changesSize reports whether the request crops or pads.
func (r Request) changesSize() bool { return r.Crop || r.Pad != PadNone || r.CropTo != nil }

// Check refuses the flag combinations that mean nothing, before any input
// is read.
func (r Request) Check() error { return r.checkEdges(0) }

// checkEdges refuses the combinations that mean nothing.
func (r Request) checkEdges(k int) error {
	switch {
	case r.Crop && r.Pad != PadNone:
		return errors.New("--crop and --pad cannot be used together: --crop drops what does not fill a block, --pad fills it")
	case (r.Crop || r.Pad != PadNone) && r.Op != SpaceToDepth:
		return errors.New("--crop and --pad are for space-to-depth; depth-to-space takes --crop-to")
	case r.CropTo != nil && r.Op != DepthToSpace:
		return errors.New("--crop-to is for depth-to-space; space-to-depth takes --crop or --pad")
	}
	return nil
}

// role says what a dim of the gather form is: the batch n, the channel c,
// the outer position o or the block offset k of spatial axis `axis`.
type role struct {
	kind byte // 'n', 'c', 'o', 'k'
	axis int
}

// edgeSet describes the slabs around the box.
type edgeSet struct {
	oDim, kDim []int // per spatial axis: its o and k dims
	valid      []int // per spatial axis: positions that exist on the space side (input S for s2d, output D for d2s)
	spStride   []int // per spatial axis: element stride on the space side
	slabs      [][2][]int
}

// planEdges sets the box, the output strides and the slabs of a plan that
// crops or pads. in and out are the normalized shapes; space is the space
// tensor as the gather form sees it (padded or cropped for s2d, uncropped
// for d2s).
func (p *Plan) planEdges(in, out, space []int) error {
	k := len(p.Blocks)
	spAxis := 2
	if p.Layout.channelsLast() {
		spAxis = 1
	}
	p.inBytes = product(in) * p.ElemSize
	e := &edgeSet{oDim: make([]int, k), kDim: make([]int, k), valid: make([]int, k), spStride: make([]int, k)}
	for d, r := range p.role {
		switch r.kind {
		case 'o':
			e.oDim[r.axis] = d
		case 'k':
			e.kDim[r.axis] = d
		}
	}
	// The output strides of the dims: dense over the real output.
	outStride := denseStrides(out, false)
	p.ostride = make([]int, len(p.dims))
	gatherDense := denseStrides(p.dims, false)
	chAxis := 1
	if p.Layout.channelsLast() {
		chAxis = len(out) - 1
	}
	for d, r := range p.role {
		switch {
		case p.Op == SpaceToDepth:
			p.ostride[d] = gatherDense[d] // the output is the gather's dense order
		case r.kind == 'n':
			p.ostride[d] = outStride[0]
		case r.kind == 'c':
			p.ostride[d] = outStride[chAxis]
		case r.kind == 'o':
			p.ostride[d] = outStride[spAxis+r.axis] * p.Blocks[r.axis]
		case r.kind == 'k':
			p.ostride[d] = outStride[spAxis+r.axis]
		}
	}
	if p.Op == SpaceToDepth {
		inStride := denseStrides(in, p.fortran)
		for i := 0; i < k; i++ {
			e.valid[i] = in[spAxis+i]
			e.spStride[i] = inStride[spAxis+i]
		}
	} else {
		for i := 0; i < k; i++ {
			e.valid[i] = out[spAxis+i]
			e.spStride[i] = outStride[spAxis+i]
		}
	}
	// The box: the blocks wholly inside the valid positions.
	p.box = append([]int(nil), p.dims...)
	var edgeAxes []int
	for i := 0; i < k; i++ {
		q := min(e.valid[i]/p.Blocks[i], p.dims[e.oDim[i]])
		if q < p.dims[e.oDim[i]] {
			edgeAxes = append(edgeAxes, i)
		}
		p.box[e.oDim[i]] = q
	}
	// Slab of axis i: o_i past the box, the earlier edge axes inside it,
	// everything else whole; together they cover what the box does not,
	// once.
	for x, i := range edgeAxes {
		lo, hi := make([]int, len(p.dims)), append([]int(nil), p.dims...)
		lo[e.oDim[i]] = p.box[e.oDim[i]]
		for _, j := range edgeAxes[:x] {
			hi[e.oDim[j]] = p.box[e.oDim[j]]
		}
		e.slabs = append(e.slabs, [2][]int{lo, hi})
	}
	p.edges = e
	return nil
}

// CropNote says what --crop dropped, for stderr; "" when nothing was.
func (p *Plan) CropNote() string {
	if !p.Crop || p.edges == nil {
		return ""
	}
	names := axisNames(len(p.Blocks))
	var parts []string
	for i := range p.Blocks {
		s := p.edges.valid[i]
		kept := p.dims[p.edges.oDim[i]] * p.Blocks[i]
		if kept != s {
			parts = append(parts, fmt.Sprintf("%s %d -> %d", names[i], s, kept))
		}
	}
	if parts == nil {
		return ""
	}
	return "--crop dropped what does not fill a block: " + strings.Join(parts, ", ")
}

// runEdges moves the slabs' elements for the batch items [first,
// first+count): dst holds those items' output, src the whole input.
func (p *Plan) runEdges(dst, src []byte, first, count int) {
	e := p.edges
	if e == nil {
		return
	}
	size := p.ElemSize
	m := len(p.dims)
	idx := make([]int, m)
	lastK := -1
	for d, r := range p.role {
		if r.kind == 'k' {
			lastK = d
		}
	}
	for _, slab := range e.slabs {
		lo, hi := append([]int(nil), slab[0]...), append([]int(nil), slab[1]...)
		lo[0], hi[0] = max(lo[0], first), min(hi[0], first+count)
		empty := false
		for d := range lo {
			empty = empty || lo[d] >= hi[d]
		}
		if empty {
			continue
		}
		copy(idx, lo)
		for {
			p.moveElement(dst, src, idx, first, lastK, size)
			d := m - 1
			for ; d >= 0; d-- {
				idx[d]++
				if idx[d] < hi[d] {
					break
				}
				idx[d] = lo[d]
			}
			if d < 0 {
				break
			}
		}
	}
}

// moveElement moves the element of gather position idx, by SPEC's formula
// with the block order and the padding rule.
func (p *Plan) moveElement(dst, src []byte, idx []int, first, lastK, size int) {
	e := p.edges
	out, in, kk := -first*p.ostride[0], 0, 0
	for d, r := range p.role {
		if r.kind == 'k' {
			kk = kk*p.dims[d] + idx[d]
		}
		if r.kind == 'o' || r.kind == 'k' {
			continue // the spatial coordinate, below
		}
		out += idx[d] * p.ostride[d]
		in += idx[d] * p.stride[d]
	}
	j := kk // the channel group of block offset kk
	if p.pinv != nil {
		j = p.pinv[kk]
	}
	pad := false
	for i := range p.Blocks {
		oD, kD := e.oDim[i], e.kDim[i]
		s := idx[oD]*p.Blocks[i] + idx[kD]
		if p.Op == SpaceToDepth {
			out += idx[oD] * p.ostride[oD]
			if p.pinv == nil {
				out += idx[kD] * p.ostride[kD]
			}
			if s >= e.valid[i] {
				switch p.Pad {
				case PadZero:
					pad = true
				case PadEdge:
					s = e.valid[i] - 1
				case PadReflect:
					s = reflect(s, e.valid[i])
				}
			}
			in += s * e.spStride[i]
		} else {
			if s >= e.valid[i] {
				return // cropped away
			}
			out += s * e.spStride[i]
			in += idx[oD] * p.stride[oD]
			if p.pinv == nil {
				in += idx[kD] * p.stride[kD]
			}
		}
	}
	if p.pinv != nil {
		if p.Op == SpaceToDepth {
			out += j * p.ostride[lastK]
		} else {
			in += j * p.stride[lastK]
		}
	}
	d := dst[out*size : (out+1)*size]
	if pad {
		clear(d)
		return
	}
	copy(d, src[in*size:(in+1)*size])
}

// reflect is numpy.pad's "reflect" index for position s of an axis of n
// elements (s ≥ n): mirrored about the last element, repeatedly.
func reflect(s, n int) int {
	if n == 1 {
		return 0
	}
	period := 2 * (n - 1)
	s %= period
	if s >= n {
		s = period - s
	}
	return s
}
