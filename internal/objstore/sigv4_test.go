package objstore

import (
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"
)

// TestSignAWSExamples: the signer against the worked examples of AWS's
// "Examples: Signature Calculations in AWS Signature Version 4" (S3 API
// reference, header-based authentication): GET Object with a Range,
// PUT Object (a path with "$", Date and x-amz-storage-class signed, the
// body's SHA-256), GET Bucket lifecycle (a bare sub-resource) and GET
// Bucket (an unsorted query).
func TestSignAWSExamples(t *testing.T) {
	creds := Creds{AccessKeyID: "AKIAIOSFODNN7EXAMPLE", SecretAccessKey: "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"}
	now := time.Date(2013, 5, 24, 0, 0, 0, 0, time.UTC)
	cases := []struct {
		name, method, path, query string
		header                    map[string]string
		hash                      string
		signed, sig               string
	}{
		{"GET Object", "GET", "/test.txt", "", map[string]string{"Range": "bytes=0-9"}, emptySHA256,
			"host;range;x-amz-content-sha256;x-amz-date", "f0e8bdb87c964420e857bd35b5d6ed310bd44f0170aba48dd91039c6036bdb41"},
		{"PUT Object", "PUT", "/test$file.text", "",
			map[string]string{"Date": "Fri, 24 May 2013 00:00:00 GMT", "x-amz-storage-class": "REDUCED_REDUNDANCY"},
			hexSHA256([]byte("Welcome to Amazon S3.")),
			"date;host;x-amz-content-sha256;x-amz-date;x-amz-storage-class", "98ad721746da40c64f1a55b78f14c238d841ea1380cd77a1b5971af0ece108bd"},
		{"GET Bucket lifecycle", "GET", "/", "lifecycle", nil, emptySHA256,
			"host;x-amz-content-sha256;x-amz-date", "fea454ca298b7da1c68078a5d1bdbfbbe0d65c699e0f91ac7a200a0136783543"},
		{"GET Bucket", "GET", "/", encodeQuery(map[string]string{"max-keys": "2", "prefix": "J"}), nil, emptySHA256,
			"host;x-amz-content-sha256;x-amz-date", "34b48302e7b5fa45bde8084f4b7868a86f0a534bc59db6670ed5711ef69dc6f7"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			u := &url.URL{Scheme: "https", Host: "examplebucket.s3.amazonaws.com", Path: c.path, RawPath: uriEncode(c.path, true), RawQuery: c.query}
			req, err := http.NewRequest(c.method, u.String(), nil)
			if err != nil {
				t.Fatal(err)
			}
			for k, v := range c.header {
				req.Header.Set(k, v)
			}
			sign(req, creds, "us-east-1", now, c.hash)
			want := "AWS4-HMAC-SHA256 Credential=AKIAIOSFODNN7EXAMPLE/20130524/us-east-1/s3/aws4_request," +
				"SignedHeaders=" + c.signed + ",Signature=" + c.sig
			if got := req.Header.Get("Authorization"); got != want {
				t.Errorf("Authorization\n got %s\nwant %s", got, want)
			}
			if req.Header.Get("X-Amz-Date") != "20130524T000000Z" || req.Header.Get("X-Amz-Content-Sha256") != c.hash {
				t.Errorf("x-amz-date %q, x-amz-content-sha256 %q", req.Header.Get("X-Amz-Date"), req.Header.Get("X-Amz-Content-Sha256"))
			}
		})
	}
	t.Run("session token signed", func(t *testing.T) {
		req, _ := http.NewRequest("GET", "https://examplebucket.s3.amazonaws.com/test.txt", nil)
		c := creds
		c.SessionToken = "FQoGZXIvYXdzEXAMPLE"
		sign(req, c, "us-east-1", now, unsignedPayload)
		if req.Header.Get("X-Amz-Security-Token") != c.SessionToken ||
			!strings.Contains(req.Header.Get("Authorization"), "SignedHeaders=host;x-amz-content-sha256;x-amz-date;x-amz-security-token,") {
			t.Errorf("token %q, %s", req.Header.Get("X-Amz-Security-Token"), req.Header.Get("Authorization"))
		}
	})
}

// TestURIEncode: each byte but the unreserved ones, once; "/" kept in a
// path only.
func TestURIEncode(t *testing.T) {
	for _, c := range []struct {
		in, path, query string
	}{
		{"a/b c+d", "a/b%20c%2Bd", "a%2Fb%20c%2Bd"},
		{"x%41~._-Z9", "x%2541~._-Z9", "x%2541~._-Z9"},
		{"ü$=&?#*", "%C3%BC%24%3D%26%3F%23%2A", "%C3%BC%24%3D%26%3F%23%2A"},
		{"a//..//b", "a//..//b", "a%2F%2F..%2F%2Fb"},
	} {
		if got := uriEncode(c.in, true); got != c.path {
			t.Errorf("path %q: %q, want %q", c.in, got, c.path)
		}
		if got := uriEncode(c.in, false); got != c.query {
			t.Errorf("query %q: %q, want %q", c.in, got, c.query)
		}
	}
	if got := canonicalQuery("uploads&prefix=a%2Fb&max-uploads=1000"); got != "max-uploads=1000&prefix=a%2Fb&uploads=" {
		t.Errorf("canonicalQuery: %q", got)
	}
}
