package objstore

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/smithy-go"
	smithyhttp "github.com/aws/smithy-go/transport/http"
)

// Store is a client of S3 or of one S3-compatible server: the SDK's
// client, with what the transfers add (per-bucket regions, pinned reads,
// one-line errors).
type Store struct {
	c        *s3.Client
	region   string
	custom   bool   // a configured endpoint: an S3-compatible server, one region
	endpoint string // for error messages: "http://127.0.0.1:7070" or "AWS S3"

	// regions are the buckets' own regions, as AWS named them when asked
	// in another (bucket -> region).
	regions sync.Map

	// pins are the ETags of objects being read (ReadFirst): the rest of
	// the object is asked for with If-Match, so that an object replaced
	// while it is read fails instead of coming back mixed (found in
	// review: 8 MiB of the old object and 32 MiB of the new, no error).
	pins sync.Map // URL -> ETag
}

// retries is how many times a ranged GET whose body broke off (a reset,
// a server gone mid-transfer) is asked for again; the SDK's retryer
// retries the requests themselves (AWS_RETRY_MODE, AWS_MAX_ATTEMPTS).
const retries = 5

var (
	defaultOnce  sync.Once
	defaultStore *Store
	defaultErr   error
)

// Default is the client built from this process's environment and o,
// made once, on first use: a run that names no s3:// URL never reads the
// AWS files.
func Default(o Options) (*Store, error) {
	defaultOnce.Do(func() {
		defaultStore, defaultErr = New(context.Background(), o)
	})
	return defaultStore, defaultErr
}

// New builds a client from the AWS configuration (load) and o.
func New(ctx context.Context, o Options) (*Store, error) {
	cfg, err := load(ctx, o)
	if err != nil {
		return nil, err
	}
	c := s3.NewFromConfig(cfg, clientOptions)
	s := &Store{c: c, region: cfg.Region, endpoint: "AWS S3 (" + cfg.Region + ")"}
	if ep := c.Options().BaseEndpoint; ep != nil && *ep != "" {
		s.custom, s.endpoint = true, strings.TrimSuffix(*ep, "/")
	}
	return s, nil
}

// call runs op against bucket in the bucket's region: on AWS, a bucket
// asked in another region is answered with its own
// (X-Amz-Bucket-Region), which is kept for the bucket and asked again
// once. op must build its request anew each time (bodies from their
// start).
func call[T any](s *Store, bucket string, op func(...func(*s3.Options)) (T, error)) (T, error) {
	out, err := op(s.regionOf(bucket)...)
	if s.redirected(bucket, err) {
		out, err = op(s.regionOf(bucket)...)
	}
	return out, err
}

func (s *Store) regionOf(bucket string) []func(*s3.Options) {
	if r, ok := s.regions.Load(bucket); ok {
		return []func(*s3.Options){func(o *s3.Options) { o.Region = r.(string) }}
	}
	return nil
}

// redirected says whether err is AWS naming another region for bucket
// than the one asked, and keeps it.
func (s *Store) redirected(bucket string, err error) bool {
	var re *smithyhttp.ResponseError
	if s.custom || err == nil || !errors.As(err, &re) || re.Response == nil {
		return false
	}
	r := re.Response.Header.Get("X-Amz-Bucket-Region")
	asked := s.region
	if v, ok := s.regions.Load(bucket); ok {
		asked = v.(string)
	}
	if r == "" || r == asked {
		return false
	}
	s.regions.Store(bucket, r)
	return true
}

// Info is what HEAD says of an object.
type Info struct {
	Size int64
	ETag string
}

// Stat asks the server for an object's size (HEAD).
func (s *Store) Stat(ctx context.Context, u URL) (Info, error) {
	out, err := call(s, u.Bucket, func(o ...func(*s3.Options)) (*s3.HeadObjectOutput, error) {
		return s.c.HeadObject(ctx, &s3.HeadObjectInput{Bucket: &u.Bucket, Key: &u.Key}, o...)
	})
	if err != nil {
		return Info{}, s.describe(err)
	}
	return Info{Size: aws.ToInt64(out.ContentLength), ETag: aws.ToString(out.ETag)}, nil
}

// Exists says whether the object is there (HEAD): a missing key is
// false, any other failure an error.
func (s *Store) Exists(ctx context.Context, u URL) (bool, error) {
	_, err := s.Stat(ctx, u)
	if err == nil {
		return true, nil
	}
	if e := (*Error)(nil); errors.As(err, &e) && e.Status == http.StatusNotFound && e.Code != "NoSuchBucket" {
		return false, nil
	}
	return false, err
}

// ReadFirst reads the object's first bytes into p (all of p, or the
// whole object if it is shorter) and says how many, and the object's
// size: one ranged GET, no HEAD first (the size is in its Content-Range).
func (s *Store) ReadFirst(ctx context.Context, u URL, p []byte) (n int, size int64, err error) {
	if len(p) == 0 {
		info, err := s.Stat(ctx, u)
		return 0, info.Size, err
	}
	s.pins.Delete(u) // a new read: pinned to what its first GET finds
	err = s.getRange(ctx, u, 0, int64(len(p)), func(r io.Reader, total int64) error {
		size = total
		var err error
		n, err = io.ReadFull(r, p[:min(int64(len(p)), total)])
		return err
	})
	if e := (*Error)(nil); errors.As(err, &e) && e.Status == http.StatusRequestedRangeNotSatisfiable {
		// An empty object has no byte 0.
		info, err := s.Stat(ctx, u)
		return 0, info.Size, err
	}
	return n, size, err
}

// getRange GETs bytes [off, off+n) and hands the body to read, with the
// object's size (from Content-Range; the body is shorter than n when the
// object ends before off+n). A body that breaks off (a reset, a server
// gone mid-transfer) is asked for again, from the start of the range, up
// to retries times with backoff; read must start over each time (ranges
// written by position do).
func (s *Store) getRange(ctx context.Context, u URL, off, n int64, read func(r io.Reader, size int64) error) error {
	var err error
	for try := 0; ; try++ {
		in := &s3.GetObjectInput{Bucket: &u.Bucket, Key: &u.Key, Range: aws.String(fmt.Sprintf("bytes=%d-%d", off, off+n-1))}
		etag, pinned := s.pins.Load(u)
		if pinned {
			in.IfMatch = aws.String(etag.(string))
		}
		var out *s3.GetObjectOutput
		out, err = call(s, u.Bucket, func(o ...func(*s3.Options)) (*s3.GetObjectOutput, error) {
			return s.c.GetObject(ctx, in, o...)
		})
		if err != nil {
			err = s.describe(err)
			if e := (*Error)(nil); pinned && errors.As(err, &e) && e.Status == http.StatusPreconditionFailed {
				return &Error{Msg: fmt.Sprintf("the object changed while it was read (it no longer has the ETag %s of its first bytes)", etag), Err: err}
			}
			return err // the SDK retried what could be retried
		}
		if e := aws.ToString(out.ETag); !pinned && e != "" {
			s.pins.Store(u, e)
		}
		size, ok := contentRangeSize(aws.ToString(out.ContentRange))
		if !ok {
			out.Body.Close()
			return fmt.Errorf("the server sent no usable Content-Range for a ranged GET (%q)", aws.ToString(out.ContentRange))
		}
		err = read(io.LimitReader(out.Body, n), size)
		if err == nil {
			// The body read to its end, so that its connection is kept
			// for the next request: net/http drops a connection whose
			// body is closed before EOF is seen, and a new one costs a
			// round trip (two more with TLS).
			_, _ = io.Copy(io.Discard, io.LimitReader(out.Body, 64<<10))
		}
		out.Body.Close()
		if err == nil || ctx.Err() != nil || try >= retries || !transient(err) {
			break
		}
		if err := sleep(ctx, backoff(try)); err != nil {
			return err
		}
	}
	if errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF) {
		return &Error{Msg: fmt.Sprintf("the connection broke off before the whole body of bytes %d-%d came (tried %d times)", off, off+n-1, retries+1), Err: err}
	}
	return s.describe(err)
}

// contentRangeSize is the object's size in "bytes FIRST-LAST/SIZE".
func contentRangeSize(cr string) (int64, bool) {
	_, total, ok := strings.Cut(cr, "/")
	if !ok || !strings.HasPrefix(cr, "bytes ") {
		return 0, false
	}
	size, err := strconv.ParseInt(total, 10, 64)
	return size, err == nil && size >= 0
}

// backoff is the wait before try+1: random between 0 and
// min(1 s, 200 ms·2^try) ("full jitter", as the AWS SDKs wait), so that
// clients that failed together do not retry together.
func backoff(try int) time.Duration {
	return rand.N(min(time.Second, 200*time.Millisecond<<try)) + time.Millisecond
}

func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// transient: a failure worth another try (the connection, not the data).
func transient(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) || errors.Is(err, io.ErrUnexpectedEOF) || strings.Contains(err.Error(), "connection reset")
}

// describe turns a failure of the SDK (an operation error wrapping a
// retry error wrapping a response error ...) into one line saying what
// the server, or the network, said.
func (s *Store) describe(err error) error {
	if err == nil || errors.Is(err, context.Canceled) {
		return err
	}
	if e := (*Error)(nil); errors.As(err, &e) {
		return err
	}
	status := 0
	var re *smithyhttp.ResponseError
	if errors.As(err, &re) && re.Response != nil {
		status = re.Response.StatusCode
	}
	var ae smithy.APIError
	if errors.As(err, &ae) {
		code, msg := ae.ErrorCode(), strings.TrimSpace(ae.ErrorMessage())
		if code == "" || (status != 0 && code == strconv.Itoa(status)) {
			code = http.StatusText(status)
		}
		if msg == "" || msg == code || msg == http.StatusText(status) {
			msg = fmt.Sprintf("%s (HTTP %d)", code, status)
		} else {
			msg = fmt.Sprintf("%s: %s (HTTP %d)", code, msg, status)
		}
		return &Error{Msg: "the server says " + oneLine(msg), Status: status, Code: ae.ErrorCode(), Err: err}
	}
	if status != 0 {
		return &Error{Msg: fmt.Sprintf("the server answered HTTP %d", status), Status: status, Err: err}
	}
	var oe *net.OpError
	if errors.As(err, &oe) {
		return &Error{Msg: fmt.Sprintf("cannot reach %s: %s", s.endpoint, oneLine(oe.Error())), Err: err}
	}
	return &Error{Msg: oneLine(err.Error()), Err: err}
}

// Error is a failure of a request, in one line, with the HTTP status and
// the S3 error code when the server answered.
type Error struct {
	Msg    string
	Status int
	Code   string
	Err    error
}

func (e *Error) Error() string { return e.Msg }
func (e *Error) Unwrap() error { return e.Err }

func oneLine(s string) string {
	return strings.Join(strings.Fields(s), " ")
}
