package objstore

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"encoding/xml"
	"fmt"
	"hash/crc32"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"
	"github.com/aws/aws-sdk-go-v2/service/s3"
)

// fakeS3 is an S3 server in memory, path-style, enough for the client:
// objects (PUT with its CRC32C checked, HEAD, ranged GET),
// ListObjectsV2 in pages, multipart uploads (ListParts too). It checks
// every request's signature by signing it again with the same keys (and
// session token), so what the client put on the wire (the encoded path,
// the query, the headers) is what it signed, with those credentials.
type fakeS3 struct {
	t        *testing.T
	creds    aws.Credentials
	mu       sync.Mutex
	objects  map[string][]byte // "bucket/key"
	uploads  map[string]*fakeUpload
	nextID   int
	pageMax  int // ListObjectsV2 pages of at most this many keys
	failPart int // a part number answered 400 InvalidPart
	// completeFail: so many CompleteMultipartUpload calls answered 200
	// with an InternalError in the body first.
	completeFail int
	// revive: so many AbortMultipartUpload calls leave the upload there,
	// as a part stored after the abort brings it back.
	revive  int
	aborted int
	// noLength: ranged GETs answered without a Content-Length (chunked).
	noLength bool
	log      []string
}

type fakeUpload struct {
	key     string
	started time.Time
	parts   map[int][]byte
}

func newFake(t *testing.T) *fakeS3 {
	return &fakeS3{t: t, creds: aws.Credentials{AccessKeyID: "AKTEST", SecretAccessKey: "secret/test"},
		objects: map[string][]byte{"bkt/": nil}, uploads: map[string]*fakeUpload{}, pageMax: 1000}
}

func xmlError(w http.ResponseWriter, status int, code, msg string) {
	w.Header().Set("Content-Type", "application/xml")
	w.WriteHeader(status)
	fmt.Fprintf(w, `<?xml version="1.0" encoding="UTF-8"?><Error><Code>%s</Code><Message>%s</Message></Error>`, code, msg)
}

func crcOf(b []byte) string {
	return base64.StdEncoding.EncodeToString(binary.BigEndian.AppendUint32(nil, crc32.Checksum(b, crc32.MakeTable(crc32.Castagnoli))))
}

func (f *fakeS3) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.log = append(f.log, r.Method+" "+r.URL.RequestURI())
	// The signature, computed again from what came.
	if f.creds.AccessKeyID != "" {
		if msg := checkSignature(r, f.creds); msg != "" {
			xmlError(w, 403, "SignatureDoesNotMatch", msg)
			return
		}
	}
	bucket, key, _ := strings.Cut(strings.TrimPrefix(r.URL.Path, "/"), "/")
	if _, ok := f.objects[bucket+"/"]; !ok {
		xmlError(w, 404, "NoSuchBucket", "The specified bucket does not exist.")
		return
	}
	if r.Header.Get("X-Amz-Trailer") != "" || strings.Contains(r.Header.Get("Content-Encoding"), "aws-chunked") {
		// As MinIO, Ceph and R2 refuse the SDK's default checksums.
		xmlError(w, 400, "NotImplemented", "aws-chunked bodies with checksum trailers are not supported")
		return
	}
	q := r.URL.Query()
	body, _ := io.ReadAll(r.Body)
	if sum := r.Header.Get("X-Amz-Checksum-Crc32c"); sum != "" && sum != crcOf(body) {
		xmlError(w, 400, "BadDigest", "The CRC32C you specified did not match the calculated checksum.")
		return
	}
	switch {
	case r.Method == "GET" && key == "" && q.Has("uploads"):
		type up struct {
			Key, UploadId string
			Initiated     time.Time
		}
		var res struct {
			XMLName xml.Name `xml:"ListMultipartUploadsResult"`
			Upload  []up
		}
		for id, u := range f.uploads {
			if strings.HasPrefix(u.key, q.Get("prefix")) {
				res.Upload = append(res.Upload, up{u.key, id, u.started})
			}
		}
		xml.NewEncoder(w).Encode(res)
	case r.Method == "GET" && key == "":
		if q.Get("list-type") != "2" || q.Get("encoding-type") != "url" {
			xmlError(w, 400, "InvalidArgument", "want list-type=2&encoding-type=url")
			return
		}
		var keys []string
		for k := range f.objects {
			b, k, _ := strings.Cut(k, "/")
			if b == bucket && k != "" && strings.HasPrefix(k, q.Get("prefix")) && k > q.Get("continuation-token") {
				keys = append(keys, k)
			}
		}
		sort.Strings(keys)
		max, _ := strconv.Atoi(q.Get("max-keys"))
		max = min(max, f.pageMax)
		type obj struct {
			Key  string
			Size int
		}
		var res struct {
			XMLName               xml.Name `xml:"ListBucketResult"`
			IsTruncated           bool
			NextContinuationToken string `xml:",omitempty"`
			EncodingType          string
			Contents              []obj
		}
		res.EncodingType = "url"
		if len(keys) > max {
			keys, res.IsTruncated, res.NextContinuationToken = keys[:max], true, keys[max-1]
		}
		for _, k := range keys {
			res.Contents = append(res.Contents, obj{url.QueryEscape(k), len(f.objects[bucket+"/"+k])})
		}
		xml.NewEncoder(w).Encode(res)
	case r.Method == "POST" && q.Has("uploads"):
		if r.Header.Get("X-Amz-Checksum-Algorithm") != "CRC32C" {
			xmlError(w, 400, "InvalidRequest", "want x-amz-checksum-algorithm CRC32C")
			return
		}
		f.nextID++
		id := fmt.Sprintf("up%d", f.nextID)
		f.uploads[id] = &fakeUpload{key: key, started: time.Now(), parts: map[int][]byte{}}
		fmt.Fprintf(w, `<InitiateMultipartUploadResult><Bucket>%s</Bucket><Key>%s</Key><UploadId>%s</UploadId></InitiateMultipartUploadResult>`, bucket, key, id)
	case r.Method == "PUT" && q.Has("uploadId"):
		u := f.uploads[q.Get("uploadId")]
		n, _ := strconv.Atoi(q.Get("partNumber"))
		if u == nil || n == f.failPart {
			xmlError(w, 400, "InvalidPart", "One or more of the specified parts could not be found.")
			return
		}
		if r.Header.Get("X-Amz-Content-Sha256") != "UNSIGNED-PAYLOAD" || r.Header.Get("X-Amz-Checksum-Crc32c") == "" {
			xmlError(w, 400, "InvalidRequest", "want UNSIGNED-PAYLOAD and a CRC32C")
			return
		}
		u.parts[n] = body
		w.Header().Set("ETag", fmt.Sprintf(`"etag%d"`, n))
	case r.Method == "POST" && q.Has("uploadId"):
		if f.completeFail > 0 {
			f.completeFail--
			fmt.Fprint(w, `<Error><Code>InternalError</Code><Message>We encountered an internal error. Please try again.</Message></Error>`)
			return
		}
		u := f.uploads[q.Get("uploadId")]
		var req struct {
			Part []struct {
				PartNumber     int
				ETag           string
				ChecksumCRC32C string
			}
		}
		if u == nil || xml.Unmarshal(body, &req) != nil || r.Header.Get("X-Amz-Content-Sha256") != hexSHA256(body) {
			xmlError(w, 400, "MalformedXML", "bad CompleteMultipartUpload")
			return
		}
		var all []byte
		for i, p := range req.Part {
			if p.PartNumber != i+1 || p.ETag != fmt.Sprintf(`"etag%d"`, i+1) || p.ChecksumCRC32C != crcOf(u.parts[i+1]) {
				// A 200 whose body is an error, as S3 may answer.
				fmt.Fprint(w, `<Error><Code>InvalidPart</Code><Message>part `+strconv.Itoa(i+1)+`</Message></Error>`)
				return
			}
			all = append(all, u.parts[i+1]...)
		}
		f.objects[bucket+"/"+key] = all
		delete(f.uploads, q.Get("uploadId"))
		fmt.Fprint(w, `<CompleteMultipartUploadResult><Key>`+key+`</Key></CompleteMultipartUploadResult>`)
	case r.Method == "GET" && q.Has("uploadId"):
		u := f.uploads[q.Get("uploadId")]
		if u == nil {
			xmlError(w, 404, "NoSuchUpload", "The specified upload does not exist.")
			return
		}
		fmt.Fprintf(w, `<ListPartsResult><UploadId>%s</UploadId></ListPartsResult>`, q.Get("uploadId"))
	case r.Method == "DELETE" && q.Has("uploadId"):
		if f.revive > 0 {
			f.revive--
		} else {
			delete(f.uploads, q.Get("uploadId"))
		}
		f.aborted++
		w.WriteHeader(http.StatusNoContent)
	case r.Method == "PUT":
		if r.Header.Get("X-Amz-Content-Sha256") != "UNSIGNED-PAYLOAD" || r.Header.Get("X-Amz-Checksum-Crc32c") == "" {
			xmlError(w, 400, "InvalidRequest", "want UNSIGNED-PAYLOAD and a CRC32C")
			return
		}
		f.objects[bucket+"/"+key] = body
	case r.Method == "GET" || r.Method == "HEAD":
		data, ok := f.objects[bucket+"/"+key]
		if !ok {
			if r.Method == "HEAD" {
				w.WriteHeader(404)
				return
			}
			xmlError(w, 404, "NoSuchKey", "The specified key does not exist.")
			return
		}
		w.Header().Set("ETag", `"e"`)
		if r.Method == "HEAD" {
			w.Header().Set("Content-Length", strconv.Itoa(len(data)))
			return
		}
		var first, last int
		if _, err := fmt.Sscanf(r.Header.Get("Range"), "bytes=%d-%d", &first, &last); err != nil {
			w.Write(data)
			return
		}
		if first >= len(data) {
			xmlError(w, 416, "InvalidRange", "The requested range is not satisfiable")
			return
		}
		last = min(last, len(data)-1)
		w.Header().Set("Content-Range", fmt.Sprintf("bytes %d-%d/%d", first, last, len(data)))
		if !f.noLength {
			w.Header().Set("Content-Length", strconv.Itoa(last-first+1))
		}
		w.WriteHeader(http.StatusPartialContent)
		if f.noLength {
			w.(http.Flusher).Flush() // the headers out before the body: no length
		}
		w.Write(data[first : last+1])
	default:
		xmlError(w, 405, "MethodNotAllowed", r.Method)
	}
}

// fakeStore is a client of f with these credentials from the
// environment (none: --no-sign-request).
func fakeStore(t *testing.T, f *fakeS3, creds aws.Credentials) *Store {
	t.Helper()
	srv := httptest.NewServer(f)
	t.Cleanup(srv.Close)
	isolate(t)
	t.Setenv("AWS_ENDPOINT_URL_S3", srv.URL)
	if creds.AccessKeyID != "" {
		t.Setenv("AWS_ACCESS_KEY_ID", creds.AccessKeyID)
		t.Setenv("AWS_SECRET_ACCESS_KEY", creds.SecretAccessKey)
	}
	s, err := New(context.Background(), Options{Anonymous: creds.AccessKeyID == ""})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// isolate clears this process's AWS configuration for a test: no AWS_
// variable, a HOME of its own without ~/.aws, no IMDS. The shared files
// are named (AWS_CONFIG_FILE, AWS_SHARED_CREDENTIALS_FILE): the SDK
// takes its default paths from HOME once, when the process starts.
func isolate(t *testing.T) string {
	t.Helper()
	for _, kv := range os.Environ() {
		if k, _, _ := strings.Cut(kv, "="); strings.HasPrefix(k, "AWS_") {
			t.Setenv(k, "")
			os.Unsetenv(k)
		}
	}
	home := t.TempDir()
	t.Setenv("HOME", home)
	t.Setenv("AWS_EC2_METADATA_DISABLED", "true")
	t.Setenv("XDG_CACHE_HOME", filepath.Join(home, ".cache"))
	t.Setenv("AWS_CONFIG_FILE", filepath.Join(home, ".aws", "config"))
	t.Setenv("AWS_SHARED_CREDENTIALS_FILE", filepath.Join(home, ".aws", "credentials"))
	return home
}

// checkSignature signs r again with creds, as the SigV4 signer does, over
// the headers r says it signed: "" if the signatures agree, else why not.
func checkSignature(r *http.Request, creds aws.Credentials) string {
	auth := r.Header.Get("Authorization")
	cred, _, _ := strings.Cut(strings.TrimPrefix(auth, "AWS4-HMAC-SHA256 Credential="), ",")
	scope := strings.Split(cred, "/")
	_, signed, _ := strings.Cut(auth, "SignedHeaders=")
	signed, _, _ = strings.Cut(signed, ",")
	if len(scope) != 5 || scope[0] != creds.AccessKeyID {
		return fmt.Sprintf("not signed with %s: %q", creds.AccessKeyID, auth)
	}
	if r.Header.Get("X-Amz-Security-Token") != creds.SessionToken {
		return fmt.Sprintf("session token %q, want %q", r.Header.Get("X-Amz-Security-Token"), creds.SessionToken)
	}
	stamp, err := time.Parse("20060102T150405Z", r.Header.Get("X-Amz-Date"))
	if err != nil {
		return "no X-Amz-Date"
	}
	re, _ := http.NewRequest(r.Method, "https://"+r.Host+r.URL.RequestURI(), nil)
	re.URL.RawPath = r.URL.EscapedPath()
	for _, h := range strings.Split(signed, ";") {
		switch h {
		case "host":
		case "content-length":
			re.ContentLength = r.ContentLength
		default:
			re.Header[http.CanonicalHeaderKey(h)] = r.Header.Values(h)
		}
	}
	err = v4.NewSigner(func(o *v4.SignerOptions) { o.DisableURIPathEscaping = true }).
		SignHTTP(context.Background(), creds, re, r.Header.Get("X-Amz-Content-Sha256"), "s3", scope[2], stamp)
	if err != nil || re.Header.Get("Authorization") != auth {
		return "The request signature we calculated does not match the signature you provided."
	}
	return ""
}

func tempWith(t *testing.T, data []byte) *os.File {
	t.Helper()
	f, err := os.CreateTemp(t.TempDir(), "obj")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	if _, err := f.Write(data); err != nil {
		t.Fatal(err)
	}
	return f
}

// TestFakeS3: uploads (one PUT, multipart), HEAD, ranged reads, a
// listing in pages, keys that need encoding, errors in one line.
func TestFakeS3(t *testing.T) {
	defer func(p int64) { partSize = p }(partSize)
	partSize = 1 << 20
	f := newFake(t)
	s := fakeStore(t, f, f.creds)
	ctx := context.Background()
	small := bytes.Repeat([]byte("small"), 1000)
	big := make([]byte, 3<<20+12345)
	for i := range big {
		big[i] = byte(i * 7 / 3)
	}
	keys := []string{"p/a b+c.npy", "p/ü$&=?.npy", "p/x//y/../z.npy", "p/big.npy", "p/e.npy", "p2/no.npy"}
	for _, k := range keys {
		data := small
		switch k {
		case "p/big.npy":
			data = big
		case "p/e.npy":
			data = nil
		}
		if err := s.Upload(ctx, URL{"bkt", k}, tempWith(t, data), int64(len(data))); err != nil {
			t.Fatalf("Upload %s: %v", k, err)
		}
	}
	if !bytes.Equal(f.objects["bkt/p/big.npy"], big) || !bytes.Equal(f.objects["bkt/p/ü$&=?.npy"], small) {
		t.Fatal("stored bytes differ")
	}
	if len(f.uploads) != 0 {
		t.Fatalf("%d uploads left", len(f.uploads))
	}
	f.pageMax = 2 // three pages
	var got []string
	for o, err := range s.List(ctx, URL{"bkt", "p"}) {
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, o.Rel)
	}
	if want := "a b+c.npy big.npy e.npy x//y/../z.npy ü$&=?.npy"; strings.Join(got, " ") != want {
		t.Errorf("List: %q, want %q", strings.Join(got, " "), want)
	}
	info, err := s.Stat(ctx, URL{"bkt", "p/big.npy"})
	if err != nil || info.Size != int64(len(big)) {
		t.Errorf("Stat: %v %v", info, err)
	}
	head := make([]byte, 100)
	n, size, err := s.ReadFirst(ctx, URL{"bkt", "p/big.npy"}, head)
	if err != nil || n != 100 || size != int64(len(big)) || !bytes.Equal(head, big[:100]) {
		t.Errorf("ReadFirst: %d %d %v", n, size, err)
	}
	if n, size, err := s.ReadFirst(ctx, URL{"bkt", "p/e.npy"}, head); err != nil || n != 0 || size != 0 {
		t.Errorf("ReadFirst of an empty object: %d %d %v", n, size, err)
	}
	dl := tempWith(t, nil)
	if err := s.Download(ctx, URL{"bkt", "p/x//y/../z.npy"}, dl, 0, int64(len(small)), nil); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(dl.Name()); !bytes.Equal(b, small) {
		t.Error("downloaded bytes differ")
	}
	for _, c := range []struct {
		u    URL
		want bool
	}{{URL{"bkt", "p/a b+c.npy"}, true}, {URL{"bkt", "p/none"}, false}} {
		if ok, err := s.Exists(ctx, c.u); ok != c.want || err != nil {
			t.Errorf("Exists(%s): %v %v", c.u, ok, err)
		}
	}
	if !s.IsDir(ctx, URL{"bkt", "p"}) || s.IsDir(ctx, URL{"bkt", "p/e.npy"}) {
		t.Error("IsDir")
	}
	for _, c := range []struct {
		u    URL
		want string
	}{
		{URL{"bkt", "none.npy"}, "the server says NoSuchKey: The specified key does not exist. (HTTP 404)"},
		{URL{"nobkt", "x.npy"}, "the server says NoSuchBucket: The specified bucket does not exist. (HTTP 404)"},
	} {
		_, _, err := s.ReadFirst(ctx, c.u, head)
		if err == nil || err.Error() != c.want {
			t.Errorf("ReadFirst(%s): %v, want %s", c.u, err, c.want)
		}
	}
	if _, err := s.Exists(ctx, URL{"nobkt", "x.npy"}); err != nil {
		t.Logf("Exists in a missing bucket: %v", err) // HEAD's bare 404 says no more
	}

	t.Run("bad secret", func(t *testing.T) {
		bad := fakeStore(t, f, aws.Credentials{AccessKeyID: "AKTEST", SecretAccessKey: "wrong"})
		_, _, err := bad.ReadFirst(ctx, URL{"bkt", "p/e.npy"}, head)
		if err == nil || !strings.HasPrefix(err.Error(), "the server says SignatureDoesNotMatch: ") || strings.Contains(err.Error(), "\n") {
			t.Errorf("got %v", err)
		}
	})
	t.Run("anonymous", func(t *testing.T) {
		anon := newFake(t)
		anon.creds = aws.Credentials{}
		anon.objects["bkt/k"] = []byte("public")
		s := fakeStore(t, anon, aws.Credentials{})
		n, _, err := s.ReadFirst(ctx, URL{"bkt", "k"}, head)
		if err != nil || string(head[:n]) != "public" {
			t.Fatalf("%q %v", head[:n], err)
		}
	})
	t.Run("a part refused", func(t *testing.T) {
		f.failPart = 3
		defer func() { f.failPart = 0 }()
		aborted := f.aborted
		err := s.Upload(ctx, URL{"bkt", "p/fails.npy"}, tempWith(t, big), int64(len(big)))
		if err == nil || !strings.Contains(err.Error(), "InvalidPart") {
			t.Errorf("got %v", err)
		}
		if _, ok := f.objects["bkt/p/fails.npy"]; ok || len(f.uploads) != 0 || f.aborted == aborted {
			t.Errorf("object or upload left (%d uploads, %d aborts)", len(f.uploads), f.aborted-aborted)
		}
	})
	t.Run("another run's upload of the key is left alone", func(t *testing.T) {
		// An upload of the same key begun before this one, as another
		// run writing it (or one still running) has: not this run's to
		// abort, whether this one completes or fails.
		f.uploads["other"] = &fakeUpload{key: "p/big.npy", started: time.Now().Add(-time.Hour), parts: map[int][]byte{1: []byte("x")}}
		defer delete(f.uploads, "other")
		if err := s.Upload(ctx, URL{"bkt", "p/big.npy"}, tempWith(t, big), int64(len(big))); err != nil {
			t.Fatal(err)
		}
		f.failPart = 2
		defer func() { f.failPart = 0 }()
		if err := s.Upload(ctx, URL{"bkt", "p/big.npy"}, tempWith(t, big), int64(len(big))); err == nil {
			t.Fatal("a refused part: no error")
		}
		if len(f.uploads) != 1 || f.uploads["other"] == nil {
			t.Errorf("uploads left: %v", f.uploads)
		}
	})
}

// TestWrongChecksumRefused: a body whose CRC32C is not the one sent is
// refused (by the fake as by S3: BadDigest), and not retried.
func TestWrongChecksumRefused(t *testing.T) {
	f := newFake(t)
	s := fakeStore(t, f, f.creds)
	file := tempWith(t, []byte("some bytes"))
	_, err := s.c.PutObject(context.Background(), &s3.PutObjectInput{Bucket: aws.String("bkt"), Key: aws.String("k"),
		Body: io.NewSectionReader(file, 0, 10), ContentLength: aws.Int64(10), ChecksumCRC32C: aws.String(crcOf([]byte("other bytes")))}, unsigned)
	if err := s.describe(err); err == nil || !strings.Contains(err.Error(), "BadDigest") || len(f.log) != 1 {
		t.Errorf("got %v after %d requests", err, len(f.log))
	}
}

type roundTrip func(*http.Request) (*http.Response, error)

func (f roundTrip) Do(r *http.Request) (*http.Response, error) { return f(r) }

// awsStore is a client of AWS itself (no endpoint configured) in region,
// whose requests go to rt.
func awsStore(t *testing.T, region string, rt roundTrip) *Store {
	t.Helper()
	isolate(t)
	t.Setenv("AWS_ACCESS_KEY_ID", "AK")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "s")
	t.Setenv("AWS_REGION", region)
	s, err := New(context.Background(), Options{HTTPClient: rt})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// scopeRegion is the region a request was signed for.
func scopeRegion(r *http.Request) string {
	auth := r.Header.Get("Authorization")
	i := strings.Index(auth, "Credential=")
	if i < 0 {
		return "unsigned"
	}
	return strings.Split(auth[i:], "/")[2]
}

// TestAWSAddressing: on AWS a bucket is addressed virtual-host style
// (path-style when its name has a "." under https), and a bucket of
// another region is asked again in the region AWS names, then asked
// there from the start.
func TestAWSAddressing(t *testing.T) {
	var seen []string
	s := awsStore(t, "us-east-1", func(r *http.Request) (*http.Response, error) {
		seen = append(seen, r.Method+" "+r.URL.String()+" "+scopeRegion(r))
		h := http.Header{}
		status := 200
		if strings.HasPrefix(r.URL.Host, "far.") && scopeRegion(r) != "eu-west-3" {
			status = http.StatusMovedPermanently
			h.Set("X-Amz-Bucket-Region", "eu-west-3")
		}
		h.Set("Content-Length", "5")
		return &http.Response{StatusCode: status, Header: h, ContentLength: 5, Body: io.NopCloser(strings.NewReader("")), Request: r}, nil
	})
	ctx := context.Background()
	for _, u := range []URL{{"near", "a b/c.npy"}, {"far", "k"}, {"far", "k2"}, {"my.bucket", "k"}} {
		if _, err := s.Stat(ctx, u); err != nil {
			t.Fatalf("%s: %v", u, err)
		}
	}
	want := []string{
		"HEAD https://near.s3.us-east-1.amazonaws.com/a%20b/c.npy us-east-1",
		"HEAD https://far.s3.us-east-1.amazonaws.com/k us-east-1",
		"HEAD https://far.s3.eu-west-3.amazonaws.com/k eu-west-3",
		"HEAD https://far.s3.eu-west-3.amazonaws.com/k2 eu-west-3",
		"HEAD https://s3.us-east-1.amazonaws.com/my.bucket/k us-east-1",
	}
	if strings.Join(seen, "\n") != strings.Join(want, "\n") {
		t.Errorf("requests:\n%s\nwant:\n%s", strings.Join(seen, "\n"), strings.Join(want, "\n"))
	}
}

// China's regions are another partition, whose hosts end in
// amazonaws.com.cn (they were built as amazonaws.com: found in review).
func TestChinaRegionHost(t *testing.T) {
	var seen []string
	s := awsStore(t, "cn-north-1", func(r *http.Request) (*http.Response, error) {
		seen = append(seen, r.URL.Host+" "+scopeRegion(r))
		h := http.Header{"Content-Length": {"1"}}
		return &http.Response{StatusCode: 200, Header: h, ContentLength: 1, Body: io.NopCloser(strings.NewReader("")), Request: r}, nil
	})
	if _, err := s.Stat(context.Background(), URL{"bkt", "k"}); err != nil {
		t.Fatal(err)
	}
	if want := "bkt.s3.cn-north-1.amazonaws.com.cn cn-north-1"; len(seen) != 1 || seen[0] != want {
		t.Errorf("requests %q, want %q", seen, want)
	}
}

// A CompleteMultipartUpload answered 200 with an InternalError in its
// body is tried again, as S3's documentation says, instead of throwing
// the whole upload away (found in review).
func TestCompleteRetriedOnInternalError(t *testing.T) {
	defer func(p int64) { partSize = p }(partSize)
	partSize = 1 << 20
	f := newFake(t)
	f.completeFail = 2
	s := fakeStore(t, f, f.creds)
	data := bytes.Repeat([]byte("x"), 3<<20+5)
	if err := s.Upload(context.Background(), URL{"bkt", "big.bin"}, tempWith(t, data), int64(len(data))); err != nil {
		t.Fatalf("Upload: %v", err)
	}
	if got := f.objects["bkt/big.bin"]; !bytes.Equal(got, data) {
		t.Errorf("the object is %d bytes, want %d", len(got), len(data))
	}
	if f.aborted != 0 || f.completeFail != 0 {
		t.Errorf("%d aborted, %d failures left", f.aborted, f.completeFail)
	}
}

func hexSHA256(b []byte) string {
	h := sha256.Sum256(b)
	return hex.EncodeToString(h[:])
}

// On an S3-compatible server the uploads send their CRC32C in a header
// and no checksum trailer: the SDK's default (an aws-chunked body with a
// CRC32 trailer, since service/s3 v1.73) is refused by MinIO, Ceph and
// R2, as by the fake. (Over https: over http the SDK puts its checksum
// in a header.)
func TestCustomEndpointChecksums(t *testing.T) {
	f := newFake(t)
	srv := httptest.NewTLSServer(f)
	t.Cleanup(srv.Close)
	isolate(t)
	t.Setenv("AWS_ENDPOINT_URL_S3", srv.URL)
	t.Setenv("AWS_ACCESS_KEY_ID", f.creds.AccessKeyID)
	t.Setenv("AWS_SECRET_ACCESS_KEY", f.creds.SecretAccessKey)
	s, err := New(context.Background(), Options{HTTPClient: srv.Client()})
	if err != nil {
		t.Fatal(err)
	}
	file := tempWith(t, []byte("some bytes"))
	_, err = s.c.PutObject(context.Background(), &s3.PutObjectInput{Bucket: aws.String("bkt"), Key: aws.String("k"),
		Body: io.NewSectionReader(file, 0, 10), ContentLength: aws.Int64(10)}, func(o *s3.Options) {
		o.RequestChecksumCalculation = aws.RequestChecksumCalculationWhenSupported
	})
	if err := s.describe(err); err == nil || !strings.Contains(err.Error(), "NotImplemented") {
		t.Fatalf("the SDK's default checksums: %v, want them refused", err)
	}
	if err := s.Upload(context.Background(), URL{"bkt", "k"}, file, 10); err != nil {
		t.Fatal(err)
	}
	if string(f.objects["bkt/k"]) != "some bytes" {
		t.Errorf("stored %q", f.objects["bkt/k"])
	}
}

// A part stored after the abort brings the upload back: it is aborted
// again until ListParts says it is gone.
func TestAbortRepeatedUntilGone(t *testing.T) {
	defer func(p int64) { partSize = p }(partSize)
	partSize = 1 << 20
	f := newFake(t)
	f.failPart, f.revive = 2, 2
	s := fakeStore(t, f, f.creds)
	data := bytes.Repeat([]byte("x"), 3<<20)
	if err := s.Upload(context.Background(), URL{"bkt", "big.bin"}, tempWith(t, data), int64(len(data))); err == nil {
		t.Fatal("a refused part: no error")
	}
	if len(f.uploads) != 0 || f.aborted != 3 {
		t.Errorf("%d uploads left after %d aborts, want none after 3", len(f.uploads), f.aborted)
	}
}

// An upload that a run of this host left behind (its process is gone) is
// aborted by the next upload of the same key; one of a process still
// running, or of another key, is not.
func TestLeftBehindUploadAborted(t *testing.T) {
	f := newFake(t)
	s := fakeStore(t, f, f.creds)
	dead := exec.Command("true")
	if err := dead.Run(); err != nil {
		t.Fatal(err)
	}
	for id, e := range map[string]journalEntry{
		"dead":      {Key: "k.npy", PID: dead.Process.Pid},
		"live":      {Key: "k.npy", PID: os.Getppid()},
		"other-key": {Key: "other.npy", PID: dead.Process.Pid},
	} {
		f.uploads[id] = &fakeUpload{key: e.Key, started: time.Now(), parts: map[int][]byte{}}
		e.Endpoint, e.Bucket, e.ID, e.Host = s.endpoint, "bkt", id, hostName()
		b, _ := json.Marshal(e)
		write(t, e.file(journal()), string(b))
	}
	if err := s.Upload(context.Background(), URL{"bkt", "k.npy"}, tempWith(t, []byte("new")), 3); err != nil {
		t.Fatal(err)
	}
	var left []string
	for id := range f.uploads {
		left = append(left, id)
	}
	sort.Strings(left)
	if strings.Join(left, " ") != "live other-key" {
		t.Errorf("uploads left: %v, want live other-key", left)
	}
	files, _ := os.ReadDir(journal())
	if len(files) != 2 {
		t.Errorf("%d journal files, want 2 (the dead upload's forgotten)", len(files))
	}
}
