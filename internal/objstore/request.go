package objstore

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"strings"
	"time"
)

// call is one S3 request, made again for each try.
type call struct {
	method      string
	bucket, key string
	query       map[string]string // parameters and sub-resources ("uploads": "")
	header      http.Header
	// The body: small bytes (an XML document: hashed into the
	// signature), or n bytes of file from off (sent as UNSIGNED-PAYLOAD
	// with their CRC32C in x-amz-checksum-crc32c, which the server
	// checks: the same end-to-end check, without hashing every byte with
	// SHA-256 on both sides).
	body   []byte
	file   *os.File
	off, n int64
}

// ResponseError is an S3 error answer: its HTTP status and the Code and
// Message of its XML body (for HEAD, which has none, from the status).
type ResponseError struct {
	StatusCode int
	Code       string
	Message    string
	Region     string // x-amz-bucket-region, when the server says it
}

func (e *ResponseError) Error() string {
	if e.Message == "" {
		return fmt.Sprintf("%s (HTTP %d)", e.Code, e.StatusCode)
	}
	return fmt.Sprintf("%s: %s (HTTP %d)", e.Code, e.Message, e.StatusCode)
}

// regionOf is the bucket's region: on AWS, the one AWS named for it.
func (s *Store) regionOf(bucket string) string {
	if s.aws {
		s.mu.Lock()
		defer s.mu.Unlock()
		if r := s.regions[bucket]; r != "" {
			return r
		}
	}
	return s.region
}

// virtualHost: AWS addresses a bucket as BUCKET.s3.REGION.amazonaws.com
// when its name is a DNS label (and has no "." under https, which the
// certificate's wildcard would not cover); else path-style.
func virtualHost(bucket string, secure bool) bool {
	if len(bucket) < 3 || len(bucket) > 63 || strings.Contains(bucket, "..") || (secure && strings.Contains(bucket, ".")) {
		return false
	}
	for i := 0; i < len(bucket); i++ {
		c := bucket[i]
		if !('a' <= c && c <= 'z' || '0' <= c && c <= '9' || c == '-' || c == '.') {
			return false
		}
	}
	return bucket[0] != '-' && bucket[0] != '.' && bucket[len(bucket)-1] != '-' && bucket[len(bucket)-1] != '.'
}

// newRequest makes the signed request of one try.
func (s *Store) newRequest(ctx context.Context, c *call, region string) (*http.Request, error) {
	host, path := s.host, "/"+c.bucket
	if c.key != "" {
		path += "/" + c.key
	}
	if s.aws {
		if region != "us-east-1" {
			host = "s3." + region + ".amazonaws.com"
		}
		if virtualHost(c.bucket, s.scheme == "https") {
			host, path = c.bucket+"."+host, "/"+c.key
		}
	}
	u := &url.URL{Scheme: s.scheme, Host: host, Path: path, RawPath: uriEncode(path, true), RawQuery: encodeQuery(c.query)}
	req, err := http.NewRequestWithContext(ctx, c.method, u.String(), nil)
	if err != nil {
		return nil, err
	}
	for k, vs := range c.header {
		req.Header[k] = vs
	}
	hash := emptySHA256
	switch {
	case c.file != nil:
		hash = unsignedPayload
		f, off, n := c.file, c.off, c.n
		req.ContentLength = n
		req.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(io.NewSectionReader(f, off, n)), nil }
		req.Body, _ = req.GetBody()
		if n == 0 {
			req.Body, req.GetBody = http.NoBody, nil
		}
	case c.body != nil:
		hash = hexSHA256(c.body)
		b := c.body
		req.ContentLength = int64(len(b))
		req.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(b)), nil }
		req.Body, _ = req.GetBody()
	}
	if !s.creds.Anonymous() {
		sign(req, s.creds, region, time.Now(), hash)
	}
	return req, nil
}

// do sends c until it succeeds (a 2xx) or fails for good: transient
// failures are tried again up to retries times with backoff, and on AWS
// a bucket of another region is asked again in the region AWS names.
// An error answer is a *ResponseError.
func (s *Store) do(ctx context.Context, c *call) (*http.Response, error) {
	redirected := false
	for try := 0; ; try++ {
		region := s.regionOf(c.bucket)
		req, err := s.newRequest(ctx, c, region)
		if err != nil {
			return nil, err
		}
		resp, err := s.hc.Do(req)
		if err == nil {
			if resp.StatusCode/100 == 2 {
				return resp, nil
			}
			rerr := readError(resp, c)
			err = rerr
			if s.aws && !redirected && rerr.Region != "" && rerr.Region != region {
				s.mu.Lock()
				s.regions[c.bucket] = rerr.Region
				s.mu.Unlock()
				redirected = true
				try--
				continue
			}
			if !retryableResponse(rerr) {
				return nil, err
			}
		} else if !retryableRequest(ctx, err) {
			return nil, err
		}
		if try >= retries {
			return nil, err
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(backoff(try)):
		}
	}
}

// readError reads an error answer (its XML body, at most 64 KiB) and
// closes it: the connection stays usable.
func readError(resp *http.Response, c *call) *ResponseError {
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<20))
	e := &ResponseError{StatusCode: resp.StatusCode, Region: resp.Header.Get("X-Amz-Bucket-Region")}
	var x struct {
		Code, Message string
	}
	if xml.Unmarshal(body, &x) == nil && x.Code != "" {
		e.Code, e.Message = x.Code, x.Message
		return e
	}
	// HEAD answers have no body.
	switch resp.StatusCode {
	case http.StatusNotFound:
		if c.key == "" {
			e.Code, e.Message = "NoSuchBucket", "The specified bucket does not exist."
		} else {
			e.Code, e.Message = "NoSuchKey", "The specified key does not exist."
		}
	case http.StatusForbidden:
		e.Code, e.Message = "AccessDenied", "Access Denied."
	case http.StatusMovedPermanently:
		e.Code = "PermanentRedirect"
		if e.Region != "" {
			e.Message = "The bucket is in region " + e.Region + "."
		}
	default:
		e.Code = http.StatusText(resp.StatusCode)
	}
	return e
}

// retryableResponse: throttling and server errors, as the AWS SDKs and
// minio-go retried them.
func retryableResponse(e *ResponseError) bool {
	switch e.StatusCode {
	case http.StatusRequestTimeout, http.StatusTooManyRequests, 499, http.StatusInternalServerError,
		http.StatusBadGateway, http.StatusServiceUnavailable, http.StatusGatewayTimeout, 520:
		return true
	}
	switch e.Code {
	case "RequestError", "RequestTimeout", "Throttling", "ThrottlingException", "RequestLimitExceeded",
		"RequestThrottled", "InternalError", "SlowDown", "SlowDownWrite", "SlowDownRead":
		return true
	}
	return false
}

// retryableRequest: a request that got no answer is tried again (a
// refused or reset connection, a timeout), unless the run was cancelled
// or the server's certificate is not trusted.
func retryableRequest(ctx context.Context, err error) bool {
	if ctx.Err() != nil {
		return false
	}
	var ua x509.UnknownAuthorityError
	var hn x509.HostnameError
	var ci x509.CertificateInvalidError
	var cv *tls.CertificateVerificationError
	var rh tls.RecordHeaderError
	return !errors.As(err, &ua) && !errors.As(err, &hn) && !errors.As(err, &ci) && !errors.As(err, &cv) && !errors.As(err, &rh)
}
