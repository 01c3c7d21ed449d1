package walk

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"iter"
	"os"
	"slices"
	"strings"
	"testing"

	_ "github.com/depthspace/depthspace/internal/format/zarr" // registers the zarr stores
	fileio "github.com/depthspace/depthspace/internal/io"
)

// memPlace is a place of objects in memory (s3://B/KEY), holding stores
// (fileio.StorePlace): what the walk asks of a prefix to tell a store.
type memPlace map[string][]byte

var mem = memPlace{}

func init() { fileio.Register("s3://", mem) }

func (m memPlace) Parse(name string) (bool, error) {
	rest := strings.TrimPrefix(name, "s3://")
	_, key, _ := strings.Cut(rest, "/")
	return key == "" || strings.HasSuffix(key, "/"), nil
}
func (memPlace) Ready() error { return nil }
func (m memPlace) ReadFirst(name string, p []byte) (int, int64, error) {
	b, ok := m[name]
	if !ok {
		return 0, 0, fs.ErrNotExist
	}
	return copy(p, b), int64(len(b)), nil
}
func (memPlace) Download(context.Context, string, *os.File, int64, int64, func(int64, int64)) error {
	return errors.ErrUnsupported
}
func (memPlace) Writer(string, func() (*os.File, error)) fileio.ObjectWriter {
	return nil
}
func (memPlace) AbortAll() {}
func (m memPlace) Exists(name string) (bool, error) {
	_, ok := m[name]
	return ok, nil
}
func (m memPlace) IsDir(name string) bool {
	for k := range m {
		if strings.HasPrefix(k, strings.TrimSuffix(name, "/")+"/") {
			return true
		}
	}
	return false
}
func (m memPlace) List(name string) iter.Seq2[fileio.Entry, error] {
	dir := fileio.DirURL(name)
	return func(yield func(fileio.Entry, error) bool) {
		for _, k := range slices.Sorted(func(y func(string) bool) {
			for k := range m {
				if strings.HasPrefix(k, dir) && !y(k) {
					return
				}
			}
		}) {
			if !yield(fileio.Entry{Name: k, Rel: strings.TrimPrefix(k, dir), Size: int64(len(m[k]))}, nil) {
				return
			}
		}
	}
}
func (m memPlace) GetObject(_ context.Context, name string, limit int64) ([]byte, error) {
	b, ok := m[name]
	if !ok {
		return nil, fs.ErrNotExist
	}
	if int64(len(b)) > limit {
		return nil, fmt.Errorf("%s holds %d bytes, more than it can", name, len(b))
	}
	return b, nil
}
func (m memPlace) GetObjectRange(_ context.Context, name string, off, n int64) ([]byte, error) {
	b, ok := m[name]
	if !ok {
		return nil, fs.ErrNotExist
	}
	if off < 0 {
		off, n = int64(len(b))+off, -off
	}
	if off < 0 || off+n > int64(len(b)) {
		return nil, errors.New("past the end")
	}
	return b[off : off+n], nil
}
func (m memPlace) ObjectSize(_ context.Context, name string) (int64, error) {
	b, ok := m[name]
	if !ok {
		return 0, fs.ErrNotExist
	}
	return int64(len(b)), nil
}
func (memPlace) ListChildren(context.Context, string) ([]string, error) {
	return nil, errors.ErrUnsupported
}
func (memPlace) PutObject(context.Context, string, []byte) error { return errors.ErrUnsupported }
func (memPlace) DeleteObject(context.Context, string) error      { return errors.ErrUnsupported }

const (
	v3Group = `{"zarr_format": 3, "node_type": "group"}`
	v3Array = `{"zarr_format": 3, "node_type": "array"}`
	v2Array = `{"zarr_format": 2}`
)

// walkKeys lists the items of a walk of arg over objects in mem named
// bucket/prefix + key.
func walkKeys(t *testing.T, arg string, objects map[string]string) []string {
	t.Helper()
	clear(mem)
	for k, v := range objects {
		mem["s3://b/p/"+k] = []byte(v)
	}
	l := objectList(0, arg, mem.List(arg))
	var got []string
	for it, ok := l.next(); ok; it, ok = l.next() {
		line := it.Input + " " + it.Rel
		if it.Err != nil {
			line = it.Err.Error()
		}
		got = append(got, line)
	}
	return got
}

// TestObjectStoreOneInput: a Zarr store under a listed prefix is one
// input named by its prefix, not walked into: its zarr.json is not read
// as a JSON tensor, its chunks are not inputs, and an array inside a
// group whose own zarr.json the listing gives after its members' (v3)
// is the group's, not an input of its own, and neither is a tensor-named
// object inside a store named *.zarr that the listing gives before the
// store's zarr.json. The tensors beside it are inputs.
func TestObjectStoreOneInput(t *testing.T) {
	got := walkKeys(t, "s3://b/p/", map[string]string{
		"a.npy": "x", "g.zarr/c/0/0": "", "g.zarr/x/zarr.json": v3Array, "g.zarr/x/c/0": "",
		"g.zarr/zarr.json": v3Group, "v2.zarr/.zarray": v2Array, "v2.zarr/0.0": "", "v2.zarr/x.npy": "",
		"v3.zarr/a.npy": "x", "v3.zarr/c/0": "", "v3.zarr/zarr.json": v3Array, "z.npy": "x",
	})
	want := []string{
		"s3://b/p/a.npy a.npy",
		"s3://b/p/g.zarr/ g.zarr",
		"s3://b/p/v2.zarr/ v2.zarr",
		"s3://b/p/v3.zarr/ v3.zarr",
		"s3://b/p/z.npy z.npy",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("items:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// TestObjectStoreIsTheArgument: a prefix that is itself a store is one
// input, named as its last element, with or without its final "/".
func TestObjectStoreIsTheArgument(t *testing.T) {
	for _, arg := range []string{"s3://b/p/g.zarr/", "s3://b/p/g.zarr"} {
		got := walkKeys(t, arg, map[string]string{
			"g.zarr/a/zarr.json": v3Array, "g.zarr/a/c/0": "", "g.zarr/zarr.json": v3Group, "h.npy": "x",
		})
		if want := "s3://b/p/g.zarr/ g.zarr"; strings.Join(got, "\n") != want {
			t.Errorf("%s: items %q, want %q", arg, got, want)
		}
		if IsDir(arg) {
			t.Errorf("%s is walked like a directory, not taken as one input", arg)
		}
	}
}
