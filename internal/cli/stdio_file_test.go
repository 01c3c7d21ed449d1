//go:build linux

package cli

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/depthspace/depthspace/internal/format/npy"
	"github.com/depthspace/depthspace/internal/format/npz"
)

// run runs depthspace with the given standard input and output files,
// and fails the test unless it exits with status want.
func runStdio(t *testing.T, dir string, stdin, stdout *os.File, want int, args ...string) string {
	t.Helper()
	var stderr bytes.Buffer
	cmd := exec.Command(depthspaceBin(t), args...)
	cmd.Dir, cmd.Env, cmd.Stderr = dir, quickExit(), &stderr
	if stdin != nil {
		cmd.Stdin = stdin
	}
	if stdout != nil {
		cmd.Stdout = stdout
	}
	err := cmd.Run()
	if got := cmd.ProcessState.ExitCode(); got != want {
		t.Fatalf("depthspace %v: exit %d (%v), want %d; stderr %q", args, got, err, want, stderr.String())
	}
	return stderr.String()
}

func read(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// A standard output or input that is a regular file is used as a file:
// the bytes are those of -o and of a path argument, the result starts at
// the descriptor's offset (or the end, under O_APPEND), and the
// descriptor is left after it.
func TestStdioRegularFiles(t *testing.T) {
	dir := t.TempDir()
	sparseNpy(t, filepath.Join(dir, "big.npy"), "<f4", []int{2, 3, 512, 512}, 7) // 6 MiB: several chunks
	denseNpy(t, filepath.Join(dir, "small.npy"), "<u2", []int{1, 2, 6, 4}, 3)
	// Archives: a stored npz output reads its members back for their
	// CRC-32, so standard output is reopened readable.
	for _, compress := range []bool{false, true} {
		var b bytes.Buffer
		w := npz.NewNpzWriter(&b, compress)
		for i, name := range []string{"x", "y"} {
			data := read(t, filepath.Join(dir, []string{"big.npy", "small.npy"}[i]))
			npy, err := npy.ParseNpy(data)
			if err != nil {
				t.Fatal(err)
			}
			mw, err := w.Member(name, npy.Header)
			if err != nil {
				t.Fatal(err)
			}
			mw.Write(data[npy.DataOffset:])
		}
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
		os.WriteFile(filepath.Join(dir, fmt.Sprintf("pair%v.npz", compress)), b.Bytes(), 0o644)
	}
	for _, c := range []struct{ in, to string }{{"big.npy", "npy"}, {"small.npy", "npy"}, {"small.npy", "json"}, {"small.npy", "raw"}, {"pairfalse.npz", "npz"}, {"pairtrue.npz", "npz"}} {
		ref := filepath.Join(dir, "ref."+c.to)
		runStdio(t, dir, nil, nil, 0, "s2d", "-b", "2", "--to", c.to, c.in, "-o", ref)
		want := read(t, ref)

		// > out: truncated, offset 0.
		out := filepath.Join(dir, "out")
		f, err := os.OpenFile(out, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
		if err != nil {
			t.Fatal(err)
		}
		runStdio(t, dir, nil, f, 0, "s2d", "-b", "2", "--to", c.to, c.in)
		// The descriptor's offset is after the result: what the shell
		// writes next follows it.
		if _, err := f.Write([]byte("TAIL")); err != nil {
			t.Fatal(err)
		}
		f.Close()
		if got := read(t, out); !bytes.Equal(got, append(append([]byte{}, want...), "TAIL"...)) {
			t.Errorf("%s --to %s > out: %d bytes, want the %d of -o and TAIL", c.in, c.to, len(got), len(want))
		}

		// An offset: something was written to the descriptor before.
		f, _ = os.OpenFile(out, os.O_WRONLY|os.O_TRUNC, 0)
		f.Write([]byte("HEAD"))
		runStdio(t, dir, nil, f, 0, "s2d", "-b", "2", "--to", c.to, c.in)
		f.Close()
		if got := read(t, out); !bytes.Equal(got, append([]byte("HEAD"), want...)) {
			t.Errorf("%s --to %s at offset 4: %d bytes, want HEAD and the %d of -o", c.in, c.to, len(got), len(want))
		}

		// >> out: appended, twice.
		f, _ = os.OpenFile(out, os.O_WRONLY|os.O_APPEND, 0)
		runStdio(t, dir, nil, f, 0, "s2d", "-b", "2", "--to", c.to, c.in)
		runStdio(t, dir, nil, f, 0, "s2d", "-b", "2", "--to", c.to, c.in)
		f.Close()
		if got := read(t, out); !bytes.Equal(got, append(append(append([]byte("HEAD"), want...), want...), want...)) {
			t.Errorf("%s --to %s >> out: %d bytes, want HEAD and three results of %d", c.in, c.to, len(got), len(want))
		}

		// < in: read by position, also from an offset.
		in, _ := os.Open(filepath.Join(dir, c.in))
		o, _ := os.Create(out)
		runStdio(t, dir, in, o, 0, "s2d", "-b", "2", "--to", c.to, "-")
		in.Close()
		o.Close()
		if got := read(t, out); !bytes.Equal(got, want) {
			t.Errorf("%s --to %s < in > out: %d bytes, want the %d of -o", c.in, c.to, len(got), len(want))
		}
		shifted := filepath.Join(dir, "shifted")
		os.WriteFile(shifted, append([]byte("JUNK"), read(t, filepath.Join(dir, c.in))...), 0o644)
		in, _ = os.Open(shifted)
		in.Seek(4, 0)
		runStdio(t, dir, in, nil, 0, "s2d", "-b", "2", "--to", c.to, "-", "-o", out)
		in.Close()
		if got := read(t, out); !bytes.Equal(got, want) {
			t.Errorf("%s --to %s from stdin at offset 4: %d bytes, want the %d of -o", c.in, c.to, len(got), len(want))
		}
	}
}

// A run that fails after it started writing to a standard output that is
// a file leaves the file as it was: cut back to its size before the run.
func TestStdoutFileFailureRestores(t *testing.T) {
	dir := t.TempDir()
	sparseNpy(t, filepath.Join(dir, "big.npy"), "<f4", []int{1, 4, 1024, 1024}, 7)
	whole := read(t, filepath.Join(dir, "big.npy"))
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	go func() {
		w.Write(whole[:len(whole)/2]) // the header promises twice as much
		w.Close()
	}()
	out := filepath.Join(dir, "out")
	os.WriteFile(out, []byte("PREFIX"), 0o644)
	f, _ := os.OpenFile(out, os.O_WRONLY|os.O_APPEND, 0)
	stderr := runStdio(t, dir, r, f, 2, "s2d", "-b", "2", "-")
	f.Close()
	r.Close()
	if got := read(t, out); string(got) != "PREFIX" {
		t.Errorf("after a failed run (%q) the file holds %d bytes, want PREFIX as before", stderr, len(got))
	}
}
