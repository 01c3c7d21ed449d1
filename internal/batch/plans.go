package batch

import (
	"strconv"
	"sync"

	"github.com/depthspace/depthspace/internal/ops"
	"github.com/depthspace/depthspace/internal/pipeline"
)

// maxPlans bounds the plans a batch remembers: a dataset has a handful of
// shapes, and a tree of all different shapes must not grow memory.
const maxPlans = 64

// cachePlans makes job plan each input shape once: a plan is read-only
// once made (ops.Plan), so the files of one shape, usually all of them,
// share it. Planning a small file again and again was a fifth of the
// memory a batch of 5,000 files of 48 KiB allocated, and the garbage
// collections that came with it.
func cachePlans(job *pipeline.Options) {
	plan := job.Planner
	if plan == nil {
		req := job.Request
		plan = func(shape []int, elemSize int, fortran bool) (*ops.Plan, error) {
			return ops.NewPlan(req, shape, elemSize, fortran)
		}
	}
	type planned struct {
		p   *ops.Plan
		err error
	}
	var (
		mu    sync.Mutex
		known = map[string]planned{}
	)
	job.Planner = func(shape []int, elemSize int, fortran bool) (*ops.Plan, error) {
		var buf [64]byte // the key of a usual shape: no allocation to look it up
		key := planKey(buf[:0], shape, elemSize, fortran)
		mu.Lock()
		got, ok := known[string(key)]
		mu.Unlock()
		if ok {
			return got.p, got.err
		}
		p, err := plan(shape, elemSize, fortran)
		mu.Lock()
		if len(known) >= maxPlans {
			clear(known)
		}
		known[string(key)] = planned{p, err}
		mu.Unlock()
		return p, err
	}
}

// planKey appends to key what a plan depends on besides the job: the
// shape, the element size and the order, as bytes.
func planKey(key []byte, shape []int, elemSize int, fortran bool) []byte {
	for _, d := range shape {
		key = strconv.AppendInt(key, int64(d), 10)
		key = append(key, ',')
	}
	key = strconv.AppendInt(key, int64(elemSize), 10)
	if fortran {
		key = append(key, 'F')
	}
	return key
}
