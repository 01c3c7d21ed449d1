package objstore

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Store is a client of one S3 endpoint: our own, over net/http (see
// docs/objects.md: a client library cost every run of the tool, S3 or
// not, its start-up time and half the binary).
type Store struct {
	hc       *http.Client
	scheme   string // "http" or "https"
	host     string // "127.0.0.1:7070" or "s3.amazonaws.com"
	aws      bool   // AWS itself: virtual-host addressing, regions per bucket
	creds    Creds
	region   string
	endpoint string // for error messages: "http://127.0.0.1:7070" or "s3.amazonaws.com"

	mu      sync.Mutex
	regions map[string]string // AWS: a bucket's region, as AWS named it

	// pins are the ETags of objects being read (ReadFirst): the rest of
	// the object is asked for with If-Match, so that an object replaced
	// while it is read fails instead of coming back mixed (found in
	// review: 8 MiB of the old object and 32 MiB of the new, no error).
	pins sync.Map // URL -> ETag
}

// retries is how many times a request that failed transiently (a 5xx, a
// timeout, a reset or refused connection, a body that breaks off) is
// tried again, with exponential backoff (backoff). A dead server is then
// reported within about 2 s per request, not minutes.
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
	tr := &http.Transport{
		Proxy: http.ProxyFromEnvironment,
		// An unreachable endpoint is said so in seconds, a stalled server
		// (no response headers) in 30 s.
		DialContext:           (&net.Dialer{Timeout: 10 * time.Second, KeepAlive: 30 * time.Second}).DialContext,
		ResponseHeaderTimeout: 30 * time.Second,
		TLSHandshakeTimeout:   10 * time.Second,
		// Connections are kept and reused: up to 8 transfers at once, and
		// the batch's workers, each with its own.
		MaxIdleConns:        256,
		MaxIdleConnsPerHost: 64,
		IdleConnTimeout:     time.Minute,
		// Bodies are sent at once: no "Expect: 100-continue" is sent, so
		// no wait for an answer that some servers never give.
		// Ranged GETs must come as stored, not gzip-decoded.
		DisableCompression: true,
	}
	if secure {
		tr.TLSClientConfig = &tls.Config{MinVersion: tls.VersionTLS12}
	}
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
	if region == "" {
		// An S3-compatible server takes any; AWS names a bucket's own in
		// its answer, which is then asked again (Store.do).
		region = "us-east-1"
	}
	scheme := "http"
	if secure {
		scheme = "https"
	}
	ep := host
	if cfg.Endpoint != "" {
		ep = strings.TrimSuffix(cfg.Endpoint, "/")
	}
	return &Store{
		hc: &http.Client{
			Transport: tr,
			// A signed request is never sent elsewhere.
			CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
		},
		scheme: scheme, host: host, aws: !pathStyle, creds: creds, region: region, endpoint: ep,
		regions: map[string]string{},
	}, nil
}

// Info is what HEAD says of an object.
type Info struct {
	Size int64
	ETag string
}

// Stat asks the server for an object's size (HEAD).
func (s *Store) Stat(ctx context.Context, u URL) (Info, error) {
	resp, err := s.do(ctx, &call{method: http.MethodHead, bucket: u.Bucket, key: u.Key})
	if err != nil {
		return Info{}, s.describe(err)
	}
	resp.Body.Close()
	return Info{Size: resp.ContentLength, ETag: resp.Header.Get("ETag")}, nil
}

// Exists says whether the object is there (HEAD): a missing key is
// false, any other failure an error.
func (s *Store) Exists(ctx context.Context, u URL) (bool, error) {
	resp, err := s.do(ctx, &call{method: http.MethodHead, bucket: u.Bucket, key: u.Key})
	if err == nil {
		resp.Body.Close()
		return true, nil
	}
	var r *ResponseError
	if errors.As(err, &r) && r.StatusCode == http.StatusNotFound && r.Code != "NoSuchBucket" {
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
	s.pins.Delete(u) // a new read: pinned to what its first GET finds
	err = s.getRange(ctx, u, 0, int64(len(p)), func(r io.Reader, total int64) error {
		size = total
		var err error
		n, err = io.ReadFull(r, p[:min(int64(len(p)), total)])
		return err
	})
	if r := (*ResponseError)(nil); errors.As(err, &r) && r.StatusCode == http.StatusRequestedRangeNotSatisfiable {
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
		c := &call{method: http.MethodGet, bucket: u.Bucket, key: u.Key,
			header: http.Header{"Range": {fmt.Sprintf("bytes=%d-%d", off, off+n-1)}}}
		etag, pinned := s.pins.Load(u)
		if pinned {
			c.header.Set("If-Match", etag.(string))
		}
		var resp *http.Response
		resp, err = s.do(ctx, c)
		if r := (*ResponseError)(nil); pinned && errors.As(err, &r) && r.StatusCode == http.StatusPreconditionFailed {
			return &Error{Msg: fmt.Sprintf("the object changed while it was read (it no longer has the ETag %s of its first bytes)", etag), Err: err}
		}
		if err != nil {
			// do retried what could be retried.
			return s.describe(err)
		}
		body, h := resp.Body, resp.Header
		if e := h.Get("ETag"); !pinned && e != "" {
			s.pins.Store(u, e)
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

// backoff is the wait before try+1: random between 0 and
// min(1 s, 200 ms·2^try) ("full jitter", as minio-go and the AWS SDKs
// wait), so that clients that failed together do not retry together.
func backoff(try int) time.Duration {
	return rand.N(min(time.Second, 200*time.Millisecond<<try)) + time.Millisecond
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
	var r *ResponseError
	if errors.As(err, &r) {
		msg := strings.TrimSpace(r.Message)
		code := r.Code
		if code == "" {
			code = http.StatusText(r.StatusCode)
		}
		if msg == "" {
			msg = fmt.Sprintf("%s (HTTP %d)", code, r.StatusCode)
		} else {
			msg = fmt.Sprintf("%s: %s (HTTP %d)", code, msg, r.StatusCode)
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
