package explain

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math/rand"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/depthspace/depthspace/internal/ops"
)

func randomRequest(rng *rand.Rand) (ops.Request, []int) {
	req := ops.Request{Op: ops.Op(rng.Intn(2)), Order: ops.Order(rng.Intn(2)), Layout: ops.Layout(rng.Intn(2))}
	k := 1 + rng.Intn(3)
	blocks := make(ops.Block, k)
	for i := range blocks {
		blocks[i] = 1 + rng.Intn(3)
	}
	req.Block = blocks
	B := 1
	for _, b := range blocks {
		B *= b
	}
	shape := make([]int, k+2)
	ch, sp := 1, 2
	if req.Layout == ops.NHWC {
		ch, sp = k+1, 1
	}
	shape[0] = 1 + rng.Intn(2)
	shape[ch] = 1 + rng.Intn(3)
	for i := 0; i < k; i++ {
		shape[sp+i] = 1 + rng.Intn(3)
		if req.Op == ops.SpaceToDepth {
			shape[sp+i] *= blocks[i]
		}
	}
	if req.Op == ops.DepthToSpace {
		shape[ch] *= B
	}
	return req, shape
}

var einopsCall = regexp.MustCompile(`^rearrange\(x, '([^']*) -> ([^']*)'((?:, \w+=\d+)*)\)$`)

// groups parses one side of an einops pattern: "n (c bh bw) h w".
func groups(side string) [][]string {
	var out [][]string
	for _, tok := range regexp.MustCompile(`\([^)]*\)|\S+`).FindAllString(side, -1) {
		out = append(out, strings.Fields(strings.Trim(tok, "()")))
	}
	return out
}

// The einops call is the same reshape/transpose as the numpy recipe: its
// left side lists the view's labels grouped into the input axes, its right
// side the output labels grouped into the output axes, the sizes it names
// are the block edges, and einops can infer every other size.
func TestEinopsMatchesRecipe(t *testing.T) {
	rng := rand.New(rand.NewSource(21))
	for i := 0; i < 500; i++ {
		req, shape := randomRequest(rng)
		e, err := New(req, shape)
		if err != nil {
			t.Fatalf("%+v %v: %v", req, shape, err)
		}
		m := einopsCall.FindStringSubmatch(e.Recipe.Einops)
		if m == nil {
			t.Fatalf("einops call %q does not parse", e.Recipe.Einops)
		}
		extent := map[string]int{}
		for _, l := range e.Labels {
			extent[l.Name] = l.Extent
		}
		sizes := map[string]int{}
		for _, kv := range strings.Split(strings.TrimPrefix(m[3], ", "), ", ") {
			if kv == "" {
				continue
			}
			name, v, _ := strings.Cut(kv, "=")
			n, _ := strconv.Atoi(v)
			sizes[name] = n
			if extent[name] != n {
				t.Fatalf("%s: size %s=%d but the label has extent %d", e.Recipe.Einops, name, n, extent[name])
			}
		}
		lhs, rhs := groups(m[1]), groups(m[2])
		check := func(side [][]string, shape []int, what string) []string {
			if len(side) != len(shape) {
				t.Fatalf("%s: %d %s axes for shape %v", e.Recipe.Einops, len(side), what, shape)
			}
			var flat []string
			for a, g := range side {
				p, unknown := 1, 0
				for _, name := range g {
					p *= extent[name]
					if _, ok := sizes[name]; !ok {
						unknown++
					}
				}
				if p != shape[a] {
					t.Fatalf("%s: %s axis %d groups %v of product %d, want %d", e.Recipe.Einops, what, a, g, p, shape[a])
				}
				if what == "input" && unknown > 1 {
					t.Fatalf("%s: einops cannot infer two sizes in %v", e.Recipe.Einops, g)
				}
				flat = append(flat, g...)
			}
			return flat
		}
		in := check(lhs, e.InShape, "input")
		out := check(rhs, e.OutShape, "output")
		if strings.Join(in, " ") != strings.Join(e.Recipe.ViewLabels, " ") {
			t.Fatalf("%s: input labels %v, view %v", e.Recipe.Einops, in, e.Recipe.ViewLabels)
		}
		for i, name := range out {
			if name != e.Labels[i].Name || in[e.Recipe.Perm[i]] != name {
				t.Fatalf("%s: output label %d is %s; perm %v", e.Recipe.Einops, i, name, e.Recipe.Perm)
			}
		}
	}
}

// Which framework has one operator for which request.
func TestFrameworkTable(t *testing.T) {
	type want map[string]bool // framework -> single op
	for _, c := range []struct {
		args  string
		shape []int
		want  want
		calls map[string]string
	}{
		{"s2d dcr nchw 2", []int{1, 2, 4, 6}, want{"ONNX": true, "DirectML": true, "TensorFlow": true, "PyTorch": false, "OpenVINO": true},
			map[string]string{"ONNX": "SpaceToDepth(blocksize=2)", "TensorFlow": "tf.nn.space_to_depth(x, block_size=2, data_format='NCHW')"}},
		{"s2d crd nchw 2", []int{1, 2, 4, 6}, want{"ONNX": false, "DirectML": true, "TensorFlow": false, "PyTorch": true, "OpenVINO": true},
			map[string]string{"PyTorch": "torch.nn.functional.pixel_unshuffle(x, 2)", "OpenVINO": `SpaceToDepth(block_size=2, mode="depth_first")`}},
		{"d2s crd nchw 2", []int{1, 8, 2, 3}, want{"ONNX": true, "DirectML": true, "TensorFlow": false, "PyTorch": true, "OpenVINO": true},
			map[string]string{"ONNX": `DepthToSpace(blocksize=2, mode="CRD")`, "DirectML": "DML_OPERATOR_DEPTH_TO_SPACE1 { BlockSize = 2, Order = DML_DEPTH_SPACE_ORDER_COLUMN_ROW_DEPTH }"}},
		{"d2s dcr nhwc 2", []int{1, 2, 3, 8}, want{"ONNX": false, "DirectML": true, "TensorFlow": true, "PyTorch": false, "OpenVINO": false},
			map[string]string{"TensorFlow": "tf.nn.depth_to_space(x, block_size=2)"}},
		{"s2d dcr nchw 2x3", []int{1, 1, 4, 6}, want{"ONNX": false, "DirectML": false, "TensorFlow": false, "PyTorch": false, "OpenVINO": false}, nil},
		{"s2d dcr nchw 2", []int{1, 1, 4, 4, 4}, want{"ONNX": false, "DirectML": false, "TensorFlow": false, "PyTorch": false, "OpenVINO": true}, nil},
		{"d2s crd nchw 3", []int{1, 9, 5}, want{"ONNX": false, "DirectML": false, "TensorFlow": false, "PyTorch": false, "OpenVINO": true}, nil},
	} {
		f := strings.Fields(c.args)
		req := ops.Request{Op: ops.SpaceToDepth}
		if f[0] == "d2s" {
			req.Op = ops.DepthToSpace
		}
		req.Order, _ = ops.ParseOrder(f[1])
		req.Layout, _ = ops.ParseLayout(f[2])
		req.Block, _ = ops.ParseBlock(f[3])
		e, err := New(req, c.shape)
		if err != nil {
			t.Fatalf("%s %v: %v", c.args, c.shape, err)
		}
		for _, fw := range e.Frameworks {
			if fw.SingleOp != c.want[fw.Name] {
				t.Errorf("%s %v: %s single op %v (%s; %s)", c.args, c.shape, fw.Name, fw.SingleOp, fw.Call, fw.Note)
			}
			if !fw.SingleOp && !strings.HasPrefix(fw.Note, "no single op: ") {
				t.Errorf("%s %v: %s says no single op without a reason: %q", c.args, c.shape, fw.Name, fw.Note)
			}
			if want, ok := c.calls[fw.Name]; ok && fw.Call != want {
				t.Errorf("%s %v: %s call %q, want %q", c.args, c.shape, fw.Name, fw.Call, want)
			}
		}
		if len(e.Frameworks) != 5 {
			t.Errorf("%d frameworks", len(e.Frameworks))
		}
	}
}

// The seed examples: shapes and formulas with their numbers.
func TestSeedExamples(t *testing.T) {
	for _, c := range []struct {
		req            ops.Request
		shape          []int
		out, formula   string
		numpy, einopsS string
	}{
		{ops.Request{Op: ops.SpaceToDepth, Block: ops.Block{2}}, []int{1, 2, 4, 6}, "[1 8 2 3]",
			"out[n, 4*bh + 2*bw + c, h, w] = in[n, c, 2*h + bh, 2*w + bw]",
			"x.reshape(1, 2, 2, 2, 3, 2).transpose(0, 3, 5, 1, 2, 4).reshape(1, 8, 2, 3)",
			"rearrange(x, 'n c (h bh) (w bw) -> n (bh bw c) h w', bh=2, bw=2)"},
		{ops.Request{Op: ops.DepthToSpace, Order: ops.DCR, Block: ops.Block{2}}, []int{1, 8, 2, 3}, "[1 2 4 6]",
			"out[n, c, 2*h + bh, 2*w + bw] = in[n, 4*bh + 2*bw + c, h, w]",
			"x.reshape(1, 2, 2, 2, 2, 3).transpose(0, 3, 4, 1, 5, 2).reshape(1, 2, 4, 6)",
			"rearrange(x, 'n (bh bw c) h w -> n c (h bh) (w bw)', bh=2, bw=2)"},
		{ops.Request{Op: ops.DepthToSpace, Order: ops.CRD, Block: ops.Block{2}}, []int{1, 8, 2, 3}, "[1 2 4 6]",
			"out[n, c, 2*h + bh, 2*w + bw] = in[n, 4*c + 2*bh + bw, h, w]",
			"x.reshape(1, 2, 2, 2, 2, 3).transpose(0, 1, 4, 2, 5, 3).reshape(1, 2, 4, 6)",
			"rearrange(x, 'n (c bh bw) h w -> n c (h bh) (w bw)', bh=2, bw=2)"},
	} {
		e, err := New(c.req, c.shape)
		if err != nil {
			t.Fatal(err)
		}
		if fmt.Sprint(e.OutShape) != c.out || e.Formula != c.formula || e.Recipe.Numpy != c.numpy || e.Recipe.Einops != c.einopsS {
			t.Errorf("%+v %v:\n got %v %q\n     %q\n     %q", c.req, c.shape, e.OutShape, e.Formula, e.Recipe.Numpy, e.Recipe.Einops)
		}
	}
}

// Errors are the operators' own.
func TestErrorsAreThePlans(t *testing.T) {
	req := ops.Request{Op: ops.SpaceToDepth, Block: ops.Block{2}}
	_, want := ops.NewPlan(req, []int{1, 1, 5, 4}, 1, false)
	_, got := New(req, []int{1, 1, 5, 4})
	if got == nil || want == nil || got.Error() != want.Error() {
		t.Fatalf("explain: %v, plan: %v", got, want)
	}
	if _, err := New(req, make([]int, 30)); err == nil {
		t.Fatal("rank 30 explained")
	}
}

// Text and JSON say the same.
func TestTextAndJSON(t *testing.T) {
	e, err := New(ops.Request{Op: ops.DepthToSpace, Order: ops.CRD, Block: ops.Block{2}}, []int{1, 8, 2, 3})
	if err != nil {
		t.Fatal(err)
	}
	var text, js bytes.Buffer
	if err := e.WriteText(&text); err != nil {
		t.Fatal(err)
	}
	if err := e.WriteJSON(&js); err != nil {
		t.Fatal(err)
	}
	var back Explanation
	if err := json.Unmarshal(js.Bytes(), &back); err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{back.Formula, back.Recipe.Numpy, back.Recipe.Einops, back.Frameworks[0].Call} {
		if !strings.Contains(text.String(), s) {
			t.Errorf("text lacks %q", s)
		}
	}
}
