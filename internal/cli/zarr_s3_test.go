package cli

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"io/fs"
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/rogpeppe/go-internal/testscript"
)

// TestZarrS3Scripts runs testdata/scripts/s3/*.txtar against a real S3
// server: versitygw (its posix backend over a temporary directory, on
// 127.0.0.1), as scripts/s3-e2e.sh starts it. Each script has its own
// bucket ($BUCKET, whose objects are the files under $GW) and its own
// proxy in front of the server ($AWS_ENDPOINT_URL), which logs the
// requests (s3log), can hold each PUT (s3slow) and refuse some (s3fail).
// Without versitygw the test is skipped, except under CI, where its
// absence is a failure: .ci/run installs it (scripts/s3-e2e.sh).
func TestZarrS3Scripts(t *testing.T) {
	vgw := versitygw()
	if vgw == "" {
		if os.Getenv("CI") != "" {
			t.Fatal("versitygw is not installed (go install github.com/versity/versitygw/cmd/versitygw@v1.8.0): the s3:// Zarr scripts need it")
		}
		t.Skip("versitygw is not installed")
	}
	root := t.TempDir()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	const key, secret = "zarrkey", "zarrsecret"
	cmd := exec.Command(vgw, "--port", addr, "posix", root)
	cmd.Env = append(os.Environ(), "ROOT_ACCESS_KEY_ID="+key, "ROOT_SECRET_ACCESS_KEY="+secret)
	var log strings.Builder
	cmd.Stdout, cmd.Stderr = &log, &log
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cmd.Process.Kill()
		cmd.Wait()
	})
	up := false
	for range 200 {
		if c, err := net.Dial("tcp", addr); err == nil {
			c.Close()
			up = true
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	if !up {
		t.Fatalf("versitygw did not start on %s: %s", addr, log.String())
	}
	endpoint := "http://" + addr
	client := s3.New(s3.Options{Region: "us-east-1", BaseEndpoint: aws.String(endpoint), UsePathStyle: true,
		Credentials: aws.CredentialsProviderFunc(func(context.Context) (aws.Credentials, error) {
			return aws.Credentials{AccessKeyID: key, SecretAccessKey: secret}, nil
		})})
	target, _ := url.Parse(endpoint)
	var buckets atomic.Int32
	testscript.Run(t, testscript.Params{
		Dir:                 filepath.Join("..", "..", "testdata", "scripts", "s3"),
		RequireExplicitExec: true,
		Cmds: map[string]func(ts *testscript.TestScript, neg bool, args []string){
			"exitcode":  cmdExitcode,
			"cmpjson":   cmdCmpJSON,
			"mkst":      cmdMkSafetensors,
			"truncate":  cmdTruncate,
			"s3log":     cmdS3Log,
			"s3slow":    cmdS3Slow,
			"s3fail":    cmdS3Fail,
			"s3waitput": cmdS3WaitPut,
			"gwfiles":   cmdGWFiles,
		},
		Setup: func(env *testscript.Env) error {
			bucket := fmt.Sprintf("zarr%d", buckets.Add(1))
			if _, err := client.CreateBucket(context.Background(), &s3.CreateBucketInput{Bucket: &bucket}); err != nil {
				return fmt.Errorf("making bucket %s: %v", bucket, err)
			}
			p := &s3Proxy{rp: httputil.NewSingleHostReverseProxy(target)}
			srv := httptest.NewServer(p)
			env.Defer(srv.Close)
			env.Values["proxy"] = p
			for k, v := range map[string]string{
				"AWS_ACCESS_KEY_ID": key, "AWS_SECRET_ACCESS_KEY": secret, "AWS_ENDPOINT_URL": srv.URL,
				"AWS_REGION": "us-east-1", "AWS_CONFIG_FILE": filepath.Join(env.WorkDir, "no-aws-config"),
				"AWS_SHARED_CREDENTIALS_FILE": filepath.Join(env.WorkDir, "no-aws-credentials"),
				"BUCKET":                      bucket, "GW": filepath.Join(root, bucket), "GORACE": "atexit_sleep_ms=0",
			} {
				env.Setenv(k, v)
			}
			return nil
		},
	})
}

// versitygw is the server's program: in the Go bin directory, where
// scripts/s3-e2e.sh installs it, or on PATH; "" when missing.
func versitygw() string {
	if out, err := exec.Command("go", "env", "GOBIN", "GOPATH").Output(); err == nil {
		gobin, gopath, _ := strings.Cut(strings.TrimSpace(string(out)), "\n")
		if gobin == "" {
			gobin = filepath.Join(strings.TrimSpace(gopath), "bin")
		}
		p := filepath.Join(gobin, "versitygw")
		if fi, err := os.Stat(p); err == nil && fi.Mode().IsRegular() {
			return p
		}
	}
	p, _ := exec.LookPath("versitygw")
	return p
}

// s3Proxy passes requests to the server unchanged (the signature covers
// the Host header, which is kept) and logs them: method, key below the
// bucket, and the Range asked.
type s3Proxy struct {
	rp   *httputil.ReverseProxy
	mu   sync.Mutex
	log  []string
	slow time.Duration // each PUT held this long before it is passed on, or dropped if its client hangs up
	fail string        // a PUT whose key holds this is refused (403)
}

func (p *s3Proxy) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	_, key, _ := strings.Cut(strings.TrimPrefix(r.URL.Path, "/"), "/")
	line := r.Method + " " + key
	if rg := r.Header.Get("Range"); rg != "" {
		line += " " + rg
	}
	if r.URL.Query().Has("list-type") {
		line += " list prefix=" + r.URL.Query().Get("prefix") + " delimiter=" + r.URL.Query().Get("delimiter")
	}
	p.mu.Lock()
	p.log = append(p.log, line)
	slow, fail := p.slow, p.fail
	p.mu.Unlock()
	if r.Method == http.MethodPut {
		if fail != "" && strings.Contains(key, fail) {
			w.Header().Set("Content-Type", "application/xml")
			w.WriteHeader(http.StatusForbidden)
			fmt.Fprint(w, `<?xml version="1.0" encoding="UTF-8"?><Error><Code>AccessDenied</Code><Message>refused by the test</Message></Error>`)
			return
		}
		if slow > 0 {
			// The hold is the body still on its way: a client that hangs
			// up meanwhile (a run interrupted) has sent no object. The
			// body read first, the server notices the hang-up.
			body, err := io.ReadAll(r.Body)
			if err != nil {
				return
			}
			r.Body = io.NopCloser(bytes.NewReader(body))
			select {
			case <-time.After(slow):
			case <-r.Context().Done():
				return
			}
		}
	}
	p.rp.ServeHTTP(w, r)
}

// s3log prints the requests logged since the last s3log, sorted (they
// are sent concurrently), and forgets them; "s3log reset" only forgets.
func cmdS3Log(ts *testscript.TestScript, neg bool, args []string) {
	p := ts.Value("proxy").(*s3Proxy)
	p.mu.Lock()
	lines := slices.Sorted(slices.Values(p.log))
	p.log = nil
	p.mu.Unlock()
	if len(args) == 1 && args[0] == "reset" {
		return
	}
	if len(lines) > 0 {
		ts.Stdout().Write([]byte(strings.Join(lines, "\n") + "\n"))
	}
}

// s3slow MS holds each PUT MS milliseconds.
func cmdS3Slow(ts *testscript.TestScript, neg bool, args []string) {
	ms, err := strconv.Atoi(args[0])
	ts.Check(err)
	p := ts.Value("proxy").(*s3Proxy)
	p.mu.Lock()
	p.slow = time.Duration(ms) * time.Millisecond
	p.mu.Unlock()
}

// s3fail TEXT refuses every PUT whose key holds TEXT (AccessDenied).
func cmdS3Fail(ts *testscript.TestScript, neg bool, args []string) {
	p := ts.Value("proxy").(*s3Proxy)
	p.mu.Lock()
	p.fail = args[0]
	p.mu.Unlock()
}

// s3waitput N waits until the proxy has seen N PUTs since the last
// s3log: the write is under way (PUTs held by s3slow have not reached the
// server yet).
func cmdS3WaitPut(ts *testscript.TestScript, neg bool, args []string) {
	n, err := strconv.Atoi(args[0])
	ts.Check(err)
	p := ts.Value("proxy").(*s3Proxy)
	for range 600 {
		p.mu.Lock()
		puts := 0
		for _, l := range p.log {
			if strings.HasPrefix(l, "PUT ") {
				puts++
			}
		}
		p.mu.Unlock()
		if puts >= n {
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
	ts.Fatalf("no %d PUTs came in 30 s", n)
}

// gwfiles DIR prints the regular files under DIR (the objects of a
// prefix, on versitygw's posix backend), sorted, relative to DIR.
func cmdGWFiles(ts *testscript.TestScript, neg bool, args []string) {
	root := ts.MkAbs(args[0])
	var names []string
	filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err == nil && d.Type().IsRegular() {
			rel, _ := filepath.Rel(root, p)
			names = append(names, filepath.ToSlash(rel))
		}
		return nil
	})
	slices.Sort(names)
	if len(names) > 0 {
		ts.Stdout().Write([]byte(strings.Join(names, "\n") + "\n"))
	}
}
