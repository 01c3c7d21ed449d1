package ops

import (
	"errors"
	"fmt"
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
	if batchless(r.FromLayout) != batchless(r.ToLayout) {
		return nil, fmt.Errorf("reorder keeps the batch axis: %s to %s would add or drop one", r.FromLayout, r.ToLayout)
	}
	if batchless(r.FromLayout) {
		return reorderBatchless(r, in, elemSize, fortran)
	}
	rank := len(in)
	if rank < 3 {
		return nil, fmt.Errorf("rank %d tensor %v: reorder needs at least 3 axes (batch, channel and one spatial axis)", rank, shapeString(in))
	}
	if _, err := checkShape(in, elemSize); err != nil {
		return nil, err
	}
	B, groups, err := r.blockGroups(rank - 2)
	if err != nil {
		return nil, err
	}
	chIn, spIn := 1, 2
	if r.FromLayout == NHWC {
		chIn, spIn = rank-1, 1
	}
	CB := in[chIn]
	if r.Block != nil && CB%B != 0 {
		return nil, fmt.Errorf("channels %d is not divisible by %d (block %s)", CB, B, r.Block)
	}
	seq := r.labels(in, denseStrides(in, fortran), chIn, spIn, B)
	out := r.outShape(in, spIn, CB)
	return newReorderPlan(in, out, elemSize, fortran, seq, groups), nil
}

// batchless says whether a layout has no batch axis; hw is the depth
// side's hwc.
func batchless(l Layout) bool { return l == CHW || l == HWC || l == HW }

// reorderBatchless reorders the layouts without a batch axis as NCHW /
// NHWC with one added, so that the labels below always start with N.
func reorderBatchless(r ReorderRequest, in []int, elemSize int, fortran bool) (*Plan, error) {
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

// blockGroups gives B, the block offsets per channel group, and the
// permutation of the groups that the block orders ask for: output group j
// reads input group groups[j] (nil: the same). Without a block B is 1,
// which is only enough when neither order changes.
func (r ReorderRequest) blockGroups(k int) (B int, groups []int, err error) {
	if r.Block == nil {
		if r.ChangesOrder() {
			return 0, nil, errors.New("changing the channel order or the block order needs the block size (-b)")
		}
		return 1, nil, nil
	}
	blocks, err := expandBlock(r.Block, k)
	if err != nil {
		return 0, nil, err
	}
	B, ok := checkedProduct(blocks)
	if !ok {
		return 0, nil, fmt.Errorf("block %s: the product of the block edges overflows", Block(blocks))
	}
	from, err := r.FromBlockOrder.Offsets(blocks)
	if err != nil {
		return 0, nil, fmt.Errorf("--from-block-order: %w", err)
	}
	to, err := r.ToBlockOrder.Offsets(blocks)
	if err != nil {
		return 0, nil, fmt.Errorf("--to-block-order: %w", err)
	}
	if from == nil && to == nil {
		return B, nil, nil
	}
	return B, groupMap(from, to, B), nil
}

// groupMap matches the block orders' offsets: output group j holds offset
// to[j], which the input keeps in the group whose offset from[g] is the
// same (a nil order is row-major, offset g in group g). nil: no change.
func groupMap(from, to []int, B int) []int {
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
	groups := make([]int, B)
	for j := range groups {
		groups[j] = inv[at(to, j)]
	}
	if isIdentity(groups) {
		return nil
	}
	return groups
}

// reorderLabel is one axis of the reorder's gather form.
type reorderLabel struct {
	extent, stride int
	block          bool
	group          bool // the channel group kk
}

// labels lists the input's labels, with their input strides st, in output
// order: N, then the channel and spatial labels in ToLayout's order.
func (r ReorderRequest) labels(in, st []int, chIn, spIn, B int) []reorderLabel {
	k := len(in) - 2
	n := reorderLabel{extent: in[0], stride: st[0]}
	sp := make([]reorderLabel, k)
	spProduct := 1
	for i := range sp {
		sp[i] = reorderLabel{extent: in[spIn+i], stride: st[spIn+i]}
		spProduct *= max(in[spIn+i], 1)
	}
	CB := in[chIn]
	channel := r.channelLabels(CB, st[chIn], B)
	// The chunker needs the labels it may cut (those not marked block) in
	// the same relative order in input and output. A transpose moves the
	// channel across the spatial axes, so one side of it must be kept
	// whole: the smaller, so that chunks stay small.
	if r.ChangesLayout() {
		whole := sp
		if CB <= spProduct {
			whole = channel
		}
		for i := range whole {
			whole[i].block = true
		}
	}
	seq := []reorderLabel{n}
	if r.ToLayout == NCHW {
		seq = append(seq, channel...)
		seq = append(seq, sp...)
	} else {
		seq = append(seq, sp...)
		seq = append(seq, channel...)
	}
	return seq
}

// channelLabels is the channel axis of CB channels at input stride chs:
// one label, or (kk, c) / (c, kk) when the order changes. kk is the block
// offset the chunker keeps whole.
func (r ReorderRequest) channelLabels(CB, chs, B int) []reorderLabel {
	if !r.ChangesOrder() {
		return []reorderLabel{{extent: CB, stride: chs}}
	}
	C := CB / B
	kk := reorderLabel{extent: B, block: true, group: true}
	c := reorderLabel{extent: C}
	if r.FromOrder == DCR { // ch = kk·C + c
		kk.stride, c.stride = chs*C, chs
	} else { // ch = c·B + kk
		kk.stride, c.stride = chs, chs*B
	}
	if r.ToOrder == DCR {
		return []reorderLabel{kk, c}
	}
	return []reorderLabel{c, kk}
}

// outShape is the output's shape in ToLayout: the input's axes with the
// channel axis of CB channels moved.
func (r ReorderRequest) outShape(in []int, spIn, CB int) []int {
	k := len(in) - 2
	out := make([]int, 0, len(in))
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
	return out
}

// newReorderPlan makes the plan whose gather form is seq.
func newReorderPlan(in, out []int, elemSize int, fortran bool, seq []reorderLabel, groups []int) *Plan {
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
	return p
}
