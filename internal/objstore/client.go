package objstore

import (
	"context"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/minio/minio-go/v7"
	"github.com/minio/minio-go/v7/pkg/credentials"
)

// Store is a client of one S3 endpoint.
type Store struct {
	core     minio.Core
	endpoint string // for error messages: "http://127.0.0.1:7070" or "s3.amazonaws.com"
}

// retries is how many times a request that failed transiently (a 5xx, a
// timeout, a reset connection) is tried again, with exponential backoff
// (minio-go's: 200 ms doubling, at most 1 s apart, with jitter). A dead
// server is then reported within seconds, not minutes.
const retries = 5

var (
	defaultOnce  sync.Once
	defaultStore *Store
	defaultErr   error
)

// Default is the client built from this process's environment, made
// once, on first use: a run that names no s3:// URL never reads the AWS
// files.
func Default() (*Store, error) {
	defaultOnce.Do(func() {
		cfg, err := LoadConfig(os.Getenv)
		if err != nil {
			defaultErr = err
			return
		}
		defaultStore, defaultErr = New(cfg, os.Getenv)
	})
	return defaultStore, defaultErr
}

// Credentials resolves the credentials as the AWS CLI does:
// AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY and AWS_SESSION_TOKEN, else
// the profile of the shared credentials and config files (static keys,
// credential_process and SSO, through minio-go's FileAWSCredentials),
// else none: anonymous requests, for public buckets. A profile that
// AWS_PROFILE names and that yields no credentials is an error.
func Credentials(cfg *Config, getenv func(string) string) (*credentials.Credentials, error) {
	if getenv("AWS_ACCESS_KEY_ID") != "" && getenv("AWS_SECRET_ACCESS_KEY") != "" {
		return credentials.NewStaticV4(getenv("AWS_ACCESS_KEY_ID"), getenv("AWS_SECRET_ACCESS_KEY"), getenv("AWS_SESSION_TOKEN")), nil
	}
	// minio-go reads both files (AWS_CONFIG_FILE, AWS_SHARED_CREDENTIALS_FILE
	// or their places under $HOME/.aws), the credentials file's keys over
	// the config file's.
	file := &credentials.FileAWSCredentials{Profile: cfg.Profile}
	v, err := file.RetrieveWithCredContext(nil)
	switch {
	case err == nil && v.AccessKeyID != "":
		return credentials.New(file), nil
	case cfg.ProfileSet:
		if err == nil {
			err = errors.New("no credentials in it")
		}
		return nil, fmt.Errorf("AWS_PROFILE %s: %v", cfg.Profile, oneLine(err.Error()))
	}
	return credentials.New(&credentials.Static{Value: credentials.Value{SignerType: credentials.SignatureAnonymous}}), nil
}

// New builds a client from cfg.
func New(cfg *Config, getenv func(string) string) (*Store, error) {
	host, secure, pathStyle, err := cfg.Host()
	if err != nil {
		return nil, err
	}
	creds, err := Credentials(cfg, getenv)
	if err != nil {
		return nil, err
	}
	tr, err := minio.DefaultTransport(secure)
	if err != nil {
		return nil, err
	}
	// An unreachable endpoint is said so in seconds; a stalled server
	// (no response headers) in 30 s rather than minio-go's minute.
	tr.DialContext = (&net.Dialer{Timeout: 10 * time.Second, KeepAlive: 30 * time.Second}).DialContext
	tr.ResponseHeaderTimeout = 30 * time.Second
	tr.MaxIdleConnsPerHost = 64
	if cfg.CABundle != "" {
		pem, err := os.ReadFile(cfg.CABundle)
		if err != nil {
			return nil, fmt.Errorf("AWS_CA_BUNDLE: %w", err)
		}
		pool, _ := x509.SystemCertPool()
		if pool == nil {
			pool = x509.NewCertPool()
		}
		if !pool.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("AWS_CA_BUNDLE %s: no PEM certificates in it", cfg.CABundle)
		}
		if tr.TLSClientConfig != nil {
			tr.TLSClientConfig.RootCAs = pool
		}
	}
	region := cfg.Region
	if region == "" && cfg.Endpoint != "" {
		// An S3-compatible server: no bucket-location request before the
		// first real one.
		region = "us-east-1"
	}
	lookup := minio.BucketLookupAuto
	if pathStyle {
		lookup = minio.BucketLookupPath
	}
	c, err := minio.NewCore(host, &minio.Options{
		Creds: creds, Secure: secure, Transport: tr, Region: region,
		BucketLookup: lookup, MaxRetries: retries,
		TrailingHeaders: true, // a CRC32C trailer on every body (transfer.go)
	})
	if err != nil {
		return nil, err
	}
	ep := host
	if cfg.Endpoint != "" {
		ep = strings.TrimSuffix(cfg.Endpoint, "/")
	}
	return &Store{core: *c, endpoint: ep}, nil
}

// Info is what HEAD says of an object.
type Info struct {
	Size int64
	ETag string
}

// Stat asks the server for an object's size (HEAD).
func (s *Store) Stat(ctx context.Context, u URL) (Info, error) {
	oi, err := s.core.StatObject(ctx, u.Bucket, u.Key, minio.StatObjectOptions{})
	if err != nil {
		return Info{}, s.describe(err)
	}
	return Info{Size: oi.Size, ETag: oi.ETag}, nil
}

// Exists says whether the object is there (HEAD): a missing key is
// false, any other failure an error.
func (s *Store) Exists(ctx context.Context, u URL) (bool, error) {
	_, err := s.core.StatObject(ctx, u.Bucket, u.Key, minio.StatObjectOptions{})
	if err == nil {
		return true, nil
	}
	if r := minio.ToErrorResponse(err); r.StatusCode == http.StatusNotFound && r.Code != "NoSuchBucket" {
		return false, nil
	}
	return false, s.describe(err)
}

// ReadFirst reads the object's first bytes into p (all of p, or the
// whole object if it is shorter) and says how many, and the object's
// size: one ranged GET, no HEAD first (the size is in its Content-Range).
func (s *Store) ReadFirst(ctx context.Context, u URL, p []byte) (n int, size int64, err error) {
	if len(p) == 0 {
		info, err := s.Stat(ctx, u)
		return 0, info.Size, err
	}
	err = s.getRange(ctx, u, 0, int64(len(p)), func(r io.Reader, total int64) error {
		size = total
		var err error
		n, err = io.ReadFull(r, p[:min(int64(len(p)), total)])
		return err
	})
	if r := minio.ToErrorResponse(rootCause(err)); r.StatusCode == http.StatusRequestedRangeNotSatisfiable {
		// An empty object has no byte 0.
		info, err := s.Stat(ctx, u)
		return 0, info.Size, err
	}
	return n, size, err
}

// getRange GETs bytes [off, off+n) and hands the body to read, with the
// object's size (from Content-Range; the body is shorter than n when the
// object ends before off+n). A body
// that breaks off (a reset, a server gone mid-transfer) is asked for
// again, from the start of the range, up to retries times with backoff;
// read must start over each time (ranges written by position do).
func (s *Store) getRange(ctx context.Context, u URL, off, n int64, read func(r io.Reader, size int64) error) error {
	var err error
	for try := 0; ; try++ {
		opts := minio.GetObjectOptions{}
		if err = opts.SetRange(off, off+n-1); err != nil {
			return err
		}
		var body io.ReadCloser
		var h http.Header
		body, _, h, err = s.core.GetObject(ctx, u.Bucket, u.Key, opts)
		if err != nil {
			// minio-go retried what could be retried.
			return s.describe(err)
		}
		size, ok := contentRangeSize(h.Get("Content-Range"))
		if !ok {
			body.Close()
			return fmt.Errorf("the server sent no usable Content-Range for a ranged GET (%q)", h.Get("Content-Range"))
		}
		err = read(io.LimitReader(body, n), size)
		body.Close()
		if err == nil || ctx.Err() != nil || try >= retries {
			break
		}
		if !transient(err) {
			break
		}
		time.Sleep(backoff(try))
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

func backoff(try int) time.Duration {
	return min(time.Second, 200*time.Millisecond<<try)
}

// transient: a failure worth another try (the connection, not the data).
func transient(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) || errors.Is(err, io.ErrUnexpectedEOF) || strings.Contains(err.Error(), "connection reset")
}

// describe turns a failure into one line saying what the server (or the
// network) said.
func (s *Store) describe(err error) error {
	if err == nil {
		return nil
	}
	if errors.Is(err, context.Canceled) {
		return err
	}
	r := minio.ToErrorResponse(err)
	if r.Code != "" || r.StatusCode != 0 {
		msg := strings.TrimSpace(r.Message)
		if r.Code == "" {
			r.Code = http.StatusText(r.StatusCode)
		}
		switch {
		case msg == "" || strings.HasPrefix(msg, "Error response code"):
			msg = fmt.Sprintf("%s (HTTP %d)", r.Code, r.StatusCode)
		case r.StatusCode != 0:
			msg = fmt.Sprintf("%s: %s (HTTP %d)", r.Code, msg, r.StatusCode)
		default:
			msg = r.Code + ": " + msg
		}
		return &Error{Msg: "the server says " + oneLine(msg), Err: err}
	}
	var ne net.Error
	var oe *net.OpError
	if errors.As(err, &oe) || errors.As(err, &ne) {
		return &Error{Msg: fmt.Sprintf("cannot reach %s: %s", s.endpoint, oneLine(rootCause(err).Error())), Err: err}
	}
	return &Error{Msg: oneLine(err.Error()), Err: err}
}

// Error is a failure of a request, in one line.
type Error struct {
	Msg string
	Err error
}

func (e *Error) Error() string { return e.Msg }
func (e *Error) Unwrap() error { return e.Err }

func rootCause(err error) error {
	for {
		u := errors.Unwrap(err)
		if u == nil {
			return err
		}
		err = u
	}
}

func oneLine(s string) string {
	return strings.Join(strings.Fields(s), " ")
}
