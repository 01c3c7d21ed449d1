package fileio

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"iter"
	"os"
	"path"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

// memStore is a place of objects in memory (mem://B/KEY) that holds
// stores, logging its PUTs and DELETEs in order.
type memStore struct {
	mu      sync.Mutex
	objects map[string][]byte
	log     []string
	failPut string        // a PUT of a name holding this fails
	gate    chan struct{} // when set, each PUT of a data object waits for a receive from it
	// late: a PUT of a name holding it is answered once release is
	// closed, and stored then even if its caller gave up (cancelled)
	// before, as a server stores a body it has whole; stored is closed
	// when it is.
	late                     string
	entered, release, stored chan struct{} // entered: closed when the late PUT begins
	// hang: an upload (memWriter) of a name holding it is completed only
	// when cancelled, and fails then.
	hang string
}

var memPlace = &memStore{objects: map[string][]byte{}}

func init() { Register("mem://", memPlace) }

func (m *memStore) reset() {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.objects, m.log, m.failPut, m.gate, m.late, m.entered, m.hang = map[string][]byte{}, nil, "", nil, "", nil, ""
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
func (m *memStore) Writer(name string, _ func() (*os.File, error)) ObjectWriter {
	return &memWriter{m: m, name: name, cancelled: make(chan struct{})}
}
func (*memStore) AbortAll() {}
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
			m.mu.Lock()
			size := int64(len(m.objects[k]))
			m.mu.Unlock()
			if !yield(Entry{Name: k, Rel: strings.TrimPrefix(k, dir), Size: size}, nil) {
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
func (m *memStore) PutObject(ctx context.Context, name string, data []byte) error {
	if m.gate != nil && !strings.HasSuffix(name, "/"+WritingMarker) {
		<-m.gate // the data objects': the marker goes before them, at once
	}
	if m.late != "" && strings.Contains(name, m.late) {
		if m.entered != nil {
			close(m.entered)
		}
		store := func() {
			m.mu.Lock()
			m.objects[name] = data
			m.mu.Unlock()
			close(m.stored)
		}
		select {
		case <-m.release:
			store()
			return nil
		case <-ctx.Done():
			go func() { <-m.release; store() }()
			return ctx.Err()
		}
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
	if len(log) == 0 || log[0] != "PUT "+WritingMarker {
		t.Fatalf("the first request is not the marker's PUT: %q", log)
	}
	var data, meta, deleted []string
	for _, l := range log[1:] {
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
	// The old metadata first, before any chunk; the marker and the old
	// chunks last.
	if want := []string{"DELETE a/meta", "DELETE meta", "DELETE " + WritingMarker, "DELETE c/9"}; !slices.Equal(deleted, want) {
		t.Errorf("deleted %q, want %q", deleted, want)
	}
	if !slices.Equal(log[1:3], []string{"DELETE a/meta", "DELETE meta"}) {
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

// TestPlaceOutputAbortWaitsForPuts: an abort lets the puts under way
// be answered before it deletes what the run put; a put cancelled once
// its body is sent may be stored after the cancelled call returns, and
// would be left behind (a chunk put beside a refused one, under load).
func TestPlaceOutputAbortWaitsForPuts(t *testing.T) {
	memPlace.reset()
	defer memPlace.reset()
	memPlace.late, memPlace.release, memPlace.stored = "c/0", make(chan struct{}), make(chan struct{})
	o, err := CreateStore("mem://b/s.zarr/", claimsMeta, isMeta)
	if err != nil {
		t.Fatal(err)
	}
	if err := o.Put("c/0", []byte("c/0")); err != nil {
		t.Fatal(err)
	}
	// The server answers a little after the abort begins (that order
	// only: a slow machine may answer first, and the test then passes
	// either way).
	go func() { time.Sleep(50 * time.Millisecond); close(memPlace.release) }()
	o.Abort()
	<-memPlace.stored
	if keys := memPlace.keys(); len(keys) != 0 {
		t.Errorf("objects left after the abort: %q", keys)
	}
}

// TestPlaceOutputAbortBehindMarker: an abort while the marker's request
// is unanswered is not held up behind it (it held the output's lock, so
// a Ctrl-C then never ended): the request is given up after the grace,
// and the marker, which may be on the server, deleted.
func TestPlaceOutputAbortBehindMarker(t *testing.T) {
	memPlace.reset()
	defer memPlace.reset()
	defer func(g time.Duration) { abortGrace = g }(abortGrace)
	abortGrace = 50 * time.Millisecond
	memPlace.late, memPlace.entered, memPlace.release, memPlace.stored = WritingMarker, make(chan struct{}), make(chan struct{}), make(chan struct{})
	o, err := CreateStore("mem://b/s.zarr/", claimsMeta, isMeta)
	if err != nil {
		t.Fatal(err)
	}
	put := make(chan error)
	go func() { put <- o.Put("c/0", []byte("c/0")) }()
	<-memPlace.entered
	aborted := make(chan struct{})
	go func() { o.Abort(); close(aborted) }()
	select {
	case <-aborted:
	case <-time.After(10 * time.Second): // a guard against a hang, not a measure
		t.Fatal("the abort waits for the marker's request, which is never answered")
	}
	if err := <-put; err == nil {
		t.Error("the put whose marker was given up says nothing")
	}
	if keys := memPlace.keys(); len(keys) != 0 {
		t.Errorf("objects left after the abort: %q", keys)
	}
	close(memPlace.release)
	<-memPlace.stored // the server's late store of the marker, after the test's end
}

// TestPlaceOutputInterruptWaitsForMetadata: a signal while a member's
// metadata is being put (the root's not yet: the store is not there)
// waits for that put as for a chunk's, then deletes it; a metadata
// object stored after its deletion would be left without a marker, and
// the next run would refuse the prefix. The commit then puts nothing
// more and does not return: as every failure under a signal, it waits
// for the handler's exit (128+n), where a return would have the run exit
// 2 while the handler deletes.
func TestPlaceOutputInterruptWaitsForMetadata(t *testing.T) {
	memPlace.reset()
	defer memPlace.reset()
	memPlace.late, memPlace.entered, memPlace.release, memPlace.stored = "a/meta", make(chan struct{}), make(chan struct{}), make(chan struct{})
	o, err := CreateStore("mem://b/s.zarr/", claimsMeta, isMeta)
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"a/c/0", "a/meta", "meta"} {
		if err := o.Put(k, []byte(k)); err != nil {
			t.Fatal(err)
		}
	}
	committed := make(chan error)
	go func() { committed <- o.Commit() }()
	<-memPlace.entered
	go func() { time.Sleep(50 * time.Millisecond); close(memPlace.release) }() // answered a little after the signal
	o.remote.interrupt()
	<-memPlace.stored
	if keys := memPlace.keys(); len(keys) != 0 {
		t.Errorf("objects left after the signal: %q", keys)
	}
	select {
	case err := <-committed:
		t.Errorf("the interrupted commit returned (%v): the run would exit with it, not with the signal's status", err)
	case <-time.After(time.Second): // long enough for a return the defect made at once
	}
	if keys := memPlace.keys(); len(keys) != 0 {
		t.Errorf("the interrupted commit went on after its put: %q", keys)
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

// TestPlaceOutputLeftovers: a prefix holding objects but no store's
// metadata is written over only where it holds WritingMarker (what a
// killed run leaves): every object there, chunk-shaped or not, is then
// deleted once the new store is in. Without the marker it is refused
// before any request, naming a key found, even where every key looks
// like a chunk's (logs/1, x/0.0).
func TestPlaceOutputLeftovers(t *testing.T) {
	memPlace.reset()
	for _, k := range []string{WritingMarker, "0.0", "1/0", "c/0/1", "m/meta", ".zattrs", "notes.txt"} {
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
	for _, keys := range [][]string{{"1", "2", "10"}, {"x/0.0", "x/0.1"}, {"c/0/1", "c.2.0", "c"}, {"0.0", "notes.txt"}} {
		memPlace.reset()
		for _, k := range keys {
			memPlace.objects["mem://b/s.zarr/"+k] = []byte("someone else's")
		}
		_, err := CreateStore("mem://b/s.zarr", claimsMeta, isMeta)
		if err == nil || !strings.Contains(err.Error(), "not a store") || !strings.Contains(err.Error(), `"`+slices.Min(keys)+`" among them`) {
			t.Errorf("objects %q and no marker: %v", keys, err)
		}
		if len(memPlace.log) != 0 || len(memPlace.keys()) != len(keys) {
			t.Errorf("objects %q and no marker: requests %q, objects left %q", keys, memPlace.log, memPlace.keys())
		}
	}
}

// TestPlaceOutputMarker: WritingMarker is put before any other object,
// says when and where the run began, and is deleted after the root
// metadata; a failed run deletes it after everything else it put; a
// run stopped without a word (SIGKILL: neither Commit nor Abort) leaves
// it beside its chunks, and the next run writes over them.
func TestPlaceOutputMarker(t *testing.T) {
	memPlace.reset()
	o, err := CreateStore("mem://b/s.zarr", claimsMeta, isMeta)
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"c/0", "c/1"} {
		if err := o.Put(k, []byte(k)); err != nil {
			t.Fatal(err)
		}
	}
	var mark struct {
		Started string `json:"started"`
		Host    string `json:"host"`
		PID     int    `json:"pid"`
	}
	memPlace.mu.Lock() // chunk PUTs may be under way
	text := memPlace.objects["mem://b/s.zarr/"+WritingMarker]
	memPlace.mu.Unlock()
	if err := json.Unmarshal(text, &mark); err != nil || mark.Started == "" || mark.PID != os.Getpid() {
		t.Errorf("marker %+v, %v", mark, err)
	}
	if err := o.Put("meta", []byte("m")); err != nil {
		t.Fatal(err)
	}
	if err := o.Commit(); err != nil {
		t.Fatal(err)
	}
	log := memPlace.log
	if log[0] != "PUT "+WritingMarker || log[len(log)-1] != "DELETE "+WritingMarker || log[len(log)-2] != "PUT meta" {
		t.Errorf("requests %q: want the marker's PUT first, its DELETE after the root metadata", log)
	}
	if want := []string{"c/0", "c/1", "meta"}; !slices.Equal(memPlace.keys(), want) {
		t.Errorf("objects %q, want %q", memPlace.keys(), want)
	}

	// A failed run: the marker deleted last.
	memPlace.reset()
	memPlace.failPut = "c/2"
	o, _ = CreateStore("mem://b/s.zarr", claimsMeta, isMeta)
	for _, k := range []string{"c/0", "c/1", "c/2", "meta"} {
		if o.Put(k, []byte(k)) != nil {
			break
		}
	}
	if err := o.Commit(); err == nil {
		t.Fatal("a refused PUT did not fail the run")
	}
	if log := memPlace.log; log[len(log)-1] != "DELETE "+WritingMarker || len(memPlace.keys()) != 0 {
		t.Errorf("requests %q, objects left %q: want every object deleted, the marker last", log, memPlace.keys())
	}

	// A marker that cannot be put fails the run before any chunk.
	memPlace.reset()
	memPlace.failPut = WritingMarker
	o, _ = CreateStore("mem://b/s.zarr", claimsMeta, isMeta)
	if err := o.Put("c/0", []byte("c")); err == nil || !strings.Contains(err.Error(), WritingMarker) {
		t.Errorf("a refused marker: %v", err)
	}
	o.Abort()
	if len(memPlace.keys()) != 0 || slices.Contains(memPlace.log, "PUT c/0") {
		t.Errorf("requests %q, objects left %q", memPlace.log, memPlace.keys())
	}

	// Killed: the next run replaces what it left, marker and all.
	memPlace.reset()
	o, _ = CreateStore("mem://b/s.zarr", claimsMeta, isMeta)
	for _, k := range []string{"c/0", "c/1", "x/meta"} {
		o.Put(k, []byte(k))
	}
	o.remote.wait()
	remoteOutputs.Delete(o.remote)
	if want := []string{WritingMarker, "c/0", "c/1"}; !slices.Equal(memPlace.keys(), want) {
		t.Fatalf("a killed run left %q, want %q", memPlace.keys(), want)
	}
	o, err = CreateStore("mem://b/s.zarr", claimsMeta, isMeta)
	if err != nil {
		t.Fatalf("over a killed run's leftovers: %v", err)
	}
	o.Put("c/0", []byte("new"))
	o.Put("meta", []byte("new"))
	if err := o.Commit(); err != nil {
		t.Fatal(err)
	}
	if want := []string{"c/0", "meta"}; !slices.Equal(memPlace.keys(), want) {
		t.Errorf("objects %q, want %q", memPlace.keys(), want)
	}

	// Replacing leftovers fails after the first chunk: every object is
	// deleted, the marker last; before any object (the input failed
	// first), the leftovers keep their marker, so that the next run may
	// still replace them.
	for _, cleared := range []bool{true, false} {
		memPlace.reset()
		memPlace.objects["mem://b/s.zarr/"+WritingMarker] = []byte("left")
		memPlace.objects["mem://b/s.zarr/c/7"] = []byte("left")
		o, err := CreateStore("mem://b/s.zarr", claimsMeta, isMeta)
		if err != nil {
			t.Fatal(err)
		}
		if cleared {
			memPlace.failPut = "c/1"
			o.Put("c/0", []byte("new"))
			o.Put("c/1", []byte("new"))
			err = o.Commit()
		} else {
			err = o.Abandon(errors.New("bad input"))
		}
		if err == nil {
			t.Fatal("the run did not fail")
		}
		want := []string{WritingMarker, "c/7"}
		if cleared {
			want = nil
		}
		if !slices.Equal(memPlace.keys(), want) {
			t.Errorf("cleared %v: objects %q, want %q", cleared, memPlace.keys(), want)
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

// memInto is memStore reading into its caller's buffers, as the s3 place
// does, recording the lengths it was asked to allocate.
type memInto struct {
	*memStore
	asked []int
}

func (m *memInto) GetObjectInto(ctx context.Context, name string, limit int64, alloc func(n int) []byte) ([]byte, error) {
	b, err := m.GetObject(ctx, name, limit)
	if err != nil {
		return nil, err
	}
	if int64(len(b)) > limit {
		return nil, errors.New("over the limit")
	}
	m.asked = append(m.asked, len(b))
	return append(alloc(len(b))[:0], b...), nil
}

func (m *memInto) GetObjectRangeInto(ctx context.Context, name string, off, n int64, alloc func(n int) []byte) ([]byte, error) {
	b, err := m.GetObjectRange(ctx, name, off, n)
	if err != nil {
		return nil, err
	}
	m.asked = append(m.asked, len(b))
	return append(alloc(len(b))[:0], b...), nil
}

// TestReadPooled: the pooled reads give the bytes ReadRange and
// ReadBounded give, in buffers of the body pool, read into by a place
// that can; a place handing out memory it keeps never has it pooled.
func TestReadPooled(t *testing.T) {
	data := make([]byte, 300_000)
	for i := range data {
		data[i] = byte(i * 31 / 7)
	}
	local := t.TempDir()
	if err := os.WriteFile(local+"/c", data, 0o644); err != nil {
		t.Fatal(err)
	}
	memPlace.reset()
	memPlace.objects["mem://b/s.zarr/c"] = data
	into := &memInto{memStore: memPlace}
	ld, ok := OpenDir(local)
	if !ok {
		t.Fatal("OpenDir: not a directory")
	}
	for _, d := range []*Dir{ld, {name: "mem://b/s.zarr", remote: into, url: "mem://b/s.zarr/"}} {
		b, err := d.ReadRangePooled("c", 1000, 100_000)
		if err != nil || !bytes.Equal(b, data[1000:101_000]) {
			t.Fatalf("%s: ReadRangePooled: %v", d.name, err)
		}
		ReleaseBody(d, b)
		b, err = d.ReadBoundedPooled("c", 1<<20)
		if err != nil || !bytes.Equal(b, data) {
			t.Fatalf("%s: ReadBoundedPooled: %v", d.name, err)
		}
		ReleaseBody(d, b)
		if _, err := d.ReadBoundedPooled("c", 1000); err == nil {
			t.Errorf("%s: ReadBoundedPooled over its limit: no error", d.name)
		}
		if !d.readsOwnBuffers() {
			t.Errorf("%s: reads own buffers: false", d.name)
		}
	}
	if !slices.Equal(into.asked, []int{100_000, len(data)}) {
		t.Errorf("the place was asked to read into buffers of %v, want [100000 %d]", into.asked, len(data))
	}
	// memStore hands out the object it holds: never pooled.
	kept := &Dir{name: "mem://b/s.zarr", remote: memPlace, url: "mem://b/s.zarr/"}
	if kept.readsOwnBuffers() {
		t.Fatal("a place without StorePlaceInto: reads own buffers")
	}
	b, err := kept.ReadRangePooled("c", 0, int64(len(data)))
	if err != nil || &b[0] != &memPlace.objects["mem://b/s.zarr/c"][0] {
		t.Fatalf("memStore: %v", err)
	}
	ReleaseBody(kept, b)
	for range 10 {
		if got := bodyBuffer(len(data)); &got[0] == &b[0] {
			t.Fatal("the object a place keeps was given out as a body buffer")
		}
	}
}

// TestBodyPool: a body given back is taken again by a read it fits
// (more than half full), the smallest that fits first; the pool keeps at
// most maxFreeBodies bytes, letting the oldest go.
func TestBodyPool(t *testing.T) {
	bodyFree.Lock()
	bodyFree.bufs, bodyFree.bytes = nil, 0
	bodyFree.Unlock()
	small, large := bodyBuffer(100_000), bodyBuffer(1_000_000)
	putBody(large)
	putBody(small)
	if b := bodyBuffer(90_000); &b[0] != &small[0] || len(b) != 90_000 {
		t.Error("a read of 90,000 bytes did not take the 100,000-byte body")
	}
	if b := bodyBuffer(400_000); &b[0] == &large[0] {
		t.Error("a read of 400,000 bytes took a body of 1,000,000 (less than half used)")
	}
	if b := bodyBuffer(1_100_000); &b[0] != &large[0] {
		t.Error("a read of 1,100,000 bytes did not take the body of 1,000,000 made with room to spare")
	}
	if b := bodyBuffer(1000); cap(b) != 1000 {
		t.Errorf("a small read: capacity %d", cap(b))
	}
	for range 40 {
		putBody(make([]byte, 1<<20))
	}
	bodyFree.Lock()
	n, kept := len(bodyFree.bufs), bodyFree.bytes
	bodyFree.Unlock()
	if kept > maxFreeBodies || n != maxFreeBodies/(1<<20) {
		t.Errorf("the pool keeps %d bodies, %d bytes (at most %d)", n, kept, maxFreeBodies)
	}
}

// memWriter is an object of memStore written in order: nothing there
// until Commit, which logs "UPLOAD key (n writes)" and fails as a PUT of
// the name would (failPut); Abort logs "ABORT key".
type memWriter struct {
	m         *memStore
	name      string
	buf       []byte
	writes    int
	ended     bool
	cancelled chan struct{}
	cancel    sync.Once
}

func (w *memWriter) Cancel() {
	w.cancel.Do(func() { close(w.cancelled) })
}

func (w *memWriter) Write(p []byte) (int, error) {
	if w.ended {
		return 0, errors.New("written after its end")
	}
	w.buf = append(w.buf, p...)
	w.writes++
	return len(p), nil
}
func (w *memWriter) WriteAt([]byte, int64) (int, error) { return 0, errors.ErrUnsupported }
func (w *memWriter) ReadAt([]byte, int64) (int, error)  { return 0, errors.ErrUnsupported }
func (w *memWriter) Reserve(int64) error                { return errors.ErrUnsupported }
func (w *memWriter) File(int64) (*os.File, error)       { return nil, errors.ErrUnsupported }
func (w *memWriter) Size() int64                        { return int64(len(w.buf)) }
func (w *memWriter) Commit() error {
	w.m.mu.Lock()
	hang := w.m.hang != "" && strings.Contains(w.name, w.m.hang)
	w.m.mu.Unlock()
	if hang {
		<-w.cancelled
		w.m.mu.Lock()
		defer w.m.mu.Unlock()
		w.ended = true
		w.m.log = append(w.m.log, "CANCELLED "+strings.TrimPrefix(w.name, "mem://b/s.zarr/"))
		return context.Canceled
	}
	w.m.mu.Lock()
	defer w.m.mu.Unlock()
	if w.ended {
		panic("memWriter: Commit after its end")
	}
	w.ended = true
	key := strings.TrimPrefix(w.name, "mem://b/s.zarr/")
	if w.m.failPut != "" && strings.Contains(w.name, w.m.failPut) {
		return errors.New("refused")
	}
	w.m.objects[w.name] = w.buf
	w.m.log = append(w.m.log, fmt.Sprintf("UPLOAD %s (%d writes)", key, w.writes))
	return nil
}
func (w *memWriter) Abort() {
	w.m.mu.Lock()
	defer w.m.mu.Unlock()
	if w.ended {
		panic("memWriter: Abort after its end")
	}
	w.ended = true
	w.m.log = append(w.m.log, "ABORT "+strings.TrimPrefix(w.name, "mem://b/s.zarr/"))
}

// TestPlaceOutputStream: a streamed object of a store on a place is sent
// in order through the place's writer and made after its Close (before
// Commit returns), after the
// marker and the old store's metadata deleted, the metadata after it;
// an abort, with a stream open or closed, or a refused upload, leaves
// nothing; a metadata key is not streamed.
func TestPlaceOutputStream(t *testing.T) {
	defer memPlace.reset()
	memPlace.reset()
	memPlace.objects["mem://b/s.zarr/meta"] = []byte("old")
	o, err := CreateStore("mem://b/s.zarr", claimsMeta, isMeta)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := o.Stream("meta"); !errors.Is(err, errors.ErrUnsupported) {
		t.Fatalf("Stream of a metadata key: %v, want ErrUnsupported", err)
	}
	w, err := o.Stream("c/0")
	if err != nil {
		t.Fatal(err)
	}
	for _, part := range []string{"shard ", "in ", "parts"} {
		if _, err := io.WriteString(w, part); err != nil {
			t.Fatal(err)
		}
	}
	if _, ok := memPlace.objects["mem://b/s.zarr/c/0"]; ok {
		t.Fatal("the streamed object is there before its Close")
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if err := o.Put("meta", []byte("new")); err != nil {
		t.Fatal(err)
	}
	if err := o.Commit(); err != nil {
		t.Fatal(err)
	}
	if got := string(memPlace.objects["mem://b/s.zarr/c/0"]); got != "shard in parts" {
		t.Errorf("streamed object %q", got)
	}
	want := []string{"PUT " + WritingMarker, "DELETE meta", "UPLOAD c/0 (3 writes)", "PUT meta", "DELETE " + WritingMarker}
	if !slices.Equal(memPlace.log, want) {
		t.Errorf("requests %q, want %q", memPlace.log, want)
	}
	if o.Written() != int64(len("shard in parts")+len("new")) {
		t.Errorf("Written %d", o.Written())
	}

	for _, c := range []string{"open", "closed", "refused"} {
		memPlace.reset()
		memPlace.objects["mem://b/other"] = []byte("beside")
		o, err := CreateStore("mem://b/s.zarr", claimsMeta, isMeta)
		if err != nil {
			t.Fatal(err)
		}
		if c == "refused" {
			memPlace.failPut = "c/1"
		}
		w0, err := o.Stream("c/0")
		if err != nil {
			t.Fatal(err)
		}
		w1, err := o.Stream("c/1")
		if err != nil {
			t.Fatal(err)
		}
		io.WriteString(w0, "zero")
		io.WriteString(w1, "one")
		if err := w0.Close(); err != nil {
			t.Fatal(err)
		}
		switch c {
		case "open":
			o.Abort()
			if _, err := w1.Write([]byte("more")); err == nil {
				t.Errorf("%s: a Write after the abort: no error", c)
			}
			if err := w1.Close(); err == nil {
				t.Errorf("%s: Close after the abort: no error", c)
			}
		case "closed":
			if err := w1.Close(); err != nil {
				t.Fatal(err)
			}
			o.Abort()
		case "refused":
			if err := w1.Close(); err != nil {
				t.Fatalf("%s: Close: %v (the upload is completed in the background)", c, err)
			}
			if err := o.Commit(); err == nil || !strings.Contains(err.Error(), "c/1: refused") {
				t.Fatalf("%s: Commit after a refused upload: %v", c, err)
			}
		}
		if keys := memPlace.keys(); len(keys) != 0 {
			t.Errorf("%s: objects left: %q (requests %q)", c, keys, memPlace.log)
		}
		if c == "open" && !slices.Contains(memPlace.log, "ABORT c/1") {
			t.Errorf("%s: the open upload was not aborted: %q", c, memPlace.log)
		}
		if _, ok := memPlace.objects["mem://b/other"]; !ok {
			t.Errorf("%s: an object beside the store was deleted", c)
		}
	}
}

// TestPlaceOutputStreamHungUpload: an abort waits abortGrace for a
// streamed object being completed, then cancels its requests (its
// writer's own context, which the store's does not reach), so that a
// server that does not answer cannot hold the abort, and a signal's
// exit, forever.
func TestPlaceOutputStreamHungUpload(t *testing.T) {
	defer func(g time.Duration) { abortGrace = g }(abortGrace)
	abortGrace = 50 * time.Millisecond
	memPlace.reset()
	defer memPlace.reset()
	memPlace.hang = "c/0"
	o, err := CreateStore("mem://b/s.zarr", claimsMeta, isMeta)
	if err != nil {
		t.Fatal(err)
	}
	w, err := o.Stream("c/0")
	if err != nil {
		t.Fatal(err)
	}
	io.WriteString(w, "zero")
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { o.Abort(); close(done) }()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("the abort still waits for the hung upload 10 s on")
	}
	if !slices.Contains(memPlace.log, "CANCELLED c/0") {
		t.Errorf("the upload was not cancelled: %q", memPlace.log)
	}
	if keys := memPlace.keys(); len(keys) != 0 {
		t.Errorf("objects left: %q", keys)
	}
}

// orderedInto is a memInto that logs when a request is sent and that
// asks for its buffer twice, as a GET asked again after its body broke
// off does.
type orderedInto struct {
	*memInto
	log *[]string
}

func (o *orderedInto) GetObjectRangeInto(ctx context.Context, name string, off, n int64, alloc func(n int) []byte) ([]byte, error) {
	*o.log = append(*o.log, "sent")
	alloc(int(n)) // the first try's body, broken off
	return o.memInto.GetObjectRangeInto(ctx, name, off, n, alloc)
}

// TestReadRangeArriving: ReadRangeArriving gives ReadRange's bytes and
// calls arriving once, after the request is sent, when its answer comes
// into a buffer of the body pool (a place that reads into buffers),
// however often the place asks for one; before the read otherwise.
func TestReadRangeArriving(t *testing.T) {
	data := make([]byte, 300_000)
	for i := range data {
		data[i] = byte(i * 13 / 5)
	}
	memPlace.reset()
	memPlace.objects["mem://b/s.zarr/c"] = data
	var log []string
	arriving := func() { log = append(log, "arrived") }
	into := &Dir{name: "mem://b/s.zarr", remote: &orderedInto{memInto: &memInto{memStore: memPlace}, log: &log}, url: "mem://b/s.zarr/"}
	b, err := ReadRangeArriving(into, "c", 1000, 100_000, arriving)
	if err != nil || !bytes.Equal(b, data[1000:101_000]) {
		t.Fatalf("a place reading into buffers: %v", err)
	}
	ReleaseBody(into, b)
	if !slices.Equal(log, []string{"sent", "arrived"}) {
		t.Errorf("a place reading into buffers: %v, want [sent arrived]", log)
	}
	log = nil
	kept := &Dir{name: "mem://b/s.zarr", remote: memPlace, url: "mem://b/s.zarr/"}
	b, err = ReadRangeArriving(kept, "c", 0, 10, arriving)
	if err != nil || !bytes.Equal(b, data[:10]) || !slices.Equal(log, []string{"arrived"}) {
		t.Errorf("a place keeping its objects: %v, %v", err, log)
	}
}

// A streamed object of a store that has failed sends no more parts: its
// writes say the store's failure.
func TestPlaceOutputStreamStopsAfterFailure(t *testing.T) {
	memPlace.reset()
	defer memPlace.reset()
	memPlace.failPut = "c/2"
	o, err := CreateStore("mem://b/s.zarr", claimsMeta, isMeta)
	if err != nil {
		t.Fatal(err)
	}
	w, err := o.Stream("c/0")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.WriteString(w, "first part"); err != nil {
		t.Fatal(err)
	}
	if err := o.Put("c/2", []byte("chunk")); err != nil {
		t.Fatal(err)
	}
	if err := o.remote.wait(); err == nil {
		t.Fatal("the failing put did not fail")
	}
	before := o.Written()
	if n, err := io.WriteString(w, "second part"); err == nil || n != 0 {
		t.Errorf("a write after the store failed: %d bytes, %v", n, err)
	}
	if o.Written() != before {
		t.Errorf("written %d bytes after the failure", o.Written()-before)
	}
	w.Close()
	o.Abandon(errors.New("test over"))
}

// A store on a place is recorded for the signal's handler with createMu
// held shared, as a local store's staging directory: once the handler
// holds it (it does from its start to the exit) no store is made that it
// would not find and delete.
func TestPlaceOutputRecordedUnderCreateMu(t *testing.T) {
	memPlace.reset()
	defer memPlace.reset()
	createMu.Lock()
	made := make(chan *DirOutput, 1)
	go func() {
		o, err := CreateStore("mem://b/s.zarr", claimsMeta, isMeta)
		if err != nil {
			t.Error(err)
		}
		made <- o
	}()
	var o *DirOutput
	select {
	case o = <-made:
		t.Error("a store was made while the handler held createMu")
	case <-time.After(200 * time.Millisecond): // long enough for a return made at once
	}
	createMu.Unlock()
	if o == nil {
		o = <-made
	}
	if _, ok := remoteOutputs.Load(o.remote); !ok {
		t.Error("the store is not recorded for the handler")
	}
	o.Abandon(errors.New("test over"))
}
