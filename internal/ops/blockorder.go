package ops

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// BlockOrder says which block offset each channel group holds (SPEC,
// "Block order"): group j holds offset p[j], where offsets are numbered
// row-major over the block. The zero value is the default, row-major.
type BlockOrder struct {
	Name string // row-major, col-major, rggb, bggr, grbg, gbrg, or "" for Perm
	Perm []int  // an explicit permutation when Name is ""
}

// bayer gives each Bayer pattern's order: the groups come out R, G, G, B,
// the greens in raster order of the 2×2 tile. (A switch, not a map: a
// package-level map is built when the program starts, used or not.)
func bayer(name string) ([]int, bool) {
	switch name {
	case "rggb":
		return []int{0, 1, 2, 3}, true
	case "bggr":
		return []int{3, 1, 2, 0}, true
	case "grbg":
		return []int{1, 0, 3, 2}, true
	case "gbrg":
		return []int{2, 0, 3, 1}, true
	}
	return nil, false
}

// ParseBlockOrder reads row-major, col-major, a Bayer pattern or a list
// p0,p1,… of offsets. Whether a list is a permutation depends on the
// block, and is checked when the order meets one (Perm).
func ParseBlockOrder(s string) (BlockOrder, error) {
	name := strings.ToLower(strings.TrimSpace(s))
	switch name {
	case "", "row-major", "row":
		return BlockOrder{}, nil
	case "col-major", "column-major", "col":
		return BlockOrder{Name: "col-major"}, nil
	}
	if _, ok := bayer(name); ok {
		return BlockOrder{Name: name}, nil
	}
	if name == "cfa" {
		// The pattern comes from the input (a DNG's CFAPattern): the
		// pipeline replaces it by the preset once the file is read.
		return BlockOrder{Name: "cfa"}, nil
	}
	parts := strings.Split(name, ",")
	if len(parts) < 2 {
		return BlockOrder{}, fmt.Errorf("unknown block order %q (want row-major, col-major, rggb, bggr, grbg, gbrg or a permutation like 0,1,3,2)", s)
	}
	perm := make([]int, len(parts))
	for i, p := range parts {
		v, err := strconv.Atoi(strings.TrimSpace(p))
		if err != nil || v < 0 {
			return BlockOrder{}, fmt.Errorf("block order %q: %q is not a block offset (a non-negative integer)", s, strings.TrimSpace(p))
		}
		perm[i] = v
	}
	return BlockOrder{Perm: perm}, nil
}

func (o BlockOrder) String() string {
	if o.Name == "" && o.Perm == nil {
		return "row-major"
	}
	if o.Name != "" {
		return o.Name
	}
	s := make([]string, len(o.Perm))
	for i, v := range o.Perm {
		s[i] = strconv.Itoa(v)
	}
	return strings.Join(s, ",")
}

// IsDefault reports whether the order is row-major.
func (o BlockOrder) IsDefault() bool { return o.Name == "" && o.Perm == nil }

// maxOrderOffsets bounds the table of a block order other than row-major.
const maxOrderOffsets = 1 << 20

// Offsets is the order for a block: p[j], the block offset (row-major) that
// group j holds, for every group; nil for row-major.
func (o BlockOrder) Offsets(blocks []int) ([]int, error) {
	if o.IsDefault() {
		return nil, nil
	}
	B, ok := checkedProduct(blocks)
	if !ok || B > maxOrderOffsets {
		return nil, fmt.Errorf("block order %s: block %s has too many offsets to order (at most %d)", o, Block(blocks), maxOrderOffsets)
	}
	switch {
	case o.Name == "col-major":
		// j counts the first spatial axis fastest.
		p := make([]int, B)
		for j := range p {
			r, kk := j, 0
			ks := make([]int, len(blocks))
			for i := range blocks {
				ks[i] = r % blocks[i]
				r /= blocks[i]
			}
			for i := range blocks {
				kk = kk*blocks[i] + ks[i]
			}
			p[j] = kk
		}
		return p, nil
	case o.Name == "cfa":
		return nil, ErrCFAUnresolved
	case o.Name != "":
		if len(blocks) != 2 || blocks[0] != 2 || blocks[1] != 2 {
			return nil, fmt.Errorf("block order %s is a Bayer pattern: it needs a 2x2 block over two spatial axes, not block %s", o.Name, Block(blocks))
		}
		p, _ := bayer(o.Name)
		return p, nil
	}
	if len(o.Perm) != B {
		return nil, fmt.Errorf("block order %s has %d entries but block %s has %d offsets (0…%d)", o, len(o.Perm), Block(blocks), B, B-1)
	}
	seen := make([]bool, B)
	for _, v := range o.Perm {
		if v >= B {
			return nil, fmt.Errorf("block order %s: offset %d is not below %d (block %s)", o, v, B, Block(blocks))
		}
		if seen[v] {
			return nil, fmt.Errorf("block order %s is not a permutation of 0…%d: %d appears twice", o, B-1, v)
		}
		seen[v] = true
	}
	return append([]int(nil), o.Perm...), nil
}

// ErrCFAUnresolved: --block-order cfa met an input with no CFA pattern to
// take (anything but a camera raw file), or a command without an input.
var ErrCFAUnresolved = errors.New("--block-order cfa takes the Bayer pattern from the input's CFA pattern (a camera raw file), and there is none here: give the pattern (rggb, bggr, grbg or gbrg)")

// IsCFA reports whether the order is cfa, to be resolved from the input.
func (o BlockOrder) IsCFA() bool { return o.Name == "cfa" }

// isIdentity reports whether p[j] = j for every j.
func isIdentity(p []int) bool {
	for j, v := range p {
		if v != j {
			return false
		}
	}
	return true
}

// parts cuts a gather of the plan (dims in output order with input and
// output strides; the block dims whole, as in Run, RunItems and every
// chunk) into parts with constant strides for the plan's block order.
//
// The block order only changes where a block offset kk lands: for
// space-to-depth, its output group is pinv[kk] instead of kk; for
// depth-to-space, its input group. Each offset kk = (prefix r, last
// offset kK) is a set of positions; for a fixed prefix the bK offsets along
// the last block axis are usually evenly spaced on both sides (always for
// a last block edge of 2, the camera and Focus orders), so they stay one
// axis of the part with a constant, possibly negative, stride, and the
// de-interleave kernels run as for the default order. Where they are not
// evenly spaced each offset is a part of its own.
func (p *Plan) parts(dims, stride, ostride []int) []part {
	whole := part{dims: dims, stride: stride, ostride: ostride}
	if p.pinv == nil {
		return []part{whole}
	}
	bd := p.groupDims // the dims that number the groups, k1…kK
	if bd == nil {
		for d, b := range p.isBlock {
			if b {
				bd = append(bd, d)
			}
		}
	}
	K := len(bd)
	last := bd[K-1]
	bK := dims[last]
	B := len(p.pinv)
	// iOff, oOff: where block offset kk is, in the input and the output.
	iOff, oOff := make([]int, B), make([]int, B)
	for kk := 0; kk < B; kk++ {
		r, in, out := kk, 0, 0
		for i := K - 1; i >= 0; i-- {
			k := r % dims[bd[i]]
			r /= dims[bd[i]]
			in += k * stride[bd[i]]
			out += k * ostride[bd[i]]
		}
		if p.groupInput {
			in = p.pinv[kk] * stride[last]
		} else {
			out = p.pinv[kk] * ostride[last]
		}
		iOff[kk], oOff[kk] = in, out
	}
	// Most orders are linear in the block offsets: col-major and the
	// Bayer patterns only reverse or swap block axes, so every block dim
	// keeps a constant (possibly negative) stride on both sides and the
	// plan stays one gather, walked exactly as the default order is.
	if lin, ok := linearParts(dims, stride, ostride, bd, iOff, oOff); ok {
		return []part{lin}
	}
	var parts []part
	add := func(first, n, istep, ostep int) {
		pt := part{dims: append([]int(nil), dims...), stride: append([]int(nil), stride...),
			ostride: append([]int(nil), ostride...), ibase: iOff[first], obase: oOff[first]}
		for _, d := range bd {
			pt.dims[d] = 1
		}
		pt.dims[last], pt.stride[last], pt.ostride[last] = n, istep, ostep
		parts = append(parts, pt)
	}
	for r := 0; r < B; r += bK {
		even := true
		for k := 2; k < bK; k++ {
			if iOff[r+k]-iOff[r+k-1] != iOff[r+1]-iOff[r] || oOff[r+k]-oOff[r+k-1] != oOff[r+1]-oOff[r] {
				even = false
			}
		}
		switch {
		case bK == 1:
			add(r, 1, 0, 0)
		case even:
			add(r, bK, iOff[r+1]-iOff[r], oOff[r+1]-oOff[r])
		default:
			for k := 0; k < bK; k++ {
				add(r+k, 1, 0, 0)
			}
		}
	}
	return parts
}

// linearParts reports whether the block offsets' positions are linear,
// off(k) = off(0) + Σ ki·si on both sides, and if so the one part that
// walks them with those strides.
func linearParts(dims, stride, ostride, bd, iOff, oOff []int) (part, bool) {
	K := len(bd)
	si, so := make([]int, K), make([]int, K)
	unit := 1
	for i := K - 1; i >= 0; i-- {
		if dims[bd[i]] > 1 {
			si[i], so[i] = iOff[unit]-iOff[0], oOff[unit]-oOff[0]
		}
		unit *= dims[bd[i]]
	}
	for kk := range iOff {
		r, in, out := kk, iOff[0], oOff[0]
		for i := K - 1; i >= 0; i-- {
			k := r % dims[bd[i]]
			r /= dims[bd[i]]
			in += k * si[i]
			out += k * so[i]
		}
		if in != iOff[kk] || out != oOff[kk] {
			return part{}, false
		}
	}
	pt := part{dims: dims, stride: append([]int(nil), stride...), ostride: append([]int(nil), ostride...),
		ibase: iOff[0], obase: oOff[0]}
	for i, d := range bd {
		pt.stride[d], pt.ostride[d] = si[i], so[i]
	}
	return pt, true
}
