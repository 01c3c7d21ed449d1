package batch

import (
	"bytes"
	"context"
	"errors"
	"io/fs"
	"iter"
	"os"
	"sort"
	"strings"
	"sync"
	"testing"

	fileio "github.com/depthspace/depthspace/internal/io"
)

// memPlace is a place data lives (fileio.Place) in memory, "mem://B/KEY",
// with one bucket, b: what a batch asks of a bucket, without a server.
type memPlace struct {
	mu      sync.Mutex
	objects map[string][]byte // by URL
}

var mem = &memPlace{objects: map[string][]byte{}}

func init() { fileio.Register("mem://", mem) }

func (m *memPlace) bucketKey(name string) (bucket, key string) {
	rest := strings.TrimPrefix(name, "mem://")
	bucket, key, _ = strings.Cut(rest, "/")
	return bucket, key
}

func (m *memPlace) Parse(name string) (bool, error) {
	_, key := m.bucketKey(name)
	return key == "" || strings.HasSuffix(key, "/"), nil
}
func (m *memPlace) Ready() error { return nil }

func (m *memPlace) get(name string) ([]byte, error) {
	if b, _ := m.bucketKey(name); b != "b" {
		return nil, errors.New("no such bucket")
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	data, ok := m.objects[name]
	if !ok {
		return nil, fs.ErrNotExist
	}
	return data, nil
}

func (m *memPlace) ReadFirst(name string, p []byte) (int, int64, error) {
	data, err := m.get(name)
	if err != nil {
		return 0, 0, err
	}
	return copy(p, data), int64(len(data)), nil
}

func (m *memPlace) Download(_ context.Context, name string, f *os.File, from, size int64, arrived func(off, n int64)) error {
	data, err := m.get(name)
	if err != nil {
		return err
	}
	_, err = f.WriteAt(data[from:size], from)
	if err == nil {
		arrived(from, size-from)
	}
	return err
}

func (m *memPlace) Writer(name string, scratch func() (*os.File, error)) fileio.ObjectWriter {
	return &memWriter{m: m, name: name, scratch: scratch}
}

// memWriter keeps the bytes written in f and stores them at Commit.
type memWriter struct {
	m       *memPlace
	name    string
	scratch func() (*os.File, error)
	mu      sync.Mutex
	f       *os.File // made by the first write
	pos, n  int64    // where Write goes on; the object's size
}

// errBroke is the failure of an object whose key holds "broken", once
// 1 MiB of it has been sent: a server gone in the middle of an upload.
var errBroke = errors.New("the connection broke")

func (w *memWriter) Write(p []byte) (int, error) {
	n, err := w.WriteAt(p, w.pos)
	w.pos += int64(n)
	return n, err
}

func (w *memWriter) WriteAt(p []byte, off int64) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if strings.Contains(w.name, "broken") && off+int64(len(p)) > 1<<20 {
		return 0, errBroke
	}
	if err := w.open(); err != nil {
		return 0, err
	}
	n, err := w.f.WriteAt(p, off)
	w.n = max(w.n, off+int64(n))
	return n, err
}

func (w *memWriter) open() error {
	if w.f != nil {
		return nil
	}
	f, err := w.scratch()
	w.f = f
	return err
}

func (w *memWriter) ReadAt(p []byte, off int64) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if err := w.open(); err != nil {
		return 0, err
	}
	return w.f.ReadAt(p, off)
}

func (w *memWriter) Reserve(size int64) error {
	_, err := w.File(size)
	return err
}

func (w *memWriter) File(size int64) (*os.File, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if err := w.open(); err != nil {
		return nil, err
	}
	w.n = max(w.n, size)
	return w.f, w.f.Truncate(w.n)
}

func (w *memWriter) Size() int64 { return w.n }

func (w *memWriter) Commit() error {
	data := make([]byte, w.n)
	if w.f != nil {
		defer w.f.Close()
		if _, err := w.f.ReadAt(data, 0); err != nil && w.n > 0 {
			return err
		}
	}
	w.m.mu.Lock()
	defer w.m.mu.Unlock()
	w.m.objects[w.name] = data
	return nil
}

func (w *memWriter) Abort() {
	if w.f != nil {
		w.f.Close()
	}
}

func (m *memPlace) AbortAll() {}

// memPut makes the object name a copy of the file path.
func memPut(t *testing.T, name, path string) {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	mem.mu.Lock()
	mem.objects[name] = data
	mem.mu.Unlock()
}

func (m *memPlace) Exists(name string) (bool, error) {
	_, err := m.get(name)
	if errors.Is(err, fs.ErrNotExist) {
		return false, nil
	}
	return err == nil, err
}

func (m *memPlace) IsDir(name string) bool {
	if dir, _ := m.Parse(name); dir {
		return true
	}
	entries, _ := m.list(name)
	return len(entries) > 0
}

func (m *memPlace) List(name string) iter.Seq2[fileio.Entry, error] {
	return func(yield func(fileio.Entry, error) bool) {
		entries, err := m.list(name)
		if err != nil {
			yield(fileio.Entry{}, err)
			return
		}
		for _, e := range entries {
			if !yield(e, nil) {
				return
			}
		}
	}
}

func (m *memPlace) list(name string) ([]fileio.Entry, error) {
	if b, _ := m.bucketKey(name); b != "b" {
		return nil, errors.New("no such bucket")
	}
	dir := strings.TrimSuffix(name, "/") + "/"
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []fileio.Entry
	for k, v := range m.objects {
		if strings.HasPrefix(k, dir) {
			out = append(out, fileio.Entry{Name: k, Rel: k[len(dir):], Size: int64(len(v))})
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Rel < out[j].Rel })
	return out, nil
}

// An --out-dir in a bucket is made by its objects: nothing is created in
// the current directory (a local ./mem:/b/out/ tree was, empty, while the
// outputs went to the bucket).
func TestRunObjectOutDirMakesNothingLocal(t *testing.T) {
	chdir(t)
	writeNpy(t, "in/a.npy", 1, 1, 2, 2)
	var stderr bytes.Buffer
	sum, err := Run(Options{Inputs: []string{"in"}, OutDir: "mem://b/out", Job: s2d(t), Threads: 1, Stderr: &stderr})
	if err != nil || sum.Done != 1 {
		t.Fatalf("%+v, %v: %s", sum, err, stderr.String())
	}
	if ok, _ := mem.Exists("mem://b/out/a.npy"); !ok {
		t.Error("mem://b/out/a.npy was not written")
	}
	if entries, _ := os.ReadDir("."); len(entries) != 1 {
		t.Errorf("the current directory holds %d entries, want in/ alone", len(entries))
	}
}

// A bucket alone that cannot be listed sorts, and is dealt to a shard, as
// the same bucket with its "/": its relative path is empty, not the
// bucket's name.
func TestRunBucketAloneSortsAsItsPrefix(t *testing.T) {
	chdir(t)
	writeNpy(t, "in/a.npy", 1, 1, 2, 2)
	memPut(t, "mem://b/src/a.npy", "in/a.npy")
	for _, bucket := range []string{"mem://nosuchbucket", "mem://nosuchbucket/"} {
		var stdout, stderr bytes.Buffer
		_, err := Run(Options{Inputs: []string{"mem://b/src/a.npy", bucket}, OutDir: "out", Job: s2d(t), Threads: 1, JSON: &stdout, Stderr: &stderr})
		if err != nil {
			t.Fatal(err)
		}
		recs, _ := records(t, stdout.Bytes())
		if len(recs) != 2 || recs[0].Input != bucket {
			t.Errorf("%s: records %+v, want its failure first (relative path \"\" sorts before a.npy)", bucket, recs)
		}
	}
}

// An object output is sent while it is computed: a big one (streamed in
// chunks) whose upload breaks off fails with the output's name, as a
// full disk does for a file, and leaves no object; the others are made.
func TestRunObjectUploadBroken(t *testing.T) {
	chdir(t)
	writeNpy(t, "in/broken.npy", 1, 4, 1024, 2048) // 8 MiB: two chunks
	writeNpy(t, "in/whole.npy", 1, 4, 1024, 2048)
	for _, name := range []string{"broken", "whole"} {
		data, err := os.ReadFile("in/" + name + ".npy")
		if err != nil {
			t.Fatal(err)
		}
		mem.mu.Lock()
		mem.objects["mem://b/big/"+name+".npy"] = data
		mem.mu.Unlock()
	}
	var stdout, stderr bytes.Buffer
	sum, err := Run(Options{Inputs: []string{"mem://b/big/"}, OutDir: "mem://b/bigout/", Job: s2d(t), Threads: 2, JSON: &stdout, Stderr: &stderr})
	if err != nil {
		t.Fatal(err)
	}
	if sum.Done != 1 || sum.Failed != 1 {
		t.Fatalf("%+v: %s", sum, stderr.String())
	}
	if want := "depthspace: mem://b/big/broken.npy: mem://b/bigout/broken.npy: the connection broke\n"; !strings.Contains(stderr.String(), want) {
		t.Errorf("stderr %q, want the line %q", stderr.String(), want)
	}
	if ok, _ := mem.Exists("mem://b/bigout/broken.npy"); ok {
		t.Error("the broken upload made an object")
	}
	if _, err := Run(Options{Inputs: []string{"in/whole.npy"}, OutDir: "out", Job: s2d(t), Threads: 2, Stderr: &stderr}); err != nil {
		t.Fatal(err)
	}
	want, err := os.ReadFile("out/whole.npy")
	if err != nil {
		t.Fatal(err)
	}
	if got, err := mem.get("mem://b/bigout/whole.npy"); err != nil || !bytes.Equal(got, want) {
		t.Errorf("the object is %d bytes (%v), not the %d of the same run into a directory", len(got), err, len(want))
	}
}
