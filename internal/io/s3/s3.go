// Package s3 is the place s3://BUCKET/KEY (fileio.Place) over
// internal/objstore: importing it registers the scheme. Plain depthspace
// does not import it, so that net/http and a TLS stack cost nothing at
// the start of every run: the companion program depthspace-s3
// (cmd/depthspace-s3), the all-in-one build (cmd/depthspace/s3.go, -tags
// s3) and the tests that use objects do (docs/objects.md).
package s3

import (
	"context"
	"iter"
	"os"

	fileio "github.com/depthspace/depthspace/internal/io"
	"github.com/depthspace/depthspace/internal/objstore"
)

func init() { fileio.Register(objstore.Scheme, place{}) }

// place adapts objstore's client, made once from the environment and
// the run's options (objstore.Default, fileio.ObjectOptions), to
// fileio.Place: names are s3:// URLs, already
// checked by Parse where it matters.
type place struct{}

func (place) Parse(name string) (bool, error) {
	u, err := objstore.ParseURL(name)
	return u.IsPrefix(), err
}

func (place) Ready() error {
	_, err := defaultStore()
	return err
}

func defaultStore() (*objstore.Store, error) {
	return objstore.Default(objstore.Options{Anonymous: fileio.ObjectOptions.Anonymous})
}

// store is the client and name's URL: every method after Ready.
func store(name string) (*objstore.Store, objstore.URL, error) {
	u, err := objstore.ParseURL(name)
	if err != nil {
		return nil, u, err
	}
	s, err := defaultStore()
	return s, u, err
}

func (place) ReadFirst(name string, p []byte) (int, int64, error) {
	s, u, err := store(name)
	if err != nil {
		return 0, 0, err
	}
	return s.ReadFirst(context.Background(), u, p)
}

func (place) Download(ctx context.Context, name string, f *os.File, from, size int64, arrived func(off, n int64)) error {
	s, u, err := store(name)
	if err != nil {
		return err
	}
	return s.Download(ctx, u, f, from, size, arrived)
}

func (place) Writer(name string, scratch func() (*os.File, error)) fileio.ObjectWriter {
	s, u, err := store(name)
	if err != nil {
		return failedWriter{err}
	}
	return s.NewPartWriter(context.Background(), u, scratch)
}

// failedWriter is an object that cannot be written (the client could not
// be made): every call says why.
type failedWriter struct{ err error }

func (w failedWriter) Write([]byte) (int, error)          { return 0, w.err }
func (w failedWriter) WriteAt([]byte, int64) (int, error) { return 0, w.err }
func (w failedWriter) ReadAt([]byte, int64) (int, error)  { return 0, w.err }
func (w failedWriter) Reserve(int64) error                { return w.err }
func (w failedWriter) File(int64) (*os.File, error)       { return nil, w.err }
func (w failedWriter) Size() int64                        { return 0 }
func (w failedWriter) Commit() error                      { return w.err }
func (w failedWriter) Abort()                             {}

func (place) AbortAll() { objstore.AbortAll() }

func (place) Exists(name string) (bool, error) {
	s, u, err := store(name)
	if err != nil {
		return false, err
	}
	return s.Exists(context.Background(), u)
}

func (place) IsDir(name string) bool {
	s, u, err := store(name)
	return err == nil && s.IsDir(context.Background(), u)
}

func (place) List(name string) iter.Seq2[fileio.Entry, error] {
	return func(yield func(fileio.Entry, error) bool) {
		s, u, err := store(name)
		if err != nil {
			yield(fileio.Entry{}, err)
			return
		}
		for o, err := range s.List(context.Background(), u) {
			if err != nil {
				yield(fileio.Entry{}, err)
				return
			}
			if !yield(fileio.Entry{Name: objstore.URL{Bucket: u.Bucket, Key: o.Key}.String(), Rel: o.Rel, Size: o.Size}, nil) {
				return
			}
		}
	}
}
