package pipeline

import (
	"bytes"
	"errors"
	"io"
	"math/rand"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/depthspace/depthspace/internal/ops"
)

// failingWriter is a standard output whose reader went away.
type failingWriter struct{}

func (failingWriter) Write([]byte) (int, error) { return 0, errors.New("broken pipe") }

// failingAfter takes n bytes, then fails as failingWriter.
type failingAfter struct{ n int }

func (f *failingAfter) Write(p []byte) (int, error) {
	if len(p) > f.n {
		return 0, errors.New("broken pipe")
	}
	f.n -= len(p)
	return len(p), nil
}

// Streams whose jobs cannot go in order a little at a time are spooled
// (spool.go): with the threshold lowered, every such run of a small
// tensor takes that path, from a pipe to a file, from a file to a pipe and
// from a pipe to a pipe, on one and several workers, and gives the bytes
// of the run from a file to a file. A stream cut short, one with bytes
// beyond its data and a standard output that fails are errors.
func TestSpooledStreams(t *testing.T) {
	defer func(n int) { spoolAbove = n }(spoolAbove)
	spoolAbove = 0
	dir := t.TempDir()
	shape := []int{3, 8, 32, 16}
	data := make([]byte, 3*8*32*16*4)
	rand.New(rand.NewSource(5)).Read(data)
	in := filepath.Join(dir, "in.npy")
	writeNpy(t, in, "<f4", shape, false, data)
	file, err := os.ReadFile(in)
	if err != nil {
		t.Fatal(err)
	}
	req := ops.Request{Op: ops.SpaceToDepth, Block: ops.Block{2}}
	want := filepath.Join(dir, "want.npy")
	if _, err := Transform(Options{Request: req, Source: Source{Path: in}, Output: want, Threads: 1}); err != nil {
		t.Fatal(err)
	}
	wantBytes, _ := os.ReadFile(want)
	for _, threads := range []int{1, 3} {
		for _, c := range []struct {
			name           string
			pipeIn, toPipe bool
		}{{"pipe to file", true, false}, {"file to pipe", false, true}, {"pipe to pipe", true, true}} {
			o := Options{Request: req, Threads: threads, ChunkBytes: 8 << 10, Source: Source{Path: in}}
			if c.pipeIn {
				o.Source = Source{Path: "-", Stdin: bytes.NewReader(file), Stream: true}
			}
			var got []byte
			var stdout bytes.Buffer
			if c.toPipe {
				o.Output, o.Stdout = "-", &stdout
			} else {
				o.Output = filepath.Join(dir, "got.npy")
			}
			if _, err := Transform(o); err != nil {
				t.Fatalf("%s -j %d: %v", c.name, threads, err)
			}
			if c.toPipe {
				got = stdout.Bytes()
			} else {
				got, _ = os.ReadFile(o.Output)
			}
			if !bytes.Equal(got, wantBytes) {
				t.Errorf("%s -j %d: %d bytes differ from the file-to-file run", c.name, threads, len(got))
			}
		}
	}
	for _, bad := range []struct {
		name  string
		input []byte
		want  string
	}{
		{"cut short", file[:len(file)-100], "truncated"},
		{"bytes beyond", append(append([]byte{}, file...), 1, 2, 3), "beyond"},
	} {
		var stdout bytes.Buffer
		o := Options{Request: req, Threads: 2, ChunkBytes: 8 << 10, Source: Source{Path: "-", Stdin: bytes.NewReader(bad.input), Stream: true},
			Output: "-", Stdout: &stdout}
		if _, err := Transform(o); err == nil || !strings.Contains(err.Error(), bad.want) {
			t.Errorf("%s: err = %v, want %q", bad.name, err, bad.want)
		}
	}
	// A real pipe on standard output: the spool sends with sendfile.
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	got := make(chan []byte)
	go func() {
		b, _ := io.ReadAll(r)
		got <- b
	}()
	_, err = Transform(Options{Request: req, Threads: 2, ChunkBytes: 8 << 10, Source: Source{Path: "-", Stdin: bytes.NewReader(file), Stream: true}, Output: "-", Stdout: w})
	w.Close()
	if b := <-got; err != nil || !bytes.Equal(b, wantBytes) {
		t.Errorf("pipe to an os.Pipe: err %v, %d bytes, equal %v", err, len(b), bytes.Equal(b, wantBytes))
	}
	o := Options{Request: req, Threads: 2, ChunkBytes: 8 << 10, Source: Source{Path: in}, Output: "-", Stdout: failingWriter{}}
	if _, err := Transform(o); err == nil || !strings.Contains(err.Error(), "broken pipe") {
		t.Errorf("a failing standard output: err = %v", err)
	}
	// One that fails once the data have begun (a server gone in the
	// middle of an object's upload) fails as the output, not the input.
	o.Stdout = &failingAfter{n: 16 << 10}
	if _, err := Transform(o); err == nil || !strings.Contains(err.Error(), "broken pipe") || strings.Contains(err.Error(), in) {
		t.Errorf("a standard output failing after 16 KiB: err = %v, want the output's failure, not the input's", err)
	}
}

// The output spool sends a prefix only once every byte of it is written:
// chunks marked done in a shuffled order, the prefix it declares ready is
// checked after each against a map of the bytes the done chunks cover.
func TestOutSpoolPrefix(t *testing.T) {
	for _, shape := range [][]int{{3, 8, 32, 16}, {2, 4, 8, 64}} {
		p, err := ops.NewPlan(ops.Request{Op: ops.SpaceToDepth, Block: ops.Block{2}}, shape, 4, false)
		if err != nil {
			t.Fatal(err)
		}
		ck, err := p.Chunker(8<<10, false, false)
		if err != nil {
			t.Fatal(err)
		}
		o := &outSpool{size: int64(p.Bytes())}
		o.learn(ck)
		n := ck.Len()
		covered := make([]bool, o.size)
		var ready int64
		for _, i := range rand.New(rand.NewSource(int64(n))).Perm(n) {
			ready = o.markDone(i)
			for _, s := range ck.Chunk(i).Out {
				for b := s.Off; b < s.Off+s.Len; b++ {
					covered[b] = true
				}
			}
			for b := int64(0); b < ready; b++ {
				if !covered[b] {
					t.Fatalf("shape %v: byte %d declared ready before any chunk wrote it", shape, b)
				}
			}
		}
		if ready != o.size {
			t.Errorf("shape %v: %d of %d bytes ready at the end", shape, ready, o.size)
		}
	}
}
