//go:build linux

package cli

import (
	"bytes"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/depthspace/depthspace/internal/format"
	"github.com/depthspace/depthspace/internal/format/npy"
	"github.com/depthspace/depthspace/internal/testpeer"
)

// Fault tests against the real binary, built once with `go build` and run
// as separate processes so that signals, SIGKILL, a full disk, a file
// shrinking underneath and a second writer hit a real process. Each test
// hashes its inputs before and after. docs/reliability.md lists what each
// one proves. The tests that move hundreds of MiB (sparse inputs, so they
// cost little disk) are skipped under -short.

// TestReliability builds the binary into its temporary directory and runs
// every scenario as a subtest (go test -run 'TestReliability/SIGKILL').
func TestReliability(t *testing.T) {
	bin := buildBinary(t)
	t.Run("Signal", func(t *testing.T) { testSignalMidWrite(t, bin) })
	t.Run("SIGKILL", func(t *testing.T) { testKillMidWrite(t, bin) })
	t.Run("FullDisk", func(t *testing.T) { testFullDisk(t, bin) })
	t.Run("TruncatedWhileMapped", func(t *testing.T) { testTruncatedWhileMapped(t, bin) })
	t.Run("ConcurrentWriters", func(t *testing.T) { testConcurrentWriters(t, bin) })
	t.Run("Unreadable", func(t *testing.T) { testUnreadable(t, bin) })
	t.Run("SpecialFileOutput", func(t *testing.T) { testSpecialFileOutput(t, bin) })
	t.Run("DevStdout", func(t *testing.T) { testDevStdout(t, bin) })
	t.Run("BatchInterrupted", func(t *testing.T) { testBatchInterrupted(t, bin) })
	t.Run("BatchFullDisk", func(t *testing.T) { testBatchFullDisk(t, bin) })
}

func buildBinary(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	// Readable by everyone: testUnreadable runs the binary as nobody.
	for _, d := range []string{dir, filepath.Dir(dir)} {
		if err := os.Chmod(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	bin := filepath.Join(dir, "depthspace")
	goBuild(t, bin, "../../cmd/depthspace")
	return bin
}

// digest is the SHA-256 of a file, read as a stream (inputs here are up to
// 256 MiB).
func digest(t *testing.T, path string) string {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		t.Fatal(err)
	}
	return fmt.Sprintf("%x", h.Sum(nil))
}

// sparseNpy writes an npy header for shape and sizes the file with
// ftruncate, so a tensor of hundreds of MiB costs no disk and no time; mark
// bytes are written at a few offsets so that results differ between inputs.
func sparseNpy(t *testing.T, path, descr string, shape []int, mark byte) {
	t.Helper()
	dt, err := format.ParseDescr(descr)
	if err != nil {
		t.Fatal(err)
	}
	h := format.Header{DType: dt, Shape: shape}
	pre := npy.EncodeNpy(h)
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.Write(pre); err != nil {
		t.Fatal(err)
	}
	size := int64(len(pre)) + h.DataBytes()
	if err := f.Truncate(size); err != nil {
		t.Fatal(err)
	}
	if mark != 0 {
		for _, off := range []int64{int64(len(pre)), size / 3, size / 2, size - 4096} {
			if _, err := f.WriteAt(bytes.Repeat([]byte{mark, mark + 1, mark + 2}, 1000), off); err != nil {
				t.Fatal(err)
			}
		}
	}
}

// denseNpy writes a small tensor with every byte set.
func denseNpy(t *testing.T, path, descr string, shape []int, seed byte) {
	t.Helper()
	dt, err := format.ParseDescr(descr)
	if err != nil {
		t.Fatal(err)
	}
	h := format.Header{DType: dt, Shape: shape}
	data := make([]byte, h.DataBytes())
	for i := range data {
		data[i] = byte(i*31) ^ seed
	}
	if err := os.WriteFile(path, append(npy.EncodeNpy(h), data...), 0o644); err != nil {
		t.Fatal(err)
	}
}

// proc is a running depthspace.
type proc struct {
	cmd    *exec.Cmd
	stderr bytes.Buffer
	done   chan struct{}
	err    error
}

func start(t *testing.T, bin, dir string, args ...string) *proc {
	t.Helper()
	p := &proc{cmd: exec.Command(bin, args...), done: make(chan struct{})}
	p.cmd.Dir = dir
	p.cmd.Stderr = &p.stderr
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { p.err = p.cmd.Wait(); close(p.done) }()
	t.Cleanup(func() {
		select {
		case <-p.done:
		default:
			_ = p.cmd.Process.Kill()
			<-p.done
		}
	})
	return p
}

func (p *proc) wait(t *testing.T) *proc {
	t.Helper()
	select {
	case <-p.done:
	case <-time.After(2 * time.Minute):
		_ = p.cmd.Process.Kill()
		<-p.done
		t.Fatalf("%v did not finish in 2 minutes", p.cmd.Args)
	}
	return p
}

func (p *proc) exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// status is the exit code, or 128+N for death by signal N, as a shell says.
func (p *proc) status() int {
	var ee *exec.ExitError
	if p.err == nil {
		return 0
	}
	if errors.As(p.err, &ee) {
		if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			return 128 + int(ws.Signal())
		}
		return ee.ExitCode()
	}
	return -1
}

// tempPattern is the documented name of a temporary output (fileio.TempPattern).
var tempPattern = regexp.MustCompile(`^\.out\.npy\.depthspace-[0-9]+\.tmp$`)

func temps(t *testing.T, dir string) []string {
	t.Helper()
	m, err := filepath.Glob(filepath.Join(dir, ".*.depthspace-*.tmp"))
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// unnamed lists the unnamed files (O_TMPFILE) in dir that process p has
// open, as /proc/PID/fd/N paths (a stat of one gives the file's size): a
// new output is written there before it gets its name. None where /proc
// or O_TMPFILE is missing.
func unnamed(p *proc, dir string) []string {
	fds := fmt.Sprintf("/proc/%d/fd", p.cmd.Process.Pid)
	entries, _ := os.ReadDir(fds)
	var found []string
	for _, e := range entries {
		target, err := os.Readlink(filepath.Join(fds, e.Name()))
		if err == nil && strings.HasPrefix(target, dir+"/#") && strings.HasSuffix(target, " (deleted)") {
			found = append(found, filepath.Join(fds, e.Name()))
		}
	}
	return found
}

// inFlight is the output p is writing in dir: a temporary file beside
// the target (replacing one), or an unnamed one (a new output).
func inFlight(t *testing.T, p *proc, dir string) []string {
	return append(temps(t, dir), unnamed(p, dir)...)
}

// waitMidWrite polls until the output in flight exists and holds at least
// minSize bytes, then lets the process run for settle more: the process
// is then writing its result (into the mapping, or item by item). It
// returns false if the process finished first.
func waitMidWrite(t *testing.T, p *proc, dir string, minSize int64, settle time.Duration) (string, bool) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for time.Now().Before(deadline) {
		if p.exited() {
			return "", false
		}
		for _, name := range inFlight(t, p, dir) {
			if fi, err := os.Stat(name); err == nil && fi.Size() >= minSize {
				time.Sleep(settle)
				return name, !p.exited()
			}
		}
		time.Sleep(200 * time.Microsecond)
	}
	t.Fatal("no temporary output appeared in a minute")
	return "", false
}

// bigInputs are two 256 MiB float32 tensors: one batch item (over the 64
// MiB in-memory buffer limit) and 8 items of 32 MiB, so that whichever way
// the pipeline writes a result (a mapping of the temporary file, item by
// item, chunk by chunk at offsets) is interrupted. A run at -j 1 takes
// 50-100 ms here, so the signal goes 5 ms after the temporary file appears
// (its blocks are reserved at once, and chunks of 4 MiB take about a
// millisecond each); a run that still finishes first is retried.
var bigInputs = []struct {
	name  string
	shape []int
}{
	{"1x256MiB", []int{1, 1, 8192, 8192}},
	{"8x32MiB", []int{8, 1, 4096, 2048}},
}

func skipBig(t *testing.T) {
	if testing.Short() {
		t.Skip("moves hundreds of MiB; skipped with -short")
	}
}

// SIGINT and SIGTERM (and SIGHUP, a closed terminal) while the result is
// being written: the process exits with 128+signal (130, 143, 129) as a
// shell expects, removes its temporary file, leaves the previous output
// and the input as they were.
func testSignalMidWrite(t *testing.T, bin string) {
	skipBig(t)
	for _, sig := range []syscall.Signal{syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP} {
		for i, in := range bigInputs {
			if sig == syscall.SIGHUP && i > 0 {
				continue // the same handler as SIGINT and SIGTERM: one case is enough
			}
			t.Run(fmt.Sprintf("%s/%s", sigName(sig), in.name), func(t *testing.T) {
				dir := t.TempDir()
				sparseNpy(t, filepath.Join(dir, "in.npy"), "<f4", in.shape, 7)
				inSum := digest(t, filepath.Join(dir, "in.npy"))
				old := []byte("previous contents\n")
				if err := os.WriteFile(filepath.Join(dir, "out.npy"), old, 0o644); err != nil {
					t.Fatal(err)
				}
				interrupted := false
				for attempt := 0; attempt < 3 && !interrupted; attempt++ {
					p := start(t, bin, dir, "s2d", "-b", "2", "-j", "1", "in.npy", "-o", "out.npy")
					if _, ok := waitMidWrite(t, p, dir, 1, 5*time.Millisecond); !ok {
						p.wait(t)
						t.Logf("attempt %d finished before it could be interrupted (status %d)", attempt, p.status())
						_ = os.WriteFile(filepath.Join(dir, "out.npy"), old, 0o644)
						continue
					}
					if err := p.cmd.Process.Signal(sig); err != nil {
						t.Fatal(err)
					}
					p.wait(t)
					if p.status() == 0 {
						t.Logf("attempt %d: the signal came after the rename", attempt)
						_ = os.WriteFile(filepath.Join(dir, "out.npy"), old, 0o644)
						continue
					}
					interrupted = true
					if got, want := p.status(), 128+int(sig); got != want {
						t.Errorf("exit status %d, want %d (stderr %q)", got, want, p.stderr.String())
					}
				}
				if !interrupted {
					t.Fatal("could not interrupt a run in 3 attempts")
				}
				if left := temps(t, dir); len(left) > 0 {
					t.Errorf("temporary file left behind: %v", left)
				}
				if got, _ := os.ReadFile(filepath.Join(dir, "out.npy")); !bytes.Equal(got, old) {
					t.Errorf("the previous output was modified (%d bytes)", len(got))
				}
				if digest(t, filepath.Join(dir, "in.npy")) != inSum {
					t.Error("the input was modified")
				}
			})
		}
	}
}

func sigName(s syscall.Signal) string {
	switch s {
	case syscall.SIGINT:
		return "SIGINT"
	case syscall.SIGTERM:
		return "SIGTERM"
	case syscall.SIGHUP:
		return "SIGHUP"
	}
	return fmt.Sprint(int(s))
}

// SIGKILL while the result is being written cannot be caught: the final
// path holds the previous output (or nothing if there was none), the
// leftover temporary file is named as documented, and the documented
// command removes it.
func testKillMidWrite(t *testing.T, bin string) {
	skipBig(t)
	for _, previous := range []bool{true, false} {
		for _, in := range bigInputs {
			t.Run(fmt.Sprintf("previous=%v/%s", previous, in.name), func(t *testing.T) {
				dir := t.TempDir()
				sparseNpy(t, filepath.Join(dir, "in.npy"), "<f4", in.shape, 7)
				inSum := digest(t, filepath.Join(dir, "in.npy"))
				old := []byte("previous contents\n")
				out := filepath.Join(dir, "out.npy")
				reset := func() {
					os.Remove(out)
					if previous {
						if err := os.WriteFile(out, old, 0o644); err != nil {
							t.Fatal(err)
						}
					}
				}
				reset()
				killed, unnamedOutput := false, false
				for attempt := 0; attempt < 3 && !killed; attempt++ {
					p := start(t, bin, dir, "s2d", "-b", "2", "-j", "1", "in.npy", "-o", "out.npy")
					name, ok := waitMidWrite(t, p, dir, 1, 5*time.Millisecond)
					unnamedOutput = strings.HasPrefix(name, "/proc/")
					if !ok {
						p.wait(t)
						reset()
						continue
					}
					if err := p.cmd.Process.Kill(); err != nil {
						t.Fatal(err)
					}
					p.wait(t)
					if p.status() == 0 {
						reset()
						continue
					}
					killed = true
					if got := p.status(); got != 128+int(syscall.SIGKILL) {
						t.Errorf("status %d, want death by SIGKILL", got)
					}
				}
				if !killed {
					t.Fatal("could not kill a run mid-write in 3 attempts")
				}
				got, err := os.ReadFile(out)
				switch {
				case previous && !bytes.Equal(got, old):
					t.Errorf("the previous output was replaced (%d bytes, %v)", len(got), err)
				case !previous && !errors.Is(err, os.ErrNotExist):
					t.Errorf("an output exists after SIGKILL (%d bytes)", len(got))
				}
				left := temps(t, dir)
				if unnamedOutput {
					// The result was written unnamed (O_TMPFILE): SIGKILL
					// leaves nothing, new output or replacement.
					if len(left) != 0 {
						t.Errorf("an output killed mid-write left %v", left)
					}
					if digest(t, filepath.Join(dir, "in.npy")) != inSum {
						t.Error("the input was modified")
					}
					return
				}
				if len(left) != 1 || !tempPattern.MatchString(filepath.Base(left[0])) {
					t.Fatalf("leftover temporary files %v, want one named like .out.npy.depthspace-*.tmp", left)
				}
				// The cleanup docs/reliability.md gives.
				if _, err := exec.LookPath("find"); err != nil {
					t.Skipf("no find(1) to run the documented cleanup: %v", err)
				}
				if out, err := exec.Command("find", dir, "-name", ".*.depthspace-*.tmp", "-prune", "-exec", "rm", "-rf", "{}", "+").CombinedOutput(); err != nil {
					t.Fatalf("find -exec rm: %v\n%s", err, out)
				}
				if left := temps(t, dir); len(left) != 0 {
					t.Errorf("the documented cleanup left %v", left)
				}
				if digest(t, filepath.Join(dir, "in.npy")) != inSum {
					t.Error("the input was modified")
				}
			})
		}
	}
}

// A result bigger than the disk: exit 2, one line naming the output and
// ENOSPC, the previous output kept, no partial or temporary file. 6 MiB of
// npy and its JSON text (the disk fills while writing), and 80 MiB (over
// the in-memory buffer limit: the blocks are reserved with fallocate first,
// so ENOSPC comes before any work and never as SIGBUS on a mapped page).
func testFullDisk(t *testing.T, bin string) {
	full := testpeer.Tmpfs(t, "4m")
	dir := t.TempDir()
	denseNpy(t, filepath.Join(dir, "small.npy"), "<f4", []int{6, 1, 512, 512}, 1)
	sparseNpy(t, filepath.Join(dir, "big.npy"), "<f4", []int{1, 1, 4096, 5120}, 9)
	sums := map[string]string{}
	for _, n := range []string{"small.npy", "big.npy"} {
		sums[n] = digest(t, filepath.Join(dir, n))
	}
	out := filepath.Join(full, "out.npy")
	old := []byte("previous contents\n")
	if err := os.WriteFile(out, old, 0o644); err != nil {
		t.Fatal(err)
	}
	want := regexp.MustCompile(`^depthspace: ` + regexp.QuoteMeta(out) + `: no space left on device\n$`)
	for _, c := range []struct{ name, input, to string }{
		{"6MiB", "small.npy", "npy"},
		{"6MiB-json", "small.npy", "json"},
		{"80MiB", "big.npy", "npy"},
	} {
		t.Run(c.name, func(t *testing.T) {
			p := start(t, bin, dir, "s2d", "-b", "2", "--to", c.to, c.input, "-o", out).wait(t)
			if p.status() != 2 || !want.MatchString(p.stderr.String()) {
				t.Errorf("status %d, stderr %q; want 2 and %s", p.status(), p.stderr.String(), want)
			}
			if got, _ := os.ReadFile(out); !bytes.Equal(got, old) {
				t.Errorf("the previous output was modified (%d bytes)", len(got))
			}
			if left := temps(t, full); len(left) > 0 {
				t.Errorf("left behind: %v", left)
			}
		})
	}
	for n, s := range sums {
		if digest(t, filepath.Join(dir, n)) != s {
			t.Errorf("%s was modified", n)
		}
	}
}

// An input truncated by another process while the binary has it mapped:
// exit 2 with one line, not SIGBUS, and no output. The truncation happens
// as soon as the temporary output exists, i.e. after the input was mapped
// and its header read, before the kernel has read the data.
func testTruncatedWhileMapped(t *testing.T, bin string) {
	skipBig(t)
	dir := t.TempDir()
	in := filepath.Join(dir, "in.npy")
	want := regexp.MustCompile(`^depthspace: [^\n]*input could not be read \(was the file truncated while in use\?\)[^\n]*\n$`)
	for attempt := 0; ; attempt++ {
		if attempt == 3 {
			t.Fatal("could not truncate the input before the run finished, in 3 attempts")
		}
		sparseNpy(t, in, "<f4", bigInputs[0].shape, 7)
		p := start(t, bin, dir, "s2d", "-b", "2", "-j", "1", "in.npy", "-o", "out.npy")
		if _, ok := waitMidWrite(t, p, dir, 0, 0); !ok {
			p.wait(t)
			os.Remove(filepath.Join(dir, "out.npy"))
			continue
		}
		if err := os.Truncate(in, 128); err != nil {
			t.Fatal(err)
		}
		p.wait(t)
		if p.status() == 0 {
			os.Remove(filepath.Join(dir, "out.npy"))
			continue
		}
		if p.status() != 2 || !want.MatchString(p.stderr.String()) {
			t.Fatalf("status %d, stderr %q; want 2 and %s", p.status(), p.stderr.String(), want)
		}
		break
	}
	if _, err := os.Stat(filepath.Join(dir, "out.npy")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("an output exists after the failure (%v)", err)
	}
	if left := temps(t, dir); len(left) > 0 {
		t.Errorf("left behind: %v", left)
	}
}

// Two processes writing the same output at once, from different inputs:
// both succeed and the output is exactly one of the two results, never a
// mix of them, for a result under and over the in-memory buffer limit.
func testConcurrentWriters(t *testing.T, bin string) {
	cases := []struct {
		name   string
		shape  []int
		sparse bool
		rounds int
	}{
		{"4MiB", []int{4, 1, 512, 512}, false, 10},
		{"72MiB", []int{1, 1, 3072, 6144}, true, 3},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if c.sparse {
				skipBig(t)
			}
			dir := t.TempDir()
			want := map[string]string{}
			sums := map[string]string{}
			for i, n := range []string{"a.npy", "b.npy"} {
				if c.sparse {
					sparseNpy(t, filepath.Join(dir, n), "<f4", c.shape, byte(10*i+1))
				} else {
					denseNpy(t, filepath.Join(dir, n), "<f4", c.shape, byte(10*i+1))
				}
				sums[n] = digest(t, filepath.Join(dir, n))
				ref := "ref-" + n
				if p := start(t, bin, dir, "s2d", "-b", "2", n, "-o", ref).wait(t); p.status() != 0 {
					t.Fatalf("%s: %s", n, p.stderr.String())
				}
				want[digest(t, filepath.Join(dir, ref))] = n
				os.Remove(filepath.Join(dir, ref))
			}
			if len(want) != 2 {
				t.Fatal("the two inputs give the same result")
			}
			seen := map[string]int{}
			for r := 0; r < c.rounds; r++ {
				pa := start(t, bin, dir, "s2d", "-b", "2", "-j", "1", "a.npy", "-o", "out.npy")
				pb := start(t, bin, dir, "s2d", "-b", "2", "-j", "1", "b.npy", "-o", "out.npy")
				for _, p := range []*proc{pa.wait(t), pb.wait(t)} {
					if p.status() != 0 {
						t.Fatalf("round %d: %v: status %d: %s", r, p.cmd.Args, p.status(), p.stderr.String())
					}
				}
				got, ok := want[digest(t, filepath.Join(dir, "out.npy"))]
				if !ok {
					t.Fatalf("round %d: the output is neither result", r)
				}
				seen[got]++
			}
			t.Logf("last writer: %v", seen)
			if left := temps(t, dir); len(left) > 0 {
				t.Errorf("left behind: %v", left)
			}
			for n, s := range sums {
				if digest(t, filepath.Join(dir, n)) != s {
					t.Errorf("%s was modified", n)
				}
			}
		})
	}
}

// An input the user may not read, and an output directory the user may not
// write: exit 2 with one line each. Root reads everything, so as root the
// binary runs as nobody (uid 65534).
func testUnreadable(t *testing.T, bin string) {
	dir := t.TempDir()
	for d, mode := range map[string]os.FileMode{dir: 0o777, filepath.Dir(dir): 0o755} {
		if err := os.Chmod(d, mode); err != nil {
			t.Fatal(err)
		}
	}
	in := filepath.Join(dir, "in.npy")
	denseNpy(t, in, "<u2", []int{1, 1, 4, 4}, 3)
	ro := filepath.Join(dir, "ro")
	if err := os.Mkdir(ro, 0o555); err != nil {
		t.Fatal(err)
	}
	run := func(args ...string) *proc {
		p := &proc{cmd: exec.Command(bin, args...), done: make(chan struct{})}
		p.cmd.Dir = dir
		p.cmd.Stderr = &p.stderr
		if os.Geteuid() == 0 {
			p.cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
		}
		p.err = p.cmd.Run()
		close(p.done)
		return p
	}
	if p := run("s2d", "-b", "2", "in.npy", "-o", "ok.npy"); p.status() != 0 {
		t.Skipf("cannot run the binary as an unprivileged user here: %v %s", p.err, p.stderr.String())
	}
	os.Remove(filepath.Join(dir, "ok.npy"))

	if err := os.Chmod(in, 0); err != nil {
		t.Fatal(err)
	}
	defer os.Chmod(in, 0o644)
	sum := digest(t, in) // as root: still readable by the test
	if f, err := os.Open(in); err == nil && os.Geteuid() != 0 {
		f.Close()
		t.Skip("a mode 000 file is still readable by this user (CAP_DAC_OVERRIDE?)")
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"s2d", "-b", "2", "in.npy", "-o", "out.npy"}, `^depthspace: in.npy: permission denied\n$`},
		{[]string{"d2s", "-b", "1", "in.npy", "-o", "-"}, `^depthspace: in.npy: permission denied\n$`},
	} {
		p := run(c.args...)
		if p.status() != 2 || !regexp.MustCompile(c.want).MatchString(p.stderr.String()) {
			t.Errorf("%v: status %d, stderr %q; want 2 and %s", c.args, p.status(), p.stderr.String(), c.want)
		}
	}
	if err := os.Chmod(in, 0o644); err != nil {
		t.Fatal(err)
	}
	p := run("s2d", "-b", "2", "in.npy", "-o", "ro/out.npy")
	if want := regexp.MustCompile(`^depthspace: ro/out.npy: cannot create a file in ro: permission denied\n$`); p.status() != 2 || !want.MatchString(p.stderr.String()) {
		t.Errorf("read-only directory: status %d, stderr %q; want 2 and %s", p.status(), p.stderr.String(), want)
	}
	if _, err := os.Stat(filepath.Join(dir, "out.npy")); err == nil {
		t.Error("an output was written")
	}
	if entries, _ := os.ReadDir(ro); len(entries) > 0 {
		t.Errorf("left in the read-only directory: %v", entries)
	}
	if digest(t, in) != sum {
		t.Error("the input was modified")
	}
}

// -o naming a FIFO or a device must write into it, as a shell redirect, cp
// and dd do, and never replace it with a regular file: as root,
// `-o /dev/null` replaced the system's /dev/null before this test (a
// temporary file and a rename only make sense for a regular file).
func testSpecialFileOutput(t *testing.T, bin string) {
	dir := t.TempDir()
	denseNpy(t, filepath.Join(dir, "in.npy"), "<u2", []int{1, 2, 8, 8}, 5)
	sum := digest(t, filepath.Join(dir, "in.npy"))
	const outBytes = 128 + 2*2*8*8 // the npy preamble and the data

	t.Run("FIFO", func(t *testing.T) {
		fifo := filepath.Join(dir, "out.fifo")
		if err := syscall.Mkfifo(fifo, 0o644); err != nil {
			t.Skipf("mkfifo: %v", err)
		}
		// Held open read-write, the FIFO has a reader before depthspace
		// opens it, and the result (far under the pipe buffer) waits in it.
		rw, err := os.OpenFile(fifo, os.O_RDWR, 0)
		if err != nil {
			t.Fatal(err)
		}
		defer rw.Close()
		p := start(t, bin, dir, "s2d", "-b", "2", "in.npy", "-o", "out.fifo").wait(t)
		if p.status() != 0 {
			t.Fatalf("status %d: %s", p.status(), p.stderr.String())
		}
		if fi, err := os.Lstat(fifo); err != nil || fi.Mode()&os.ModeNamedPipe == 0 {
			t.Errorf("the FIFO was replaced (%v, %v)", fi.Mode(), err)
		}
		_ = rw.SetReadDeadline(time.Now().Add(2 * time.Second))
		got := make([]byte, outBytes)
		if n, err := io.ReadFull(rw, got); err != nil {
			t.Fatalf("read %d of %d bytes from the FIFO: %v", n, outBytes, err)
		}
		if n, err := npy.ParseNpy(got); err != nil || format.ShapeString(n.Shape) != "1,8,4,4" {
			t.Errorf("the FIFO carried %+v (%v)", n, err)
		}
	})
	t.Run("device", func(t *testing.T) {
		if os.Geteuid() != 0 {
			t.Skip("mknod needs root")
		}
		dev := filepath.Join(dir, "null")
		if err := syscall.Mknod(dev, syscall.S_IFCHR|0o666, 1<<8|3); err != nil { // /dev/null is 1,3
			t.Skipf("mknod: %v", err)
		}
		p := start(t, bin, dir, "s2d", "-b", "2", "in.npy", "-o", "null").wait(t)
		if p.status() != 0 {
			t.Errorf("status %d: %s", p.status(), p.stderr.String())
		}
		if fi, err := os.Lstat(dev); err != nil || fi.Mode()&os.ModeCharDevice == 0 {
			t.Errorf("the device was replaced by a regular file (%v, %v)", fi.Mode(), err)
		}
	})
	if left := temps(t, dir); len(left) > 0 {
		t.Errorf("left behind: %v", left)
	}
	if digest(t, filepath.Join(dir, "in.npy")) != sum {
		t.Error("the input was modified")
	}
}

// `-o /dev/stdout > FILE` is a Unix idiom: /dev/stdout is a symlink to
// /proc/self/fd/1, which the kernel resolves to FILE, a regular file. The
// result must reach FILE. Renaming a temporary file over the name instead
// replaces the symlink (as root, the system's /dev/stdout) and leaves FILE
// empty; without root it fails creating a file in /dev. The test uses its
// own symlink to /proc/self/fd/1, never the real /dev/stdout.
func testDevStdout(t *testing.T, bin string) {
	if _, err := os.Stat("/proc/self/fd/1"); err != nil {
		t.Skipf("no /proc/self/fd: %v", err)
	}
	dir := t.TempDir()
	denseNpy(t, filepath.Join(dir, "in.npy"), "<u2", []int{1, 2, 8, 8}, 5)
	sum := digest(t, filepath.Join(dir, "in.npy"))
	link := filepath.Join(dir, "stdout")
	if err := os.Symlink("/proc/self/fd/1", link); err != nil {
		t.Fatal(err)
	}
	f, err := os.Create(filepath.Join(dir, "redirected.npy"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	p := &proc{cmd: exec.Command(bin, "s2d", "-b", "2", "in.npy", "-o", link), done: make(chan struct{})}
	p.cmd.Dir, p.cmd.Stdout, p.cmd.Stderr = dir, f, &p.stderr
	p.err = p.cmd.Run()
	close(p.done)
	if p.status() != 0 {
		t.Fatalf("status %d: %s", p.status(), p.stderr.String())
	}
	if fi, err := os.Lstat(link); err != nil || fi.Mode()&os.ModeSymlink == 0 {
		t.Errorf("the symlink to /proc/self/fd/1 was replaced (%v, %v)", fi.Mode(), err)
	}
	got, _ := os.ReadFile(filepath.Join(dir, "redirected.npy"))
	if n, err := npy.ParseNpy(got); err != nil || int64(len(got)) != n.DataOffset+n.DataBytes() || format.ShapeString(n.Shape) != "1,8,4,4" {
		t.Errorf("the redirected standard output holds %d bytes (%v), not the result", len(got), err)
	}
	if left := temps(t, dir); len(left) > 0 {
		t.Errorf("left behind: %v", left)
	}
	if digest(t, filepath.Join(dir, "in.npy")) != sum {
		t.Error("the input was modified")
	}
}

// batchResults runs a batch to completion into a fresh directory and
// returns the SHA-256 of each output, by its name.
func batchResults(t *testing.T, bin, dir string, inputs ...string) map[string]string {
	t.Helper()
	ref := filepath.Join(dir, "ref")
	args := append([]string{"s2d", "-b", "2", "--out-dir", ref}, inputs...)
	if p := start(t, bin, dir, args...).wait(t); p.status() != 0 {
		t.Fatalf("reference batch: %s", p.stderr.String())
	}
	sums := map[string]string{}
	for _, n := range inputs {
		sums[n] = digest(t, filepath.Join(ref, n))
		os.Remove(filepath.Join(ref, n))
	}
	return sums
}

// checkBatchOutputs checks that every file under out is a complete result
// (its SHA-256 is the reference's) and that no temporary file is left.
func checkBatchOutputs(t *testing.T, out string, want map[string]string) []string {
	t.Helper()
	var done []string
	entries, err := os.ReadDir(out)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		sum, ok := want[e.Name()]
		switch {
		case !ok:
			t.Errorf("unexpected file in the output directory: %s", e.Name())
		case digest(t, filepath.Join(out, e.Name())) != sum:
			t.Errorf("%s is not the complete result", e.Name())
		default:
			done = append(done, e.Name())
		}
	}
	return done
}

// A batch interrupted while it writes its second file: exit 130, the file
// in flight removed, the files already finished complete, none partial.
func testBatchInterrupted(t *testing.T, bin string) {
	skipBig(t)
	dir := t.TempDir()
	inputs := []string{"a.npy", "b.npy", "c.npy"}
	sums := map[string]string{}
	for i, n := range inputs {
		sparseNpy(t, filepath.Join(dir, n), "<f4", []int{1, 1, 8192, 4096}, byte(20+i)) // 128 MiB each
		sums[n] = digest(t, filepath.Join(dir, n))
	}
	want := batchResults(t, bin, dir, inputs...)
	out := filepath.Join(dir, "out")
	for attempt := 0; ; attempt++ {
		if attempt == 3 {
			t.Fatal("could not interrupt the batch during its second file in 3 attempts")
		}
		os.RemoveAll(out)
		p := start(t, bin, dir, append([]string{"s2d", "-b", "2", "-j", "1", "--progress", "never", "--out-dir", out}, inputs...)...)
		// Wait for a.npy to be finished and b.npy's temporary file to exist.
		seen := false
		for deadline := time.Now().Add(time.Minute); time.Now().Before(deadline) && !p.exited(); time.Sleep(time.Millisecond) {
			if _, err := os.Stat(filepath.Join(out, "a.npy")); err == nil && len(inFlight(t, p, out)) > 0 {
				seen = true
				break
			}
		}
		if !seen {
			p.wait(t)
			continue
		}
		time.Sleep(20 * time.Millisecond)
		if err := p.cmd.Process.Signal(syscall.SIGINT); err != nil {
			t.Fatal(err)
		}
		if p.wait(t).status() == 0 {
			continue
		}
		if got := p.status(); got != 130 {
			t.Errorf("status %d, want 130: %s", got, p.stderr.String())
		}
		break
	}
	if left := temps(t, out); len(left) > 0 {
		t.Errorf("left behind: %v", left)
	}
	done := checkBatchOutputs(t, out, want)
	if len(done) == 0 || len(done) == len(inputs) {
		t.Errorf("finished outputs %v: want the first, not all", done)
	}
	for n, s := range sums {
		if digest(t, filepath.Join(dir, n)) != s {
			t.Errorf("%s was modified", n)
		}
	}
}

// A batch whose output directory fills up: the files that fit are
// complete, the one that does not is reported (one line naming it and
// ENOSPC) and absent, the batch goes on and exits 2, no temporary file.
func testBatchFullDisk(t *testing.T, bin string) {
	full := testpeer.Tmpfs(t, "4m")
	dir := t.TempDir()
	inputs := []string{"a.npy", "b.npy", "c.npy"}
	shapes := [][]int{{1, 1, 512, 512}, {2, 1, 512, 512}, {2, 1, 512, 512}} // 1, 2 and 2 MiB
	sums := map[string]string{}
	for i, n := range inputs {
		denseNpy(t, filepath.Join(dir, n), "<f4", shapes[i], byte(i))
		sums[n] = digest(t, filepath.Join(dir, n))
	}
	want := batchResults(t, bin, dir, inputs...)
	p := start(t, bin, dir, append([]string{"s2d", "-b", "2", "-j", "1", "--progress", "never", "--out-dir", full}, inputs...)...).wait(t)
	if p.status() != 2 {
		t.Errorf("status %d, want 2: %s", p.status(), p.stderr.String())
	}
	lines := strings.Split(strings.TrimSuffix(p.stderr.String(), "\n"), "\n")
	// The input that failed, then its output and what went wrong there.
	enospc := regexp.MustCompile(`^depthspace: \S*c\.npy: \S*/full/c\.npy: no space left on device$`)
	found := false
	for _, l := range lines {
		if !strings.HasPrefix(l, "depthspace: ") {
			t.Errorf("stderr line %q", l)
		}
		found = found || enospc.MatchString(l)
	}
	if !found {
		t.Errorf("no line reports c.npy and ENOSPC: %q", p.stderr.String())
	}
	if done := checkBatchOutputs(t, full, want); len(done) != 2 {
		t.Errorf("complete outputs %v, want a.npy and b.npy", done)
	}
	if left := temps(t, full); len(left) > 0 {
		t.Errorf("left behind: %v", left)
	}
	for n, s := range sums {
		if digest(t, filepath.Join(dir, n)) != s {
			t.Errorf("%s was modified", n)
		}
	}
}

// BenchmarkOutputFsync measures what an fsync before the rename would cost
// a result of 64 MiB and 1 GiB on the filesystem of the temporary directory
// (set TMPDIR to measure another): write, [fsync,] close, rename, as
// fileio.Output.Commit does. The numbers and the decision are in
// docs/reliability.md.
//
//	go test -run XXX -bench OutputFsync -benchtime 3x ./internal/cli/
func BenchmarkOutputFsync(b *testing.B) {
	buf := make([]byte, 1<<20)
	for i := range buf {
		buf[i] = byte(i * 13)
	}
	for _, size := range []int{64 << 20, 1 << 30} {
		for _, sync := range []bool{false, true} {
			b.Run(fmt.Sprintf("%dMiB/fsync=%v", size>>20, sync), func(b *testing.B) {
				dir := b.TempDir()
				b.SetBytes(int64(size))
				for i := 0; i < b.N; i++ {
					f, err := os.CreateTemp(dir, ".out.npy.depthspace-*.tmp")
					if err != nil {
						b.Fatal(err)
					}
					for n := 0; n < size; n += len(buf) {
						if _, err := f.Write(buf); err != nil {
							b.Fatal(err)
						}
					}
					if sync {
						if err := f.Sync(); err != nil {
							b.Fatal(err)
						}
					}
					if err := f.Close(); err != nil {
						b.Fatal(err)
					}
					if err := os.Rename(f.Name(), filepath.Join(dir, "out.npy")); err != nil {
						b.Fatal(err)
					}
					// Start the next iteration with clean page cache, so
					// that one run's writeback does not bill the next.
					b.StopTimer()
					if err := exec.Command("sync").Run(); err != nil {
						b.Fatal(err)
					}
					b.StartTimer()
				}
				b.StopTimer()
				os.Remove(filepath.Join(dir, "out.npy"))
			})
		}
	}
}

// Writing to a pipe whose reader has gone (`depthspace … | head -c 10`),
// depthspace dies of SIGPIPE quietly, as a Unix filter does: no error line,
// and the status a shell reports as 141. Nothing is left behind, since a
// stdout run makes no temporary file.
func TestStdoutBrokenPipe(t *testing.T) {
	bin := depthspaceBin(t)
	for _, tc := range []struct {
		name  string
		shape []int
	}{
		{"in order", []int{1, 4, 1024, 1024}}, // 16 MiB: written chunk by chunk
		{"spooled", []int{1, 8, 1024, 1024}},  // 32 MiB: an item is too big to hold, the output is spooled and sent with sendfile
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			sparseNpy(t, filepath.Join(dir, "in.npy"), "<f4", tc.shape, 3)
			r, w, err := os.Pipe()
			if err != nil {
				t.Fatal(err)
			}
			var stderr bytes.Buffer
			cmd := exec.Command(bin, "s2d", "-b", "2", "in.npy")
			cmd.Dir, cmd.Env, cmd.Stdout, cmd.Stderr = dir, quickExit(), w, &stderr
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			w.Close()
			if _, err := io.ReadFull(r, make([]byte, 10)); err != nil {
				t.Fatal(err)
			}
			r.Close()
			err = cmd.Wait()
			ws, _ := cmd.ProcessState.Sys().(syscall.WaitStatus)
			if !(ws.Signaled() && ws.Signal() == syscall.SIGPIPE) && cmd.ProcessState.ExitCode() != 128+int(syscall.SIGPIPE) {
				t.Errorf("a closed stdout pipe ended the run with %v, want SIGPIPE (141)", err)
			}
			if stderr.Len() > 0 {
				t.Errorf("stderr %q, want nothing", stderr.String())
			}
			if left := temps(t, dir); len(left) > 0 {
				t.Errorf("temporary files left: %v", left)
			}
		})
	}
}
