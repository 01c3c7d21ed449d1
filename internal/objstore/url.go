package objstore

import (
	"errors"
	"fmt"
	"strings"
)

// Scheme starts every object URL.
const Scheme = "s3://"

// IsURL says whether a path names an object or a prefix (s3://…).
func IsURL(s string) bool {
	return len(s) >= len(Scheme) && strings.EqualFold(s[:len(Scheme)], Scheme)
}

// URL is s3://BUCKET/KEY. A Key that is empty or ends in "/" is a
// prefix, walked like a directory.
type URL struct {
	Bucket, Key string
}

// ParseURL reads s3://BUCKET/KEY, s3://BUCKET/PREFIX/ or s3://BUCKET.
// Keys are taken byte for byte (no cleaning of "//", "." or ".."), as S3
// stores them.
func ParseURL(s string) (URL, error) {
	if !IsURL(s) {
		return URL{}, fmt.Errorf("%q is not an s3:// URL", s)
	}
	rest := s[len(Scheme):]
	bucket, key, _ := strings.Cut(rest, "/")
	if err := checkBucket(bucket); err != nil {
		return URL{}, err
	}
	if strings.ContainsAny(key, "\x00") {
		return URL{}, errors.New("a key cannot hold a NUL byte")
	}
	if len(key) > 1024 {
		return URL{}, fmt.Errorf("key of %d bytes: S3 keys are at most 1024", len(key))
	}
	return URL{Bucket: bucket, Key: key}, nil
}

// checkBucket accepts S3's bucket names (3-63 of a-z 0-9 . -) and the
// looser ones some S3-compatible servers take (upper case, _), but not
// an empty name or one with characters a URL host or path cannot hold.
func checkBucket(b string) error {
	if b == "" {
		return errors.New("no bucket: want s3://BUCKET/KEY")
	}
	if len(b) > 255 {
		return fmt.Errorf("bucket name of %d bytes is too long", len(b))
	}
	for _, r := range b {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '.', r == '-', r == '_':
		default:
			return fmt.Errorf("bucket name %q: %q is not allowed in a bucket name", b, r)
		}
	}
	return nil
}

// IsPrefix: the URL names a prefix by its form (s3://B, s3://B/P/).
func (u URL) IsPrefix() bool {
	return u.Key == "" || strings.HasSuffix(u.Key, "/")
}

func (u URL) String() string {
	return Scheme + u.Bucket + "/" + u.Key
}

// Join names the object at rel (slash-separated) under the prefix dir
// (an s3:// URL, with or without its final "/").
func Join(dir, rel string) string {
	return strings.TrimSuffix(dir, "/") + "/" + strings.TrimPrefix(rel, "/")
}

// Base is the last element of a key ("a/b/x.npy": "x.npy").
func Base(key string) string {
	if i := strings.LastIndexByte(key, '/'); i >= 0 {
		return key[i+1:]
	}
	return key
}
