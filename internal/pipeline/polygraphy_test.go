package pipeline

import (
	"bufio"
	"bytes"
	"fmt"
	"math/rand"
	"os"
	"path/filepath"
	"testing"

	"github.com/depthspace/depthspace/internal/format"
	"github.com/depthspace/depthspace/internal/format/polygraphy"
	"github.com/depthspace/depthspace/internal/ops"
)

// A Polygraphy member worked on in chunks is read where it is (its Lazy
// is an io.ReaderAt decoding the base64 groups each chunk needs), not
// through a scratch copy: the result is the same as from an npy of the
// same array, whatever the chunk size and the number of threads, and
// the member's data are never brought into memory whole.
func TestPolygraphyMemberReadInPlace(t *testing.T) {
	dir := t.TempDir()
	h := format.Header{DType: mustDType(t, "float32"), Shape: []int{1, 8, 48, 40}}
	data := make([]byte, h.DataBytes())
	rand.New(rand.NewSource(27)).Read(data)
	// The reference: the same array as an npy file.
	npy := filepath.Join(dir, "x.npy")
	writeNpy(t, npy, "<f4", h.Shape, false, data)
	// A Polygraphy file written by its format's Create (a RunResults of
	// one runner): members x and a small label.
	pg := filepath.Join(dir, "x.json")
	f, err := os.Create(pg)
	if err != nil {
		t.Fatal(err)
	}
	bw := bufio.NewWriter(f)
	lab := format.Header{DType: mustDType(t, "int64"), Shape: []int{3}}
	mw, err := format.Lookup(polygraphy.KindPolygraphy).Create(bw, []format.MemberSpec{{Name: "x", Header: h}, {Name: "label", Header: lab}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range []struct {
		name string
		h    format.Header
		b    []byte
	}{{"x", h, data}, {"label", lab, make([]byte, 24)}} {
		w, err := mw.Member(m.name, m.h)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := w.Write(m.b); err != nil {
			t.Fatal(err)
		}
	}
	if err := mw.Close(); err != nil {
		t.Fatal(err)
	}
	if err := bw.Flush(); err != nil {
		t.Fatal(err)
	}
	f.Close()

	req := ops.Request{Op: ops.SpaceToDepth, Block: ops.Block{2}}
	want := filepath.Join(dir, "want.npy")
	if _, err := Transform(Options{Request: req, Source: Source{Path: npy}, Output: want, Threads: 1}); err != nil {
		t.Fatal(err)
	}
	wantBytes, _ := os.ReadFile(want)
	for _, c := range []struct{ chunk, threads int }{{4096, 1}, {4096, 3}, {7000, 2}, {0, 2}} {
		out := filepath.Join(dir, fmt.Sprintf("got-%d-%d.npy", c.chunk, c.threads))
		src := Source{Path: pg, Deferred: true, Members: []string{"x"}}
		tl, err := LoadAll(src)
		if err != nil {
			t.Fatal(err)
		}
		if !tl[0].readsInPlace() {
			t.Fatal("a Polygraphy member is not read in place")
		}
		closeAll(tl)
		if _, err := Transform(Options{Request: req, Source: src, Output: out, Threads: c.threads, ChunkBytes: c.chunk}); err != nil {
			t.Fatalf("chunk %d, -j %d: %v", c.chunk, c.threads, err)
		}
		got, _ := os.ReadFile(out)
		if !bytes.Equal(got, wantBytes) {
			t.Errorf("chunk %d, -j %d: the result differs from the npy input's", c.chunk, c.threads)
		}
	}
}

func mustDType(t *testing.T, name string) format.DType {
	t.Helper()
	d, err := format.ParseDType(name)
	if err != nil {
		t.Fatal(err)
	}
	return d
}
