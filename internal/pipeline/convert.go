package pipeline

import (
	"github.com/depthspace/depthspace/internal/ops"
)

// Convert rewrites one tensor in another format: the same dtype, shape and
// values, in C order. It is Transform with the identity for a plan
// (ops.NewCopy, which reorders a Fortran-order input), so it loads,
// streams, writes atomically and handles npz members exactly as the
// operators do. opts.Request and opts.Planner are not used.
func Convert(opts Options) (*Result, error) {
	opts.Planner = ops.NewCopy
	return Transform(opts)
}
