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
		key := planKey(shape, elemSize, fortran)
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

// planKey is what a plan depends on besides the job: the shape, the
// element size and the order, as bytes.
func planKey(shape []int, elemSize int, fortran bool) []byte {
	key := make([]byte, 0, 8*len(shape)+8)
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
