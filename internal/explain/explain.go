// Package explain says, for one space-to-depth or depth-to-space request
// and an input shape, what the operation does: the output shape, the index
// formula with the request's numbers, the reshape → transpose → reshape
// recipe in numpy and einops spelling, and the equivalent call (or the lack
// of one) in ONNX, DirectML, TensorFlow, PyTorch and OpenVINO.
//
// Everything numeric comes from the ops.Plan the operators themselves run
// (ops.NewPlan, Plan.Recipe): explain has no formula of its own, so what it
// prints is what `depthspace s2d`/`d2s` do.
package explain

import (
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/depthspace/depthspace/internal/ops"
)

// Explanation is what `depthspace explain` prints; with --json, exactly
// this struct marshalled.
type Explanation struct {
	Op     string `json:"op"`     // space-to-depth or depth-to-space
	Order  string `json:"order"`  // dcr or crd
	Layout string `json:"layout"` // nchw, nhwc, chw, hwc or hw
	Block  []int  `json:"block"`  // one edge per spatial axis
	// BlockOrder names the block order; Groups gives, for a block order
	// other than row-major, the block offset (row-major number) each
	// channel group j holds. The formula and the recipe are then those of
	// row-major, and Numpy spells the whole operation.
	BlockOrder string `json:"block_order"`
	Groups     []int  `json:"groups,omitempty"`
	// Slicing is the same operation as numpy slicing, one slice of the
	// space tensor per channel group (SID's pack_raw, YOLOv5's Focus).
	Slicing  string `json:"slicing"`
	InShape  []int  `json:"input_shape"`
	OutShape []int  `json:"output_shape"`
	// Formula is the index relation with these numbers, e.g.
	// "out[n, c, 2*h + bh, 2*w + bw] = in[n, 4*c + 2*bh + bw, h, w]";
	// Labels give the range of every index in it (0 <= index < extent).
	Formula    string      `json:"formula"`
	Labels     []ops.Label `json:"labels"`
	Recipe     Recipe      `json:"recipe"`
	Frameworks []Framework `json:"frameworks"`
}

// Recipe is the operation as reshape → transpose → reshape.
type Recipe struct {
	ViewShape  []int    `json:"view_shape"`  // the first reshape
	ViewLabels []string `json:"view_labels"` // what each axis of the view is
	Perm       []int    `json:"perm"`        // the transpose
	OutShape   []int    `json:"output_shape"`
	// Numpy is an expression in x (a numpy array of the input shape);
	// Einops the same as an einops.rearrange call. With a block order other
	// than row-major, Numpy also permutes the channel groups and Einops is
	// the row-major part only.
	Numpy  string `json:"numpy"`
	Einops string `json:"einops"`
}

// Framework is one framework's way to do the same operation.
type Framework struct {
	Name string `json:"name"` // ONNX, DirectML, TensorFlow, PyTorch, OpenVINO
	// SingleOp says the framework has one operator for exactly this; Call
	// is then that operator, else the reshape/transpose spelled for it.
	SingleOp bool   `json:"single_op"`
	Call     string `json:"call"`
	Note     string `json:"note,omitempty"`
}

// New plans req on an input of the given shape and explains it. A request
// the operators would refuse fails with their error, word for word.
func New(req ops.Request, shape []int) (*Explanation, error) {
	// Explain describes an operation, not data: the element size does not
	// change any index, so plan with 1-byte elements.
	p, err := ops.NewPlan(req, shape, 1, false)
	if err != nil {
		return nil, err
	}
	r, err := p.Recipe()
	if err != nil {
		return nil, err
	}
	e := &Explanation{
		Op: p.Op.String(), Order: p.Order.String(), Layout: p.Layout.String(),
		Block: p.Blocks, InShape: p.In, OutShape: p.Out, Labels: r.Labels,
		BlockOrder: p.BlockOrder.String(), Groups: p.Groups(),
	}
	e.Formula = "out[" + indexList(r, r.Out) + "] = in[" + indexList(r, r.In) + "]"
	view := r.ViewShape()
	e.Recipe = Recipe{ViewShape: view, Perm: r.Perm, OutShape: r.OutShape}
	for _, l := range r.View {
		e.Recipe.ViewLabels = append(e.Recipe.ViewLabels, r.Labels[l].Name)
	}
	e.Recipe.Numpy = fmt.Sprintf("x.reshape(%s).transpose(%s).reshape(%s)", ints(view), ints(r.Perm), ints(r.OutShape))
	if e.Groups != nil {
		e.Recipe.Numpy = groupPermuted(p, e.Recipe.Numpy, e.Groups)
	}
	e.Recipe.Einops = einops(r)
	e.Slicing = slicing(p, e.Groups)
	e.Frameworks = frameworks(p, e)
	return e, nil
}

// offsetsOf unravels block offset kk (row-major) into one offset per axis.
func offsetsOf(kk int, blocks []int) []int {
	k := make([]int, len(blocks))
	for i := len(blocks) - 1; i >= 0; i-- {
		k[i] = kk % blocks[i]
		kk /= blocks[i]
	}
	return k
}

// depthAxes is where, in the user's depth-side shape, the channel axis is,
// and that shape with the channel axis split into (groups, C) for DCR or
// (C, groups) for CRD; g is then the position of the groups axis.
func depthAxes(p *ops.Plan) (split []int, g int) {
	depth := p.Out
	if p.Op == ops.DepthToSpace {
		depth = p.In
	}
	ch := 0 // chw
	switch p.Layout {
	case ops.NCHW:
		ch = 1
	case ops.NHWC, ops.HWC, ops.HW:
		ch = len(depth) - 1
	}
	B := 1
	for _, b := range p.Blocks {
		B *= b
	}
	C := depth[ch] / B
	split = append(split, depth[:ch]...)
	g = ch
	if p.Order == ops.DCR {
		split = append(split, B, C)
	} else {
		split = append(split, C, B)
		g = ch + 1
	}
	split = append(split, depth[ch+1:]...)
	return split, g
}

// groupPermuted spells a block order around the row-major recipe: the
// output's channel groups taken in the order p (space-to-depth), or the
// input's put back in row-major order first (depth-to-space).
func groupPermuted(p *ops.Plan, recipe string, groups []int) string {
	split, g := depthAxes(p)
	if p.Op == ops.SpaceToDepth {
		return fmt.Sprintf("np.take((%s).reshape(%s), [%s], axis=%d).reshape(%s)", recipe, ints(split), ints(groups), g, ints(p.Out))
	}
	inv := make([]int, len(groups))
	for j, kk := range groups {
		inv[kk] = j
	}
	xs := fmt.Sprintf("np.take(x.reshape(%s), [%s], axis=%d).reshape(%s)", ints(split), ints(inv), g, ints(p.In))
	return strings.Replace(recipe, "x.", "("+xs+").", 1)
}

// slicing spells space-to-depth as numpy slicing, one slice of the space
// tensor per channel group, joined along the channel axis (SID's pack_raw,
// YOLOv5's Focus); depth-to-space is its inverse, assigned slice by slice.
func slicing(p *ops.Plan, groups []int) string {
	B := 1
	for _, b := range p.Blocks {
		B *= b
	}
	if B > 64 {
		return "" // a slice per group is no longer readable
	}
	var parts []string
	for j := 0; j < B; j++ {
		kk := j
		if groups != nil {
			kk = groups[j]
		}
		k := offsetsOf(kk, p.Blocks)
		sl := make([]string, len(k))
		for i := range k {
			sl[i] = fmt.Sprintf("%d::%d", k[i], p.Blocks[i])
			if k[i] == 0 {
				sl[i] = fmt.Sprintf("::%d", p.Blocks[i])
			}
		}
		idx := strings.Join(sl, ", ")
		switch p.Layout {
		case ops.NCHW, ops.CHW:
			idx = "..., " + idx
		case ops.NHWC:
			idx = ":, " + idx + ", :"
		case ops.HWC:
			idx = idx + ", :"
		}
		parts = append(parts, "x["+idx+"]")
	}
	// The space tensor's channel axis, from the end for the layouts that
	// keep it last.
	join := "np.concatenate"
	axis := map[ops.Layout]string{ops.NCHW: "1", ops.CHW: "0", ops.NHWC: "-1", ops.HWC: "-1", ops.HW: "-1"}[p.Layout]
	if p.Layout == ops.HW {
		join = "np.stack"
	}
	s := fmt.Sprintf("%s([%s], axis=%s)", join, strings.Join(parts, ", "), axis)
	if p.Order == ops.CRD && p.Layout != ops.HW {
		// CRD: the groups of one channel together, so stack after it.
		merged := p.Out
		if p.Op == ops.DepthToSpace {
			merged = p.In
		}
		stackAxis := map[ops.Layout]string{ops.NCHW: "2", ops.CHW: "1", ops.NHWC: "-1", ops.HWC: "-1"}[p.Layout]
		s = fmt.Sprintf("np.stack([%s], axis=%s).reshape(%s)", strings.Join(parts, ", "), stackAxis, ints(merged))
	}
	if p.Op == ops.DepthToSpace {
		// The output y is what this slicing turns back into the input.
		return "x == " + strings.ReplaceAll(s, "x[", "y[")
	}
	return "y = " + s
}

// indexList prints one index expression per axis: "n, 4*c + 2*bh + bw, h, w".
func indexList(r *ops.Recipe, groups [][]ops.Term) string {
	axes := make([]string, len(groups))
	for a, g := range groups {
		terms := make([]string, len(g))
		for i, t := range g {
			terms[i] = r.Labels[t.Label].Name
			if t.Coef != 1 {
				terms[i] = strconv.Itoa(t.Coef) + "*" + terms[i]
			}
		}
		axes[a] = strings.Join(terms, " + ")
	}
	return strings.Join(axes, ", ")
}

// einops spells the recipe as rearrange(x, 'in -> out', sizes): every
// block edge is named, which determines every other size.
func einops(r *ops.Recipe) string {
	side := func(groups [][]ops.Term) string {
		parts := make([]string, len(groups))
		for a, g := range groups {
			names := make([]string, len(g))
			for i, t := range g {
				names[i] = r.Labels[t.Label].Name
			}
			parts[a] = strings.Join(names, " ")
			if len(g) > 1 {
				parts[a] = "(" + parts[a] + ")"
			}
		}
		return strings.Join(parts, " ")
	}
	var sizes []string
	for _, l := range r.Labels {
		if l.Block {
			sizes = append(sizes, l.Name+"="+strconv.Itoa(l.Extent))
		}
	}
	s := "rearrange(x, '" + side(r.In) + " -> " + side(r.Out) + "'"
	if len(sizes) > 0 {
		s += ", " + strings.Join(sizes, ", ")
	}
	return s + ")"
}

func ints(v []int) string {
	s := make([]string, len(v))
	for i, x := range v {
		s[i] = strconv.Itoa(x)
	}
	return strings.Join(s, ", ")
}

func list(v []int) string { return "[" + ints(v) + "]" }

// frameworks applies each framework's documented limits to the request.
func frameworks(p *ops.Plan, e *Explanation) []Framework {
	k := len(p.Blocks)
	b := p.Blocks[0]
	square := true
	for _, v := range p.Blocks {
		square = square && v == b
	}
	s2d := p.Op == ops.SpaceToDepth
	dcr := p.Order == ops.DCR
	// The layouts without a batch axis are described as NCHW / NHWC with
	// one added (frameworksNotes says so).
	nchw := p.Layout == ops.NCHW || p.Layout == ops.CHW
	rank4 := k == 2
	rec := e.Recipe
	generic := fmt.Sprintf("Reshape(shape=%s) -> Transpose(perm=%s) -> Reshape(shape=%s)", list(rec.ViewShape), list(rec.Perm), list(rec.OutShape))
	// why lists the limits of the framework's operator that the request
	// runs into: pairs of (flag, phrase), a phrase counting when its flag
	// is set.
	why := func(op string, reasons ...string) string {
		var out []string
		for i := 0; i+1 < len(reasons); i += 2 {
			if reasons[i] != "" {
				out = append(out, reasons[i+1])
			}
		}
		return "no single op: " + op + " " + strings.Join(out, ", ")
	}
	flag := func(bad bool) string {
		if bad {
			return "x"
		}
		return ""
	}
	var fw []Framework

	// ONNX: SpaceToDepth is DCR only; DepthToSpace has mode DCR/CRD; both
	// take a 4-D NCHW tensor and one blocksize.
	onnx := Framework{Name: "ONNX"}
	onnxOp := "DepthToSpace"
	if s2d {
		onnxOp = "SpaceToDepth"
	}
	switch {
	case rank4 && square && nchw && (dcr || !s2d):
		onnx.SingleOp = true
		if s2d {
			onnx.Call = fmt.Sprintf("SpaceToDepth(blocksize=%d)", b)
		} else {
			onnx.Call = fmt.Sprintf("DepthToSpace(blocksize=%d, mode=%q)", b, strings.ToUpper(p.Order.String()))
		}
	default:
		onnx.Call = generic
		onnx.Note = why(onnxOp, flag(!rank4), "takes 4-D input only",
			flag(!square), "has one blocksize (square blocks)",
			flag(!nchw), "is NCHW only (or Transpose to NCHW around it)",
			flag(s2d && !dcr), "has no mode: it is DCR only")
	}
	fw = append(fw, onnx)

	// DirectML: DML_OPERATOR_SPACE_TO_DEPTH1 / DEPTH_TO_SPACE1 with Order,
	// 4-D {N, C, H, W} sizes; NHWC memory is described by strides.
	dml := Framework{Name: "DirectML"}
	dmlOp := "DML_OPERATOR_DEPTH_TO_SPACE1"
	if s2d {
		dmlOp = "DML_OPERATOR_SPACE_TO_DEPTH1"
	}
	dmlOrder := "DML_DEPTH_SPACE_ORDER_DEPTH_COLUMN_ROW"
	if !dcr {
		dmlOrder = "DML_DEPTH_SPACE_ORDER_COLUMN_ROW_DEPTH"
	}
	if rank4 && square {
		dml.SingleOp = true
		dml.Call = fmt.Sprintf("%s { BlockSize = %d, Order = %s }", dmlOp, b, dmlOrder)
		if !nchw {
			dml.Note = fmt.Sprintf("DirectML sizes are {N, C, H, W}: describe the NHWC input with Sizes %s, Strides %s and the output with Sizes %s, Strides %s",
				curly(nchwSizes(p.NormIn())), curly(nhwcStrides(p.NormIn())), curly(nchwSizes(p.NormOut())), curly(nhwcStrides(p.NormOut())))
		} else if dcr {
			dml.Note = "DCR is also the order of the older " + strings.TrimSuffix(dmlOp, "1") + " (feature level 1.0)"
		}
	} else {
		dml.Call = generic
		dml.Note = why(dmlOp, flag(!rank4), "takes 4-D tensors only", flag(!square), "has one BlockSize (square blocks)")
	}
	fw = append(fw, dml)

	// TensorFlow: tf.nn.space_to_depth / depth_to_space, DCR, 4-D, one
	// block_size; NHWC, and NCHW on GPU only.
	tf := Framework{Name: "TensorFlow"}
	tfOp := "tf.nn.depth_to_space"
	if s2d {
		tfOp = "tf.nn.space_to_depth"
	}
	switch {
	case rank4 && square && dcr && !nchw:
		tf.SingleOp = true
		tf.Call = fmt.Sprintf("%s(x, block_size=%d)", tfOp, b)
	case rank4 && square && dcr && nchw:
		tf.SingleOp = true
		tf.Call = fmt.Sprintf("%s(x, block_size=%d, data_format='NCHW')", tfOp, b)
		tf.Note = "data_format='NCHW' exists only on GPU; on CPU transpose to NHWC (tf.transpose(x, [0, 2, 3, 1])), call it with the default NHWC, and transpose back ([0, 3, 1, 2])"
	default:
		tf.Call = fmt.Sprintf("tf.reshape(tf.transpose(tf.reshape(x, %s), %s), %s)", list(rec.ViewShape), list(rec.Perm), list(rec.OutShape))
		tf.Note = why(tfOp, flag(!rank4), "takes 4-D input only", flag(!square), "has one block_size (square blocks)",
			flag(!dcr), "is DCR only")
	}
	fw = append(fw, tf)

	// PyTorch: pixel_unshuffle / pixel_shuffle, CRD, (*, C, H, W), one
	// factor.
	pt := Framework{Name: "PyTorch"}
	ptOp := "torch.nn.functional.pixel_shuffle"
	if s2d {
		ptOp = "torch.nn.functional.pixel_unshuffle"
	}
	if rank4 && square && nchw && !dcr {
		pt.SingleOp = true
		pt.Call = fmt.Sprintf("%s(x, %d)", ptOp, b)
	} else {
		pt.Call = fmt.Sprintf("x.reshape(%s).permute(%s).reshape(%s)", ints(rec.ViewShape), ints(rec.Perm), ints(rec.OutShape))
		pt.Note = why(ptOp, flag(!rank4), "takes (*, C, H, W): 2 spatial axes only", flag(!square), "has one factor (square blocks)",
			flag(!nchw), "is channels-first only", flag(dcr), "is CRD only")
	}
	fw = append(fw, pt)

	// OpenVINO: SpaceToDepth / DepthToSpace, mode blocks_first (DCR) or
	// depth_first (CRD), [N, C, D1…DK] for any K, one block_size.
	ov := Framework{Name: "OpenVINO"}
	ovOp := "DepthToSpace"
	if s2d {
		ovOp = "SpaceToDepth"
	}
	mode := "blocks_first"
	if !dcr {
		mode = "depth_first"
	}
	if square && nchw {
		ov.SingleOp = true
		ov.Call = fmt.Sprintf("%s(block_size=%d, mode=%q)", ovOp, b, mode)
	} else {
		ov.Call = generic
		ov.Note = why(ovOp, flag(!square), "has one block_size (square blocks)", flag(!nchw), "is channels-first only ([N, C, D1, ...])")
	}
	fw = append(fw, ov)
	return frameworkNotes(p, e, fw)
}

// frameworkNotes adds what every framework's call needs around it for the
// request: a batch (and channel) axis for the layouts without one, and the
// permutation of channel groups for a block order; and PyTorch's silent
// treatment of a volume as a batch of images.
func frameworkNotes(p *ops.Plan, e *Explanation, fw []Framework) []Framework {
	add := func(f *Framework, note string) {
		if f.Note == "" {
			f.Note = note
		} else {
			f.Note += "; " + note
		}
	}
	for i := range fw {
		f := &fw[i]
		switch p.Layout {
		case ops.CHW, ops.HWC:
			add(f, "on x[None]: the call takes a batch axis; drop it after")
		case ops.HW:
			if p.Op == ops.SpaceToDepth {
				add(f, "on x[None, ..., None]: the call takes batch and channel axes; drop the batch axis after")
			} else {
				add(f, "on x[None]: the call takes a batch axis; the result's batch and channel axes (of 1) dropped after")
			}
		}
		if e.Groups != nil {
			f.SingleOp = false
			if p.Op == ops.SpaceToDepth {
				add(f, fmt.Sprintf("the operator has no block order: take its output's channel groups in the order %s after it (numpy above)", e.BlockOrder))
			} else {
				add(f, fmt.Sprintf("the operator has no block order: put the input's channel groups (block order %s) in row-major order before it (numpy above)", e.BlockOrder))
			}
		}
		if f.Name == "PyTorch" && len(p.Blocks) == 3 {
			add(f, "pixel_shuffle / pixel_unshuffle on this 5-D tensor would treat the volume as a batch of 2-D images (the leading axes are batch axes) and shuffle height and width only: a silent wrong result")
		}
	}
	return fw
}

// nchwSizes and nhwcStrides give the DirectML description of an NHWC
// tensor [N, H, W, C]: logical sizes {N, C, H, W} and the strides that
// walk its memory.
func nchwSizes(s []int) []int { return []int{s[0], s[3], s[1], s[2]} }

func nhwcStrides(s []int) []int {
	return []int{s[1] * s[2] * s[3], 1, s[2] * s[3], s[3]}
}

func curly(v []int) string { return "{" + ints(v) + "}" }

// WriteText prints e for a person.
func (e *Explanation) WriteText(w io.Writer) error {
	var b strings.Builder
	fmt.Fprintf(&b, "%s, block %s, order %s, layout %s, block order %s\n", e.Op, ops.Block(e.Block), e.Order, e.Layout, e.BlockOrder)
	fmt.Fprintf(&b, "  input shape   %s\n", list(e.InShape))
	fmt.Fprintf(&b, "  output shape  %s\n\n", list(e.OutShape))
	b.WriteString("Index formula:\n")
	fmt.Fprintf(&b, "  %s\n", e.Formula)
	ranges := make([]string, len(e.Labels))
	for i, l := range e.Labels {
		ranges[i] = fmt.Sprintf("0 <= %s < %d", l.Name, l.Extent)
	}
	fmt.Fprintf(&b, "  for %s\n", strings.Join(ranges, ", "))
	if e.Groups != nil {
		var gs []string
		for j, kk := range e.Groups {
			gs = append(gs, fmt.Sprintf("%d=(%s)", j, ints(offsetsOf(kk, e.Block))))
		}
		fmt.Fprintf(&b, "  with block order %s: channel group j holds block offset p[j], not j:\n", e.BlockOrder)
		fmt.Fprintf(&b, "  %s (the formula above numbers the offsets row-major)\n", strings.Join(gs, " "))
	}
	b.WriteString("\n")
	if e.Slicing != "" {
		b.WriteString("Slicing:\n")
		fmt.Fprintf(&b, "  numpy  %s\n\n", e.Slicing)
	}
	b.WriteString("Reshape -> transpose -> reshape:\n")
	fmt.Fprintf(&b, "  view   %s  (%s)\n", list(e.Recipe.ViewShape), strings.Join(e.Recipe.ViewLabels, ", "))
	fmt.Fprintf(&b, "  numpy  y = %s\n", e.Recipe.Numpy)
	fmt.Fprintf(&b, "  einops y = %s\n\n", e.Recipe.Einops)
	b.WriteString("Frameworks:\n")
	for _, f := range e.Frameworks {
		call := f.Call
		if !f.SingleOp {
			call = "no single op; use " + call
		}
		fmt.Fprintf(&b, "  %-11s %s\n", f.Name, call)
		if f.Note != "" {
			note := strings.TrimPrefix(f.Note, "no single op: ")
			fmt.Fprintf(&b, "  %-11s (%s)\n", "", note)
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// WriteJSON prints e as indented JSON.
func (e *Explanation) WriteJSON(w io.Writer) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(e)
}
