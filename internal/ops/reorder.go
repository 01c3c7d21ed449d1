package ops

import (
	"errors"
	"fmt"
	"math"
)

// Reorder: repairing depth-side data that is in the other channel order or
// the other layout.
//
// The depth tensor of SPEC's operators is [N, C·B, O1…OK] (or NHWC); its
// channel index is kk·C + c in DCR and c·B + kk in CRD. Converting one order
// into the other is therefore a pure channel permutation, c·B + kk ↔
// kk·C + c, and converting NCHW into NHWC a transpose. Both are gathers
// over labelled axes, exactly like the operators, so a reorder is a Plan
// and runs on the same engine (Run, RunItems, Chunker).

// ReorderRequest is what `depthspace reorder` asks for. Block is needed
// only when the orders differ (it gives B, the block offsets per channel
// group); with equal orders it may be nil.
type ReorderRequest struct {
	FromOrder, ToOrder           Order
	FromLayout, ToLayout         Layout
	Block                        Block
	FromBlockOrder, ToBlockOrder BlockOrder
}

// ChangesOrder says whether the request permutes channels: another channel
// order or another block order.
func (r ReorderRequest) ChangesOrder() bool {
	return r.FromOrder != r.ToOrder || r.FromBlockOrder.String() != r.ToBlockOrder.String()
}

// ChangesLayout says whether the request transposes the channel axis.
func (r ReorderRequest) ChangesLayout() bool { return r.FromLayout != r.ToLayout }

// NewReorder validates r against an input of the given shape (in r's
// FromLayout) and plans the reorder. The output is C order in ToLayout.
func NewReorder(r ReorderRequest, in []int, elemSize int, fortran bool) (*Plan, error) {
	// The layouts without a batch axis are reordered as NCHW / NHWC with
	// one added; hw is the depth side's hwc.
	batchless := func(l Layout) bool { return l == CHW || l == HWC || l == HW }
	if batchless(r.FromLayout) != batchless(r.ToLayout) {
		return nil, fmt.Errorf("reorder keeps the batch axis: %s to %s would add or drop one", r.FromLayout, r.ToLayout)
	}
	if batchless(r.FromLayout) {
		norm := r
		norm.FromLayout, norm.ToLayout = NCHW, NCHW
		if r.FromLayout.channelsLast() {
			norm.FromLayout = NHWC
		}
		if r.ToLayout.channelsLast() {
			norm.ToLayout = NHWC
		}
		p, err := NewReorder(norm, append([]int{1}, in...), elemSize, fortran)
		if err != nil {
			return nil, err
		}
		p.In, p.Out = append([]int(nil), in...), p.Out[1:]
		return p, nil
	}
	rank := len(in)
	if rank < 3 {
		return nil, fmt.Errorf("rank %d tensor %v: reorder needs at least 3 axes (batch, channel and one spatial axis)", rank, shapeString(in))
	}
	if elemSize < 1 {
		return nil, fmt.Errorf("element size %d", elemSize)
	}
	for i, d := range in {
		if d < 0 {
			return nil, fmt.Errorf("dimension %d of shape %v is negative", i, shapeString(in))
		}
	}
	total, ok := checkedProduct(in)
	if !ok || total > math.MaxInt/elemSize {
		return nil, fmt.Errorf("shape %v of %d-byte elements is too large", shapeString(in), elemSize)
	}
	k := rank - 2
	B := 1
	var groups []int // output group j reads input group groups[j]; nil: the same
	if r.Block != nil {
		blocks, err := expandBlock(r.Block, k)
		if err != nil {
			return nil, err
		}
		if B, ok = checkedProduct(blocks); !ok {
			return nil, fmt.Errorf("block %s: the product of the block edges overflows", Block(blocks))
		}
		from, err := r.FromBlockOrder.Offsets(blocks)
		if err != nil {
			return nil, fmt.Errorf("--from-block-order: %w", err)
		}
		to, err := r.ToBlockOrder.Offsets(blocks)
		if err != nil {
			return nil, fmt.Errorf("--to-block-order: %w", err)
		}
		if from != nil || to != nil {
			// Output group j holds offset to[j], which the input keeps in
			// the group whose offset from[g] is the same.
			at := func(t []int, v int) int {
				if t == nil {
					return v
				}
				return t[v]
			}
			inv := make([]int, B)
			for g := 0; g < B; g++ {
				inv[at(from, g)] = g
			}
			groups = make([]int, B)
			for j := range groups {
				groups[j] = inv[at(to, j)]
			}
			if isIdentity(groups) {
				groups = nil
			}
		}
	} else if r.ChangesOrder() {
		return nil, errors.New("changing the channel order or the block order needs the block size (-b)")
	}
	chIn, spIn := 1, 2
	if r.FromLayout == NHWC {
		chIn, spIn = rank-1, 1
	}
	CB := in[chIn]
	if r.Block != nil && CB%B != 0 {
		return nil, fmt.Errorf("channels %d is not divisible by %d (block %s)", CB, B, r.Block)
	}
	C := CB / B

	st := denseStrides(in, fortran)
	type label struct {
		extent, stride int
		block          bool
		group          bool // the channel group kk
	}
	n := label{extent: in[0], stride: st[0]}
	sp := make([]label, k)
	spProduct := 1
	for i := range sp {
		sp[i] = label{extent: in[spIn+i], stride: st[spIn+i]}
		spProduct *= max(in[spIn+i], 1)
	}
	// The channel axis: one label, or (kk, c) / (c, kk) when the order
	// changes. kk is the block offset the chunker keeps whole.
	chs := st[chIn]
	var channel []label
	if r.ChangesOrder() {
		kk := label{extent: B, block: true, group: true}
		c := label{extent: C}
		if r.FromOrder == DCR { // ch = kk·C + c
			kk.stride, c.stride = chs*C, chs
		} else { // ch = c·B + kk
			kk.stride, c.stride = chs, chs*B
		}
		if r.ToOrder == DCR {
			channel = []label{kk, c}
		} else {
			channel = []label{c, kk}
		}
	} else {
		channel = []label{{extent: CB, stride: chs}}
	}
	// The chunker needs the labels it may cut (those not marked block) in
	// the same relative order in input and output. A transpose moves the
	// channel across the spatial axes, so one side of it must be kept
	// whole: the smaller, so that chunks stay small.
	if r.ChangesLayout() {
		if CB <= spProduct {
			for i := range channel {
				channel[i].block = true
			}
		} else {
			for i := range sp {
				sp[i].block = true
			}
		}
	}
	seq := []label{n}
	if r.ToLayout == NCHW {
		seq = append(seq, channel...)
		seq = append(seq, sp...)
	} else {
		seq = append(seq, sp...)
		seq = append(seq, channel...)
	}
	out := make([]int, 0, rank)
	out = append(out, in[0])
	if r.ToLayout == NCHW {
		out = append(out, CB)
	}
	for i := 0; i < k; i++ {
		out = append(out, in[spIn+i])
	}
	if r.ToLayout == NHWC {
		out = append(out, CB)
	}
	p := &Plan{In: append([]int(nil), in...), Out: out, ElemSize: elemSize, fortran: fortran, items: in[0]}
	if groups != nil {
		// The kk label is the group axis; its permutation is read on the
		// input side, as for depth-to-space (blockorder.go).
		p.pinv, p.groupInput = groups, true
		for d, l := range seq {
			if l.group {
				p.groupDims = []int{d}
			}
		}
	}
	for _, l := range seq {
		p.dims = append(p.dims, l.extent)
		p.stride = append(p.stride, l.stride)
		p.isBlock = append(p.isBlock, l.block)
		p.role = append(p.role, role{kind: 'c'})
	}
	return p, nil
}
