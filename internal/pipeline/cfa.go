package pipeline

import (
	"github.com/depthspace/depthspace/internal/format"
	"github.com/depthspace/depthspace/internal/ops"
)

// --block-order cfa: the Bayer pattern is the input's own (a DNG file's
// CFAPattern, format.Format.CFA), taken once the file is read and turned
// into the preset (rggb, bggr, grbg, gbrg) it names for the tensor's row
// 0, column 0. --crop and --pad work at the end of each axis, so the
// pattern at the origin is the same with them; an ActiveArea whose corner
// is at an odd row or column is accounted for by the format.

// planCFA plans the job for t with the block order its file's CFA
// pattern gives. The batch's plan cache (keyed by shape) is not used:
// two files of one shape may have different patterns.
func (o *Options) planCFA(t *Tensor) (*ops.Plan, error) {
	req := o.Request
	f := format.Lookup(t.Kind)
	if f == nil || f.CFA == nil || t.input == nil {
		return nil, ops.ErrCFAUnresolved
	}
	name, err := f.CFA(t.input.Data)
	if err != nil {
		return nil, err
	}
	if req.BlockOrder, err = ops.ParseBlockOrder(name); err != nil {
		return nil, err
	}
	return ops.NewPlan(req, t.Shape, t.DType.Size, t.Fortran)
}
