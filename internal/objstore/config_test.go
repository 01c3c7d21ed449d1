package objstore

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
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

// env is a getenv over a map, with HOME pointing at dir.
func env(dir string, kv ...string) func(string) string {
	m := map[string]string{"HOME": dir}
	for i := 0; i+1 < len(kv); i += 2 {
		m[kv[i]] = kv[i+1]
	}
	return func(k string) string { return m[k] }
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

func TestLoadConfig(t *testing.T) {
	home := t.TempDir()
	write(t, filepath.Join(home, ".aws", "config"), `
# a comment
[default]
region = eu-west-3

[profile lab]
region=us-west-2
endpoint_url = http://10.0.0.5:9000
ca_bundle = /etc/lab-ca.pem

[profile nested]
s3 =
  endpoint_url = https://s3.nested.example
`)
	for _, c := range []struct {
		name                        string
		getenv                      func(string) string
		region, endpoint, ca, profl string
	}{
		{"default profile", env(home), "eu-west-3", "", "", "default"},
		{"AWS_REGION wins", env(home, "AWS_REGION", "ap-south-1", "AWS_DEFAULT_REGION", "sa-east-1"), "ap-south-1", "", "", "default"},
		{"AWS_DEFAULT_REGION", env(home, "AWS_DEFAULT_REGION", "sa-east-1"), "sa-east-1", "", "", "default"},
		{"AWS_PROFILE", env(home, "AWS_PROFILE", "lab"), "us-west-2", "http://10.0.0.5:9000", "/etc/lab-ca.pem", "lab"},
		{"nested s3 endpoint", env(home, "AWS_PROFILE", "nested"), "", "https://s3.nested.example", "", "nested"},
		{"AWS_ENDPOINT_URL_S3 over AWS_ENDPOINT_URL over the profile",
			env(home, "AWS_PROFILE", "lab", "AWS_ENDPOINT_URL", "http://a:1", "AWS_ENDPOINT_URL_S3", "http://s3:2"), "us-west-2", "http://s3:2", "/etc/lab-ca.pem", "lab"},
		{"AWS_ENDPOINT_URL", env(home, "AWS_ENDPOINT_URL", "http://a:1"), "eu-west-3", "http://a:1", "", "default"},
		{"AWS_CA_BUNDLE", env(home, "AWS_PROFILE", "lab", "AWS_CA_BUNDLE", "/x.pem"), "us-west-2", "http://10.0.0.5:9000", "/x.pem", "lab"},
		{"AWS_CONFIG_FILE elsewhere", env(home, "AWS_CONFIG_FILE", filepath.Join(home, "none")), "", "", "", "default"},
	} {
		cfg, err := LoadConfig(c.getenv)
		if err != nil {
			t.Errorf("%s: %v", c.name, err)
			continue
		}
		if cfg.Region != c.region || cfg.Endpoint != c.endpoint || cfg.CABundle != c.ca || cfg.Profile != c.profl {
			t.Errorf("%s: got region %q endpoint %q ca %q profile %q", c.name, cfg.Region, cfg.Endpoint, cfg.CABundle, cfg.Profile)
		}
	}
}

func TestHost(t *testing.T) {
	for _, c := range []struct {
		endpoint     string
		host         string
		secure, path bool
		err          bool
	}{
		{"", "s3.amazonaws.com", true, false, false},
		{"http://127.0.0.1:7070", "127.0.0.1:7070", false, true, false},
		{"https://minio.lab/", "minio.lab", true, true, false},
		{"127.0.0.1:7070", "", false, false, true},
		{"ftp://x", "", false, false, true},
		{"http://x/sub/path", "", false, false, true},
	} {
		cfg := &Config{Endpoint: c.endpoint}
		host, secure, path, err := cfg.Host()
		if (err != nil) != c.err || host != c.host || secure != c.secure || path != c.path {
			t.Errorf("Host(%q) = %q %v %v %v", c.endpoint, host, secure, path, err)
		}
	}
}

// TestCredentials: the environment's keys first, then the profile of the
// shared files (credentials over config), else anonymous; a profile that
// AWS_PROFILE names without credentials is an error. The program reads
// the process environment, so these set it.
func TestCredentials(t *testing.T) {
	home := t.TempDir()
	write(t, filepath.Join(home, ".aws", "credentials"), `
[default]
aws_access_key_id = AKIDEFAULT
aws_secret_access_key = secretdefault

[lab]
aws_access_key_id = AKILAB
aws_secret_access_key = secretlab
aws_session_token = tokenlab
`)
	write(t, filepath.Join(home, ".aws", "config"), `
[profile cfgonly]
aws_access_key_id = AKICONFIG
aws_secret_access_key = secretconfig
[profile empty]
region = us-east-1
`)
	for _, k := range []string{"AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "AWS_PROFILE",
		"AWS_CONFIG_FILE", "AWS_SHARED_CREDENTIALS_FILE", "AWS_ACCESS_KEY", "AWS_SECRET_KEY"} {
		t.Setenv(k, "")
	}
	t.Setenv("HOME", home)
	get := func(t *testing.T) (Creds, error) {
		t.Helper()
		cfg, err := LoadConfig(os.Getenv)
		if err != nil {
			t.Fatal(err)
		}
		return Credentials(cfg, os.Getenv)
	}
	check := func(name, id, token string, anonymous bool) {
		t.Run(name, func(t *testing.T) {
			v, err := get(t)
			if err != nil {
				t.Fatal(err)
			}
			if v.AccessKeyID != id || v.SessionToken != token || v.Anonymous() != anonymous {
				t.Errorf("got %q token %q anonymous %v", v.AccessKeyID, v.SessionToken, v.Anonymous())
			}
		})
	}
	check("default profile", "AKIDEFAULT", "", false)
	t.Setenv("AWS_PROFILE", "lab")
	check("AWS_PROFILE with a session token", "AKILAB", "tokenlab", false)
	t.Setenv("AWS_PROFILE", "cfgonly")
	check("keys in the config file", "AKICONFIG", "", false)
	t.Setenv("AWS_ACCESS_KEY_ID", "AKIENV")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "secretenv")
	t.Setenv("AWS_SESSION_TOKEN", "tokenenv")
	check("the environment over any profile", "AKIENV", "tokenenv", false)
	t.Setenv("AWS_ACCESS_KEY_ID", "")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "")
	t.Setenv("AWS_SESSION_TOKEN", "")
	t.Setenv("AWS_PROFILE", "")
	t.Setenv("AWS_SHARED_CREDENTIALS_FILE", filepath.Join(home, "elsewhere"))
	t.Setenv("AWS_CONFIG_FILE", filepath.Join(home, "elsewhere-too"))
	check("no credentials anywhere: anonymous", "", "", true)
	write(t, filepath.Join(home, "elsewhere"), "[default]\naws_access_key_id = AKIOTHER\naws_secret_access_key = s\n")
	check("AWS_SHARED_CREDENTIALS_FILE", "AKIOTHER", "", false)
	t.Setenv("AWS_CONFIG_FILE", "")
	t.Setenv("AWS_SHARED_CREDENTIALS_FILE", "")
	for _, p := range []string{"empty", "missing"} {
		t.Setenv("AWS_PROFILE", p)
		if _, err := get(t); err == nil || !strings.Contains(err.Error(), "AWS_PROFILE "+p) {
			t.Errorf("AWS_PROFILE=%s: got %v, want an error naming it", p, err)
		}
	}
}

// credential_process is split into words as the AWS CLI splits it
// (shlex): a path with spaces can be quoted (it was split on every
// space: found in review).
func TestShellSplit(t *testing.T) {
	for _, c := range []struct {
		in   string
		want []string
	}{
		{`/bin/creds --profile x`, []string{"/bin/creds", "--profile", "x"}},
		{`"/opt/my tools/creds" --profile 'a b'`, []string{"/opt/my tools/creds", "--profile", "a b"}},
		{`a\ b "c\"d" 'e\f'`, []string{"a b", `c"d`, `e\f`}},
		{`  x  `, []string{"x"}},
		{`x""y`, []string{"xy"}},
	} {
		got, err := shellSplit(c.in)
		if err != nil || strings.Join(got, "|") != strings.Join(c.want, "|") {
			t.Errorf("shellSplit(%q) = %q, %v; want %q", c.in, got, err, c.want)
		}
	}
	for _, bad := range []string{`"open`, `'open`} {
		if _, err := shellSplit(bad); err == nil {
			t.Errorf("shellSplit(%q): no error", bad)
		}
	}
}
