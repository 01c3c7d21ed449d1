//go:build !unix

package walk

import (
	"errors"
	"os"
)

// regularSize is not done here: the walk asks the entry for its FileInfo.
func regularSize(d *os.File, name string) (size int64, ok bool, err error) {
	return 0, false, errors.ErrUnsupported
}
