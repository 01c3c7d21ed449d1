package pipeline

import (
	"bytes"
	"fmt"
	"math/rand"
	"os"
	"path/filepath"
	"testing"

	"github.com/depthspace/depthspace/internal/format"
	"github.com/depthspace/depthspace/internal/ops"
)

// A deflated npz of several members is worked on with its members
// inflated and deflated on several goroutines: the archive is the same,
// byte for byte, with -j 1 and -j 3, keeps the member order, and each
// member is the operator's result.
func TestDeflatedNpzThreads(t *testing.T) {
	dir := t.TempDir()
	rng := rand.New(rand.NewSource(9))
	var b bytes.Buffer
	nw := format.NewNpzWriter(&b, true)
	want := map[string][]byte{}
	var names []string
	for i := 0; i < 7; i++ {
		shape := []int{1, 2 + i%3, 8, 16}
		h := format.Header{DType: format.DType{Kind: 'f', Size: 4, Order: '<'}, Shape: shape}
		data := make([]byte, h.DataBytes())
		for k := range data {
			data[k] = byte(rng.Intn(4)) // compressible
		}
		name := fmt.Sprintf("out%d", i)
		w, err := nw.Member(name, h)
		if err != nil {
			t.Fatal(err)
		}
		w.Write(data)
		p, err := ops.NewPlan(ops.Request{Op: ops.SpaceToDepth, Block: ops.Block{2}}, shape, 4, false)
		if err != nil {
			t.Fatal(err)
		}
		out := make([]byte, p.Bytes())
		if err := p.Run(out, data, 1); err != nil {
			t.Fatal(err)
		}
		want[name], names = out, append(names, name)
	}
	if err := nw.Close(); err != nil {
		t.Fatal(err)
	}
	in := filepath.Join(dir, "in.npz")
	if err := os.WriteFile(in, b.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	var first []byte
	for _, threads := range []int{1, 3} {
		outPath := filepath.Join(dir, fmt.Sprintf("out%d.npz", threads))
		if _, err := Transform(Options{Request: ops.Request{Op: ops.SpaceToDepth, Block: ops.Block{2}}, Source: Source{Path: in}, Output: outPath, Threads: threads}); err != nil {
			t.Fatal(err)
		}
		got, _ := os.ReadFile(outPath)
		if first == nil {
			first = got
		} else if !bytes.Equal(first, got) {
			t.Errorf("-j %d wrote another archive than -j 1", threads)
		}
		ms, err := format.ReadNpz(got)
		if err != nil {
			t.Fatal(err)
		}
		for i, m := range ms {
			if m.Name != names[i] || !m.Compressed || !bytes.Equal(m.Data, want[m.Name]) {
				t.Errorf("-j %d member %d (%s): compressed %v, content wrong: %v", threads, i, m.Name, m.Compressed, !bytes.Equal(m.Data, want[m.Name]))
			}
		}
	}
}
