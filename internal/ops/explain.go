package ops

import (
	"errors"
	"fmt"
	"sort"
	"strconv"
)

// Describing a plan to a person: `depthspace explain` prints the gather a
// Plan runs as the reshape → transpose → reshape users know from numpy.
// Nothing here restates the operators' formulas: the labels, their order
// in the input, the grouping of labels into axes and every coefficient are
// read from the gather form NewPlan built (dims, stride, isBlock).

// Label is one named index of the gather form: the batch n, the channel c,
// the outer position of a spatial axis (h, w, …) or a block offset (bh,
// bw, …).
type Label struct {
	Name   string `json:"name"`
	Extent int    `json:"extent"`
	Block  bool   `json:"block"` // a block offset ki
}

// Term is Coef·label in an index expression.
type Term struct {
	Label int `json:"label"` // index into Recipe.Labels
	Coef  int `json:"coef"`
}

// Recipe is a plan as reshape → transpose → reshape: reshape the input to
// the extents of View, transpose by Perm, reshape to Out.
type Recipe struct {
	Labels []Label // in output order: the order of the gather form
	// In and Out group the labels into the axes of the input and of the
	// output, outermost first; each label's index into an axis is Coef·label
	// summed over the group.
	In, Out [][]Term
	View    []int // label indices in input order
	Perm    []int // Perm[i] is the position in View of output label i
	InShape []int
	// OutShape is the shape the last reshape produces.
	OutShape []int
	// Groups is the block order other than row-major: channel group j
	// holds block offset Groups[j]. The labels, formula and reshapes above
	// then describe the row-major operation, whose groups this permutes
	// (on the output for space-to-depth, on the input for depth-to-space).
	Groups []int
}

// ViewShape is the shape the input is first reshaped to.
func (r *Recipe) ViewShape() []int {
	s := make([]int, len(r.View))
	for i, l := range r.View {
		s[i] = r.Labels[l].Extent
	}
	return s
}

// maxExplainRank keeps the probe plan below (whose extents are all 2)
// far from overflow.
const maxExplainRank = 24

// spatialNames names the outer positions of K spatial axes as users name
// the axes (axisNames), and block offsets with a b prefix.
func spatialNames(k int) (outer, block []string) {
	switch k {
	case 1:
		outer = []string{"w"}
	case 2:
		outer = []string{"h", "w"}
	case 3:
		outer = []string{"d", "h", "w"}
	default:
		for i := 1; i <= k; i++ {
			outer = append(outer, "s"+strconv.Itoa(i))
		}
	}
	for _, o := range outer {
		block = append(block, "b"+o)
	}
	return outer, block
}

// Recipe describes p, a space-to-depth or depth-to-space plan.
//
// The order of labels in the input is read from the strides of the gather
// form. Labels of extent 1 would leave that order ambiguous (their strides
// can tie), so the order and the grouping into axes are read from a probe:
// the same request planned on a shape whose every label has extent 2. The
// label sequence of a plan depends on its request and rank only, never on
// the extents, so the probe's order is the plan's; coefficients and
// extents are then the plan's own.
func (p *Plan) Recipe() (*Recipe, error) {
	if p.Blocks == nil {
		return nil, errors.New("internal error: Recipe needs a space-to-depth or depth-to-space plan")
	}
	k := len(p.Blocks)
	if k+2 > maxExplainRank {
		return nil, fmt.Errorf("rank %d: explain describes tensors of rank at most %d", len(p.In), maxExplainRank)
	}
	// The layouts without a batch or channel axis are described as NCHW
	// or NHWC, and those labels of extent 1 dropped at the end.
	layout := p.Layout
	if layout.channelsLast() {
		layout = NHWC
	} else {
		layout = NCHW
	}
	req := p.Request
	req.Layout = layout
	probe, err := probePlan(req, k)
	if err != nil {
		return nil, err
	}
	m := len(p.dims)
	if len(probe.dims) != m {
		return nil, errors.New("internal error: probe plan has another label count")
	}
	r := &Recipe{InShape: append([]int(nil), p.normIn...), OutShape: append([]int(nil), p.normOut...)}
	if p.pinv != nil {
		r.Groups = make([]int, len(p.pinv))
		for kk, j := range p.pinv {
			r.Groups[j] = kk
		}
	}

	// Names: the non-block labels are n, then c and the outer positions in
	// the layout's order; block offsets come in spatial order.
	outer, block := spatialNames(k)
	var plain []string
	if layout == NCHW {
		plain = append([]string{"n", "c"}, outer...)
	} else {
		plain = append(append([]string{"n"}, outer...), "c")
	}
	pi, bi := 0, 0
	for d := 0; d < m; d++ {
		l := Label{Extent: p.dims[d], Block: p.isBlock[d]}
		if l.Block {
			if bi >= len(block) {
				return nil, errors.New("internal error: more block labels than spatial axes")
			}
			l.Name = block[bi]
			bi++
		} else {
			if pi >= len(plain) {
				return nil, errors.New("internal error: more labels than axes")
			}
			l.Name = plain[pi]
			pi++
		}
		r.Labels = append(r.Labels, l)
	}

	// Input order: the probe's strides, largest first (all distinct).
	r.View = make([]int, m)
	for i := range r.View {
		r.View[i] = i
	}
	sort.SliceStable(r.View, func(a, b int) bool { return probe.stride[r.View[a]] > probe.stride[r.View[b]] })
	r.Perm = make([]int, m)
	for pos, l := range r.View {
		r.Perm[l] = pos
	}

	// Grouping into axes: consecutive labels whose probe extents multiply
	// to the probe's axis extent.
	inGroups, err := groupLabels(r.View, probe.dims, probe.In)
	if err != nil {
		return nil, err
	}
	seq := make([]int, m)
	for i := range seq {
		seq[i] = i
	}
	outGroups, err := groupLabels(seq, probe.dims, probe.Out)
	if err != nil {
		return nil, err
	}
	// Input coefficients come from the plan's strides: a label of input
	// axis a moves stride/strideOf(a) along that axis.
	inStride := denseStrides(p.normIn, false)
	for a, g := range inGroups {
		var terms []Term
		for _, l := range g {
			terms = append(terms, Term{Label: l, Coef: p.stride[l] / inStride[a]})
		}
		r.In = append(r.In, terms)
	}
	// The output is C order by construction: mixed radix over the group.
	for _, g := range outGroups {
		terms := make([]Term, len(g))
		coef := 1
		for i := len(g) - 1; i >= 0; i-- {
			terms[i] = Term{Label: g[i], Coef: coef}
			coef *= p.dims[g[i]]
		}
		r.Out = append(r.Out, terms)
	}
	if p.Layout != NCHW && p.Layout != NHWC {
		r.drop(0) // n
		if p.Layout == HW {
			for l, lab := range r.Labels {
				if lab.Name == "c" {
					r.drop(l)
					break
				}
			}
		}
		r.InShape, r.OutShape = append([]int(nil), p.In...), append([]int(nil), p.Out...)
	}
	return r, nil
}

// drop removes label l, of extent 1, from the recipe: from the view, the
// transpose and every axis, and the axes it alone made.
func (r *Recipe) drop(l int) {
	r.Labels = append(r.Labels[:l:l], r.Labels[l+1:]...)
	fix := func(v int) int {
		if v > l {
			return v - 1
		}
		return v
	}
	var view []int
	for _, v := range r.View {
		if v != l {
			view = append(view, fix(v))
		}
	}
	r.View = view
	r.Perm = make([]int, len(view))
	for pos, v := range view {
		r.Perm[v] = pos
	}
	groups := func(gs [][]Term) [][]Term {
		var out [][]Term
		for _, g := range gs {
			var ng []Term
			for _, t := range g {
				if t.Label != l {
					ng = append(ng, Term{Label: fix(t.Label), Coef: t.Coef})
				}
			}
			if len(ng) > 0 {
				out = append(out, ng)
			}
		}
		return out
	}
	r.In, r.Out = groups(r.In), groups(r.Out)
}

// probePlan plans req with every block edge 2 and every label of extent 2.
func probePlan(req Request, k int) (*Plan, error) {
	req.BlockOrder = BlockOrder{} // the labels do not depend on it
	req.Block = make(Block, k)
	for i := range req.Block {
		req.Block[i] = 2
	}
	in := make([]int, k+2)
	for i := range in {
		in[i] = 2
	}
	ch, sp := 1, 2
	if req.Layout.channelsLast() {
		ch, sp = k+1, 1
	}
	if req.Op == SpaceToDepth {
		for i := 0; i < k; i++ {
			in[sp+i] = 4
		}
	} else {
		in[ch] = 2 << k
	}
	return NewPlan(req, in, 1, false)
}

func groupLabels(order, extent, shape []int) ([][]int, error) {
	var groups [][]int
	i := 0
	for _, want := range shape {
		var g []int
		prod := 1
		for prod < want && i < len(order) {
			g = append(g, order[i])
			prod *= extent[order[i]]
			i++
		}
		if prod != want {
			return nil, errors.New("internal error: labels do not group into axes")
		}
		groups = append(groups, g)
	}
	if i != len(order) {
		return nil, errors.New("internal error: labels left over after grouping")
	}
	return groups, nil
}
