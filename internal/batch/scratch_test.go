package batch

import (
	"bytes"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// An object goes through a scratch file in TMPDIR (a large input
// downloaded, every output built before its upload): when that file
// cannot be made or written, the line names TMPDIR and the scratch file's
// object, not the bucket as if it were full or missing.
func TestObjectScratchFailureNamesTMPDIR(t *testing.T) {
	chdir(t)
	writeNpy(t, "in/a.npy", 1, 1, 2, 2)
	writeNpy(t, "in/big.npy", 1, 1, 2048, 2048*2+2) // past the 8 MiB read at once
	memPut(t, "mem://b/scratch/big.npy", "in/big.npy")
	run := func(inputs []string, outDir string) string {
		var stderr bytes.Buffer
		if _, err := Run(Options{Inputs: inputs, OutDir: outDir, Job: s2d(t), Threads: 1, Stderr: &stderr}); err != nil {
			t.Fatal(err)
		}
		return stderr.String()
	}

	missing := filepath.Join(t.TempDir(), "gone")
	t.Setenv("TMPDIR", missing)
	if got, want := run([]string{"in/a.npy"}, "mem://b/out"), "depthspace: in/a.npy: "+missing+": making the scratch file of mem://b/out/a.npy there (TMPDIR): no such file or directory\n"; !strings.HasPrefix(got, want) {
		t.Errorf("output: got %q, want %q", got, want)
	}
	if got, want := run([]string{"mem://b/scratch/big.npy"}, "out"), "depthspace: mem://b/scratch/big.npy: "+missing+": making the scratch file of mem://b/scratch/big.npy there (TMPDIR): no such file or directory\n"; !strings.HasPrefix(got, want) {
		t.Errorf("input: got %q, want %q", got, want)
	}

	// A full TMPDIR: a 64 KiB tmpfs, where this test may mount one.
	full := t.TempDir()
	if err := syscall.Mount("tmpfs", full, "tmpfs", 0, "size=64k"); err != nil {
		t.Logf("no tmpfs to fill (%v): the full TMPDIR is not tried", err)
		return
	}
	defer syscall.Unmount(full, 0)
	t.Setenv("TMPDIR", full)
	if got, want := run([]string{"in/big.npy"}, "mem://b/out"), "depthspace: in/big.npy: "+full+": writing the scratch file of mem://b/out/big.npy there (TMPDIR): no space left on device\n"; !strings.HasPrefix(got, want) {
		t.Errorf("full, output: got %q, want %q", got, want)
	}
	if got, want := run([]string{"mem://b/scratch/big.npy"}, "out"), "depthspace: mem://b/scratch/big.npy: "+full+": writing the scratch file of mem://b/scratch/big.npy there (TMPDIR): no space left on device\n"; !strings.HasPrefix(got, want) {
		t.Errorf("full, input: got %q, want %q", got, want)
	}
}
