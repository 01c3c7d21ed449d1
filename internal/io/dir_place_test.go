package fileio

import (
	"context"
	"errors"
	"io/fs"
	"iter"
	"os"
	"path"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
)

// memStore is a place of objects in memory (mem://B/KEY) that holds
// stores, logging its PUTs and DELETEs in order.
type memStore struct {
	mu      sync.Mutex
	objects map[string][]byte
	log     []string
	failPut string        // a PUT of a name holding this fails
	gate    chan struct{} // when set, each PUT waits for a receive from it
}

var memPlace = &memStore{objects: map[string][]byte{}}

func init() { Register("mem://", memPlace) }

func (m *memStore) reset() {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.objects, m.log, m.failPut, m.gate = map[string][]byte{}, nil, "", nil
}

func (m *memStore) Parse(name string) (bool, error) {
	_, key, _ := strings.Cut(strings.TrimPrefix(name, "mem://"), "/")
	return key == "" || strings.HasSuffix(key, "/"), nil
}
func (*memStore) Ready() error { return nil }
func (*memStore) ReadFirst(string, []byte) (int, int64, error) {
	return 0, 0, errors.ErrUnsupported
}
func (*memStore) Download(context.Context, string, *os.File, int64, int64, func(int64, int64)) error {
	return errors.ErrUnsupported
}
func (*memStore) Writer(string, func() (*os.File, error)) ObjectWriter { return nil }
func (*memStore) AbortAll()                                            {}
func (m *memStore) Exists(name string) (bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	_, ok := m.objects[name]
	return ok, nil
}
func (m *memStore) IsDir(name string) bool {
	for e := range m.List(name) {
		_ = e
		return true
	}
	return false
}
func (m *memStore) List(name string) iter.Seq2[Entry, error] {
	dir := DirURL(name)
	m.mu.Lock()
	var names []string
	for k := range m.objects {
		if strings.HasPrefix(k, dir) {
			names = append(names, k)
		}
	}
	m.mu.Unlock()
	slices.Sort(names)
	return func(yield func(Entry, error) bool) {
		for _, k := range names {
			if !yield(Entry{Name: k, Rel: strings.TrimPrefix(k, dir)}, nil) {
				return
			}
		}
	}
}
func (m *memStore) GetObject(_ context.Context, name string, limit int64) ([]byte, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	b, ok := m.objects[name]
	if !ok {
		return nil, fs.ErrNotExist
	}
	return b, nil
}
func (m *memStore) GetObjectRange(ctx context.Context, name string, off, n int64) ([]byte, error) {
	b, err := m.GetObject(ctx, name, 1<<40)
	if err != nil || n == 0 {
		return nil, err
	}
	return b[off : off+n], nil
}
func (m *memStore) ObjectSize(ctx context.Context, name string) (int64, error) {
	b, err := m.GetObject(ctx, name, 1<<40)
	return int64(len(b)), err
}
func (*memStore) ListChildren(context.Context, string) ([]string, error) {
	return nil, errors.ErrUnsupported
}
func (m *memStore) PutObject(_ context.Context, name string, data []byte) error {
	if m.gate != nil {
		<-m.gate
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.failPut != "" && strings.Contains(name, m.failPut) {
		return errors.New("refused")
	}
	m.objects[name] = data
	m.log = append(m.log, "PUT "+strings.TrimPrefix(name, "mem://b/s.zarr/"))
	return nil
}
func (m *memStore) DeleteObject(_ context.Context, name string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.objects, name)
	m.log = append(m.log, "DELETE "+strings.TrimPrefix(name, "mem://b/s.zarr/"))
	return nil
}

func (m *memStore) keys() []string {
	var keys []string
	for e := range m.List("mem://b/s.zarr/") {
		keys = append(keys, e.Rel)
	}
	return keys
}

func isMeta(key string) bool { return path.Base(key) == "meta" }

func claimsMeta(d *Dir) bool {
	_, err := d.Size("meta")
	return err == nil
}

// TestPlaceOutputOrder: a store written to a place puts its data
// objects first and its metadata objects at Commit, deepest first and
// the root's last; a store already there loses, after that, the objects
// the new one does not have, its metadata before the first chunk.
func TestPlaceOutputOrder(t *testing.T) {
	memPlace.reset()
	memPlace.objects["mem://b/s.zarr/meta"] = []byte("old")
	memPlace.objects["mem://b/s.zarr/c/9"] = []byte("old chunk")
	memPlace.objects["mem://b/s.zarr/a/meta"] = []byte("old member")
	o, err := CreateStore("mem://b/s.zarr", claimsMeta, isMeta)
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"meta", "x/y/meta", "x/y/c/0", "x/meta", "c/0", "c/1"} {
		if err := o.Put(k, []byte(k)); err != nil {
			t.Fatal(err)
		}
	}
	if err := o.Commit(); err != nil {
		t.Fatal(err)
	}
	log := memPlace.log
	var data, meta, deleted []string
	for _, l := range log {
		switch {
		case strings.HasPrefix(l, "DELETE "):
			deleted = append(deleted, l)
		case isMeta(strings.TrimPrefix(l, "PUT ")):
			meta = append(meta, l)
		default:
			if len(meta) > 0 {
				t.Fatalf("data object put after metadata: %q", log)
			}
			data = append(data, l)
		}
	}
	slices.Sort(data)
	if want := []string{"PUT c/0", "PUT c/1", "PUT x/y/c/0"}; !slices.Equal(data, want) {
		t.Errorf("data puts %q, want %q", data, want)
	}
	if want := []string{"PUT x/y/meta", "PUT x/meta", "PUT meta"}; !slices.Equal(meta, want) {
		t.Errorf("metadata puts %q, want %q (deepest first, root last)", meta, want)
	}
	// The old metadata first, before any chunk; the old chunks last.
	if want := []string{"DELETE a/meta", "DELETE meta", "DELETE c/9"}; !slices.Equal(deleted, want) {
		t.Errorf("deleted %q, want %q", deleted, want)
	}
	if first := slices.IndexFunc(log, func(l string) bool { return strings.HasPrefix(l, "PUT ") }); first < 2 || !slices.Equal(log[:2], []string{"DELETE a/meta", "DELETE meta"}) {
		t.Errorf("a chunk put before the old store's metadata is deleted: %q", log)
	}
	if i := slices.Index(log, "PUT meta"); i > slices.Index(log, "DELETE c/9") {
		t.Errorf("the old store's objects deleted before the new root metadata: %q", log)
	}
	if want := []string{"c/0", "c/1", "meta", "x/meta", "x/y/c/0", "x/y/meta"}; !slices.Equal(memPlace.keys(), want) {
		t.Errorf("objects %q, want %q", memPlace.keys(), want)
	}
}

// TestPlaceOutputAbort: a failed data PUT fails the next Put or Commit,
// and every object the run put is deleted, no metadata put; Abort does
// the same; a store already there keeps its objects but those the run
// overwrote.
func TestPlaceOutputAbort(t *testing.T) {
	for _, fail := range []bool{true, false} {
		memPlace.reset()
		memPlace.objects["mem://b/other"] = []byte("beside")
		o, err := CreateStore("mem://b/s.zarr/", claimsMeta, isMeta)
		if err != nil {
			t.Fatal(err)
		}
		if fail {
			memPlace.failPut = "c/2"
		}
		var perr error
		for _, k := range []string{"c/0", "c/1", "meta", "c/2"} {
			if perr = o.Put(k, []byte(k)); perr != nil {
				break
			}
		}
		if fail {
			err := o.Commit()
			if err == nil || !strings.Contains(err.Error(), "c/2: refused") {
				t.Fatalf("commit after a failed put: %v, %v", perr, err)
			}
		} else {
			o.Abort()
		}
		if keys := memPlace.keys(); len(keys) != 0 {
			t.Errorf("fail %v: objects left: %q", fail, keys)
		}
		if slices.ContainsFunc(memPlace.log, func(l string) bool { return l == "PUT meta" }) {
			t.Errorf("fail %v: metadata put: %q", fail, memPlace.log)
		}
		if _, ok := memPlace.objects["mem://b/other"]; !ok {
			t.Errorf("fail %v: an object beside the store was deleted", fail)
		}
	}
}

// TestPlaceOutputReplaceFails: a failed replacement of a store leaves
// no store whose metadata a reader would take new chunks under: the
// old metadata goes before the first chunk, the rest of the old store
// and every object put go at the failure, and the error says the old
// store is deleted.
func TestPlaceOutputReplaceFails(t *testing.T) {
	for _, viaCommit := range []bool{true, false} {
		memPlace.reset()
		memPlace.objects["mem://b/other"] = []byte("beside")
		memPlace.objects["mem://b/s.zarr/meta"] = []byte("old")
		for _, k := range []string{"c/0", "c/1", "c/2", "c/3"} {
			memPlace.objects["mem://b/s.zarr/"+k] = []byte("old chunk")
		}
		o, err := CreateStore("mem://b/s.zarr", claimsMeta, isMeta)
		if err != nil {
			t.Fatal(err)
		}
		if viaCommit {
			memPlace.failPut = "c/1"
		}
		for _, k := range []string{"c/0", "c/1", "meta"} {
			if o.Put(k, []byte("new "+k)) != nil {
				break
			}
		}
		if viaCommit {
			err = o.Commit()
		} else {
			err = o.Abandon(errors.New("chunk 2: corrupt"))
		}
		if err == nil || !strings.Contains(err.Error(), "the store that was at mem://b/s.zarr/ is deleted") {
			t.Errorf("commit %v: error %v does not say the old store is deleted", viaCommit, err)
		}
		if keys := memPlace.keys(); len(keys) != 0 {
			t.Errorf("commit %v: objects left: %q", viaCommit, keys)
		}
		if i, j := slices.Index(memPlace.log, "DELETE meta"), slices.Index(memPlace.log, "PUT c/0"); i < 0 || (j >= 0 && j < i) {
			t.Errorf("commit %v: a chunk put before the old metadata is deleted: %q", viaCommit, memPlace.log)
		}
		if _, ok := memPlace.objects["mem://b/other"]; !ok {
			t.Errorf("commit %v: an object beside the store was deleted", viaCommit)
		}
	}
}

// TestPlaceOutputLeftovers: a prefix holding only objects shaped as
// chunk keys and no metadata (what a killed run leaves) is replaced,
// those objects deleted once the new store is in; one object of another
// shape among them has the prefix refused.
func TestPlaceOutputLeftovers(t *testing.T) {
	memPlace.reset()
	for _, k := range []string{"0.0", "1/0", "c/0/1", "c.2.0", "c", "m/x/3.1"} {
		memPlace.objects["mem://b/s.zarr/"+k] = []byte("left")
	}
	o, err := CreateStore("mem://b/s.zarr", claimsMeta, isMeta)
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"c/0/0", "meta"} {
		if err := o.Put(k, []byte("new")); err != nil {
			t.Fatal(err)
		}
	}
	if err := o.Commit(); err != nil {
		t.Fatal(err)
	}
	if want := []string{"c/0/0", "meta"}; !slices.Equal(memPlace.keys(), want) {
		t.Errorf("objects %q, want %q", memPlace.keys(), want)
	}
	for _, odd := range []string{"notes.txt", "0.x", "c/0/a", "a.c"} {
		memPlace.reset()
		memPlace.objects["mem://b/s.zarr/0.0"] = []byte("left")
		memPlace.objects["mem://b/s.zarr/"+odd] = []byte("x")
		if _, err := CreateStore("mem://b/s.zarr", claimsMeta, isMeta); err == nil || !strings.Contains(err.Error(), "not a store") {
			t.Errorf("leftovers and %q: %v", odd, err)
		}
	}
}

// TestPlaceOutputBudgetBeforeCopy: a Put waiting for the PUT budget
// holds no copy of its object: the copies held are those under way.
func TestPlaceOutputBudgetBeforeCopy(t *testing.T) {
	memPlace.reset()
	memPlace.gate = make(chan struct{})
	o, err := CreateStore("mem://b/s.zarr", claimsMeta, isMeta)
	if err != nil {
		t.Fatal(err)
	}
	data := make([]byte, putBudget)
	if err := o.Put("c/0", data); err != nil { // under way, held at the gate
		t.Fatal(err)
	}
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	second := make(chan error)
	go func() { second <- o.Put("c/1", data) }()
	// Until the second Put waits for the budget (no clock: its stack says).
	buf := make([]byte, 1<<20)
	for waiting := false; !waiting; runtime.Gosched() {
		for g := range strings.SplitSeq(string(buf[:runtime.Stack(buf, true)]), "\n\n") {
			waiting = waiting || strings.Contains(g, "sync.(*Cond).Wait") && strings.Contains(g, "(*placeOutput).Put")
		}
	}
	runtime.ReadMemStats(&after)
	if n := after.TotalAlloc - before.TotalAlloc; n >= putBudget {
		t.Errorf("a Put waiting for the budget copied its object: %d bytes allocated", n)
	}
	memPlace.gate <- struct{}{}
	if err := <-second; err != nil {
		t.Fatal(err)
	}
	memPlace.gate <- struct{}{}
	if err := o.Commit(); err != nil {
		t.Fatal(err)
	}
}

// TestPlaceOutputRefused: a prefix holding objects that are not a store,
// or an object of the store's name, is refused before any PUT.
func TestPlaceOutputRefused(t *testing.T) {
	memPlace.reset()
	memPlace.objects["mem://b/s.zarr/notes.txt"] = []byte("x")
	if _, err := CreateStore("mem://b/s.zarr", claimsMeta, isMeta); err == nil || !strings.Contains(err.Error(), "not a store") {
		t.Errorf("a prefix of other objects: %v", err)
	}
	memPlace.reset()
	memPlace.objects["mem://b/s.zarr"] = []byte("x")
	if _, err := CreateStore("mem://b/s.zarr", claimsMeta, isMeta); err == nil || !strings.Contains(err.Error(), "is an object") {
		t.Errorf("an object of the store's name: %v", err)
	}
	if len(memPlace.log) != 0 {
		t.Errorf("requests sent: %q", memPlace.log)
	}
}
