package walk

import (
	"github.com/depthspace/depthspace/internal/format"
	fileio "github.com/depthspace/depthspace/internal/io"
)

// A name with the extension of a format that is one file (x.npy) is not
// asked of its place as a store's prefix: one request less for every
// object input.
func init() {
	fileio.MayBeStore = func(name string) bool {
		k := format.KindByExtension(name)
		return k == "" || format.StoreOf(k) != nil
	}
}

// IsStore says whether a local directory or an s3:// prefix is a store of a format that is
// a directory (a Zarr array or group): one input, which the walk never
// walks into.
func IsStore(path string) bool {
	d, ok := fileio.OpenDir(path)
	return ok && format.StoreKind(d) != ""
}
