package pipeline

import (
	"errors"
	"syscall"
	"testing"

	"github.com/depthspace/depthspace/internal/ops"
)

// failingOutput fails every write as a full disk does.
type failingOutput struct{ file bool }

func (o failingOutput) IsFile() bool                             { return o.file }
func (o failingOutput) WriteAt(p []byte, off int64) (int, error) { return 0, syscall.ENOSPC }
func (o failingOutput) Write(p []byte) (int, error)              { return 0, syscall.ENOSPC }

// A chunk whose output cannot be written fails with a writeError, which
// streamStore reports under the output's name (not the input's, as a
// read or a kernel fault is), by position or in order.
func TestChunkWriteErrorIsTheOutputs(t *testing.T) {
	plan, err := ops.NewPlan(ops.Request{Op: ops.SpaceToDepth, Block: ops.Block{2}}, []int{1, 2, 8, 8}, 4, false)
	if err != nil {
		t.Fatal(err)
	}
	ck, err := plan.Chunker(1<<20, false, false)
	if err != nil {
		t.Fatal(err)
	}
	src, dst := make([]byte, plan.InBytes()), make([]byte, plan.Bytes())
	for _, file := range []bool{true, false} {
		err := runChunk(ck, ck.Chunk(0), failingOutput{file}, 0, src, dst, 1, func(int64) {})
		var we *writeError
		if !errors.As(err, &we) || !errors.Is(err, syscall.ENOSPC) {
			t.Errorf("file %v: error %v (%T), want a writeError of ENOSPC", file, err, err)
		}
	}
}
