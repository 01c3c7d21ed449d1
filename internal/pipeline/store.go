package pipeline

import (
	"github.com/depthspace/depthspace/internal/format"
	fileio "github.com/depthspace/depthspace/internal/io"
)

// loadStore opens an input that is a directory holding a store of a
// format that is a directory (format.StoreFormat: Zarr), as a container
// whose members decode when their job comes. ok is false for any other
// input, which is then opened as a file.
func loadStore(src Source) (t *Tensor, ok bool, err error) {
	dir, isDir := fileio.OpenDir(src.Path)
	if !isDir {
		return nil, false, nil
	}
	kind := src.From
	if kind == "" {
		kind = format.StoreKind(dir)
	}
	sf := format.StoreOf(kind)
	if sf == nil {
		return nil, false, nil // "is a directory, not a tensor file", as fileio says
	}
	ar, err := sf.Open(dir, format.OpenOptions{Threads: src.Threads, Deferred: true})
	if err != nil {
		return nil, true, pathErr(src.Path, err)
	}
	d, err := src.description()
	if err != nil {
		return nil, true, pathErr(src.Path, err)
	}
	t, err = archiveTensors(format.Lookup(kind), ar, &fileio.Input{Name: src.Path}, d.DType, d.Shape)
	if err != nil {
		return nil, true, pathErr(src.Path, err)
	}
	return t, true, nil
}
