package walk

import (
	"github.com/depthspace/depthspace/internal/format"
	fileio "github.com/depthspace/depthspace/internal/io"
)

// IsStore says whether a local directory is a store of a format that is
// a directory (a Zarr array or group): one input, which the walk never
// walks into.
func IsStore(path string) bool {
	d, ok := fileio.OpenDir(path)
	return ok && format.StoreKind(d) != ""
}
