package pipeline

import (
	"bytes"
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/depthspace/depthspace/internal/ops"
)

// Jobs given one Reuse in turn, as a batch worker's files are, write the
// same outputs and give the same Results as jobs given none: inputs of
// two shapes and dtypes alternating, a Fortran-order one, a container,
// JSON, one that fails between them, and an output in another format.
func TestReuseGivesWhatNewMemoryGives(t *testing.T) {
	dir := t.TempDir()
	in := func(name string) string { return filepath.Join(dir, "in", name) }
	os.MkdirAll(filepath.Join(dir, "in"), 0o777)
	seq := func(n int) []byte {
		b := make([]byte, n)
		for i := range b {
			b[i] = byte(i*7 + n)
		}
		return b
	}
	writeNpy(t, in("a.npy"), "<f4", []int{1, 3, 4, 4}, false, seq(3*4*4*4))
	writeNpy(t, in("b.npy"), "<u2", []int{2, 1, 2, 6}, false, seq(2*2*6*2))
	writeNpy(t, in("f.npy"), "<i4", []int{1, 2, 4, 2}, true, seq(2*4*2*4))
	writeNpz(t, in("c.npz"), false, "x", "y")
	if err := os.WriteFile(in("j.json"), []byte(`[[[[1, 2], [3, 4]]]]`), 0o644); err != nil {
		t.Fatal(err)
	}
	writeNpy(t, in("odd.npy"), "<f4", []int{1, 1, 3, 3}, false, seq(9*4)) // not a multiple of the block
	// An ONNX input that names its tensor ("y"), where an npy has none.
	s2d := ops.Request{Op: ops.SpaceToDepth, Block: ops.Block{1, 2}}
	d2s := ops.Request{Op: ops.DepthToSpace, Block: ops.Block{1, 2}}
	if _, err := Transform(Options{Request: d2s, Source: Source{Path: in("c.npz"), Members: []string{"y"}}, Output: in("named.pb"), Threads: 1}); err != nil {
		t.Fatal(err)
	}
	jobs := []struct{ input, output string }{
		{"a.npy", "a.npy"}, {"b.npy", "b.npy"}, {"a.npy", "a2.npy"}, {"odd.npy", "odd.npy"},
		{"b.npy", "b2.npy"}, {"f.npy", "f.npy"}, {"c.npz", "c.npz"}, {"a.npy", "a.json"},
		{"j.json", "j.npy"}, {"b.npy", "b3.npy"}, {"c.npz", "c.npy"},
		{"named.pb", "named.pb"}, {"b.npy", "b.pb"},
	}
	run := func(sub string, reuse *Reuse) (outs [][]byte, results []*Result, errs []string) {
		os.MkdirAll(filepath.Join(dir, sub), 0o777)
		for _, j := range jobs {
			out := filepath.Join(dir, sub, j.output)
			o := Options{Request: s2d, Source: Source{Path: in(j.input)},
				Output: out, Threads: 1, Reuse: reuse}
			if j.input == "c.npz" && filepath.Ext(j.output) == ".npy" {
				o.Members = []string{"y"}
			}
			res, err := Transform(o)
			msg := ""
			if err != nil {
				msg = err.Error()
			}
			errs = append(errs, msg)
			b, _ := os.ReadFile(out)
			outs = append(outs, b)
			if res != nil {
				c := *res // a Reuse's Result lasts until the next job
				res = &c
			}
			results = append(results, res)
		}
		return outs, results, errs
	}
	wantOut, wantRes, wantErr := run("new", nil)
	gotOut, gotRes, gotErr := run("reused", new(Reuse))
	for i, j := range jobs {
		if gotErr[i] != wantErr[i] {
			t.Errorf("%s -> %s: error %q, want %q", j.input, j.output, gotErr[i], wantErr[i])
		}
		if !bytes.Equal(gotOut[i], wantOut[i]) {
			t.Errorf("%s -> %s: output differs from the one made with new memory", j.input, j.output)
		}
		if g, w := gotRes[i], wantRes[i]; (g == nil) != (w == nil) || g != nil && !reflect.DeepEqual(withoutOutput(*g), withoutOutput(*w)) {
			t.Errorf("%s -> %s: result %+v, want %+v", j.input, j.output, g, w)
		}
	}
	for i, e := range wantErr {
		if (e != "") != (i == 3) {
			t.Fatalf("the jobs are not what the test means: errors %q", wantErr)
		}
	}
}

// withoutOutput is a Result with its output path (which differs between
// the two runs of the test) left out.
func withoutOutput(r Result) Result {
	r.Output = ""
	for i, m := range r.Members {
		c := *m
		c.Output = ""
		r.Members[i] = &c
	}
	return r
}
