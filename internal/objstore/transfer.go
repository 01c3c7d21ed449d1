package objstore

import (
	"context"
	"errors"
	"fmt"
	"io"
	"iter"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
)

// Object is one object of a listing.
type Object struct {
	Key  string
	Rel  string // the key below the listed prefix: the batch's relative path
	Size int64
}

// List yields every object under the prefix u (ListObjectsV2,
// recursive) page by page as the server sends them, never the whole
// listing: memory is one page, whatever the number of keys. Keys come
// sorted byte by byte: S3 lists keys in UTF-8 binary order, which is the
// byte-wise order a directory walk sorts its relative paths in, so a
// prefix and a directory holding the same names list alike; a server
// that lists them otherwise is an error, not a walk in another order.
// Keys ending in "/" (folder markers) are left out. A prefix is listed
// with its final "/" added (s3://b/data lists data/..., not data2/...).
// The first error ends the listing.
func (s *Store) List(ctx context.Context, u URL) iter.Seq2[Object, error] {
	return func(yield func(Object, error) bool) {
		prefix := u.Key
		if prefix != "" && !strings.HasSuffix(prefix, "/") {
			prefix += "/"
		}
		token, last := "", ""
		for {
			res, err := s.listPage(ctx, u.Bucket, prefix, token, 1000)
			if err != nil {
				yield(Object{}, err)
				return
			}
			for _, o := range res.Contents {
				key := aws.ToString(o.Key)
				if key <= last && last != "" {
					yield(Object{}, &Error{Msg: fmt.Sprintf("the server listed %q after %q: not in byte-wise key order", key, last)})
					return
				}
				last = key
				if strings.HasSuffix(key, "/") {
					continue
				}
				if !yield(Object{Key: key, Rel: strings.TrimPrefix(key, prefix), Size: aws.ToInt64(o.Size)}, nil) {
					return
				}
			}
			if !aws.ToBool(res.IsTruncated) {
				return
			}
			token = aws.ToString(res.NextContinuationToken)
			if token == "" {
				// A listing that says it is cut short but not where to go
				// on: what it holds is not the whole prefix.
				yield(Object{}, &Error{Msg: fmt.Sprintf("the listing of %s is truncated but the server gave no continuation token", URL{Bucket: u.Bucket, Key: prefix})})
				return
			}
		}
	}
}

// IsDir says whether u is walked like a directory: a prefix by its form
// (s3://B/P/), or s3://B/P where no object P exists but keys under P/ do.
func (s *Store) IsDir(ctx context.Context, u URL) bool {
	if u.IsPrefix() {
		return true
	}
	if ok, err := s.Exists(ctx, u); ok || err != nil {
		return false
	}
	res, err := s.listPage(ctx, u.Bucket, u.Key+"/", "", 1)
	return err == nil && len(res.Contents) > 0
}

// Transfers are cut into ranges (GET) and parts (PUT) of partSize, up to
// streams of them at once: one connection's throughput is bounded by its
// round trips and by the server's per-request work, several overlap them.
var (
	partSize int64 = 16 << 20
	streams        = 8
)

// Download copies bytes [from, size) of the object (of the given size)
// into f at the same offsets by ranged GETs, up to streams at once,
// asked for front to back (the bytes a reader wants first come first),
// each written by position through a small buffer: memory does not grow
// with the object. arrived, if not nil, is told of every range of f
// written, as it is written, from several goroutines: a reader of f can
// start on the front while the rest is on the way.
func (s *Store) Download(ctx context.Context, u URL, f *os.File, from, size int64, arrived func(off, n int64)) error {
	if size <= from {
		return nil
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	parts := int((size - from + partSize - 1) / partSize)
	var next atomic.Int64
	var first error
	var once sync.Once
	var wg sync.WaitGroup
	for range min(streams, parts) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			buf := make([]byte, 256<<10)
			for {
				i := next.Add(1) - 1
				if i >= int64(parts) || ctx.Err() != nil {
					return
				}
				off := from + i*partSize
				n := min(partSize, size-off)
				err := s.getRange(ctx, u, off, n, func(r io.Reader, _ int64) error {
					got, err := copyAt(f, off, r, buf, arrived)
					if err == nil && got < n {
						err = io.ErrUnexpectedEOF
					}
					return err
				})
				if err != nil {
					once.Do(func() { first = err; cancel() })
					return
				}
			}
		}()
	}
	wg.Wait()
	if first == nil {
		first = ctx.Err() // the caller's context ended (the input closed)
	}
	return first
}

// copyAt copies r into f from off on through buf, telling arrived (if
// not nil) of each piece written.
func copyAt(f *os.File, off int64, r io.Reader, buf []byte, arrived func(off, n int64)) (int64, error) {
	var got int64
	for {
		n, err := io.ReadFull(r, buf)
		if n > 0 {
			if _, werr := f.WriteAt(buf[:n], off+got); werr != nil {
				return got, werr
			}
			if arrived != nil {
				arrived(off+got, int64(n))
			}
			got += int64(n)
		}
		if err == io.EOF || err == io.ErrUnexpectedEOF {
			return got, nil
		}
		if err != nil {
			return got, err
		}
	}
}

// maxParts is S3's limit on the parts of one upload.
const maxParts = 10000

// partSizeFor is the part size of an upload of size bytes: partSize, or,
// past maxParts of them (156.25 GiB), the next whole MiB that keeps it
// within maxParts (S3 allows parts of up to 5 GiB: objects of up to
// 48.8 TiB). Found in review: part 10,001 was refused after 156 GiB sent.
func partSizeFor(size int64) int64 {
	if size <= maxParts*partSize {
		return partSize
	}
	const mib = 1 << 20
	return (size/maxParts + mib) / mib * mib
}

// Upload makes the object u from the first size bytes of f. An object
// up to partSize is one PUT, which S3 makes visible only when the whole
// body has come (a PUT cut short leaves nothing). A larger one is a
// multipart upload whose parts are read from f by position (a bounded
// number in flight, each streamed from the file, not held in memory) and
// completed at the end. On a failure, or AbortAll (a signal), the parts
// in flight are cancelled and waited for, then the upload is aborted and
// checked gone (abortFully): neither an object nor an upload is left
// behind. Only uploads this run started are aborted, and those that a
// run of this host that is over left behind (journal.go): another run
// may be writing the same key.
func (s *Store) Upload(ctx context.Context, u URL, f *os.File, size int64) error {
	s.abortLeftBehind(ctx, u) // journal.go: uploads of runs that are over
	if size <= partSize {
		return s.put(ctx, u, f, size)
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	ps := partSizeFor(size)
	parts := int((size + ps - 1) / ps)
	workers := min(streams, parts)
	var wg sync.WaitGroup // the part workers; counted before AbortAll can see them
	wg.Add(workers)
	up, err := s.begin(ctx, u, cancel, &wg)
	if err != nil {
		wg.Add(-workers)
		return err
	}
	done := make([]types.CompletedPart, parts)
	var next atomic.Int64
	var first error
	var once sync.Once
	for range workers {
		go func() {
			defer wg.Done()
			for {
				i := next.Add(1) - 1
				if i >= int64(parts) || ctx.Err() != nil {
					return
				}
				off := i * ps
				n := min(ps, size-off)
				p, err := s.putPart(ctx, u, up.id, int32(i)+1, f, off, n)
				if err != nil {
					once.Do(func() { first = err; cancel() })
					return
				}
				done[i] = p
			}
		}()
	}
	// Every part worker has returned before anything else: no part
	// request is still in flight when the upload is completed or
	// aborted.
	wg.Wait()
	if first == nil {
		if err := ctx.Err(); err != nil {
			first = err
		}
	}
	if first == nil {
		first = s.complete(ctx, u, up.id, done)
	}
	if first != nil {
		if interrupted.Load() {
			// AbortAll stopped the parts: the signal handler ends the
			// process with its status once the upload is aborted; this
			// failure is not the run's to report.
			select {}
		}
		up.abort()
		return first
	}
	up.finish()
	return nil
}

// An upload in flight, known to AbortAll.
type upload struct {
	s      *Store
	u      URL
	id     string
	cancel context.CancelFunc // stops the parts in flight
	parts  *sync.WaitGroup    // done when they have stopped
}

var (
	// uploadsMu is held shared while an upload is started and recorded,
	// and by AbortAll exclusively until the process exits: an upload is
	// either recorded before AbortAll looks, or never started.
	uploadsMu sync.RWMutex
	listMu    sync.Mutex
	uploads   = map[*upload]bool{}
	closing   bool
	// creating are the cancels of uploads being created (under listMu):
	// AbortAll cancels them first, so that a CreateMultipartUpload the
	// server does not answer cannot keep the lock from it (found in
	// review: SIGINT waited 3 minutes, 6 tries of 30 s).
	creating = map[*context.CancelFunc]bool{}
)

var errClosing = errors.New("interrupted")

// interrupted: AbortAll has begun (a signal); uploads it stops wait for
// the exit rather than report their failure.
var interrupted atomic.Bool

func (s *Store) begin(ctx context.Context, u URL, cancel context.CancelFunc, parts *sync.WaitGroup) (*upload, error) {
	uploadsMu.RLock()
	defer uploadsMu.RUnlock()
	if closing {
		return nil, errClosing
	}
	// Registered before interrupted is looked at: AbortAll sets it, then
	// cancels what is registered, so either it cancels this creation or
	// this creation sees it set.
	listMu.Lock()
	creating[&cancel] = true
	listMu.Unlock()
	var id string
	err := errClosing
	if !interrupted.Load() {
		id, err = s.createUpload(ctx, u)
	}
	listMu.Lock()
	delete(creating, &cancel)
	listMu.Unlock()
	if err != nil {
		return nil, err
	}
	up := &upload{s: s, u: u, id: id, cancel: cancel, parts: parts}
	s.record(u, id)
	listMu.Lock()
	uploads[up] = true
	listMu.Unlock()
	return up, nil
}

func (up *upload) finish() {
	up.s.forget(up.u, up.id)
	listMu.Lock()
	delete(uploads, up)
	listMu.Unlock()
}

// abort aborts the upload (its parts are deleted by the server), on a
// context of its own: the run's may be what was cancelled.
func (up *upload) abort() {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if up.abortFully(ctx) {
		up.finish()
		return
	}
	// Not seen gone: its journal file is kept, for the next run.
	listMu.Lock()
	delete(uploads, up)
	listMu.Unlock()
}

// abortTries bounds abortFully: so many aborts, each checked.
const abortTries = 5

// abortFully aborts the upload until ListParts says it is gone. A part
// whose body had arrived when the abort came may still be stored after
// it, and bring the upload back: AWS's AbortMultipartUpload
// documentation says to abort again until it is gone (versitygw did this
// here under SIGINT: a part written after the abort left the upload
// listed). It stops when the server cannot be asked (gone, or the
// context ended), and says whether the upload was seen gone.
func (up *upload) abortFully(ctx context.Context) bool {
	for try := 0; try < abortTries && ctx.Err() == nil; try++ {
		_ = up.s.abortUpload(ctx, up.u, up.id)
		gone, err := up.s.uploadGone(ctx, up.u, up.id)
		if gone || err != nil {
			return gone
		}
		if sleep(ctx, 100*time.Millisecond<<try) != nil {
			return false
		}
	}
	return false
}

// AbortAll aborts every multipart upload in flight, at once, waiting at
// most a few seconds, and refuses new ones: the signal handler calls it
// before the process exits. Single PUTs need nothing: the server drops a
// body cut short when the connection closes with the process.
func AbortAll() {
	interrupted.Store(true)
	listMu.Lock()
	for c := range creating {
		(*c)() // an upload being created: its request given up
	}
	listMu.Unlock()
	uploadsMu.Lock() // kept until exit
	closing = true
	listMu.Lock()
	ups := make([]*upload, 0, len(uploads))
	for up := range uploads {
		ups = append(ups, up)
	}
	listMu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	var wg sync.WaitGroup
	for _, up := range ups {
		wg.Add(1)
		go func() {
			defer wg.Done()
			// The parts in flight first: their connections closed, the
			// server drops their bodies instead of storing them after
			// the abort (a second or so at most to see them stop).
			up.cancel()
			stopped := make(chan struct{})
			go func() { up.parts.Wait(); close(stopped) }()
			select {
			case <-stopped:
			case <-time.After(time.Second):
			}
			if up.abortFully(ctx) {
				up.s.forget(up.u, up.id)
			}
		}()
	}
	wg.Wait()
}
