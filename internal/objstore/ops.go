package objstore

import (
	"context"
	"crypto/md5"
	"encoding/base64"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"net/http"
	"net/url"
	"strings"
	"sync"

	"github.com/aws/aws-sdk-go-v2/aws"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
)

// The S3 operations the transfers use, over the SDK's client.

// listPage is one ListObjectsV2 request: at most max keys under prefix,
// after the continuation token. Keys come URL-encoded (encoding-type=url:
// a key may hold bytes that XML cannot) and are decoded here.
func (s *Store) listPage(ctx context.Context, bucket, prefix, token string, max int32) (*s3.ListObjectsV2Output, error) {
	in := &s3.ListObjectsV2Input{Bucket: &bucket, Prefix: &prefix, MaxKeys: &max, EncodingType: types.EncodingTypeUrl}
	if token != "" {
		in.ContinuationToken = &token
	}
	out, err := call(s, bucket, func(o ...func(*s3.Options)) (*s3.ListObjectsV2Output, error) {
		return s.c.ListObjectsV2(ctx, in, o...)
	})
	if err != nil {
		return nil, s.describe(err)
	}
	if out.EncodingType == types.EncodingTypeUrl {
		for i := range out.Contents {
			k, err := url.QueryUnescape(aws.ToString(out.Contents[i].Key))
			if err != nil {
				return nil, fmt.Errorf("listing: key %q: %v", aws.ToString(out.Contents[i].Key), err)
			}
			out.Contents[i].Key = &k
		}
	}
	return out, nil
}

// unsigned sends a body as UNSIGNED-PAYLOAD instead of hashing it first
// (a second read of every byte): the CRC32C header, which the server
// checks, is what guards it.
func unsigned(o *s3.Options) {
	o.APIOptions = append(o.APIOptions, v4.SwapComputePayloadSHA256ForUnsignedPayloadMiddleware)
}

// put makes the object u from n bytes of f in one PutObject, with their
// CRC32C. S3 makes it visible only when the whole body has come.
func (s *Store) put(ctx context.Context, u URL, f io.ReaderAt, n int64) error {
	sum, err := crc32c(f, 0, n)
	if err != nil {
		return err
	}
	return s.putSum(ctx, u, f, n, sum)
}

// putSum is put with the CRC32C already known (base64, as the header
// carries it).
func (s *Store) putSum(ctx context.Context, u URL, f io.ReaderAt, n int64, sum string) error {
	_, err := call(s, u.Bucket, func(o ...func(*s3.Options)) (*s3.PutObjectOutput, error) {
		return s.c.PutObject(ctx, &s3.PutObjectInput{Bucket: &u.Bucket, Key: &u.Key,
			Body: io.NewSectionReader(f, 0, n), ContentLength: &n, ChecksumCRC32C: &sum,
			ContentType: aws.String("application/octet-stream")}, append(o, unsigned)...)
	})
	return s.describe(err)
}

// createUpload starts a multipart upload (CreateMultipartUpload) whose
// parts carry CRC32C checksums.
func (s *Store) createUpload(ctx context.Context, u URL) (string, error) {
	out, err := call(s, u.Bucket, func(o ...func(*s3.Options)) (*s3.CreateMultipartUploadOutput, error) {
		return s.c.CreateMultipartUpload(ctx, &s3.CreateMultipartUploadInput{Bucket: &u.Bucket, Key: &u.Key,
			ChecksumAlgorithm: types.ChecksumAlgorithmCrc32c, ContentType: aws.String("application/octet-stream")}, o...)
	})
	if err != nil {
		return "", s.describe(err)
	}
	if aws.ToString(out.UploadId) == "" {
		return "", errors.New("the server started a multipart upload without an UploadId")
	}
	return *out.UploadId, nil
}

// putPart uploads part number of the upload: n bytes of f from off, with
// their CRC32C, which the server checks.
func (s *Store) putPart(ctx context.Context, u URL, id string, number int32, f io.ReaderAt, off, n int64) (types.CompletedPart, error) {
	sum, err := crc32c(f, off, n)
	if err != nil {
		return types.CompletedPart{}, err
	}
	return s.putPartSum(ctx, u, id, number, f, off, n, sum)
}

// putPartSum is putPart with the part's CRC32C already known.
func (s *Store) putPartSum(ctx context.Context, u URL, id string, number int32, f io.ReaderAt, off, n int64, sum string) (types.CompletedPart, error) {
	out, err := call(s, u.Bucket, func(o ...func(*s3.Options)) (*s3.UploadPartOutput, error) {
		return s.c.UploadPart(ctx, &s3.UploadPartInput{Bucket: &u.Bucket, Key: &u.Key, UploadId: &id, PartNumber: &number,
			Body: io.NewSectionReader(f, off, n), ContentLength: &n, ChecksumCRC32C: &sum}, append(o, unsigned)...)
	})
	if err != nil {
		return types.CompletedPart{}, s.describe(err)
	}
	return types.CompletedPart{PartNumber: &number, ETag: out.ETag, ChecksumCRC32C: &sum}, nil
}

// complete completes the upload (CompleteMultipartUpload). S3 may answer
// 200 and put an error in the body: a transient one (InternalError,
// SlowDown) is tried again, as S3's documentation says. And a Complete
// that was done but whose answer was lost is tried again by the retryer
// and finds the upload gone (NoSuchUpload): the object then says whether
// it was made by it (found in review: the run failed though the object
// was there).
func (s *Store) complete(ctx context.Context, u URL, id string, parts []types.CompletedPart) error {
	for try := 0; ; try++ {
		_, err := call(s, u.Bucket, func(o ...func(*s3.Options)) (*s3.CompleteMultipartUploadOutput, error) {
			return s.c.CompleteMultipartUpload(ctx, &s3.CompleteMultipartUploadInput{Bucket: &u.Bucket, Key: &u.Key, UploadId: &id,
				MultipartUpload: &types.CompletedMultipartUpload{Parts: parts}}, o...)
		})
		err = s.describe(err)
		var e *Error
		if !errors.As(err, &e) {
			return err
		}
		if e.Code == "NoSuchUpload" && s.completed(ctx, u, parts) {
			return nil
		}
		if try >= retries || (e.Code != "InternalError" && e.Code != "SlowDown" && e.Code != "ServiceUnavailable") {
			return err
		}
		if err := sleep(ctx, backoff(try)); err != nil {
			return err
		}
	}
}

// completed says whether the object at u is the one an upload of these
// parts made: its ETag is S3's multipart ETag of these parts, the MD5 of
// their MD5s followed by "-N" (a server that makes ETags otherwise is
// not taken at its word: the failure is reported).
func (s *Store) completed(ctx context.Context, u URL, parts []types.CompletedPart) bool {
	info, err := s.Stat(ctx, u)
	if err != nil {
		return false
	}
	h := md5.New()
	for _, p := range parts {
		b, err := hex.DecodeString(strings.Trim(aws.ToString(p.ETag), `"`))
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
	_, err := call(s, u.Bucket, func(o ...func(*s3.Options)) (*s3.AbortMultipartUploadOutput, error) {
		return s.c.AbortMultipartUpload(ctx, &s3.AbortMultipartUploadInput{Bucket: &u.Bucket, Key: &u.Key, UploadId: &id}, o...)
	})
	return s.describe(err)
}

// uploadGone asks the server (ListParts) whether the upload id is gone:
// true when it answers NoSuchUpload (or 404), false while it still lists
// the upload, with or without parts, and false with the error when it
// cannot say.
func (s *Store) uploadGone(ctx context.Context, u URL, id string) (bool, error) {
	_, err := call(s, u.Bucket, func(o ...func(*s3.Options)) (*s3.ListPartsOutput, error) {
		return s.c.ListParts(ctx, &s3.ListPartsInput{Bucket: &u.Bucket, Key: &u.Key, UploadId: &id, MaxParts: aws.Int32(1)}, o...)
	})
	if err == nil {
		return false, nil
	}
	err = s.describe(err)
	if e := (*Error)(nil); errors.As(err, &e) && (e.Code == "NoSuchUpload" || e.Status == http.StatusNotFound) {
		return true, nil
	}
	return false, err
}

// crc32c is the CRC32C of n bytes of f from off, as S3's checksum
// headers carry it: base64 of its 4 big-endian bytes. (The table is
// made on first use, not when the program starts.)
func crc32c(f io.ReaderAt, off, n int64) (string, error) {
	h := crc32.New(castagnoli())
	buf := make([]byte, 256<<10)
	if _, err := io.CopyBuffer(h, io.NewSectionReader(f, off, n), buf); err != nil {
		return "", err
	}
	return crcHeader(h.Sum32()), nil
}

// castagnoli is CRC32C's table (made once, on first use).
var castagnoli = sync.OnceValue(func() *crc32.Table { return crc32.MakeTable(crc32.Castagnoli) })

// crcHeader is a CRC32C as S3's checksum headers carry it.
func crcHeader(sum uint32) string {
	return base64.StdEncoding.EncodeToString(binary.BigEndian.AppendUint32(nil, sum))
}
