package ops

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/depthspace/depthspace/internal/testpeer"
)

// swar_amd64.s is generated: it must be what swar_amd64_gen.py writes, so
// that a hand edit of the assembly cannot drift from its generator.
func TestAssemblyIsGenerated(t *testing.T) {
	py := testpeer.Python(t, "sys")
	out := filepath.Join(t.TempDir(), "swar_amd64.s")
	if msg, err := exec.Command(py, "swar_amd64_gen.py", out).CombinedOutput(); err != nil {
		t.Fatalf("swar_amd64_gen.py: %v\n%s", err, msg)
	}
	want, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile("swar_amd64.s")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Fatal("swar_amd64.s differs from what swar_amd64_gen.py writes: edit the generator and run go generate ./internal/ops")
	}
}
