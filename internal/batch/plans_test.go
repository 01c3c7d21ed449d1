package batch

import (
	"slices"
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

// A worker plans a tensor like the last one with that one's plan, and
// any other with the batch's planner: tensors of two shapes, two element
// sizes and both orders, alternating, each get the plan the batch's
// planner gives them, errors included.
func TestWorkerPlan(t *testing.T) {
	req := ops.Request{Op: ops.SpaceToDepth, Block: ops.Block{2}}
	calls := 0
	w := newWorker(func(shape []int, elemSize int, fortran bool) (*ops.Plan, error) {
		calls++
		return ops.NewPlan(req, shape, elemSize, fortran)
	})
	type tensor struct {
		shape    []int
		elemSize int
		fortran  bool
	}
	tensors := []tensor{
		{[]int{1, 3, 4, 4}, 4, false}, {[]int{1, 3, 4, 6}, 4, false}, {[]int{1, 3, 4, 4}, 4, false},
		{[]int{1, 3, 4, 4}, 2, false}, {[]int{1, 3, 4, 4}, 2, true}, {[]int{1, 3, 4, 4}, 4, true},
		{[]int{1, 3, 5, 5}, 4, true}, {[]int{1, 3, 4, 4}, 4, true}, {[]int{3, 4, 4}, 4, true},
	}
	for round := range 2 {
		for _, c := range tensors {
			for range 2 { // planned, then the last one's
				shape := append([]int(nil), c.shape...)
				got, err := w.planner(shape, c.elemSize, c.fortran)
				shape[len(shape)-1] = 1000 // the caller's slice is its own
				want, werr := ops.NewPlan(req, c.shape, c.elemSize, c.fortran)
				if (err == nil) != (werr == nil) || err != nil && err.Error() != werr.Error() {
					t.Fatalf("round %d, %v: error %v, want %v", round, c, err, werr)
				}
				if err == nil && (!slices.Equal(got.In, want.In) || !slices.Equal(got.Out, want.Out) || got.Bytes() != want.Bytes() ||
					got.InBytes() != want.InBytes() || got.Items() != want.Items()) {
					t.Fatalf("round %d, %v: plan %+v, want %+v", round, c, got, want)
				}
			}
		}
	}
	if want := 2 * len(tensors); calls != want {
		t.Errorf("the batch's planner was asked %d times for %d tensors each taken twice in a row, want %d", calls, len(tensors), want)
	}
}
