package walk

import (
	"strings"
	"testing"

	_ "github.com/depthspace/depthspace/internal/format/zarr" // registers the zarr stores
	fileio "github.com/depthspace/depthspace/internal/io"
)

// TestObjectStoreRefused: a Zarr store under a listed prefix is one
// input, refused in one line naming it (stores are not read from
// objects), not walked into: its zarr.json was read as a JSON tensor and
// a v2 store's .zarray passed unseen. Its chunks are not inputs; the
// tensors beside it are.
func TestObjectStoreRefused(t *testing.T) {
	keys := []string{"a.npy", "g.zarr/c/0/0", "g.zarr/x/.zarray", "g.zarr/x/0.0", "g.zarr/zarr.json", "z.npy"}
	seq := func(yield func(fileio.Entry, error) bool) {
		for _, k := range keys {
			if !yield(fileio.Entry{Name: "s3://b/p/" + k, Rel: k, Size: 1}, nil) {
				return
			}
		}
	}
	l := objectList(0, "s3://b/p/", seq)
	var got []string
	for it, ok := l.next(); ok; it, ok = l.next() {
		line := it.Input
		if it.Err != nil {
			line = it.Err.Error()
		}
		got = append(got, line)
	}
	want := []string{
		"s3://b/p/a.npy",
		"s3://b/p/g.zarr/x: is a zarr store (it holds .zarray); s3:// stores are not read yet: copy it to a local directory first",
		"s3://b/p/g.zarr: is a zarr3 store (it holds zarr.json); s3:// stores are not read yet: copy it to a local directory first",
		"s3://b/p/z.npy",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("items:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}
