package objstore

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"net/http"
	"sort"
	"strings"
	"time"
)

// AWS Signature Version 4, header-based, for S3: the request's method,
// path, query and chosen headers are hashed into a canonical request,
// which is signed with a key derived from the secret, the day, the
// region and the service.

const (
	emptySHA256     = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
	unsignedPayload = "UNSIGNED-PAYLOAD"
	amzDate         = "20060102T150405Z"
)

// uriEncode percent-encodes every byte but the unreserved ones
// (A-Z a-z 0-9 - . _ ~), and "/" when slash is set (a path). S3 encodes
// the path once, as it is: no cleaning, no double encoding.
func uriEncode(s string, slash bool) string {
	const hexDigits = "0123456789ABCDEF"
	var b strings.Builder
	b.Grow(len(s))
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case 'A' <= c && c <= 'Z', 'a' <= c && c <= 'z', '0' <= c && c <= '9',
			c == '-', c == '.', c == '_', c == '~', c == '/' && slash:
			b.WriteByte(c)
		default:
			b.WriteByte('%')
			b.WriteByte(hexDigits[c>>4])
			b.WriteByte(hexDigits[c&15])
		}
	}
	return b.String()
}

// encodeQuery is a query string in SigV4's canonical form: names and
// values encoded by uriEncode, sorted by name, "name=" for an empty
// value. Requests are sent with exactly this string.
func encodeQuery(q map[string]string) string {
	if len(q) == 0 {
		return ""
	}
	parts := make([]string, 0, len(q))
	for k, v := range q {
		parts = append(parts, uriEncode(k, false)+"="+uriEncode(v, false))
	}
	sort.Strings(parts)
	return strings.Join(parts, "&")
}

// canonicalQuery puts an already encoded query string in canonical form
// (sorted, "name=" for a bare name).
func canonicalQuery(raw string) string {
	if raw == "" {
		return ""
	}
	parts := strings.Split(raw, "&")
	for i, p := range parts {
		if !strings.Contains(p, "=") {
			parts[i] = p + "="
		}
	}
	sort.Strings(parts)
	return strings.Join(parts, "&")
}

// signedHeader says whether a header is signed: Host is added apart;
// the others that S3 requires or that a proxy must not change.
func signedHeader(name string) bool {
	return strings.HasPrefix(name, "x-amz-") || name == "content-type" || name == "content-md5" ||
		name == "range" || name == "date"
}

// sign adds x-amz-date, x-amz-content-sha256 (payloadHash: the body's
// SHA-256 in hex, emptySHA256, or unsignedPayload), the session token
// if any, and the Authorization header to req. req.URL.RawPath must be
// the uriEncode'd path (or empty, then Path is encoded), RawQuery the
// encoded query.
func sign(req *http.Request, c Creds, region string, now time.Time, payloadHash string) {
	now = now.UTC()
	stamp := now.Format(amzDate)
	day := stamp[:8]
	req.Header.Set("X-Amz-Date", stamp)
	req.Header.Set("X-Amz-Content-Sha256", payloadHash)
	if c.SessionToken != "" {
		req.Header.Set("X-Amz-Security-Token", c.SessionToken)
	}
	host := req.Host
	if host == "" {
		host = req.URL.Host
	}
	names := []string{"host"}
	values := map[string]string{"host": host}
	for k, vs := range req.Header {
		lk := strings.ToLower(k)
		if !signedHeader(lk) {
			continue
		}
		trimmed := make([]string, len(vs))
		for i, v := range vs {
			trimmed[i] = strings.Join(strings.Fields(v), " ")
		}
		names = append(names, lk)
		values[lk] = strings.Join(trimmed, ",")
	}
	sort.Strings(names)
	path := req.URL.RawPath
	if path == "" {
		path = uriEncode(req.URL.Path, true)
	}
	if path == "" {
		path = "/"
	}
	var cr strings.Builder
	cr.WriteString(req.Method + "\n" + path + "\n" + canonicalQuery(req.URL.RawQuery) + "\n")
	for _, n := range names {
		cr.WriteString(n + ":" + values[n] + "\n")
	}
	signed := strings.Join(names, ";")
	cr.WriteString("\n" + signed + "\n" + payloadHash)
	scope := day + "/" + region + "/s3/aws4_request"
	toSign := "AWS4-HMAC-SHA256\n" + stamp + "\n" + scope + "\n" + hexSHA256([]byte(cr.String()))
	key := hmacSHA256([]byte("AWS4"+c.SecretAccessKey), day)
	key = hmacSHA256(key, region)
	key = hmacSHA256(key, "s3")
	key = hmacSHA256(key, "aws4_request")
	sig := hex.EncodeToString(hmacSHA256(key, toSign))
	req.Header.Set("Authorization", "AWS4-HMAC-SHA256 Credential="+c.AccessKeyID+"/"+scope+
		",SignedHeaders="+signed+",Signature="+sig)
}

func hmacSHA256(key []byte, data string) []byte {
	h := hmac.New(sha256.New, key)
	h.Write([]byte(data))
	return h.Sum(nil)
}

func hexSHA256(b []byte) string {
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}
