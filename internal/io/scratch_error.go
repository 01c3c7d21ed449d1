package fileio

import (
	"fmt"
	"os"
)

// ScratchError is a failure of the scratch file in TMPDIR through which
// an object goes (a large input object downloaded, an output object
// built before its upload): a full or missing TMPDIR, neither the
// object's nor the bucket's fault. The message names the scratch file's
// object; the pipeline puts TMPDIR's directory (Dir) in front, as
// "depthspace: PATH: what is wrong" asks.
type ScratchError struct {
	Op     string // "making", "writing"
	Object string // the s3:// URL the scratch file holds
	Err    error
}

func (e *ScratchError) Error() string {
	return fmt.Sprintf("%s the scratch file of %s there (TMPDIR): %v", e.Op, e.Object, unwrapPath(e.Err))
}

func (e *ScratchError) Unwrap() error { return e.Err }

// Dir is the directory of scratch files (TMPDIR, else /tmp).
func (e *ScratchError) Dir() string { return os.TempDir() }
