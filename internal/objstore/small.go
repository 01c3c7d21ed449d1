package objstore

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"sort"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
)

// The operations of a store of many small objects (a Zarr store's
// chunks and metadata): each object read or written whole, or a range
// of it, in one request, held in memory. A large object still goes
// through Download and the part writer.

// IsNotFound says whether err is the server saying the key is not there
// (404 NoSuchKey), as opposed to a missing bucket or any other failure.
func IsNotFound(err error) bool {
	e := (*Error)(nil)
	return errors.As(err, &e) && e.Status == http.StatusNotFound && e.Code != "NoSuchBucket"
}

// GetBounded reads the object whole in one GET if it holds at most
// limit bytes; a larger one is an error naming its size, and at most
// limit+1 of its bytes cross the network (a ranged GET: the size comes in
// its Content-Range).
func (s *Store) GetBounded(ctx context.Context, u URL, limit int64) ([]byte, error) {
	return s.GetBoundedInto(ctx, u, limit, nil)
}

// GetBoundedInto is GetBounded with the body read into alloc(n), n its
// length as the server sends it (nil alloc: a new slice), so that a
// caller reading many objects reuses its buffers: Zarr chunks are MiBs
// each, and fresh memory costs page faults and clearing at every GET.
func (s *Store) GetBoundedInto(ctx context.Context, u URL, limit int64, alloc func(n int) []byte) ([]byte, error) {
	b, size, err := s.get(ctx, u, "bytes=0-"+fmt.Sprint(limit), limit+1, alloc)
	if e := (*Error)(nil); errors.As(err, &e) && e.Status == http.StatusRequestedRangeNotSatisfiable {
		return nil, nil // an empty object has no byte 0
	}
	if err != nil {
		return nil, err
	}
	if size > limit {
		return nil, fmt.Errorf("%s holds %d bytes, more than it can (at most %d): not read", Base(u.Key), size, limit)
	}
	return b, nil
}

// GetRange reads n bytes at off (off < 0: the last -off bytes, a suffix
// range, so that a shard's index at its end costs one request and no
// HEAD). Fewer bytes than asked (the object ends first) is an error.
func (s *Store) GetRange(ctx context.Context, u URL, off, n int64) ([]byte, error) {
	return s.GetRangeInto(ctx, u, off, n, nil)
}

// GetRangeInto is GetRange with the body read into alloc(n), as
// GetBoundedInto.
func (s *Store) GetRangeInto(ctx context.Context, u URL, off, n int64, alloc func(n int) []byte) ([]byte, error) {
	if n <= 0 {
		if _, err := s.Stat(ctx, u); err != nil {
			return nil, err
		}
		return []byte{}, nil
	}
	r := fmt.Sprintf("bytes=%d-%d", off, off+n-1)
	want := n
	if off < 0 {
		r, want = fmt.Sprintf("bytes=%d", off), -off
	}
	b, size, err := s.get(ctx, u, r, want, alloc)
	if err != nil {
		if e := (*Error)(nil); errors.As(err, &e) && e.Status == http.StatusRequestedRangeNotSatisfiable {
			return nil, fmt.Errorf("%d bytes at %d lie past the object's end", want, off)
		}
		return nil, err
	}
	if int64(len(b)) != want {
		return nil, fmt.Errorf("%d bytes at %d lie past the object's end (%d bytes)", want, off, size)
	}
	return b, nil
}

// get is one ranged GET of at most max bytes, its body read whole (into
// alloc(n) when its length n is given and alloc is not nil), asked again
// (up to retries times) when the body breaks off; the object's size from
// Content-Range. A retry calls alloc again and drops the buffer the
// broken body was read into: alloc's buffers must be the collector's.
func (s *Store) get(ctx context.Context, u URL, rng string, max int64, alloc func(n int) []byte) ([]byte, int64, error) {
	var err error
	for try := 0; ; try++ {
		var out *s3.GetObjectOutput
		out, err = call(s, u.Bucket, func(o ...func(*s3.Options)) (*s3.GetObjectOutput, error) {
			return s.c.GetObject(ctx, &s3.GetObjectInput{Bucket: &u.Bucket, Key: &u.Key, Range: &rng}, o...)
		})
		if err != nil {
			return nil, 0, s.describe(err)
		}
		size, ok := contentRangeSize(aws.ToString(out.ContentRange))
		if !ok {
			out.Body.Close()
			return nil, 0, fmt.Errorf("the server sent no usable Content-Range for a ranged GET (%q)", aws.ToString(out.ContentRange))
		}
		var b []byte
		if n := aws.ToInt64(out.ContentLength); out.ContentLength != nil && n >= 0 && n <= max {
			// The exact size: one allocation, no growing buffer (a
			// bytes.Buffer read to EOF doubles itself for the last read).
			if alloc != nil {
				b = alloc(int(n))[:n]
			} else {
				b = make([]byte, n)
			}
			_, err = io.ReadFull(out.Body, b)
		} else {
			b, err = io.ReadAll(io.LimitReader(out.Body, max))
		}
		out.Body.Close()
		if err == nil {
			return b, size, nil
		}
		if ctx.Err() != nil || try >= retries || !transient(err) {
			return nil, 0, s.describe(err)
		}
		if err := sleep(ctx, backoff(try)); err != nil {
			return nil, 0, err
		}
	}
}

// PutBytes makes the object u from data in one PutObject, with its
// CRC32C.
func (s *Store) PutBytes(ctx context.Context, u URL, data []byte) error {
	return s.put(ctx, u, bytes.NewReader(data), int64(len(data)))
}

// Delete removes the object u; one already gone is no error.
func (s *Store) Delete(ctx context.Context, u URL) error {
	_, err := call(s, u.Bucket, func(o ...func(*s3.Options)) (*s3.DeleteObjectOutput, error) {
		return s.c.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: &u.Bucket, Key: &u.Key}, o...)
	})
	if err = s.describe(err); IsNotFound(err) {
		return nil
	}
	return err
}

// ListDir names the entries directly under the prefix u (a "/"
// delimited listing): objects by their last element, and the prefixes
// below by theirs with a final "/", sorted byte-wise.
func (s *Store) ListDir(ctx context.Context, u URL) ([]string, error) {
	prefix := u.Key
	if prefix != "" && !strings.HasSuffix(prefix, "/") {
		prefix += "/"
	}
	var names []string
	var token *string
	for {
		in := &s3.ListObjectsV2Input{Bucket: &u.Bucket, Prefix: &prefix, Delimiter: aws.String("/"), ContinuationToken: token, EncodingType: types.EncodingTypeUrl}
		out, err := call(s, u.Bucket, func(o ...func(*s3.Options)) (*s3.ListObjectsV2Output, error) {
			return s.c.ListObjectsV2(ctx, in, o...)
		})
		if err != nil {
			return nil, s.describe(err)
		}
		unescape := func(k string) (string, error) {
			if out.EncodingType != types.EncodingTypeUrl {
				return k, nil
			}
			return url.QueryUnescape(k)
		}
		for _, o := range out.Contents {
			k, err := unescape(aws.ToString(o.Key))
			if err != nil {
				return nil, err
			}
			if rel := strings.TrimPrefix(k, prefix); rel != "" && !strings.Contains(rel, "/") {
				names = append(names, rel)
			}
		}
		for _, p := range out.CommonPrefixes {
			k, err := unescape(aws.ToString(p.Prefix))
			if err != nil {
				return nil, err
			}
			if rel := strings.TrimPrefix(k, prefix); rel != "/" && rel != "" {
				names = append(names, rel)
			}
		}
		if !aws.ToBool(out.IsTruncated) {
			break
		}
		if aws.ToString(out.NextContinuationToken) == "" {
			return nil, &Error{Msg: fmt.Sprintf("the listing of %s is truncated but the server gave no continuation token", URL{Bucket: u.Bucket, Key: prefix})}
		}
		token = out.NextContinuationToken
	}
	sort.Strings(names)
	return names, nil
}
