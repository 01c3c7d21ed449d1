package objstore

import (
	"context"
	"crypto/md5"
	"encoding/base64"
	"encoding/binary"
	"encoding/hex"
	"encoding/xml"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"strings"
	"time"
)

// The S3 operations the transfers use, over Store.do.

// listResult is a page of ListObjectsV2.
type listResult struct {
	IsTruncated           bool
	NextContinuationToken string
	EncodingType          string
	Contents              []struct {
		Key  string
		Size int64
	}
}

// listPage is one ListObjectsV2 request: at most max keys under prefix,
// from the continuation token. Keys come URL-encoded (encoding-type=url:
// a key may hold bytes that XML cannot) and are decoded here.
func (s *Store) listPage(ctx context.Context, bucket, prefix, token string, max int) (*listResult, error) {
	q := map[string]string{"list-type": "2", "prefix": prefix, "max-keys": strconv.Itoa(max), "encoding-type": "url"}
	if token != "" {
		q["continuation-token"] = token
	}
	resp, err := s.do(ctx, &call{method: http.MethodGet, bucket: bucket, query: q})
	if err != nil {
		return nil, err
	}
	var res listResult
	if err := decodeXML(resp, &res); err != nil {
		return nil, err
	}
	if res.EncodingType == "url" {
		for i := range res.Contents {
			k, err := url.QueryUnescape(res.Contents[i].Key)
			if err != nil {
				return nil, fmt.Errorf("listing: key %q: %v", res.Contents[i].Key, err)
			}
			res.Contents[i].Key = k
		}
	}
	return &res, nil
}

// createUpload starts a multipart upload (CreateMultipartUpload) whose
// parts carry CRC32C checksums.
func (s *Store) createUpload(ctx context.Context, u URL) (string, error) {
	resp, err := s.do(ctx, &call{method: http.MethodPost, bucket: u.Bucket, key: u.Key,
		query:  map[string]string{"uploads": ""},
		header: http.Header{"Content-Type": {"application/octet-stream"}, "X-Amz-Checksum-Algorithm": {"CRC32C"}}})
	if err != nil {
		return "", err
	}
	var res struct{ UploadId string }
	if err := decodeXML(resp, &res); err != nil {
		return "", err
	}
	if res.UploadId == "" {
		return "", errors.New("the server started a multipart upload without an UploadId")
	}
	return res.UploadId, nil
}

// completePart is a part as CompleteMultipartUpload lists it.
type completePart struct {
	PartNumber     int
	ETag           string
	ChecksumCRC32C string `xml:",omitempty"`
}

// putPart uploads part number of the upload: n bytes of f from off, with
// their CRC32C, which the server checks.
func (s *Store) putPart(ctx context.Context, u URL, id string, number int, f *os.File, off, n int64) (completePart, error) {
	sum, err := crc32c(f, off, n)
	if err != nil {
		return completePart{}, err
	}
	resp, err := s.do(ctx, &call{method: http.MethodPut, bucket: u.Bucket, key: u.Key, file: f, off: off, n: n,
		query:  map[string]string{"partNumber": strconv.Itoa(number), "uploadId": id},
		header: http.Header{"X-Amz-Checksum-Crc32c": {sum}}})
	if err != nil {
		return completePart{}, s.describe(err)
	}
	drain(resp)
	return completePart{PartNumber: number, ETag: resp.Header.Get("ETag"), ChecksumCRC32C: sum}, nil
}

// complete completes the upload (CompleteMultipartUpload). Its answer
// may be a 200 whose body is an error: that is a failure too.
func (s *Store) complete(ctx context.Context, u URL, id string, parts []completePart) error {
	body, err := xml.Marshal(struct {
		XMLName xml.Name       `xml:"CompleteMultipartUpload"`
		Parts   []completePart `xml:"Part"`
	}{Parts: parts})
	if err != nil {
		return err
	}
	// S3 may answer 200 and put an error in the body, after it has sent
	// the headers: a transient one (InternalError, SlowDown) is tried
	// again, as S3's documentation says. And a Complete that was done
	// but whose answer was lost is tried again by do and finds the
	// upload gone (NoSuchUpload): the object then says whether it was
	// made by it (found in review: the run failed though the object was
	// there).
	for try := 0; ; try++ {
		resp, err := s.do(ctx, &call{method: http.MethodPost, bucket: u.Bucket, key: u.Key, body: body,
			query:  map[string]string{"uploadId": id},
			header: http.Header{"Content-Type": {"application/xml"}}})
		var re *ResponseError
		if errors.As(err, &re) && re.Code == "NoSuchUpload" && s.completed(ctx, u, parts) {
			return nil
		}
		if err != nil {
			return s.describe(err)
		}
		var res struct {
			XMLName       xml.Name
			Code, Message string
		}
		if err := decodeXML(resp, &res); err != nil {
			return s.describe(err)
		}
		if res.XMLName.Local != "Error" {
			return nil
		}
		e := &ResponseError{StatusCode: resp.StatusCode, Code: res.Code, Message: res.Message}
		if try >= retries || (res.Code != "InternalError" && res.Code != "SlowDown" && res.Code != "ServiceUnavailable") {
			return s.describe(e)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(backoff(try)):
		}
	}
}

// completed says whether the object at u is the one an upload of these
// parts made: its ETag is S3's multipart ETag of these parts, the MD5 of
// their MD5s followed by "-N" (a server that makes ETags otherwise is
// not taken at its word: the failure is reported).
func (s *Store) completed(ctx context.Context, u URL, parts []completePart) bool {
	info, err := s.Stat(ctx, u)
	if err != nil {
		return false
	}
	h := md5.New()
	for _, p := range parts {
		b, err := hex.DecodeString(strings.Trim(p.ETag, `"`))
		if err != nil || len(b) != md5.Size {
			return false
		}
		h.Write(b)
	}
	return strings.Trim(info.ETag, `"`) == fmt.Sprintf("%x-%d", h.Sum(nil), len(parts))
}

// abortUpload aborts a multipart upload (AbortMultipartUpload): the
// server deletes its parts.
func (s *Store) abortUpload(ctx context.Context, u URL, id string) error {
	resp, err := s.do(ctx, &call{method: http.MethodDelete, bucket: u.Bucket, key: u.Key,
		query: map[string]string{"uploadId": id}})
	if err != nil {
		return err
	}
	drain(resp)
	return nil
}

// uploadList is what ListMultipartUploads says.
type uploadList struct {
	Uploads []struct {
		Key       string
		UploadID  string `xml:"UploadId"`
		Initiated time.Time
	} `xml:"Upload"`
}

// listUploads lists the unfinished multipart uploads of keys starting
// with u's key (ListMultipartUploads, the first 1000).
func (s *Store) listUploads(ctx context.Context, u URL) (*uploadList, error) {
	resp, err := s.do(ctx, &call{method: http.MethodGet, bucket: u.Bucket,
		query: map[string]string{"uploads": "", "prefix": u.Key, "max-uploads": "1000"}})
	if err != nil {
		return nil, err
	}
	var res uploadList
	if err := decodeXML(resp, &res); err != nil {
		return nil, err
	}
	return &res, nil
}

// crc32c is the CRC32C of n bytes of f from off, as S3's checksum
// headers carry it: base64 of its 4 big-endian bytes. (The table is
// made on first use, not when the program starts.)
func crc32c(f *os.File, off, n int64) (string, error) {
	h := crc32.New(crc32.MakeTable(crc32.Castagnoli))
	buf := make([]byte, 256<<10)
	if _, err := io.CopyBuffer(h, io.NewSectionReader(f, off, n), buf); err != nil {
		return "", err
	}
	return base64.StdEncoding.EncodeToString(binary.BigEndian.AppendUint32(nil, h.Sum32())), nil
}

// decodeXML reads an answer's XML body (at most 16 MiB) into v and
// closes it.
func decodeXML(resp *http.Response, v any) error {
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 16<<20))
	if err != nil {
		return err
	}
	if err := xml.Unmarshal(body, v); err != nil {
		return fmt.Errorf("the server's answer is not the XML expected: %v (%q)", err, strings.TrimSpace(string(body[:min(len(body), 200)])))
	}
	return nil
}

// drain reads what is left of an answer and closes it, so that its
// connection is reused.
func drain(resp *http.Response) {
	io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<20))
	resp.Body.Close()
}
