package batch

import (
	"testing"

	"github.com/depthspace/depthspace/internal/ops"
	"github.com/depthspace/depthspace/internal/pipeline"
)

// A batch plans each shape once and gives its files the same plan; other
// shapes, element sizes and orders get their own, errors are kept too,
// and the cache does not grow past maxPlans.
func TestCachePlans(t *testing.T) {
	job := pipeline.Options{Request: ops.Request{Op: ops.SpaceToDepth, Block: ops.Block{2}}}
	calls := 0
	job.Planner = func(shape []int, elemSize int, fortran bool) (*ops.Plan, error) {
		calls++
		return ops.NewPlan(job.Request, shape, elemSize, fortran)
	}
	cachePlans(&job)
	a, err := job.Planner([]int{1, 3, 4, 4}, 4, false)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := job.Planner([]int{1, 3, 4, 4}, 4, false)
	if a != b || calls != 1 {
		t.Fatalf("same shape planned %d times (plans %p, %p)", calls, a, b)
	}
	for _, c := range []struct {
		shape   []int
		elem    int
		fortran bool
	}{{[]int{1, 3, 4, 6}, 4, false}, {[]int{1, 3, 4, 4}, 2, false}, {[]int{1, 3, 4, 4}, 4, true}, {[]int{13, 4, 4}, 4, false}} {
		p, _ := job.Planner(c.shape, c.elem, c.fortran)
		if p == a {
			t.Errorf("%v elem %d fortran %v: got the plan of [1 3 4 4]", c.shape, c.elem, c.fortran)
		}
	}
	if _, err := job.Planner([]int{1, 3, 5, 5}, 4, false); err == nil {
		t.Fatal("an odd size planned for block 2")
	}
	before := calls
	if _, err := job.Planner([]int{1, 3, 5, 5}, 4, false); err == nil || calls != before {
		t.Errorf("a refused shape: error %v, planned again: %v", err, calls != before)
	}
	// Past maxPlans shapes the oldest are forgotten: [1 3 4 4] is planned anew.
	for i := range maxPlans {
		job.Planner([]int{1, 1, 2, 2 * (i + 1)}, 1, false)
	}
	before = calls
	if job.Planner([]int{1, 3, 4, 4}, 4, false); calls != before+1 {
		t.Errorf("after %d more shapes, [1 3 4 4] was planned %d times, want once", maxPlans, calls-before)
	}
}
