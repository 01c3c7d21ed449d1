package cli

import (
	"bytes"
	"go/build"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/depthspace/depthspace/internal/format"
	"github.com/depthspace/depthspace/internal/format/npy"
)

// TestBuilds builds the two programs as a user does, plain depthspace
// (cmd/depthspace) and the companion depthspace-s3 (cmd/depthspace-s3),
// both stamped with one release version, and checks what only the
// linked programs show: the linker's dead-code elimination is whole, S3
// stays out of the plain one, a plain run naming an s3:// URL is handed
// to the companion (an exec: its output, its exit status) or says what
// to install, and a companion of another version refuses the hand-over.
func TestBuilds(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the programs")
	}
	dir := t.TempDir()
	plain, companion := filepath.Join(dir, "depthspace"), filepath.Join(dir, "depthspace-s3")
	const release = "-ldflags=-X main.version=1.4.2"
	// Symbols kept: no -s. -tags= : the plain program whatever GOFLAGS
	// says (GOFLAGS=-tags=s3, for the all-in-one build, would link S3 in).
	goBuild(t, plain, "../../cmd/depthspace", "-tags=", release)
	goBuild(t, companion, "../../cmd/depthspace-s3", release)

	t.Run("Deadcode", func(t *testing.T) {
		checkDeadcode(t, plain)
		checkDeadcode(t, companion)
	})
	t.Run("NoS3InPlain", func(t *testing.T) {
		if syms := nm(t, plain); strings.Contains(syms, " net/http.") || strings.Contains(syms, "/internal/objstore.") {
			t.Error("plain depthspace links net/http or objstore: S3 belongs to depthspace-s3 alone (docs/objects.md)")
		}
	})
	t.Run("Exec", func(t *testing.T) { testCompanionExec(t, plain, companion) })
	t.Run("Missing", func(t *testing.T) {
		// Plain depthspace alone in its directory, and none on PATH.
		alone := filepath.Join(t.TempDir(), "depthspace")
		copyProgram(t, plain, alone)
		code, _, stderr := runProgram(t, alone, []string{"PATH=" + t.TempDir()}, "info", "s3://b/in.npy")
		if code != 2 || strings.Count(stderr, "\n") != 1 || !strings.HasPrefix(stderr, "depthspace: s3://b/in.npy: ") || !strings.Contains(stderr, "go install github.com/depthspace/depthspace/cmd/depthspace-s3@v1.4.2\n") {
			t.Errorf("exit %d, stderr %q: want 2 and one line naming the URL and how to install depthspace-s3 of this version", code, stderr)
		}
		// Help does not need it: asked with an s3:// argument, it is
		// shown as without one.
		for _, args := range [][]string{{"--help", "s3://b/x"}, {"s2d", "-h", "-o", "s3://b/x"}, {"help", "s3://b/x"}} {
			code, stdout, stderr := runProgram(t, alone, []string{"PATH=" + t.TempDir()}, args...)
			if code != 0 || !strings.Contains(stdout, "Usage:") || stderr != "" {
				t.Errorf("%q: exit %d, stderr %q: want the help, exit 0", args, code, stderr)
			}
		}
	})
	t.Run("NotACompanion", func(t *testing.T) {
		// A depthspace-s3 that is plain depthspace: said, not run again.
		d := t.TempDir()
		copyProgram(t, plain, filepath.Join(d, "depthspace"))
		copyProgram(t, plain, filepath.Join(d, "depthspace-s3"))
		code, _, stderr := runProgram(t, filepath.Join(d, "depthspace"), nil, "--out-dir=s3://b/o/", "s2d", "x.npy")
		if code != 2 || !strings.HasPrefix(stderr, "depthspace: s3://b/o/: ") || !strings.Contains(stderr, "has no s3:// built in") {
			t.Errorf("exit %d, stderr %q: want 2 and that depthspace-s3 lacks s3://", code, stderr)
		}
	})
	t.Run("OtherVersion", func(t *testing.T) {
		// A depthspace-s3 of another release next to depthspace: refused
		// in one line naming both versions, before any S3 request.
		d := t.TempDir()
		copyProgram(t, plain, filepath.Join(d, "depthspace"))
		goBuild(t, filepath.Join(d, "depthspace-s3"), "../../cmd/depthspace-s3", "-ldflags=-X main.version=1.5.0")
		code, stdout, stderr := runProgram(t, filepath.Join(d, "depthspace"), []string{"AWS_ENDPOINT_URL=http://127.0.0.1:1"}, "info", "s3://b/in.npy")
		want := "depthspace: s3://b/in.npy: depthspace-s3 is version 1.5.0 and depthspace is version 1.4.2: a companion serves only its own version; install the same one: go install github.com/depthspace/depthspace/cmd/depthspace-s3@v1.4.2\n"
		if code != 2 || stdout != "" || stderr != want {
			t.Errorf("exit %d, stdout %q, stderr %q\nwant 2 and %q", code, stdout, stderr, want)
		}
		// Run directly, the same program is a full one.
		code, stdout, stderr = runProgram(t, filepath.Join(d, "depthspace-s3"), nil, "--version")
		if code != 0 || stdout != "depthspace 1.5.0\n" || stderr != "" {
			t.Errorf("depthspace-s3 --version run directly: exit %d, stdout %q, stderr %q", code, stdout, stderr)
		}
	})
}

// testCompanionExec runs plain depthspace on objects of a server: s2d
// from an object to an object, and info of one.
func testCompanionExec(t *testing.T, plain, companion string) {
	srv := &tinyS3{objects: map[string][]byte{}}
	ts := httptest.NewServer(srv)
	defer ts.Close()
	local := filepath.Join(t.TempDir(), "in.npy")
	denseTensor(t, local)
	in, err := os.ReadFile(local)
	if err != nil {
		t.Fatal(err)
	}
	// Under the lock: the race detector sees no order between this
	// goroutine and the server's, which the child process's requests
	// make real.
	srv.mu.Lock()
	srv.objects["/b/in.npy"] = in
	srv.mu.Unlock()
	want := filepath.Join(t.TempDir(), "want.npy")
	var stderr bytes.Buffer
	if code := run([]string{"s2d", "-b", "2", local, "-o", want}, nil, io.Discard, &stderr); code != 0 {
		t.Fatalf("s2d in-process: %d %s", code, stderr.String())
	}
	env := []string{"AWS_ENDPOINT_URL=" + ts.URL, "AWS_ACCESS_KEY_ID=AKTEST", "AWS_SECRET_ACCESS_KEY=test",
		"AWS_CONFIG_FILE=" + os.DevNull, "AWS_SHARED_CREDENTIALS_FILE=" + os.DevNull, "AWS_REGION=us-east-1"}
	code, _, errs := runProgram(t, plain, env, "s2d", "-b", "2", "s3://b/in.npy", "-o=s3://b/out.npy")
	if code != 0 {
		t.Fatalf("s2d of an object: exit %d: %s", code, errs)
	}
	wantBytes, _ := os.ReadFile(want)
	srv.mu.Lock()
	got := srv.objects["/b/out.npy"]
	srv.mu.Unlock()
	if !bytes.Equal(got, wantBytes) {
		t.Errorf("the output object (%d bytes) is not s2d's output (%d bytes)", len(got), len(wantBytes))
	}
	code, _, errs = runProgram(t, plain, env, "info", "s3://b/none.npy")
	if code != 2 || !strings.HasPrefix(errs, "depthspace: s3://b/none.npy: ") {
		t.Errorf("info of a missing object: exit %d, %q: want 2 and the companion's error", code, errs)
	}
	// The companion run directly is a full program: S3 and local files.
	code, out, errs := runProgram(t, companion, env, "info", "s3://b/in.npy")
	if code != 0 || !strings.Contains(out, "shape          1,2,4,4") {
		t.Errorf("depthspace-s3 info of an object, run directly: exit %d, stdout %q, stderr %q", code, out, errs)
	}
}

// denseTensor writes a float32 npy of shape [1, 2, 4, 4].
func denseTensor(t *testing.T, path string) {
	t.Helper()
	dt, err := format.ParseDescr("<f4")
	if err != nil {
		t.Fatal(err)
	}
	h := format.Header{DType: dt, Shape: []int{1, 2, 4, 4}}
	data := make([]byte, h.DataBytes())
	for i := range data {
		data[i] = byte(i * 7)
	}
	if err := os.WriteFile(path, append(npy.EncodeNpy(h), data...), 0o644); err != nil {
		t.Fatal(err)
	}
}

// tinyS3 serves what a small s2d between objects asks (ranged GET,
// HEAD, PUT), path-style, signatures not checked: the client itself is
// tested against internal/objstore's fake server.
type tinyS3 struct {
	mu      sync.Mutex
	objects map[string][]byte // "/bucket/key"
}

func (s *tinyS3) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if r.Method == http.MethodPut {
		b, err := io.ReadAll(r.Body)
		if err != nil {
			w.WriteHeader(http.StatusBadRequest)
			return
		}
		s.objects[r.URL.Path] = b
		return
	}
	b, ok := s.objects[r.URL.Path]
	if !ok {
		w.Header().Set("Content-Type", "application/xml")
		w.WriteHeader(http.StatusNotFound)
		io.WriteString(w, `<?xml version="1.0" encoding="UTF-8"?><Error><Code>NoSuchKey</Code><Message>The specified key does not exist.</Message></Error>`)
		return
	}
	from, to, err := parseRange(r.Header.Get("Range"))
	if err != nil || r.Method == http.MethodHead {
		w.Header().Set("Content-Length", strconv.Itoa(len(b)))
		if r.Method != http.MethodHead {
			w.Write(b)
		}
		return
	}
	to = min(to, len(b)-1)
	w.Header().Set("Content-Range", "bytes "+strconv.Itoa(from)+"-"+strconv.Itoa(to)+"/"+strconv.Itoa(len(b)))
	w.WriteHeader(http.StatusPartialContent)
	w.Write(b[from : to+1])
}

// parseRange reads a Range header, "bytes=FROM-TO".
func parseRange(h string) (from, to int, err error) {
	a, b, _ := strings.Cut(strings.TrimPrefix(h, "bytes="), "-")
	if from, err = strconv.Atoi(a); err == nil {
		to, err = strconv.Atoi(b)
	}
	return from, to, err
}

// runProgram runs bin with these arguments, in this environment plus
// env (AWS_* and DEPTHSPACE_* of the test's own left out).
func runProgram(t *testing.T, bin string, env []string, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	cmd := exec.Command(bin, args...)
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "AWS_") && !strings.HasPrefix(kv, companionEnv+"=") && !strings.HasPrefix(kv, versionEnv+"=") {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	cmd.Env = append(cmd.Env, env...)
	cmd.Dir = t.TempDir()
	var o, e bytes.Buffer
	cmd.Stdout, cmd.Stderr = &o, &e
	err := cmd.Run()
	if err != nil {
		if _, ok := err.(*exec.ExitError); !ok {
			t.Fatalf("%s: %v", bin, err)
		}
	}
	return cmd.ProcessState.ExitCode(), o.String(), e.String()
}

func copyProgram(t *testing.T, from, to string) {
	t.Helper()
	b, err := os.ReadFile(from)
	if err == nil {
		err = os.WriteFile(to, b, 0o755)
	}
	if err != nil {
		t.Fatal(err)
	}
}

// checkDeadcode fails the test if the program bin links
// reflect.Value.MethodByName (or Method), as text/template's executor
// does: the linker then keeps every exported method of every reachable
// type, whether called or not. One cobra Set*Template call did that: the
// binary went from 9.3 to 11.2 MB, and every run pays for the size at
// start (docs/performance.md). cobra's own TestDeadcodeElimination
// (cobra_test.go) is the model.
func checkDeadcode(t *testing.T, bin string) {
	t.Helper()
	for _, line := range strings.Split(nm(t, bin), "\n") {
		f := strings.Fields(line)
		if len(f) < 3 {
			continue
		}
		switch f[len(f)-1] {
		case "reflect.Value.MethodByName", "reflect.(*Value).MethodByName", "reflect.Value.Method", "reflect.(*Value).Method":
			t.Errorf("%s links %s: the linker keeps every exported method (who calls it: go build -ldflags=-dumpdep . 2>&1 | grep -B1 MethodByName)", filepath.Base(bin), f[len(f)-1])
		}
	}
}

// nm is go tool nm's listing of bin's symbols.
func nm(t *testing.T, bin string) string {
	t.Helper()
	out, err := exec.Command(goTool(t), "tool", "nm", bin).CombinedOutput()
	if err != nil {
		t.Fatalf("go tool nm: %v\n%s", err, out)
	}
	return string(out)
}

// goBuild builds the main package pkg into bin with `go build` and
// these flags; it skips the test when there is no go command.
func goBuild(t *testing.T, bin, pkg string, flags ...string) {
	t.Helper()
	args := append(append([]string{"build"}, flags...), "-o", bin, pkg)
	if out, err := exec.Command(goTool(t), args...).CombinedOutput(); err != nil {
		t.Fatalf("go %s: %v\n%s", strings.Join(args, " "), err, out)
	}
}

// goTool is the go command; the test is skipped without one.
func goTool(t *testing.T) string {
	t.Helper()
	g, err := exec.LookPath("go")
	if err != nil {
		g = filepath.Join(build.Default.GOROOT, "bin", "go")
		if _, err := os.Stat(g); err != nil {
			t.Skipf("no go command to build the binary with: %v", err)
		}
	}
	return g
}
