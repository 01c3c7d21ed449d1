package s3

import (
	"context"
	"io/fs"

	fileio "github.com/depthspace/depthspace/internal/io"
	"github.com/depthspace/depthspace/internal/objstore"
)

// The place's side of a store of objects under a prefix
// (fileio.StorePlace: a Zarr store on s3://): objects read whole or by
// range in one request each, put whole, deleted, and a prefix listed
// one level deep. A key the server says is not there is an error that
// is fs.ErrNotExist, which a store reads as a missing chunk.

var (
	_ fileio.StorePlace     = place{}
	_ fileio.StorePlaceInto = place{}
)

func (p place) GetObject(ctx context.Context, name string, limit int64) ([]byte, error) {
	return p.GetObjectInto(ctx, name, limit, nil)
}

func (p place) GetObjectRange(ctx context.Context, name string, off, n int64) ([]byte, error) {
	return p.GetObjectRangeInto(ctx, name, off, n, nil)
}

func (place) GetObjectInto(ctx context.Context, name string, limit int64, alloc func(n int) []byte) ([]byte, error) {
	s, u, err := store(name)
	if err != nil {
		return nil, err
	}
	b, err := s.GetBoundedInto(ctx, u, limit, alloc)
	return b, notExist(err)
}

func (place) GetObjectRangeInto(ctx context.Context, name string, off, n int64, alloc func(n int) []byte) ([]byte, error) {
	s, u, err := store(name)
	if err != nil {
		return nil, err
	}
	b, err := s.GetRangeInto(ctx, u, off, n, alloc)
	return b, notExist(err)
}

func (place) ObjectSize(ctx context.Context, name string) (int64, error) {
	s, u, err := store(name)
	if err != nil {
		return 0, err
	}
	info, err := s.Stat(ctx, u)
	return info.Size, notExist(err)
}

func (place) ListChildren(ctx context.Context, name string) ([]string, error) {
	s, u, err := store(name)
	if err != nil {
		return nil, err
	}
	return s.ListDir(ctx, u)
}

func (place) PutObject(ctx context.Context, name string, data []byte) error {
	s, u, err := store(name)
	if err != nil {
		return err
	}
	return s.PutBytes(ctx, u, data)
}

func (place) DeleteObject(ctx context.Context, name string) error {
	s, u, err := store(name)
	if err != nil {
		return err
	}
	return s.Delete(ctx, u)
}

// notExist makes the server's "no such key" an error that is
// fs.ErrNotExist, keeping its one-line message.
func notExist(err error) error {
	if objstore.IsNotFound(err) {
		return missing{err}
	}
	return err
}

type missing struct{ err error }

func (m missing) Error() string        { return m.err.Error() }
func (m missing) Unwrap() error        { return m.err }
func (m missing) Is(target error) bool { return target == fs.ErrNotExist }
