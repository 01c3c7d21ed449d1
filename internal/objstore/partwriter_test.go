package objstore

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"os"
	"strings"
	"sync"
	"testing"
)

// scratch makes an empty file for a PartWriter, removed with the test.
func scratch(t *testing.T) func() (*os.File, error) {
	return func() (*os.File, error) { return os.CreateTemp(t.TempDir(), "scratch") }
}

// gate holds every part it is sent until released, counting those in
// flight; the requests are then the sink's.
type gate struct {
	sink
	arrived chan struct{} // a part's request came
	release chan struct{} // closed: the parts go on
	mu      sync.Mutex
	now     int
	most    int
}

func (g *gate) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPut {
		g.sink.ServeHTTP(w, r)
		return
	}
	g.mu.Lock()
	g.now++
	g.most = max(g.most, g.now)
	g.mu.Unlock()
	g.arrived <- struct{}{}
	<-g.release
	g.sink.ServeHTTP(w, r)
	g.mu.Lock()
	g.now--
	g.mu.Unlock()
}

// Parts go out while the object is still being written, at most streams
// at once: with every slot taken by a part the server holds, the Write
// that completes one more part waits, so the parts before it were sent
// before the bytes after them existed.
func TestPartWriterSendsWhileWriting(t *testing.T) {
	defer func(p int64) { partSize = p }(partSize)
	partSize = 1 << 20
	g := &gate{arrived: make(chan struct{}, 100), release: make(chan struct{})}
	s := testStore(t, g)
	w := s.NewPartWriter(context.Background(), URL{Bucket: "bkt", Key: "k"}, scratch(t))
	size := int64(streams+1)*partSize + 1 // parts 1..streams+1 handed out, the last byte kept
	written := make(chan error, 1)
	go func() {
		_, err := w.Write(make([]byte, size))
		written <- err
	}()
	for range streams {
		<-g.arrived
	}
	select {
	case err := <-written:
		t.Fatalf("Write returned (%v) with %d parts held by the server: parts in flight are not bounded", err, streams)
	default:
	}
	close(g.release)
	if err := <-written; err != nil {
		t.Fatal(err)
	}
	if err := w.Commit(); err != nil {
		t.Fatal(err)
	}
	if g.bytes.Load() != size || g.most != streams {
		t.Errorf("the server got %d bytes (want %d), at most %d parts at once (want %d)", g.bytes.Load(), size, g.most, streams)
	}
}

// The object is the bytes written, whatever the sizes of the writes; one
// that fits in a part is a single PUT, sent from memory (no scratch
// file) up to inMemory; nothing is there before Commit.
func TestPartWriterObject(t *testing.T) {
	defer func(p int64) { partSize = p }(partSize)
	partSize = 1 << 20
	f := newFake(t)
	s := fakeStore(t, f, f.creds)
	for _, size := range []int{0, 5, 1 << 20, 1<<20 + 1, 3<<20 + 12345} {
		data := make([]byte, size)
		for i := range data {
			data[i] = byte(i * 7 / 3)
		}
		key := fmt.Sprintf("k%d", size)
		f.log = nil
		files := 0
		w := s.NewPartWriter(context.Background(), URL{"bkt", key}, func() (*os.File, error) {
			files++
			return scratch(t)()
		})
		for rest := data; len(rest) > 0; {
			n := min(len(rest), 300<<10+17)
			if _, err := w.Write(rest[:n]); err != nil {
				t.Fatal(err)
			}
			rest = rest[n:]
		}
		f.mu.Lock()
		_, early := f.objects["bkt/"+key]
		f.mu.Unlock()
		if early {
			t.Errorf("%d bytes: the object is there before Commit", size)
		}
		if err := w.Commit(); err != nil {
			t.Fatalf("%d bytes: %v", size, err)
		}
		if got := f.objects["bkt/"+key]; !bytes.Equal(got, data) {
			t.Errorf("%d bytes: the object has %d", size, len(got))
		}
		multipart := strings.Contains(strings.Join(f.log, " "), "?uploads")
		if multipart != (int64(size) > partSize) {
			t.Errorf("%d bytes: multipart %v, requests %v", size, multipart, f.log)
		}
		if wantFiles := int64(size) > min(inMemory, partSize); files != map[bool]int{false: 0, true: 1}[wantFiles] {
			t.Errorf("%d bytes: %d scratch files made", size, files)
		}
		if len(f.uploads) != 0 {
			t.Errorf("%d bytes: uploads left: %v", size, f.uploads)
		}
	}
}

// Abort, or a refused part, leaves neither an object nor an upload.
func TestPartWriterLeavesNothing(t *testing.T) {
	defer func(p int64) { partSize = p }(partSize)
	partSize = 1 << 20
	f := newFake(t)
	s := fakeStore(t, f, f.creds)
	data := bytes.Repeat([]byte("x"), 4<<20)

	w := s.NewPartWriter(context.Background(), URL{"bkt", "aborted"}, scratch(t))
	if _, err := w.Write(data); err != nil {
		t.Fatal(err)
	}
	w.Abort()
	if _, ok := f.objects["bkt/aborted"]; ok || len(f.uploads) != 0 || f.aborted != 1 {
		t.Errorf("Abort: object %v, %d uploads left, %d aborts", ok, len(f.uploads), f.aborted)
	}

	f.failPart = 2
	w = s.NewPartWriter(context.Background(), URL{"bkt", "refused"}, scratch(t))
	_, werr := w.Write(data)
	err := w.Commit()
	if err == nil || !strings.Contains(err.Error(), "InvalidPart") {
		t.Errorf("a refused part: Write %v, Commit %v", werr, err)
	}
	if _, ok := f.objects["bkt/refused"]; ok || len(f.uploads) != 0 || f.aborted != 2 {
		t.Errorf("a refused part: object %v, %d uploads left, %d aborts", ok, len(f.uploads), f.aborted)
	}
}

// A streamed upload's memory does not grow with the object either: the
// parts are read back from the scratch file as they are sent.
func TestPartWriterMemoryBounded(t *testing.T) {
	defer func(p int64) { partSize = p }(partSize)
	partSize = 8 << 20
	const size = 96 << 20
	piece := make([]byte, 1<<20)
	uploadAllocates(t, "a streamed upload", size, func(s *Store) error {
		w := s.NewPartWriter(context.Background(), URL{Bucket: "bkt", Key: "k"}, scratch(t))
		for range size / len(piece) {
			if _, err := w.Write(piece); err != nil {
				return err
			}
		}
		return w.Commit()
	})
}

// At most memBuffers objects are held in memory at once: the next goes
// through a scratch file, and a buffer given back serves the one after.
func TestPartWriterMemoryBuffersBounded(t *testing.T) {
	f := newFake(t)
	s := fakeStore(t, f, f.creds)
	files := 0
	open := func() (*os.File, error) {
		files++
		return scratch(t)()
	}
	var ws []*PartWriter
	for i := range memBuffers + 1 {
		w := s.NewPartWriter(context.Background(), URL{"bkt", fmt.Sprint("k", i)}, open)
		if _, err := w.Write([]byte(fmt.Sprint("object ", i))); err != nil {
			t.Fatal(err)
		}
		ws = append(ws, w)
	}
	if files != 1 {
		t.Errorf("%d objects in flight made %d scratch files, want 1", memBuffers+1, files)
	}
	for i, w := range ws {
		if err := w.Commit(); err != nil {
			t.Fatal(err)
		}
		if got := string(f.objects[fmt.Sprint("bkt/k", i)]); got != fmt.Sprint("object ", i) {
			t.Errorf("object %d is %q", i, got)
		}
	}
	w := s.NewPartWriter(context.Background(), URL{"bkt", "after"}, open)
	if _, err := w.Write([]byte("x")); err != nil || w.Commit() != nil || files != 1 {
		t.Errorf("after the others: %v, %d scratch files, want still 1", err, files)
	}
}
