package objstore

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"

	fileio "github.com/depthspace/depthspace/internal/io"
)

// pattern is size bytes that differ from part to part and within one.
func pattern(size int) []byte {
	b := make([]byte, size)
	for i := range b {
		b[i] = byte(i*7/3 + i>>20)
	}
	return b
}

// uploadParts are the part numbers the server has been sent so far.
func uploadParts(f *fakeS3) []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	var parts []string
	for _, l := range f.log {
		if strings.HasPrefix(l, "PUT ") && strings.Contains(l, "uploadId=") {
			_, n, _ := strings.Cut(l, "partNumber=")
			n, _, _ = strings.Cut(n, "&")
			parts = append(parts, n)
		}
	}
	return parts
}

// Written by position, the object's four quarters at once from the back
// of each (as an s2d of NCHW read front to back fills its output, but
// reversed), parts complete out of order: each is sent as soon as it is
// complete, before Commit, and Commit lists them in order.
func TestPartWriterOutOfOrder(t *testing.T) {
	defer func(p int64) { partSize = p }(partSize)
	partSize = 1 << 20
	f := newFake(t)
	s := fakeStore(t, f, f.creds)
	size := 8<<20 + 4*1000
	data := pattern(size)
	w := s.NewPartWriter(context.Background(), URL{"bkt", "quarters"}, scratch(t))
	if err := w.Reserve(int64(size)); err != nil {
		t.Fatal(err)
	}
	q := size / 4
	const piece = 100 << 10
	var written fileio.Extents
	for end := q; end > 0; end -= piece {
		start := max(0, end-piece)
		for k := range 4 {
			off := k*q + start
			if _, err := w.WriteAt(data[off:off+end-start], int64(off)); err != nil {
				t.Fatal(err)
			}
			written.Add(int64(off), int64(end-start))
		}
		for _, n := range uploadParts(f) {
			number, _ := strconv.Atoi(n)
			if !written.Covers(int64(number-1)*partSize, partSize) {
				t.Fatalf("part %s was sent before all its bytes were written", n)
			}
		}
	}
	w.flight.Wait()
	early := uploadParts(f)
	// 9 parts: the first 8 are complete and followed by more bytes; the
	// last is Commit's.
	if len(early) != 8 || early[0] == "1" {
		t.Errorf("parts sent before Commit: %v, want 8, the first not part 1", early)
	}
	if err := w.Commit(); err != nil {
		t.Fatal(err)
	}
	if got := f.objects["bkt/quarters"]; !bytes.Equal(got, data) {
		t.Errorf("the object has %d bytes, differing from what was written", len(got))
	}
	if n := len(uploadParts(f)); n != 9 {
		t.Errorf("%d parts sent, want 9 (none twice)", n)
	}
	if len(f.uploads) != 0 {
		t.Errorf("uploads left: %v", f.uploads)
	}
}

// A byte written again after its part was sent: the part is sent again
// at Commit, and the object has the last bytes written. Through a
// mapping (File), every part is sent at Commit.
func TestPartWriterWrittenAgain(t *testing.T) {
	defer func(p int64) { partSize = p }(partSize)
	partSize = 1 << 20
	f := newFake(t)
	s := fakeStore(t, f, f.creds)
	size := 3<<20 + 5
	data := pattern(size)
	w := s.NewPartWriter(context.Background(), URL{"bkt", "again"}, scratch(t))
	if _, err := w.WriteAt(data, 0); err != nil {
		t.Fatal(err)
	}
	w.flight.Wait()
	data[10] ^= 0xff
	if _, err := w.WriteAt(data[10:11], 10); err != nil {
		t.Fatal(err)
	}
	if err := w.Commit(); err != nil {
		t.Fatal(err)
	}
	if got := f.objects["bkt/again"]; !bytes.Equal(got, data) {
		t.Errorf("the object is not the bytes last written (%d bytes)", len(got))
	}

	w = s.NewPartWriter(context.Background(), URL{"bkt", "mapped"}, scratch(t))
	if _, err := w.WriteAt(data, 0); err != nil {
		t.Fatal(err)
	}
	file, err := w.File(int64(size))
	if err != nil {
		t.Fatal(err)
	}
	data[2<<20] ^= 0xff
	if _, err := file.WriteAt(data[2<<20:2<<20+1], 2<<20); err != nil {
		t.Fatal(err)
	}
	if err := w.Commit(); err != nil {
		t.Fatal(err)
	}
	if got := f.objects["bkt/mapped"]; !bytes.Equal(got, data) {
		t.Errorf("written through the file: the object is not the bytes last written")
	}
}

// An abort midway, with parts sent and others in flight, leaves neither
// an object nor an upload; so does a part the server refuses.
func TestPartWriterPositionalLeavesNothing(t *testing.T) {
	defer func(p int64) { partSize = p }(partSize)
	partSize = 1 << 20
	f := newFake(t)
	s := fakeStore(t, f, f.creds)
	data := pattern(6 << 20)
	w := s.NewPartWriter(context.Background(), URL{"bkt", "midway"}, scratch(t))
	if err := w.Reserve(int64(len(data))); err != nil {
		t.Fatal(err)
	}
	if _, err := w.WriteAt(data[3<<20:], 3<<20); err != nil {
		t.Fatal(err)
	}
	if _, err := w.WriteAt(data[:1<<20], 0); err != nil {
		t.Fatal(err)
	}
	if len(uploadParts(f)) == 0 && len(f.uploads) == 0 {
		t.Fatal("nothing was sent before the abort: the test tests nothing")
	}
	w.Abort()
	if _, ok := f.objects["bkt/midway"]; ok || len(f.uploads) != 0 {
		t.Errorf("Abort: object %v, uploads left %v", ok, f.uploads)
	}

	f.failPart = 2
	w = s.NewPartWriter(context.Background(), URL{"bkt", "refused"}, scratch(t))
	_, werr := w.WriteAt(data, 0)
	err := w.Commit()
	if err == nil || !strings.Contains(err.Error(), "InvalidPart") {
		t.Errorf("a refused part: WriteAt %v, Commit %v", werr, err)
	}
	if _, ok := f.objects["bkt/refused"]; ok || len(f.uploads) != 0 {
		t.Errorf("a refused part: object %v, uploads left %v", ok, f.uploads)
	}
}

// cutRange serves one object and breaks off every GET of the range
// starting at from, midway through its body.
type cutRange struct {
	data []byte
	from int
}

func (c *cutRange) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	var first, last int
	if _, err := fmt.Sscanf(r.Header.Get("Range"), "bytes=%d-%d", &first, &last); err != nil {
		w.WriteHeader(http.StatusBadRequest)
		return
	}
	last = min(last, len(c.data)-1)
	w.Header().Set("Content-Range", fmt.Sprintf("bytes %d-%d/%d", first, last, len(c.data)))
	w.Header().Set("Content-Length", strconv.Itoa(last-first+1))
	w.WriteHeader(http.StatusPartialContent)
	body := c.data[first : last+1]
	if first == c.from {
		cutOff(w, body)
		return
	}
	w.Write(body)
}

// A download tells of every byte as it arrives, front to back; a later
// range that breaks off on every try is the download's error, naming
// its bytes, and its bytes are never told of.
func TestDownloadArrivals(t *testing.T) {
	defer func(p int64) { partSize = p }(partSize)
	partSize = 1 << 20
	data := pattern(5<<20 + 100)
	for _, broken := range []int{-1, 1000 + 3<<20} { // ranges start at 1000
		srv := &cutRange{data: data, from: broken}
		s := testStore(t, srv)
		file, err := os.CreateTemp(t.TempDir(), "dl")
		if err != nil {
			t.Fatal(err)
		}
		var mu sync.Mutex
		var in fileio.Extents
		err = s.Download(context.Background(), URL{"bkt", "k"}, file, 1000, int64(len(data)), func(off, n int64) {
			mu.Lock()
			in.Add(off, n)
			mu.Unlock()
		})
		if broken < 0 {
			got, _ := os.ReadFile(file.Name())
			if err != nil || !in.Covers(1000, int64(len(data))-1000) || !bytes.Equal(got[1000:], data[1000:]) {
				t.Errorf("whole download: %v; every byte told of: %v", err, in.Covers(1000, int64(len(data))-1000))
			}
			continue
		}
		if err == nil || !strings.Contains(err.Error(), fmt.Sprintf("bytes %d-%d", broken, broken+1<<20-1)) {
			t.Errorf("a range broken off: %v", err)
		}
		if in.Covers(int64(broken), partSize) {
			t.Errorf("the broken range was told of as arrived")
		}
	}
}

// Bytes reserved or skipped and never written are zeros in the object,
// though the memory buffer that held them served an object before.
func TestPartWriterUnwrittenBytesZero(t *testing.T) {
	f := newFake(t)
	s := fakeStore(t, f, f.creds)
	full := bytes.Repeat([]byte{0xee}, 1<<20)
	w := s.NewPartWriter(context.Background(), URL{"bkt", "full"}, scratch(t))
	if _, err := w.WriteAt(full, 0); err != nil || w.Commit() != nil {
		t.Fatal(err)
	}
	w = s.NewPartWriter(context.Background(), URL{"bkt", "sparse"}, scratch(t))
	if err := w.Reserve(1 << 20); err != nil {
		t.Fatal(err)
	}
	if _, err := w.WriteAt([]byte("abc"), 1000); err != nil {
		t.Fatal(err)
	}
	if _, err := w.WriteAt([]byte("z"), 1<<20+10); err != nil { // past the reserved end
		t.Fatal(err)
	}
	back := make([]byte, 4)
	if _, err := w.ReadAt(back, 999); err != nil || string(back) != "\x00abc" {
		t.Errorf("read back %q (%v), want \"\\x00abc\"", back, err)
	}
	if err := w.Commit(); err != nil {
		t.Fatal(err)
	}
	want := make([]byte, 1<<20+11)
	copy(want[1000:], "abc")
	want[1<<20+10] = 'z'
	if got := f.objects["bkt/sparse"]; !bytes.Equal(got, want) {
		t.Errorf("the object is not zeros where nothing was written (%d bytes)", len(got))
	}
}

// The parts of an object written by position cover it end to end, each
// byte in the part partOf names: of partSize up to 78 GiB, then of 16
// times that, so that an object written in order (its size unknown when
// its first part goes) fits S3's 10,000 parts up to 1.3 TiB; an object
// known larger from the start has parts of partSizeFor its size.
func TestPartSchedule(t *testing.T) {
	for _, w := range []*PartWriter{{ps: partSizeFor(1 << 30)}, {ps: partSizeFor(200 << 30)}} {
		end := int64(0)
		for k := int64(0); k < maxParts; k++ {
			off, n := w.part(k)
			if off != end || n < 5<<20 || w.partOf(off) != k || w.partOf(off+n-1) != k {
				t.Fatalf("ps %d: part %d is [%d, +%d), partOf %d, %d; want it to start at %d", w.ps, k, off, n, w.partOf(off), w.partOf(off+n-1), end)
			}
			end = off + n
		}
		if w.ps == partSize && end < 1300<<30 || w.ps > partSize && end < 200<<30 {
			t.Errorf("ps %d: 10,000 parts hold %d bytes", w.ps, end)
		}
		if _, n := w.part(maxParts/2 - 1); w.ps == partSize && n != partSize {
			t.Errorf("part %d of an object up to 78 GiB is %d bytes, want %d", maxParts/2-1, n, partSize)
		}
	}
}
