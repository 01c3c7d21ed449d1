package walk

import (
	"fmt"
	"iter"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	fileio "github.com/depthspace/depthspace/internal/io"
)

// The walk's order is the byte-wise order of the whole relative paths,
// as sorting a list of every file would give, though it holds no such
// list: random trees whose names differ in the bytes around '/' ('-' <
// '.' < '/' < '0' < 'A' < 'a'), over two arguments merged.
func TestOrderIsByteWiseOfWholePaths(t *testing.T) {
	parts := []string{"a", "a-", "a.", "a0", "A", "b", "a.b", "ab"}
	for seed := range 20 {
		r := rand.New(rand.NewPCG(uint64(seed), 1))
		root := t.TempDir()
		var want []string
		seen := map[string]bool{}
		for range 40 {
			depth := 1 + r.IntN(3)
			var p []string
			for range depth - 1 {
				p = append(p, parts[r.IntN(len(parts))])
			}
			p = append(p, parts[r.IntN(len(parts))]+".npy")
			arg := []string{"x", "y"}[r.IntN(2)]
			rel := strings.Join(p, "/")
			full := filepath.Join(root, arg, filepath.FromSlash(rel))
			if seen[full] || os.MkdirAll(filepath.Dir(full), 0o755) != nil {
				continue // a name already a directory, or a file on the way
			}
			if err := os.WriteFile(full, nil, 0o644); err != nil {
				continue
			}
			seen[full] = true
			want = append(want, rel+"\x00"+arg)
		}
		slices.Sort(want) // byte-wise by relative path, then argument (x < y)
		w, err := New([]string{filepath.Join(root, "x"), filepath.Join(root, "y")}, "", nil)
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for it, ok := w.Next(); ok; it, ok = w.Next() {
			if it.Err != nil {
				continue // an argument with no file
			}
			got = append(got, it.Rel+"\x00"+[]string{"x", "y"}[it.Arg])
		}
		if !slices.Equal(got, want) {
			t.Fatalf("seed %d:\n got %q\nwant %q", seed, got, want)
		}
	}
}

// A key's path below its prefix is anything the bucket's writer chose: a
// ".." segment would put an output outside --out-dir (found in review: a
// public bucket listing data/../../x.npy wrote beside the out-dir).
func TestCheckRel(t *testing.T) {
	for _, rel := range []string{"../x.npy", "a/../../x.npy", "a/./x.npy", "a//x.npy", "/x.npy", "..", "."} {
		if checkRel(rel) == nil {
			t.Errorf("%q accepted", rel)
		}
	}
	for _, rel := range []string{"x.npy", "a/b/x.npy", "..x.npy", "a/...npy", "a.b/x..npy"} {
		if err := checkRel(rel); err != nil {
			t.Errorf("%q refused: %v", rel, err)
		}
	}
	l := objectList(0, "s3://b/data/", entries(
		fileio.Entry{Name: "s3://b/data/ok.npy", Rel: "ok.npy"}, fileio.Entry{Name: "s3://b/data/../../escaped.npy", Rel: "../../escaped.npy"}))
	var got []string
	for it, ok := l.next(); ok; it, ok = l.next() {
		got = append(got, fmt.Sprint(it.Rel, " ", it.Err != nil))
	}
	if strings.Join(got, ",") != "ok.npy false,../../escaped.npy true" {
		t.Errorf("listing: %v", got)
	}
}

// entries is a listing of these entries, as a place yields it.
func entries(es ...fileio.Entry) iter.Seq2[fileio.Entry, error] {
	return func(yield func(fileio.Entry, error) bool) {
		for _, e := range es {
			if !yield(e, nil) {
				return
			}
		}
	}
}

// A prefix's listing is pulled as the walk goes, not read whole first:
// the first item comes after one entry was asked for, and a listing of
// any length is never held (the walk stops pulling when it stops).
func TestObjectListPulled(t *testing.T) {
	pulled := 0
	seq := func(yield func(fileio.Entry, error) bool) {
		for i := 0; ; i++ {
			pulled++
			rel := fmt.Sprintf("%09d.npy", i)
			if !yield(fileio.Entry{Name: "s3://b/p/" + rel, Rel: rel, Size: 1}, nil) {
				return
			}
		}
	}
	l := objectList(0, "s3://b/p/", seq)
	for i := range 3 {
		it, ok := l.next()
		if !ok || it.Rel != fmt.Sprintf("%09d.npy", i) {
			t.Fatalf("item %d: %v %v", i, it, ok)
		}
		if pulled != i+1 {
			t.Fatalf("after %d items, %d entries pulled", i+1, pulled)
		}
	}
	l.close()
}

// A frame's child paths are filepath.Join's and joinRel's, whether the
// relative path is taken from the end of the path or made.
func TestFrameChild(t *testing.T) {
	for _, f := range []frame{
		{p: "data", rel: ""}, {p: "data/", rel: ""}, {p: "./data", rel: ""}, {p: ".", rel: ""},
		{p: "/", rel: ""}, {p: "a/../b", rel: ""}, {p: "data/x/y", rel: "x/y"}, {p: "x/y", rel: "x/y"},
		{p: "d/ay", rel: "y"}, {p: "d/y/", rel: "y"}, {p: "d/x.y", rel: "y"}, {p: "d", rel: "d"},
	} {
		for _, name := range []string{"f.npy", "y", "é.npy"} {
			path, rel := f.child(name)
			if path != filepath.Join(f.p, name) || rel != joinRel(f.rel, name) {
				t.Errorf("frame %q %q, %q: got %q %q", f.p, f.rel, name, path, rel)
			}
		}
	}
}
