package fileio

import (
	"context"
	"errors"
	"io"
	"os"
	"sync"
	"sync/atomic"

	"github.com/depthspace/depthspace/internal/objstore"
)

// Objects (s3://BUCKET/KEY) are one more source and sink: an input is
// downloaded by parallel ranged GETs into an unnamed scratch file
// (Scratch) and mapped like any file, so every format and the streamed
// path read it unchanged, and its bytes are page cache, not this
// process's memory; an output is written into an unnamed scratch file
// exactly as a local output (WriteAt, Reserve, Map) and uploaded by
// Commit, which completes the upload only at the end. Abort, a failed
// upload or a signal aborts it: no partial object, no upload left.

// IsObject says whether a path names an object (s3://…).
func IsObject(name string) bool { return objstore.IsURL(name) }

// smallObject: an object up to this size is read into memory (a reused
// buffer, like a small file) by its first GET; a larger one goes to a
// scratch file.
const smallObject = 8 << 20

// openObject reads the object name: its first smallObject bytes and its
// size with one ranged GET (no HEAD first); the rest, if any, by
// parallel ranged GETs into a scratch file that is then opened as a file.
func openObject(name string) (*Input, error) {
	u, err := objstore.ParseURL(name)
	if err != nil {
		return nil, err
	}
	if u.IsPrefix() {
		return nil, errors.New("is a prefix (a directory of objects), not a tensor object")
	}
	s, err := defaultStore()
	if err != nil {
		return nil, err
	}
	ctx := context.Background()
	first := GetBuffer(smallObject)
	n, size, err := s.ReadFirst(ctx, u, first)
	if err != nil {
		PutBuffer(first)
		return nil, err
	}
	if int64(n) == size {
		return &Input{Name: name, Data: first[:n], pooled: true}, nil
	}
	f, err := Scratch()
	if err == nil {
		// Blocks first: a full TMPDIR fails before the transfer.
		err = fallocate(f, 0, size)
		if err == nil {
			_, err = f.WriteAt(first[:n], 0)
		}
	}
	PutBuffer(first)
	if err == nil {
		err = s.Download(ctx, u, f, int64(n), size)
	}
	var fi os.FileInfo
	if err == nil {
		fi, err = f.Stat()
	}
	if err != nil {
		if f != nil {
			f.Close()
		}
		return nil, unwrapPath(err)
	}
	return openFile(name, f, fi, 0)
}

// Head is the start of an input and its size, without reading the rest:
// for a file a positioned read, for an object one ranged GET of at most
// n bytes (info reads an npy header this way).
func Head(name string, n int64) (head []byte, size int64, err error) {
	if !IsObject(name) {
		f, err := openRead(name)
		if err != nil {
			return nil, 0, err
		}
		defer f.Close()
		fi, err := f.Stat()
		if err != nil {
			return nil, 0, err
		}
		if !fi.Mode().IsRegular() {
			return nil, 0, errors.New("not a regular file")
		}
		head = make([]byte, min(fi.Size(), n))
		if _, err := f.ReadAt(head, 0); err != nil && err != io.EOF {
			return nil, 0, err
		}
		return head, fi.Size(), nil
	}
	u, err := objstore.ParseURL(name)
	if err != nil {
		return nil, 0, err
	}
	s, err := defaultStore()
	if err != nil {
		return nil, 0, err
	}
	head = make([]byte, n)
	got, size, err := s.ReadFirst(context.Background(), u, head)
	if err != nil {
		return nil, 0, err
	}
	return head[:got], size, nil
}

// createObject starts an output that Commit uploads as the object name.
func createObject(name string) (*Output, error) {
	u, err := objstore.ParseURL(name)
	if err != nil {
		return nil, err
	}
	if u.IsPrefix() {
		return nil, errors.New("names a prefix (ends in /), not an object")
	}
	if _, err := defaultStore(); err != nil {
		return nil, err
	}
	uploadsStarted.Do(func() { abortUploads = objstore.AbortAll })
	HandleSignals() // a signal aborts the upload in flight
	f, err := Scratch()
	if err != nil {
		return nil, err
	}
	return &Output{Name: name, w: f, f: f, object: true}, nil
}

var uploadsStarted sync.Once

// objectsUsed: this run talks to a server. With the signal handler
// notified of SIGPIPE (for standard output), Go delivers it for a write
// to any descriptor, a server's broken connection too; the handler then
// ignores it, and the write's EPIPE is reported as the request's error.
var objectsUsed atomic.Bool

func defaultStore() (*objstore.Store, error) {
	objectsUsed.Store(true)
	return objstore.Default()
}

// abortUploads is called by the signal handler before the process exits:
// objstore.AbortAll once an object output was made.
var abortUploads = func() {}

// commitObject uploads the finished output; err is what Commit found
// before (an unmapping that failed), which uploads nothing.
func (o *Output) commitObject(err error) error {
	defer o.f.Close()
	if err != nil {
		return unwrapPath(err)
	}
	fi, err := o.f.Stat()
	if err != nil {
		return unwrapPath(err)
	}
	u, _ := objstore.ParseURL(o.Name) // checked by createObject
	s, err := defaultStore()
	if err != nil {
		return err
	}
	return s.Upload(context.Background(), u, o.f, fi.Size())
}

// ObjectExists says whether an object is there (a HEAD request), for
// --skip-existing.
func ObjectExists(name string) (bool, error) {
	u, err := objstore.ParseURL(name)
	if err != nil {
		return false, err
	}
	s, err := defaultStore()
	if err != nil {
		return false, err
	}
	return s.Exists(context.Background(), u)
}

// ObjectIsDir says whether an s3:// path is walked like a directory: a
// prefix (s3://B/P/, s3://B), or s3://B/P where no object P exists but
// keys under P/ do.
func ObjectIsDir(name string) bool {
	u, err := objstore.ParseURL(name)
	if err != nil {
		return false
	}
	if u.IsPrefix() {
		return true
	}
	s, err := defaultStore()
	if err != nil {
		return false
	}
	return s.IsDir(context.Background(), u)
}
