package fileio

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// A run with no signal handler replaces its output through a temporary
// name that exists for two system calls, with SIGINT, SIGTERM and SIGHUP
// ignored from then on until the handler, installed on another
// goroutine, takes them: afterwards none is ignored, and SIGINT ends the
// process with 130. (In a process of its own, which the signal ends.)
func TestReplaceWithoutHandler(t *testing.T) {
	dir := os.Getenv("DEPTHSPACE_TEST_REPLACE")
	if dir == "" {
		cmd := exec.Command(os.Args[0], "-test.run=^TestReplaceWithoutHandler$", "-test.v")
		cmd.Env = append(os.Environ(), "DEPTHSPACE_TEST_REPLACE="+t.TempDir())
		out, err := cmd.CombinedOutput()
		if strings.Contains(string(out), "--- SKIP") {
			t.Skip(string(out))
		}
		var ee *exec.ExitError
		if !errors.As(err, &ee) || ee.ExitCode() != 130 || !strings.Contains(string(out), "replaced, handler in") {
			t.Fatalf("%v, want exit status 130 after the replacement\n%s", err, out)
		}
		return
	}
	for _, s := range windowSignals {
		if signal.Ignored(s) {
			t.Skipf("%v is ignored from the start", s)
		}
	}
	name := filepath.Join(dir, "out.npy")
	o := createOver(t, name, "previous")
	if !o.anon || !o.replacing {
		o.Abort()
		t.Skipf("not replaced through an unnamed file here (anon %v, replacing %v)", o.anon, o.replacing)
	}
	if handling.Load() {
		t.Fatal("the handler is installed before the replacement")
	}
	if _, err := o.WriteAt([]byte("new"), 0); err != nil {
		t.Fatal(err)
	}
	if err := o.Commit(); err != nil {
		t.Fatal(err)
	}
	if got, _ := os.ReadFile(name); string(got) != "new" {
		t.Errorf("target holds %q", got)
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 1 {
		t.Errorf("directory holds %v", entries)
	}
	for deadline := time.Now().Add(10 * time.Second); !handling.Load(); time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("no handler 10 s after the replacement")
		}
	}
	for _, s := range windowSignals {
		if kernelIgnores(t, s.(syscall.Signal)) {
			t.Errorf("%v is still ignored", s)
		}
	}
	fmt.Println("replaced, handler in")
	syscall.Kill(os.Getpid(), syscall.SIGINT)
	time.Sleep(10 * time.Second)
	t.Fatal("SIGINT did not end the process")
}

// kernelIgnores says whether the process's disposition for sig is
// SIG_IGN, as /proc/self/status shows it (false where there is none).
func kernelIgnores(t *testing.T, sig syscall.Signal) bool {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return false
	}
	for _, line := range strings.Split(string(b), "\n") {
		if hex, ok := strings.CutPrefix(line, "SigIgn:"); ok {
			mask, err := strconv.ParseUint(strings.TrimSpace(hex), 16, 64)
			if err != nil {
				t.Fatal(err)
			}
			return mask&(1<<(uint(sig)-1)) != 0
		}
	}
	return false
}
