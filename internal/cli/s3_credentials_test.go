package cli

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// TestS3Credentials runs the program with s3:// built in (this test
// binary, under the name depthspace: TestMain runs it as the program) on
// an object of a stand-in S3 endpoint that answers only requests signed
// (SigV4, recomputed here) with the temporary credentials a stand-in
// credential service handed out and carrying their session token: the
// instance metadata service (IMDSv2), STS's AssumeRoleWithWebIdentity and
// AssumeRole, and the container credential endpoint, each as the AWS
// SDKs find it. Every endpoint is on 127.0.0.1; HOME, the shared files
// and AWS_* are the test's own, so no run can reach AWS.
func TestS3Credentials(t *testing.T) {
	bin := programWithS3(t)
	obj := filepath.Join(t.TempDir(), "x.npy")
	denseTensor(t, obj)
	npy, err := os.ReadFile(obj)
	if err != nil {
		t.Fatal(err)
	}

	// info succeeds, every request the S3 stand-in saw was signed with
	// the key the credential service (nil: none) handed out and carried
	// its token.
	infoSucceeds := func(t *testing.T, s3 *standInS3, service *standIn, env []string) {
		t.Helper()
		defer func() {
			if service != nil && service.served() == 0 {
				t.Errorf("%s handed out no credentials", service.name)
			}
		}()
		code, stdout, stderr := runProgram(t, bin, env, "info", "s3://b/x.npy")
		good, bad := s3.counts()
		if code != 0 || !strings.Contains(stdout, "float32") {
			t.Errorf("info s3://b/x.npy: exit %d, stdout %q, stderr %q; want exit 0 and the object's header", code, stdout, stderr)
		}
		if good == 0 || len(bad) > 0 {
			t.Errorf("the S3 endpoint had %d requests signed with %s and its session token, and %d others: %q", good, s3.want.AccessKeyID, len(bad), bad)
		}
	}

	t.Run("StaticKeys", func(t *testing.T) {
		// The verifier's own check: keys in the environment, signed by
		// the program's client, are accepted; a wrong secret is not.
		creds := newTempCreds("ASIASTATIC")
		s3 := newStandInS3(t, creds, npy)
		env := isolatedEnv(t, s3.URL, "AWS_ACCESS_KEY_ID="+creds.AccessKeyID, "AWS_SECRET_ACCESS_KEY="+creds.SecretAccessKey, "AWS_SESSION_TOKEN="+creds.Token)
		infoSucceeds(t, s3, nil, env)

		s3 = newStandInS3(t, creds, npy)
		env = isolatedEnv(t, s3.URL, "AWS_ACCESS_KEY_ID="+creds.AccessKeyID, "AWS_SECRET_ACCESS_KEY=wrong", "AWS_SESSION_TOKEN="+creds.Token)
		code, _, stderr := runProgram(t, bin, env, "info", "s3://b/x.npy")
		good, bad := s3.counts()
		if code != 2 || good != 0 || len(bad) == 0 || !strings.Contains(strings.Join(bad, " "), "signature") {
			t.Errorf("a wrong secret: exit %d (%q), %d requests accepted, refused: %q; want exit 2 and the signature refused", code, stderr, good, bad)
		}
	})

	t.Run("IMDS", func(t *testing.T) {
		creds := newTempCreds("ASIAIMDS")
		s3 := newStandInS3(t, creds, npy)
		imds := newStandInIMDS(t, creds)
		env := isolatedEnv(t, s3.URL, "AWS_EC2_METADATA_DISABLED=", "AWS_EC2_METADATA_SERVICE_ENDPOINT="+imds.URL)
		infoSucceeds(t, s3, imds, env)
	})

	t.Run("WebIdentity", func(t *testing.T) {
		creds := newTempCreds("ASIAWEBID")
		s3 := newStandInS3(t, creds, npy)
		tokenFile := filepath.Join(t.TempDir(), "token")
		if err := os.WriteFile(tokenFile, []byte("eyJhbGciOiJSUzI1NiJ9.service-account-token.sig"), 0o600); err != nil {
			t.Fatal(err)
		}
		sts := newStandInSTS(t, creds, stsExpects{
			action: "AssumeRoleWithWebIdentity", roleARN: "arn:aws:iam::123456789012:role/depthspace-irsa",
			webIdentityToken: "eyJhbGciOiJSUzI1NiJ9.service-account-token.sig",
		})
		env := isolatedEnv(t, s3.URL, "AWS_WEB_IDENTITY_TOKEN_FILE="+tokenFile,
			"AWS_ROLE_ARN=arn:aws:iam::123456789012:role/depthspace-irsa", "AWS_ENDPOINT_URL_STS="+sts.URL)
		infoSucceeds(t, s3, sts, env)
	})

	// A role_arn profile whose source_profile holds long-term keys: the
	// keys sign STS's AssumeRole, whose answer signs S3's requests. As
	// the profile AWS_PROFILE names, and as the default profile.
	for _, profile := range []string{"reader", "default"} {
		t.Run("AssumeRoleProfile/"+profile, func(t *testing.T) {
			creds := newTempCreds("ASIAROLE")
			base := newTempCreds("AKIABASE")
			s3 := newStandInS3(t, creds, npy)
			sts := newStandInSTS(t, creds, stsExpects{
				action: "AssumeRole", roleARN: "arn:aws:iam::123456789012:role/depthspace-reader", signedBy: &base,
			})
			section := "[profile reader]"
			if profile == "default" {
				section = "[default]"
			}
			config := writeFile(t, "config", section+"\nrole_arn = arn:aws:iam::123456789012:role/depthspace-reader\nsource_profile = base\n\n[profile base]\nregion = us-east-1\n")
			credentials := writeFile(t, "credentials", "[base]\naws_access_key_id = "+base.AccessKeyID+"\naws_secret_access_key = "+base.SecretAccessKey+"\n")
			env := isolatedEnv(t, s3.URL, "AWS_CONFIG_FILE="+config, "AWS_SHARED_CREDENTIALS_FILE="+credentials, "AWS_ENDPOINT_URL_STS="+sts.URL)
			if profile != "default" {
				env = append(env, "AWS_PROFILE="+profile)
			}
			infoSucceeds(t, s3, sts, env)
		})
	}

	t.Run("Container", func(t *testing.T) {
		creds := newTempCreds("ASIAECS")
		s3 := newStandInS3(t, creds, npy)
		ecs := newStandInContainer(t, creds, "Bearer-eks-pod-identity-token")
		env := isolatedEnv(t, s3.URL, "AWS_CONTAINER_CREDENTIALS_FULL_URI="+ecs.URL+"/v1/credentials",
			"AWS_CONTAINER_AUTHORIZATION_TOKEN=Bearer-eks-pod-identity-token")
		infoSucceeds(t, s3, ecs, env)
	})

	t.Run("None", func(t *testing.T) {
		// No credentials anywhere: an error naming the URL, and no
		// request sent unsigned (anonymous access is --no-sign-request's).
		s3 := newStandInS3(t, newTempCreds("ASIANONE"), npy)
		env := isolatedEnv(t, s3.URL)
		code, _, stderr := runProgram(t, bin, env, "info", "s3://b/x.npy")
		if code != 2 || strings.Count(stderr, "\n") != 1 || !strings.HasPrefix(stderr, "depthspace: s3://b/x.npy: ") {
			t.Errorf("exit %d, stderr %q: want 2 and one line naming the URL", code, stderr)
		}
		if _, bad := s3.counts(); len(bad) > 0 {
			t.Errorf("requests reached S3 without credentials: %q", bad)
		}
	})
}

// programWithS3 is this test binary under the name depthspace, which
// TestMain (testscript.Main) runs as the program: s3:// built in, as
// depthspace-s3 has it.
func programWithS3(t *testing.T) string {
	t.Helper()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(t.TempDir(), "depthspace")
	if err := os.Symlink(self, bin); err != nil {
		t.Fatal(err)
	}
	return bin
}

// isolatedEnv is an environment in which the AWS configuration is only
// what the test gives (runProgram drops the test's own AWS_*): HOME and
// the shared files are empty places, the instance metadata service is
// off unless a test points it at its stand-in, S3 is at s3URL, and extra
// comes last (a later NAME= wins).
func isolatedEnv(t *testing.T, s3URL string, extra ...string) []string {
	home := t.TempDir()
	env := []string{
		"HOME=" + home, "USERPROFILE=" + home,
		"AWS_CONFIG_FILE=" + filepath.Join(home, "no-config"),
		"AWS_SHARED_CREDENTIALS_FILE=" + filepath.Join(home, "no-credentials"),
		"AWS_EC2_METADATA_DISABLED=true",
		"AWS_REGION=us-east-1",
		"AWS_ENDPOINT_URL_S3=" + s3URL,
		"GORACE=atexit_sleep_ms=0", // under -race each exit would wait 1 s
	}
	return append(env, extra...)
}

func writeFile(t *testing.T, name, text string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// tempCreds are temporary credentials as AWS hands them out.
type tempCreds struct {
	AccessKeyID, SecretAccessKey, Token string
	Expiration                          time.Time
}

// newTempCreds makes credentials no other test has: an access key ID
// with this prefix, a secret and a session token.
func newTempCreds(prefix string) tempCreds {
	r := func(n int) string {
		b := make([]byte, n)
		rand.Read(b)
		return hex.EncodeToString(b)
	}
	return tempCreds{
		AccessKeyID:     strings.ToUpper(prefix + r(10))[:20],
		SecretAccessKey: r(20),
		Token:           "IQoJb3JpZ2luX2VjE" + r(32),
		Expiration:      time.Now().Add(time.Hour).UTC().Truncate(time.Second),
	}
}

// standIn is a stand-in credential service and the count of the
// credentials it handed out.
type standIn struct {
	*httptest.Server
	name      string
	handedOut *counter
}

func (s *standIn) served() int { return s.handedOut.get() }

type counter struct {
	mu sync.Mutex
	n  int
}

func (c *counter) add() {
	c.mu.Lock()
	c.n++
	c.mu.Unlock()
}

func (c *counter) get() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.n
}

// standInS3 serves one object, /b/x.npy (path-style: GET, ranged GET,
// HEAD), to requests signed with want's keys and carrying its session
// token; it refuses every other request as S3 does (403 and an error
// document) and keeps why.
type standInS3 struct {
	*httptest.Server
	want tempCreds
	obj  []byte
	mu   sync.Mutex
	good int
	bad  []string
}

func newStandInS3(t *testing.T, want tempCreds, obj []byte) *standInS3 {
	s := &standInS3{want: want, obj: obj}
	s.Server = httptest.NewServer(s)
	t.Cleanup(s.Close)
	return s
}

func (s *standInS3) counts() (good int, bad []string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.good, append([]string(nil), s.bad...)
}

func (s *standInS3) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	refuse := func(code, why string) {
		s.mu.Lock()
		s.bad = append(s.bad, r.Method+" "+r.URL.RequestURI()+": "+why)
		s.mu.Unlock()
		w.Header().Set("Content-Type", "application/xml")
		w.WriteHeader(http.StatusForbidden)
		fmt.Fprintf(w, `<?xml version="1.0" encoding="UTF-8"?><Error><Code>%s</Code><Message>%s</Message></Error>`, code, why)
	}
	key, err := verifySigV4(r, body, "s3", func(id string) (string, bool) {
		return s.want.SecretAccessKey, id == s.want.AccessKeyID
	})
	switch {
	case r.Header.Get("Authorization") == "" && r.URL.Query().Get("X-Amz-Signature") == "":
		refuse("AccessDenied", "unsigned (anonymous) request")
		return
	case err != nil:
		refuse("SignatureDoesNotMatch", err.Error())
		return
	case r.Header.Get("X-Amz-Security-Token") != s.want.Token:
		refuse("InvalidToken", fmt.Sprintf("signed with %s but the session token is %q", key, r.Header.Get("X-Amz-Security-Token")))
		return
	}
	s.mu.Lock()
	s.good++
	s.mu.Unlock()
	if r.URL.Path != "/b/x.npy" || (r.Method != http.MethodGet && r.Method != http.MethodHead) {
		w.Header().Set("Content-Type", "application/xml")
		w.WriteHeader(http.StatusNotFound)
		io.WriteString(w, `<?xml version="1.0" encoding="UTF-8"?><Error><Code>NoSuchKey</Code><Message>The specified key does not exist.</Message></Error>`)
		return
	}
	h := w.Header()
	h.Set("ETag", `"0123456789abcdef0123456789abcdef"`)
	h.Set("Last-Modified", "Fri, 27 Nov 2026 10:00:00 GMT")
	h.Set("Content-Type", "application/octet-stream")
	h.Set("Accept-Ranges", "bytes")
	from, to, err := parseRange(r.Header.Get("Range"))
	if err != nil || r.Method == http.MethodHead {
		h.Set("Content-Length", strconv.Itoa(len(s.obj)))
		if r.Method != http.MethodHead {
			w.Write(s.obj)
		}
		return
	}
	to = min(to, len(s.obj)-1)
	h.Set("Content-Range", fmt.Sprintf("bytes %d-%d/%d", from, to, len(s.obj)))
	h.Set("Content-Length", strconv.Itoa(to-from+1))
	w.WriteHeader(http.StatusPartialContent)
	w.Write(s.obj[from : to+1])
}

// newStandInIMDS is the instance metadata service of an instance with
// the role depthspace-role, IMDSv2 only (as instances launched with
// HttpTokens=required): a session token from PUT /latest/api/token,
// then the role's name and its credentials, each GET carrying the token.
func newStandInIMDS(t *testing.T, creds tempCreds) *standIn {
	const role = "depthspace-role"
	session := "AQAEA" + newTempCreds("IMDS").Token
	n := &counter{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPut && r.URL.Path == "/latest/api/token" {
			ttl := r.Header.Get("X-Aws-Ec2-Metadata-Token-Ttl-Seconds")
			if v, err := strconv.Atoi(ttl); err != nil || v < 1 || v > 21600 {
				http.Error(w, "", http.StatusBadRequest)
				return
			}
			w.Header().Set("X-Aws-Ec2-Metadata-Token-Ttl-Seconds", ttl)
			io.WriteString(w, session)
			return
		}
		if r.Method != http.MethodGet || r.Header.Get("X-Aws-Ec2-Metadata-Token") != session {
			w.WriteHeader(http.StatusUnauthorized)
			return
		}
		switch r.URL.Path {
		case "/latest/meta-data/iam/security-credentials/", "/latest/meta-data/iam/security-credentials":
			io.WriteString(w, role)
		case "/latest/meta-data/iam/security-credentials/" + role:
			n.add()
			w.Header().Set("Content-Type", "text/plain")
			json.NewEncoder(w).Encode(map[string]string{
				"Code": "Success", "LastUpdated": time.Now().UTC().Format(time.RFC3339), "Type": "AWS-HMAC",
				"AccessKeyId": creds.AccessKeyID, "SecretAccessKey": creds.SecretAccessKey, "Token": creds.Token,
				"Expiration": creds.Expiration.Format(time.RFC3339),
			})
		default:
			http.NotFound(w, r)
		}
	}))
	t.Cleanup(srv.Close)
	return &standIn{srv, "the instance metadata service", n}
}

// stsExpects is the one call a stand-in STS answers.
type stsExpects struct {
	action           string     // AssumeRoleWithWebIdentity or AssumeRole
	roleARN          string     // RoleArn
	webIdentityToken string     // WebIdentityToken (AssumeRoleWithWebIdentity, sent unsigned)
	signedBy         *tempCreds // the keys AssumeRole must be signed with
}

// newStandInSTS answers want's call (the query protocol: a form POST,
// an XML answer) with creds; anything else gets STS's error document.
func newStandInSTS(t *testing.T, creds tempCreds, want stsExpects) *standIn {
	n := &counter{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		form, err := url.ParseQuery(string(body))
		fail := func(code, why string) {
			w.Header().Set("Content-Type", "text/xml")
			w.WriteHeader(http.StatusBadRequest)
			fmt.Fprintf(w, `<ErrorResponse xmlns="https://sts.amazonaws.com/doc/2011-06-15/"><Error><Type>Sender</Type><Code>%s</Code><Message>%s</Message></Error><RequestId>c6104cbe-af31-11e0-8154-cbc7ccf896c7</RequestId></ErrorResponse>`, code, why)
		}
		switch {
		case r.Method != http.MethodPost || err != nil:
			fail("InvalidAction", "want a form POST")
			return
		case form.Get("Action") != want.action || form.Get("Version") != "2011-06-15":
			fail("InvalidAction", "want Action="+want.action+" Version=2011-06-15, got "+string(body))
			return
		case form.Get("RoleArn") != want.roleARN:
			fail("AccessDenied", "RoleArn "+form.Get("RoleArn"))
			return
		case want.action == "AssumeRoleWithWebIdentity" && form.Get("WebIdentityToken") != want.webIdentityToken:
			fail("InvalidIdentityToken", "not the token of the token file")
			return
		case form.Get("RoleSessionName") == "":
			fail("ValidationError", "RoleSessionName missing")
			return
		}
		if want.signedBy != nil {
			if _, err := verifySigV4(r, body, "sts", func(id string) (string, bool) {
				return want.signedBy.SecretAccessKey, id == want.signedBy.AccessKeyID
			}); err != nil {
				fail("SignatureDoesNotMatch", err.Error())
				return
			}
		}
		n.add()
		w.Header().Set("Content-Type", "text/xml")
		extra := ""
		if want.action == "AssumeRoleWithWebIdentity" {
			extra = "<SubjectFromWebIdentityToken>system:serviceaccount:data:depthspace</SubjectFromWebIdentityToken><Audience>sts.amazonaws.com</Audience><Provider>oidc.eks.us-east-1.amazonaws.com/id/EXAMPLE</Provider>"
		}
		fmt.Fprintf(w, `<%[1]sResponse xmlns="https://sts.amazonaws.com/doc/2011-06-15/">
  <%[1]sResult>%[2]s
    <AssumedRoleUser>
      <Arn>arn:aws:sts::123456789012:assumed-role/role/%[3]s</Arn>
      <AssumedRoleId>AROA3XFRBF535PLBIFPI4:%[3]s</AssumedRoleId>
    </AssumedRoleUser>
    <Credentials>
      <AccessKeyId>%[4]s</AccessKeyId>
      <SecretAccessKey>%[5]s</SecretAccessKey>
      <SessionToken>%[6]s</SessionToken>
      <Expiration>%[7]s</Expiration>
    </Credentials>
  </%[1]sResult>
  <ResponseMetadata>
    <RequestId>c6104cbe-af31-11e0-8154-cbc7ccf896c7</RequestId>
  </ResponseMetadata>
</%[1]sResponse>`, want.action, extra, form.Get("RoleSessionName"), creds.AccessKeyID, creds.SecretAccessKey, creds.Token, creds.Expiration.Format(time.RFC3339))
	}))
	t.Cleanup(srv.Close)
	return &standIn{srv, "STS", n}
}

// newStandInContainer is the ECS / EKS Pod Identity credential endpoint:
// a GET carrying the authorization token in Authorization, credentials
// in JSON.
func newStandInContainer(t *testing.T, creds tempCreds, token string) *standIn {
	n := &counter{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		if r.Method != http.MethodGet || r.URL.Path != "/v1/credentials" {
			w.WriteHeader(http.StatusNotFound)
			io.WriteString(w, `{"code":"NotFound","message":"no such path"}`)
			return
		}
		if r.Header.Get("Authorization") != token {
			w.WriteHeader(http.StatusUnauthorized)
			io.WriteString(w, `{"code":"AccessDenied","message":"the authorization token is not the pod's"}`)
			return
		}
		n.add()
		json.NewEncoder(w).Encode(map[string]string{
			"AccessKeyId": creds.AccessKeyID, "SecretAccessKey": creds.SecretAccessKey, "Token": creds.Token,
			"AccountId": "123456789012", "Expiration": creds.Expiration.Format(time.RFC3339),
		})
	}))
	t.Cleanup(srv.Close)
	return &standIn{srv, "the container endpoint", n}
}

// verifySigV4 checks r's Signature Version 4 (the Authorization header)
// by computing it again, as AWS does ("Create a signed AWS API request",
// IAM User Guide): the canonical request, the string to sign and the key
// derived from the secret that secretFor gives for the access key. Every
// x-amz-* header must be signed. It returns the access key.
func verifySigV4(r *http.Request, body []byte, service string, secretFor func(accessKey string) (string, bool)) (string, error) {
	auth, ok := strings.CutPrefix(r.Header.Get("Authorization"), "AWS4-HMAC-SHA256 ")
	if !ok {
		return "", fmt.Errorf("not a SigV4 Authorization header: %q", r.Header.Get("Authorization"))
	}
	fields := map[string]string{}
	for _, f := range strings.Split(auth, ",") {
		k, v, _ := strings.Cut(strings.TrimSpace(f), "=")
		fields[k] = v
	}
	scope := strings.Split(fields["Credential"], "/")
	if len(scope) != 5 || scope[4] != "aws4_request" {
		return "", fmt.Errorf("credential scope %q", fields["Credential"])
	}
	key, date, region, svc := scope[0], scope[1], scope[2], scope[3]
	secret, known := secretFor(key)
	if !known {
		return key, fmt.Errorf("signed with access key %s, not the one handed out", key)
	}
	amzDate := r.Header.Get("X-Amz-Date")
	if svc != service || !strings.HasPrefix(amzDate, date) || len(amzDate) != 16 {
		return key, fmt.Errorf("scope %s/%s/%s with X-Amz-Date %q: want service %s", date, region, svc, amzDate, service)
	}
	signed := strings.Split(fields["SignedHeaders"], ";")
	if !sort.StringsAreSorted(signed) || !contains(signed, "host") || !contains(signed, "x-amz-date") {
		return key, fmt.Errorf("signed headers %q", fields["SignedHeaders"])
	}
	for name := range r.Header {
		if n := strings.ToLower(name); strings.HasPrefix(n, "x-amz-") && !contains(signed, n) {
			return key, fmt.Errorf("header %s is not signed", n)
		}
	}

	payload := r.Header.Get("X-Amz-Content-Sha256")
	sum := sha256.Sum256(body)
	switch {
	case payload == "UNSIGNED-PAYLOAD":
	case payload == "":
		payload = hex.EncodeToString(sum[:])
	case payload != hex.EncodeToString(sum[:]):
		return key, fmt.Errorf("x-amz-content-sha256 %s is not the body's (%d bytes)", payload, len(body))
	}
	var headers strings.Builder
	for _, name := range signed {
		var v string
		switch name {
		case "host":
			v = r.Host
		case "content-length":
			v = strconv.FormatInt(r.ContentLength, 10)
		default:
			vs := r.Header.Values(name)
			for i := range vs {
				vs[i] = strings.Join(strings.Fields(vs[i]), " ")
			}
			v = strings.Join(vs, ",")
		}
		headers.WriteString(name + ":" + v + "\n")
	}
	query, err := url.ParseQuery(r.URL.RawQuery)
	if err != nil {
		return key, err
	}
	var pairs []string
	for k, vs := range query {
		for _, v := range vs {
			pairs = append(pairs, sigV4Escape(k)+"="+sigV4Escape(v))
		}
	}
	sort.Strings(pairs)
	canonical := strings.Join([]string{r.Method, r.URL.EscapedPath(), strings.Join(pairs, "&"), headers.String(), fields["SignedHeaders"], payload}, "\n")
	creq := sha256.Sum256([]byte(canonical))
	toSign := "AWS4-HMAC-SHA256\n" + amzDate + "\n" + strings.Join(scope[1:], "/") + "\n" + hex.EncodeToString(creq[:])
	k := []byte("AWS4" + secret)
	for _, part := range []string{date, region, svc, "aws4_request", toSign} {
		m := hmac.New(sha256.New, k)
		m.Write([]byte(part))
		k = m.Sum(nil)
	}
	if !hmac.Equal([]byte(hex.EncodeToString(k)), []byte(fields["Signature"])) {
		return key, fmt.Errorf("signature mismatch for access key %s (canonical request %q)", key, canonical)
	}
	return key, nil
}

// sigV4Escape is SigV4's URI encoding: every byte but A-Z a-z 0-9 - _ . ~
// as %XX, upper case.
func sigV4Escape(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		if 'A' <= c && c <= 'Z' || 'a' <= c && c <= 'z' || '0' <= c && c <= '9' || c == '-' || c == '_' || c == '.' || c == '~' {
			b.WriteByte(c)
		} else {
			fmt.Fprintf(&b, "%%%02X", c)
		}
	}
	return b.String()
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
