package objstore

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
)

func TestParseURL(t *testing.T) {
	for _, c := range []struct {
		in             string
		bucket, key    string
		prefix         bool
		err            string
		roundTripsAsIn bool
	}{
		{in: "s3://b/k.npy", bucket: "b", key: "k.npy", roundTripsAsIn: true},
		{in: "s3://my-bucket.x/a/b/c.npz", bucket: "my-bucket.x", key: "a/b/c.npz", roundTripsAsIn: true},
		{in: "s3://b/dir/", bucket: "b", key: "dir/", prefix: true, roundTripsAsIn: true},
		{in: "s3://b", bucket: "b", key: "", prefix: true},
		{in: "s3://b/", bucket: "b", key: "", prefix: true, roundTripsAsIn: true},
		{in: "S3://B_1/x", bucket: "B_1", key: "x"},
		// Keys are S3's, byte for byte: no cleaning.
		{in: "s3://b/a//b/../c.npy", bucket: "b", key: "a//b/../c.npy", roundTripsAsIn: true},
		{in: "s3://b/ünïcode key.npy", bucket: "b", key: "ünïcode key.npy", roundTripsAsIn: true},
		{in: "s3://", err: "no bucket"},
		{in: "s3:///k", err: "no bucket"},
		{in: "s3://a b/k", err: "not allowed"},
		{in: "s3://b:9000/k", err: "not allowed"},
		{in: "s3://b/k\x00", err: "NUL"},
		{in: "s3://b/" + strings.Repeat("k", 1025), err: "at most 1024"},
		{in: "/tmp/x.npy", err: "not an s3:// URL"},
	} {
		u, err := ParseURL(c.in)
		if c.err != "" {
			if err == nil || !strings.Contains(err.Error(), c.err) {
				t.Errorf("ParseURL(%q) = %+v, %v; want an error with %q", c.in, u, err, c.err)
			}
			continue
		}
		if err != nil || u.Bucket != c.bucket || u.Key != c.key || u.IsPrefix() != c.prefix {
			t.Errorf("ParseURL(%q) = %+v (prefix %v), %v; want %s %q prefix %v", c.in, u, u.IsPrefix(), err, c.bucket, c.key, c.prefix)
		}
		if c.roundTripsAsIn && u.String() != c.in {
			t.Errorf("ParseURL(%q).String() = %q", c.in, u.String())
		}
	}
	if !IsURL("s3://b/k") || !IsURL("S3://b") || IsURL("s3:/b/k") || IsURL("x/s3://b") || IsURL("s3:") {
		t.Error("IsURL")
	}
}

func TestJoin(t *testing.T) {
	for _, c := range [][3]string{
		{"s3://b/out/", "d0/x.npy", "s3://b/out/d0/x.npy"},
		{"s3://b/out", "x.npy", "s3://b/out/x.npy"},
		{"s3://b", "x.npy", "s3://b/x.npy"},
		{"s3://b/", "a/x.npy", "s3://b/a/x.npy"},
	} {
		if got := Join(c[0], c[1]); got != c[2] {
			t.Errorf("Join(%q, %q) = %q, want %q", c[0], c[1], got, c[2])
		}
	}
}

func TestContentRangeSize(t *testing.T) {
	for in, want := range map[string]int64{"bytes 0-99/921728": 921728, "bytes 0-0/1": 1} {
		if got, ok := contentRangeSize(in); !ok || got != want {
			t.Errorf("contentRangeSize(%q) = %d, %v", in, got, ok)
		}
	}
	for _, in := range []string{"", "bytes 0-99/*", "0-99/100", "bytes 0-99/-1"} {
		if _, ok := contentRangeSize(in); ok {
			t.Errorf("contentRangeSize(%q) accepted", in)
		}
	}
}

func write(t *testing.T, path, text string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
}

// stsStandIn is STS on 127.0.0.1: AssumeRole and
// AssumeRoleWithWebIdentity hand out the credentials creds, after
// checking what the caller sent (a signed AssumeRole, the web identity
// token).
func stsStandIn(t *testing.T, creds aws.Credentials, caller aws.Credentials, token string) string {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		r.ParseForm()
		action := r.Form.Get("Action")
		switch {
		case action == "AssumeRole" && strings.Contains(r.Header.Get("Authorization"), "Credential="+caller.AccessKeyID+"/"):
		case action == "AssumeRoleWithWebIdentity" && r.Form.Get("WebIdentityToken") == token:
		default:
			w.WriteHeader(http.StatusForbidden)
			fmt.Fprintf(w, `<ErrorResponse><Error><Code>AccessDenied</Code><Message>%s refused</Message></Error></ErrorResponse>`, action)
			return
		}
		fmt.Fprintf(w, `<%[1]sResponse><%[1]sResult><Credentials><AccessKeyId>%s</AccessKeyId><SecretAccessKey>%s</SecretAccessKey><SessionToken>%s</SessionToken><Expiration>%s</Expiration></Credentials></%[1]sResult></%[1]sResponse>`,
			action, creds.AccessKeyID, creds.SecretAccessKey, creds.SessionToken, time.Now().Add(time.Hour).UTC().Format(time.RFC3339))
	}))
	t.Cleanup(srv.Close)
	return srv.URL
}

// The credentials of a run are the SDK chain's: each way here signs the
// fake server's requests with the keys (and session token) it should,
// which the fake checks; none at all is an error naming
// --no-sign-request, never anonymous requests.
func TestCredentialsChain(t *testing.T) {
	assumed := aws.Credentials{AccessKeyID: "ASIAASSUMED", SecretAccessKey: "assumed/secret", SessionToken: "assumed-token"}
	base := aws.Credentials{AccessKeyID: "AKIABASE", SecretAccessKey: "base/secret"}
	// run reads an object of a fake that accepts only want's signatures,
	// with the environment kv and the shared files as set up.
	run := func(t *testing.T, want aws.Credentials, setup func(home string)) error {
		t.Helper()
		f := newFake(t)
		f.creds = want
		f.objects["bkt/k"] = []byte("signed")
		srv := httptest.NewServer(f)
		t.Cleanup(srv.Close)
		home := isolate(t)
		t.Setenv("AWS_ENDPOINT_URL_S3", srv.URL)
		setup(home)
		s, err := New(context.Background(), Options{})
		if err != nil {
			return err
		}
		head := make([]byte, 16)
		n, _, err := s.ReadFirst(context.Background(), URL{"bkt", "k"}, head)
		if err == nil && string(head[:n]) != "signed" {
			err = fmt.Errorf("read %q", head[:n])
		}
		return err
	}
	ok := func(name string, want aws.Credentials, setup func(home string)) {
		t.Run(name, func(t *testing.T) {
			if err := run(t, want, setup); err != nil {
				t.Error(err)
			}
		})
	}
	ok("environment", base, func(string) {
		t.Setenv("AWS_ACCESS_KEY_ID", base.AccessKeyID)
		t.Setenv("AWS_SECRET_ACCESS_KEY", base.SecretAccessKey)
	})
	ok("default profile of the credentials file", base, func(home string) {
		write(t, filepath.Join(home, ".aws", "credentials"), "[default]\naws_access_key_id = AKIABASE\naws_secret_access_key = base/secret\n")
	})
	ok("AWS_PROFILE with a session token in the config file", assumed, func(home string) {
		write(t, filepath.Join(home, ".aws", "config"), "[profile lab]\naws_access_key_id = ASIAASSUMED\naws_secret_access_key = assumed/secret\naws_session_token = assumed-token\n")
		t.Setenv("AWS_PROFILE", "lab")
	})
	// A default profile that assumes a role was read as one without
	// keys, and its requests sent anonymously (found in review).
	ok("default profile with role_arn and source_profile", assumed, func(home string) {
		write(t, filepath.Join(home, ".aws", "config"), "[default]\nrole_arn = arn:aws:iam::123456789012:role/r\nsource_profile = base\nregion = us-east-1\n[profile base]\naws_access_key_id = AKIABASE\naws_secret_access_key = base/secret\n")
		t.Setenv("AWS_ENDPOINT_URL_STS", stsStandIn(t, assumed, base, ""))
	})
	ok("web identity", assumed, func(home string) {
		token := filepath.Join(home, "token")
		write(t, token, "the-jwt")
		t.Setenv("AWS_WEB_IDENTITY_TOKEN_FILE", token)
		t.Setenv("AWS_ROLE_ARN", "arn:aws:iam::123456789012:role/pod")
		t.Setenv("AWS_ENDPOINT_URL_STS", stsStandIn(t, assumed, aws.Credentials{}, "the-jwt"))
	})
	ok("container endpoint", assumed, func(home string) {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.Header.Get("Authorization") != "pod-secret" {
				w.WriteHeader(http.StatusUnauthorized)
				return
			}
			fmt.Fprintf(w, `{"AccessKeyId":%q,"SecretAccessKey":%q,"Token":%q,"Expiration":%q}`,
				assumed.AccessKeyID, assumed.SecretAccessKey, assumed.SessionToken, time.Now().Add(time.Hour).UTC().Format(time.RFC3339))
		}))
		t.Cleanup(srv.Close)
		t.Setenv("AWS_CONTAINER_CREDENTIALS_FULL_URI", srv.URL+"/v2/credentials")
		t.Setenv("AWS_CONTAINER_AUTHORIZATION_TOKEN", "pod-secret")
	})
	t.Run("none anywhere", func(t *testing.T) {
		err := run(t, base, func(string) {})
		if err == nil || !strings.Contains(err.Error(), "no AWS credentials") || !strings.Contains(err.Error(), "--no-sign-request") || strings.Contains(err.Error(), "\n") {
			t.Errorf("got %v, want one line naming --no-sign-request", err)
		}
	})
	t.Run("AWS_PROFILE naming no profile", func(t *testing.T) {
		err := run(t, base, func(string) { t.Setenv("AWS_PROFILE", "missing") })
		if err == nil || !strings.Contains(err.Error(), "missing") {
			t.Errorf("got %v, want an error naming the profile", err)
		}
	})
}

// A [services] block sets the endpoint of the service it names: one
// for dynamodb does not move S3 (it did: found in review), one for s3
// does, and that server is then addressed path-style.
func TestServicesBlock(t *testing.T) {
	f := newFake(t)
	f.objects["bkt/k"] = []byte("here")
	srv := httptest.NewServer(f)
	t.Cleanup(srv.Close)
	for _, c := range []struct {
		name, block, want string
	}{
		{"dynamodb", "dynamodb =\n  endpoint_url = " + srv.URL + "\n", "https://bkt.s3.us-east-1.amazonaws.com/k"},
		{"s3", "dynamodb =\n  endpoint_url = http://127.0.0.1:1\ns3 =\n  endpoint_url = " + srv.URL + "\n", srv.URL + "/bkt/k"},
	} {
		t.Run(c.name, func(t *testing.T) {
			home := isolate(t)
			t.Setenv("AWS_ACCESS_KEY_ID", f.creds.AccessKeyID)
			t.Setenv("AWS_SECRET_ACCESS_KEY", f.creds.SecretAccessKey)
			write(t, filepath.Join(home, ".aws", "config"), "[default]\nregion = us-east-1\nservices = svc\n[services svc]\n"+c.block)
			var seen []string
			s, err := New(context.Background(), Options{HTTPClient: roundTrip(func(r *http.Request) (*http.Response, error) {
				seen = append(seen, r.URL.String())
				if r.URL.Host != strings.TrimPrefix(srv.URL, "http://") {
					return &http.Response{StatusCode: 200, Header: http.Header{"Content-Length": {"4"}}, ContentLength: 4,
						Body: io.NopCloser(strings.NewReader("")), Request: r}, nil
				}
				return http.DefaultTransport.RoundTrip(r)
			})})
			if err != nil {
				t.Fatal(err)
			}
			if _, err := s.Stat(context.Background(), URL{"bkt", "k"}); err != nil {
				t.Fatal(err)
			}
			if len(seen) != 1 || seen[0] != c.want {
				t.Errorf("requests %q, want %q", seen, c.want)
			}
		})
	}
}
