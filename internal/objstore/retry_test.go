package objstore

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"runtime"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// flaky is a server of one object that fails the first GETs in the ways
// a real one does: a 503, then a body cut off in the middle (the
// connection closed), then answers.
type flaky struct {
	data     []byte
	gets     atomic.Int32
	failures int32 // how many GETs fail before one succeeds
	mode     string
}

func (f *flaky) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet {
		w.WriteHeader(http.StatusMethodNotAllowed)
		return
	}
	var first, last int
	if _, err := fmt.Sscanf(r.Header.Get("Range"), "bytes=%d-%d", &first, &last); err != nil {
		w.WriteHeader(http.StatusBadRequest)
		return
	}
	last = min(last, len(f.data)-1)
	n := f.gets.Add(1)
	if n <= f.failures && f.mode == "503" {
		w.Header().Set("Content-Type", "application/xml")
		w.WriteHeader(http.StatusServiceUnavailable)
		fmt.Fprint(w, `<Error><Code>SlowDown</Code><Message>Please reduce your request rate.</Message></Error>`)
		return
	}
	w.Header().Set("Content-Range", fmt.Sprintf("bytes %d-%d/%d", first, last, len(f.data)))
	w.Header().Set("Content-Length", strconv.Itoa(last-first+1))
	w.Header().Set("Last-Modified", time.Now().UTC().Format(http.TimeFormat))
	w.WriteHeader(http.StatusPartialContent)
	body := f.data[first : last+1]
	if n <= f.failures && f.mode == "cut" {
		cutOff(w, body)
		return
	}
	w.Write(body)
}

// cutOff sends the first half of body and closes the connection: the
// server dies mid-transfer.
func cutOff(w http.ResponseWriter, body []byte) {
	w.Write(body[:len(body)/2])
	w.(http.Flusher).Flush()
	conn, _, _ := w.(http.Hijacker).Hijack()
	conn.Close()
}

func testStore(t *testing.T, h http.Handler) *Store {
	t.Helper()
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	isolate(t)
	t.Setenv("AWS_ENDPOINT_URL", srv.URL)
	t.Setenv("AWS_ACCESS_KEY_ID", "k")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "s")
	s, err := New(context.Background(), Options{})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// TestTransientRetried: a 503 (retried by the SDK's retryer) and a body that
// breaks off (retried by getRange, from the start of its range) cost
// tries, not the transfer; past the bound, the failure is reported in
// one line naming what happened.
func TestTransientRetried(t *testing.T) {
	data := bytes.Repeat([]byte("0123456789abcdef"), 3<<16) // 3 MiB
	u := URL{Bucket: "bkt", Key: "x.npy"}
	defer func(p int64) { partSize = p }(partSize)
	partSize = 1 << 20 // three ranges
	for _, mode := range []string{"503", "cut"} {
		t.Run(mode, func(t *testing.T) {
			f := &flaky{data: data, failures: 2, mode: mode}
			s := testStore(t, f)
			head := make([]byte, 100)
			n, size, err := s.ReadFirst(context.Background(), u, head)
			if err != nil || n != 100 || size != int64(len(data)) || !bytes.Equal(head, data[:100]) {
				t.Fatalf("ReadFirst: %d %d %v", n, size, err)
			}
			file, err := os.CreateTemp(t.TempDir(), "dl")
			if err != nil {
				t.Fatal(err)
			}
			defer file.Close()
			f.gets.Store(0) // the first two GETs of the download fail
			if err := s.Download(context.Background(), u, file, 100, size, nil); err != nil {
				t.Fatal(err)
			}
			got, _ := os.ReadFile(file.Name())
			if !bytes.Equal(got[100:], data[100:]) {
				t.Fatal("downloaded bytes differ")
			}
		})
	}
	t.Run("bounded", func(t *testing.T) {
		s := testStore(t, &flaky{data: data, failures: 1000, mode: "cut"})
		start := time.Now()
		_, _, err := s.ReadFirst(context.Background(), u, make([]byte, 1<<20))
		if err == nil || strings.Contains(err.Error(), "\n") || !strings.Contains(err.Error(), "tried 6 times") {
			t.Fatalf("got %v, want one line", err)
		}
		t.Logf("%v after %v", err, time.Since(start).Round(time.Millisecond))
	})
}

// An upload is never cut into more than S3's 10,000 parts, and parts stay
// whole MiB of at least partSize.
func TestPartSizeFor(t *testing.T) {
	for _, size := range []int64{1, partSize, maxParts * partSize, maxParts*partSize + 1, 100 << 30, 200 << 30, 5 << 40} {
		ps := partSizeFor(size)
		if parts := (size + ps - 1) / ps; parts > maxParts || ps < partSize || ps%(1<<20) != 0 {
			t.Errorf("size %d: part size %d gives %d parts", size, ps, parts)
		}
	}
}

// replaced is a server of an object that another writer replaces after
// its first GET: same size, other bytes, another ETag. It honours
// If-Match as S3 does (412 Precondition Failed).
type replaced struct{ gets atomic.Int32 }

func (rp *replaced) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	const size = 1 << 20
	var first, last int
	fmt.Sscanf(r.Header.Get("Range"), "bytes=%d-%d", &first, &last)
	last = min(last, size-1)
	etag, b := `"v1"`, byte('A')
	if rp.gets.Add(1) > 1 {
		etag, b = `"v2"`, 'B'
	}
	if m := r.Header.Get("If-Match"); m != "" && m != etag {
		w.Header().Set("Content-Type", "application/xml")
		w.WriteHeader(http.StatusPreconditionFailed)
		fmt.Fprint(w, `<Error><Code>PreconditionFailed</Code><Message>At least one of the pre-conditions you specified did not hold</Message></Error>`)
		return
	}
	w.Header().Set("ETag", etag)
	w.Header().Set("Content-Range", fmt.Sprintf("bytes %d-%d/%d", first, last, size))
	w.WriteHeader(http.StatusPartialContent)
	w.Write(bytes.Repeat([]byte{b}, last-first+1))
}

// An object replaced while it is read fails the read, naming what
// happened, instead of coming back as the first bytes of one object and
// the rest of another (found in review).
func TestObjectReplacedWhileRead(t *testing.T) {
	s := testStore(t, &replaced{})
	u := URL{Bucket: "bkt", Key: "x.npy"}
	head := make([]byte, 4096)
	n, size, err := s.ReadFirst(context.Background(), u, head)
	if err != nil || n != len(head) || size != 1<<20 {
		t.Fatalf("ReadFirst: %d %d %v", n, size, err)
	}
	f, err := os.CreateTemp(t.TempDir(), "dl")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	err = s.Download(context.Background(), u, f, int64(n), size, nil)
	if err == nil || !strings.Contains(err.Error(), "the object changed while it was read") {
		t.Errorf("Download of a replaced object: %v", err)
	}
}

// A listing that says it is truncated but gives no continuation token is
// an error, not a prefix quietly cut short.
func TestListTruncatedWithoutToken(t *testing.T) {
	s := testStore(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/xml")
		fmt.Fprint(w, `<ListBucketResult><IsTruncated>true</IsTruncated><Contents><Key>p/a.npy</Key><Size>1</Size></Contents></ListBucketResult>`)
	}))
	var last error
	for _, err := range s.List(context.Background(), URL{Bucket: "bkt", Key: "p/"}) {
		last = err
	}
	if last == nil || !strings.Contains(last.Error(), "truncated") {
		t.Errorf("List: %v", last)
	}
}

// sink is a server that takes multipart uploads and drops their bytes,
// reading each body through a small buffer.
type sink struct{ bytes atomic.Int64 }

func (s *sink) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	switch {
	case r.Method == http.MethodPost && q.Has("uploads"):
		fmt.Fprint(w, `<InitiateMultipartUploadResult><UploadId>u1</UploadId></InitiateMultipartUploadResult>`)
	case r.Method == http.MethodPut:
		n, _ := io.CopyBuffer(io.Discard, r.Body, make([]byte, 32<<10))
		s.bytes.Add(n)
		w.Header().Set("ETag", `"`+q.Get("partNumber")+`"`)
	case r.Method == http.MethodPost:
		io.Copy(io.Discard, r.Body)
		fmt.Fprint(w, `<CompleteMultipartUploadResult><Key>k</Key></CompleteMultipartUploadResult>`)
	default:
		w.WriteHeader(http.StatusMethodNotAllowed)
	}
}

// An upload's memory does not grow with the object: parts are read from
// the file by position as they are sent, never held (the SDK's transfer
// manager holds a buffer per part in flight: 8 of 8 MiB here, 64 MiB).
func TestUploadMemoryBounded(t *testing.T) {
	defer func(p int64) { partSize = p }(partSize)
	partSize = 8 << 20
	const size = 96 << 20
	f, err := os.CreateTemp(t.TempDir(), "big")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := f.Truncate(size); err != nil {
		t.Fatal(err)
	}
	uploadAllocates(t, "an upload", size, func(s *Store) error {
		return s.Upload(context.Background(), URL{Bucket: "bkt", Key: "k"}, f, size)
	})
}

// uploadAllocates runs upload against a server that takes size bytes
// and checks that it allocated at most 16 MiB in all.
func uploadAllocates(t *testing.T, what string, size int64, upload func(*Store) error) {
	t.Helper()
	srv := &sink{}
	s := testStore(t, srv)
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	if err := upload(s); err != nil {
		t.Fatal(err)
	}
	runtime.ReadMemStats(&after)
	if srv.bytes.Load() != size {
		t.Fatalf("the server got %d bytes, want %d", srv.bytes.Load(), size)
	}
	if alloc := after.TotalAlloc - before.TotalAlloc; alloc > 16<<20 {
		t.Errorf("%s of %d MiB allocated %d MiB", what, size>>20, alloc>>20)
	} else {
		t.Logf("%s of %d MiB allocated %.1f MiB", what, size>>20, float64(alloc)/(1<<20))
	}
}

// A listing is a stream of pages: the first object comes after one page
// was asked for, and keys out of byte order are an error, not a walk in
// another order.
func TestListPaged(t *testing.T) {
	f := newFake(t)
	f.pageMax = 2
	for _, k := range []string{"p/a.npy", "p/b.npy", "p/c.npy", "p/d.npy", "p/e.npy"} {
		f.objects["bkt/"+k] = []byte("x")
	}
	s := fakeStore(t, f, f.creds)
	var got []string
	for o, err := range s.List(context.Background(), URL{Bucket: "bkt", Key: "p/"}) {
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, o.Rel)
		if len(got) == 1 && len(f.log) != 1 {
			t.Errorf("%d requests before the first object, want 1", len(f.log))
		}
	}
	if strings.Join(got, " ") != "a.npy b.npy c.npy d.npy e.npy" || len(f.log) != 3 {
		t.Errorf("listed %q in %d requests", got, len(f.log))
	}
	unsorted := testStore(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprint(w, `<ListBucketResult><IsTruncated>false</IsTruncated><Contents><Key>p/b.npy</Key><Size>1</Size></Contents><Contents><Key>p/a.npy</Key><Size>1</Size></Contents></ListBucketResult>`)
	}))
	var last error
	for _, err := range unsorted.List(context.Background(), URL{Bucket: "bkt", Key: "p/"}) {
		last = err
	}
	if last == nil || !strings.Contains(last.Error(), "not in byte-wise key order") {
		t.Errorf("an unsorted listing: %v", last)
	}
}

// chunked answers a ranged GET of a 1 MiB object in chunks (no
// Content-Length), as a server streaming from its disk does: the end of
// the body is a last chunk that comes after the bytes asked for.
type chunked struct{}

func (chunked) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	const size = 1 << 20
	var first, last int
	fmt.Sscanf(r.Header.Get("Range"), "bytes=%d-%d", &first, &last)
	last = min(last, size-1)
	w.Header().Set("Content-Range", fmt.Sprintf("bytes %d-%d/%d", first, last, size))
	w.WriteHeader(http.StatusPartialContent)
	for n := last - first + 1; n > 0; n -= 64 << 10 {
		w.Write(make([]byte, min(n, 64<<10)))
		w.(http.Flusher).Flush()
	}
}

// Reads keep their connection for the next request: a body is read to
// its end before it is closed (net/http drops a connection whose body
// is closed before its end is seen, and a new one costs a round trip to
// the server, two more with TLS).
func TestConnectionsKept(t *testing.T) {
	var conns atomic.Int32
	srv := httptest.NewUnstartedServer(chunked{})
	srv.Config.ConnState = func(c net.Conn, s http.ConnState) {
		if s == http.StateNew {
			conns.Add(1)
		}
	}
	srv.Start()
	t.Cleanup(srv.Close)
	isolate(t)
	t.Setenv("AWS_ENDPOINT_URL_S3", srv.URL)
	t.Setenv("AWS_ACCESS_KEY_ID", "k")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "s")
	s, err := New(context.Background(), Options{})
	if err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 1<<20)
	for range 5 {
		if _, _, err := s.ReadFirst(context.Background(), URL{Bucket: "bkt", Key: "k"}, buf); err != nil {
			t.Fatal(err)
		}
	}
	if n := conns.Load(); n != 1 {
		t.Errorf("5 reads opened %d connections, want 1", n)
	}
}
