package ops

import (
	"bytes"
	"fmt"
	"math/rand"
	"strings"
	"testing"
)

// applyRecipe runs a recipe the way numpy would: the input, C order,
// viewed with the extents of View, transposed by Perm, read out C order.
func applyRecipe(r *Recipe, elem int, src []byte) []byte {
	view := r.ViewShape()
	vStride := denseStrides(view, false)
	m := len(r.Labels)
	total := 1
	for _, l := range r.Labels {
		total *= l.Extent
	}
	dst := make([]byte, total*elem)
	idx := make([]int, m) // output-order label values
	for flat := 0; flat < total; flat++ {
		rem := flat
		for i := m - 1; i >= 0; i-- {
			idx[i] = rem % r.Labels[i].Extent
			rem /= r.Labels[i].Extent
		}
		off := 0
		for i := 0; i < m; i++ {
			off += idx[i] * vStride[r.Perm[i]]
		}
		copy(dst[flat*elem:], src[off*elem:(off+1)*elem])
	}
	return dst
}

// applyFormula moves every element by the printed index formula:
// out[Σ Out terms…] = in[Σ In terms…].
func applyFormula(r *Recipe, elem int, src []byte) []byte {
	m := len(r.Labels)
	total := 1
	for _, l := range r.Labels {
		total *= l.Extent
	}
	dst := make([]byte, total*elem)
	inSt, outSt := denseStrides(r.InShape, false), denseStrides(r.OutShape, false)
	idx := make([]int, m)
	for flat := 0; flat < total; flat++ {
		rem := flat
		for i := m - 1; i >= 0; i-- {
			idx[i] = rem % r.Labels[i].Extent
			rem /= r.Labels[i].Extent
		}
		at := func(groups [][]Term, st []int) int {
			off := 0
			for a, g := range groups {
				v := 0
				for _, t := range g {
					v += t.Coef * idx[t.Label]
				}
				off += v * st[a]
			}
			return off
		}
		o, in := at(r.Out, outSt), at(r.In, inSt)
		copy(dst[o*elem:], src[in*elem:(in+1)*elem])
	}
	return dst
}

// The recipe and the index formula, each applied naively, give the
// engine's bytes (and the reference's) for random requests.
func TestRecipeMatchesEngine(t *testing.T) {
	rng := rand.New(rand.NewSource(12))
	for i := 0; i < 1500; i++ {
		c := randomCase(rng)
		c.req.Block = Block(c.blocks)
		c.req.BlockOrder = BlockOrder{} // a recipe is the row-major operation
		p, err := NewPlan(c.req, c.in, c.elem, false)
		if err != nil {
			t.Fatal(err)
		}
		r, err := p.Recipe()
		if err != nil {
			t.Fatalf("%v: %v", c, err)
		}
		src := randomBytes(rng, p.Bytes())
		_, want := reference(c.req, c.blocks, c.in, c.elem, false, src)
		if got := applyRecipe(r, c.elem, src); !bytes.Equal(got, want) {
			t.Fatalf("%v: recipe %v perm %v differs from the reference", c, r.ViewShape(), r.Perm)
		}
		if got := applyFormula(r, c.elem, src); !bytes.Equal(got, want) {
			t.Fatalf("%v: formula differs from the reference", c)
		}
		if len(r.In) != len(p.In) || len(r.Out) != len(p.Out) {
			t.Fatalf("%v: %d input and %d output groups", c, len(r.In), len(r.Out))
		}
	}
}

// Names say what the label is: c has the space tensor's channel count,
// each block label the block edge of its axis, n the batch.
func TestRecipeNames(t *testing.T) {
	rng := rand.New(rand.NewSource(13))
	for i := 0; i < 500; i++ {
		c := randomCase(rng)
		for c.req.Layout != NCHW && c.req.Layout != NHWC { // with n and c
			c = randomCase(rng)
		}
		c.req.Block = Block(c.blocks)
		c.req.BlockOrder = BlockOrder{} // a recipe is the row-major operation
		p, err := NewPlan(c.req, c.in, c.elem, false)
		if err != nil {
			t.Fatal(err)
		}
		r, err := p.Recipe()
		if err != nil {
			t.Fatal(err)
		}
		space := p.In
		if c.req.Op == DepthToSpace {
			space = p.Out
		}
		k := len(c.blocks)
		ch, sp := 1, 2
		if c.req.Layout == NHWC {
			ch, sp = k+1, 1
		}
		outer, block := spatialNames(k)
		ext := map[string]int{"n": space[0], "c": space[ch]}
		for j := 0; j < k; j++ {
			ext[outer[j]] = space[sp+j] / c.blocks[j]
			ext[block[j]] = c.blocks[j]
		}
		if len(r.Labels) != len(ext) {
			t.Fatalf("%v: %d labels, want %d", c, len(r.Labels), len(ext))
		}
		for _, l := range r.Labels {
			if want, ok := ext[l.Name]; !ok || want != l.Extent {
				t.Fatalf("%v: label %s extent %d, want %d", c, l.Name, l.Extent, want)
			}
		}
	}
}

func TestRecipeSeedExample(t *testing.T) {
	// ONNX DepthToSpace CRD [1,8,2,3] -> [1,2,4,6].
	p, err := NewPlan(Request{Op: DepthToSpace, Order: CRD, Block: Block{2}}, []int{1, 8, 2, 3}, 4, false)
	if err != nil {
		t.Fatal(err)
	}
	r, err := p.Recipe()
	if err != nil {
		t.Fatal(err)
	}
	names := func(ls []int) string {
		var s []string
		for _, l := range ls {
			s = append(s, r.Labels[l].Name)
		}
		return strings.Join(s, " ")
	}
	if got := names(r.View); got != "n c bh bw h w" {
		t.Errorf("view labels %q", got)
	}
	if got := fmt.Sprint(r.ViewShape(), r.Perm); got != "[1 2 2 2 2 3] [0 1 4 2 5 3]" {
		t.Errorf("view and perm %s", got)
	}
	// Input channel = 4·c + 2·bh + bw.
	if got := fmt.Sprint(r.In[1]); got != "[{1 4} {3 2} {5 1}]" {
		t.Errorf("input channel terms %s", got)
	}
}

func TestRecipeRefusesOtherPlans(t *testing.T) {
	p, _ := NewCopy([]int{2, 3}, 1, false)
	if _, err := p.Recipe(); err == nil {
		t.Fatal("a copy plan has no recipe")
	}
}
