//go:build linux

package pipeline

import (
	"bytes"
	"crypto/sha256"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/depthspace/depthspace/internal/format"
	"github.com/depthspace/depthspace/internal/format/json"
	"github.com/depthspace/depthspace/internal/format/npy"
	"github.com/depthspace/depthspace/internal/format/raw"
	fileio "github.com/depthspace/depthspace/internal/io"
	"github.com/depthspace/depthspace/internal/ops"
	"github.com/depthspace/depthspace/internal/testpeer"
)

// Faults below the command line, where they can be produced exactly: an
// input truncated while it is mapped, and a full disk under every way Store
// writes a result. The process-level versions (real signals, a real
// binary) are in internal/cli/reliability_test.go; docs/reliability.md
// lists them all.

func fileHash(t *testing.T, path string) [32]byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return sha256.Sum256(b)
}

// tempFiles lists the temporary outputs (fileio.TempPattern) left in dir.
func tempFiles(t *testing.T, dir string) []string {
	t.Helper()
	m, err := filepath.Glob(filepath.Join(dir, ".*.depthspace-*.tmp"))
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// truncatedInput writes an npy tensor spanning many pages, maps it with
// fileio.Open as the pipeline does, then truncates the file to its header,
// as another process could: every data page of the mapping is now beyond
// the end of the file, and touching it raises SIGBUS.
func truncatedInput(t *testing.T) (path string, in *fileio.Input, n npy.Npy) {
	t.Helper()
	path = filepath.Join(t.TempDir(), "in.npy")
	// 1.5 MiB: files under 1 MiB are read, not mapped.
	shape := []int{2, 3, 256, 256}
	data := bytes.Repeat([]byte{1, 2, 3, 4, 5, 6, 7, 8}, 2*3*256*256*4/8)
	writeNpy(t, path, "<f4", shape, false, data)
	in, err := fileio.Open(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { in.Close() })
	if !in.Mapped {
		t.Skip("the filesystem of t.TempDir() cannot map files")
	}
	if n, err = npy.ParseNpy(in.Data); err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(path, n.DataOffset); err != nil {
		t.Fatal(err)
	}
	return path, in, n
}

// A mapped input truncated underneath: the kernel returns *ops.FaultError
// (debug.SetPanicOnFault + recover in the engine), on one thread and many,
// instead of the process dying of SIGBUS.
func TestTruncatedWhileMappedIsAnError(t *testing.T) {
	for _, threads := range []int{1, 2, 4} {
		_, in, n := truncatedInput(t)
		plan, err := ops.NewPlan(ops.Request{Block: ops.Block{2}}, n.Shape, n.DType.Size, false)
		if err != nil {
			t.Fatal(err)
		}
		dst := make([]byte, plan.Bytes())
		err = plan.Run(dst, in.Data[n.DataOffset:], threads)
		var fe *ops.FaultError
		if !errors.As(err, &fe) {
			t.Fatalf("-j %d: got %v, want *ops.FaultError", threads, err)
		}
		if !strings.Contains(err.Error(), "truncated") || strings.Contains(err.Error(), "\n") {
			t.Errorf("-j %d: message %q does not say what happened in one line", threads, err)
		}
		// Item by item (the path for pipes) faults the same way.
		item := plan.Bytes() / plan.Out[0]
		if err := plan.RunItems(dst[:item], in.Data[n.DataOffset:], 1, 1, threads); !errors.As(err, &fe) {
			t.Fatalf("-j %d RunItems: got %v, want *ops.FaultError", threads, err)
		}
	}
}

// The same fault during Store, for each way of writing the result: the
// error comes back, the previous output is untouched and no temporary file
// is left.
func TestTruncatedWhileMappedLeavesNoOutput(t *testing.T) {
	// The file must be big enough to be mapped (fileio reads files under
	// 1 MiB instead): 2 items of 768 KiB.
	for name, limit := range map[string]int{"buffered": 0, "items": 800000, "mapped": 1024} {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			// Load maps the file, as the command line does; then it
			// shrinks to its header.
			big := filepath.Join(dir, "big.npy")
			writeNpy(t, big, "<f4", []int{2, 3, 256, 256}, false, make([]byte, 2*3*256*256*4))
			tensor, err := Load(Source{Path: big})
			if err != nil {
				t.Fatal(err)
			}
			defer tensor.Close()
			if err := os.Truncate(big, tensor.Stored.DataOffset); err != nil {
				t.Fatal(err)
			}
			plan, err := ops.NewPlan(ops.Request{Block: ops.Block{2}}, tensor.Shape, 4, false)
			if err != nil {
				t.Fatal(err)
			}
			out := filepath.Join(dir, "out.npy")
			if err := os.WriteFile(out, []byte("previous contents"), 0o644); err != nil {
				t.Fatal(err)
			}
			before := fileHash(t, out)
			items := plan.Out[0]
			prod := Producer{Itemwise: true, Items: items, Run: func(dst []byte, first, count int) error {
				if first == 0 && count == items {
					return plan.Run(dst, tensor.Data, 2)
				}
				return plan.RunItems(dst, tensor.Data, first, count, 2)
			}}
			err = Store(out, npy.KindNpy, format.Header{DType: tensor.DType, Shape: plan.Out}, nil, limit, prod)
			var fe *ops.FaultError
			if !errors.As(err, &fe) {
				t.Fatalf("got %v, want *ops.FaultError", err)
			}
			if fileHash(t, out) != before {
				t.Error("the previous output was modified")
			}
			if left := tempFiles(t, filepath.Dir(out)); len(left) > 0 {
				t.Errorf("left behind: %v", left)
			}
		})
	}
}

// A full disk under each way a result is written: streamed chunk by chunk
// (npy and raw, C-order input: the blocks are reserved with fallocate
// before any work), and through Store (JSON text; a Fortran-order input,
// with the whole result in one buffer, batch items through a bounded
// buffer, or a mapping of the output when one item is over the buffer
// limit). Each gives ENOSPC naming the output, keeps the previous output,
// leaves no temporary file and gives the space back.
func TestFullDiskEveryStrategy(t *testing.T) {
	full := testpeer.Tmpfs(t, "4m")
	dir := t.TempDir()
	shape := []int{6, 4, 512, 512} // 6 MiB of uint8, 1 MiB per batch item
	data := make([]byte, 6*4*512*512)
	for i := range data {
		data[i] = byte(i * 7)
	}
	inputs := map[bool]string{false: filepath.Join(dir, "c.npy"), true: filepath.Join(dir, "f.npy")}
	for fortran, path := range inputs {
		writeNpy(t, path, "|u1", shape, fortran, data)
	}
	sums := map[string][32]byte{}
	for _, path := range inputs {
		sums[path] = fileHash(t, path)
	}
	out := filepath.Join(full, "out.npy")
	if err := os.WriteFile(out, []byte("previous contents"), 0o644); err != nil {
		t.Fatal(err)
	}
	outHash := fileHash(t, out)
	for _, c := range []struct {
		name    string
		fortran bool
		limit   int
		to      format.Kind
	}{
		{"streamed npy", false, 0, npy.KindNpy},
		{"streamed raw", false, 0, raw.KindRaw},
		{"json", false, 0, json.KindJSON},
		{"store whole buffer", true, 64 << 20, npy.KindNpy},
		{"store items", true, 1 << 20, npy.KindNpy},
		{"store mapped", true, 1024, npy.KindNpy},
	} {
		t.Run(c.name, func(t *testing.T) {
			o := Options{Request: ops.Request{Block: ops.Block{2}}, Source: Source{Path: inputs[c.fortran]}, Output: out,
				To: c.to, Threads: 2, BufferLimit: c.limit}
			_, err := Transform(o)
			if !errors.Is(err, syscall.ENOSPC) || !strings.Contains(err.Error(), "no space left on device") {
				t.Fatalf("got %v, want ENOSPC", err)
			}
			if !strings.HasPrefix(err.Error(), out+": ") {
				t.Errorf("the message does not name the output: %q", err)
			}
			if fileHash(t, out) != outHash {
				t.Error("the previous output was modified")
			}
			if left := tempFiles(t, full); len(left) > 0 {
				t.Errorf("left behind: %v", left)
			}
			var st syscall.Statfs_t
			if err := syscall.Statfs(full, &st); err != nil {
				t.Fatal(err)
			}
			if used := (st.Blocks - st.Bfree) * uint64(st.Bsize); used > 64<<10 {
				t.Errorf("%d bytes still used on the full filesystem", used)
			}
		})
	}
	for path, sum := range sums {
		if fileHash(t, path) != sum {
			t.Errorf("%s was modified", path)
		}
	}
	// The disk is usable again: a result that fits is written.
	small := filepath.Join(dir, "small.npy")
	writeNpy(t, small, "|u1", []int{1, 1, 4, 4}, false, make([]byte, 16))
	if _, err := Transform(Options{Request: ops.Request{Block: ops.Block{2}}, Source: Source{Path: small}, Output: out, Threads: 1}); err != nil {
		t.Fatalf("after the failures: %v", err)
	}
}
