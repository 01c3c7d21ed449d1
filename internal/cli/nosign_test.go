package cli

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Anonymous access is a choice, --no-sign-request (on every command that
// reads tensors, as the AWS CLI names it): without it and without credentials a run fails
// in one line naming the flag, instead of sending unsigned requests; with
// it, requests go unsigned even when credentials are set. The server
// here refuses any signed request, as a public bucket's policy need not,
// so that what was sent shows.
func TestNoSignRequest(t *testing.T) {
	local := filepath.Join(t.TempDir(), "x.npy")
	denseTensor(t, local)
	data, err := os.ReadFile(local)
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "" || r.URL.Path != "/pub/x.npy" {
			w.WriteHeader(http.StatusForbidden)
			fmt.Fprint(w, `<Error><Code>AccessDenied</Code><Message>signed or elsewhere</Message></Error>`)
			return
		}
		var first, last int
		if _, err := fmt.Sscanf(r.Header.Get("Range"), "bytes=%d-%d", &first, &last); err != nil {
			w.Header().Set("Content-Length", fmt.Sprint(len(data)))
			w.Write(data)
			return
		}
		last = min(last, len(data)-1)
		w.Header().Set("Content-Range", fmt.Sprintf("bytes %d-%d/%d", first, last, len(data)))
		w.WriteHeader(http.StatusPartialContent)
		w.Write(data[first : last+1])
	}))
	defer ts.Close()
	env := []string{"AWS_ENDPOINT_URL=" + ts.URL, "AWS_CONFIG_FILE=" + os.DevNull, "AWS_SHARED_CREDENTIALS_FILE=" + os.DevNull,
		"AWS_EC2_METADATA_DISABLED=true", "AWS_REGION=us-east-1"}
	bin := depthspaceBin(t)

	code, _, stderr := runProgram(t, bin, env, "info", "s3://pub/x.npy")
	if code != 2 || strings.Count(stderr, "\n") != 1 || !strings.HasPrefix(stderr, "depthspace: s3://pub/x.npy: no AWS credentials") || !strings.Contains(stderr, "--no-sign-request") {
		t.Errorf("no credentials, no flag: exit %d, %q; want 2 and one line naming --no-sign-request", code, stderr)
	}
	for _, e := range [][]string{env, append(env, "AWS_ACCESS_KEY_ID=AKIA", "AWS_SECRET_ACCESS_KEY=s")} {
		for _, args := range [][]string{{"info", "--no-sign-request", "s3://pub/x.npy"}, {"s2d", "-b", "2", "s3://pub/x.npy", "--no-sign-request", "-o", "-"}} {
			code, stdout, stderr := runProgram(t, bin, e, args...)
			if code != 0 || stdout == "" {
				t.Errorf("%q with %d variables: exit %d, %q", args, len(e), code, stderr)
			}
		}
	}
}
