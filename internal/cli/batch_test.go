package cli

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/depthspace/depthspace/internal/format"
	"github.com/depthspace/depthspace/internal/format/npy"
)

// writeTensor writes an npy file of shape [n, c, h, w] and element type
// dt holding a pattern that differs from file to file.
func writeTensor(t *testing.T, name, dt string, seed, n, c, h, w int) {
	t.Helper()
	d, err := format.ParseDType(dt)
	if err != nil {
		t.Fatal(err)
	}
	hd := format.Header{DType: d, Shape: []int{n, c, h, w}}
	b := npy.EncodeNpy(hd)
	data := make([]byte, hd.DataBytes())
	for i := range data {
		data[i] = byte(i*7 + seed*13 + i/251)
	}
	if err := os.MkdirAll(filepath.Dir(name), 0o777); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(name, append(b, data...), 0o666); err != nil {
		t.Fatal(err)
	}
}

// depthspaceBin is the command testscript.Main put in $PATH: this test
// binary, run as depthspace.
func depthspaceBin(t *testing.T) string {
	t.Helper()
	bin, err := exec.LookPath("depthspace")
	if err != nil {
		t.Fatalf("depthspace not in PATH (set up by TestMain): %v", err)
	}
	return bin
}

// quickExit is the environment for running depthspace: under -race, a
// process otherwise sleeps a second at exit (GORACE atexit_sleep_ms),
// which is most of these tests' time.
func quickExit() []string {
	return append(os.Environ(), "GORACE="+strings.TrimSpace(os.Getenv("GORACE")+" atexit_sleep_ms=0"))
}

// files lists the regular files under root, relative, with contents.
func files(t *testing.T, root string) map[string][]byte {
	t.Helper()
	m := map[string][]byte{}
	err := filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, err := filepath.Rel(root, p)
		if err != nil {
			return err
		}
		m[filepath.ToSlash(rel)], err = os.ReadFile(p)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// TestShardSimulation is a cluster run on one machine, as docs/cluster.md
// describes it: N processes at once, each given --shard K/N, over one
// tree into one output directory. Together they must write every output
// exactly once (each input in exactly one process's JSON records), and
// the outputs must be byte for byte those of a single process.
func TestShardSimulation(t *testing.T) {
	bin := depthspaceBin(t)
	dir := t.TempDir()
	data := filepath.Join(dir, "data")
	var want []string
	for i := 0; i < 37; i++ {
		rel := fmt.Sprintf("set%d/part-%02d/x%03d.npy", i%3, i%5, i)
		dt := []string{"uint8", "float32", "int16", "<c16", "S3"}[i%5]
		h, w := 2*(1+i%4), 2*(1+i%3)
		writeTensor(t, filepath.Join(data, filepath.FromSlash(rel)), dt, i, 1+i%2, 1+i%3, h, w)
		want = append(want, rel)
	}
	// Two files of several chunks, so that -j is shared within files too.
	for i, rel := range []string{"big/a.npy", "set1/big.npy"} {
		writeTensor(t, filepath.Join(data, filepath.FromSlash(rel)), "float32", 100+i, 2, 3, 512, 640)
		want = append(want, rel)
	}
	sort.Strings(want)

	run := func(args ...string) *exec.Cmd {
		cmd := exec.Command(bin, append([]string{"s2d", "-b", "2", "-j", "2", "--json"}, args...)...)
		cmd.Dir = dir
		cmd.Env = quickExit()
		return cmd
	}
	if out, err := run("--out-dir", "whole", "data").CombinedOutput(); err != nil {
		t.Fatalf("single process: %v\n%s", err, out)
	}

	const n = 4
	cmds := make([]*exec.Cmd, n)
	outs := make([]bytes.Buffer, n)
	for k := range cmds {
		cmds[k] = run("--out-dir", "parts", "--shard", fmt.Sprintf("%d/%d", k, n), "data")
		cmds[k].Stdout = &outs[k]
		if err := cmds[k].Start(); err != nil {
			t.Fatal(err)
		}
	}
	owner := map[string]int{}
	for k, cmd := range cmds {
		if err := cmd.Wait(); err != nil {
			t.Fatalf("shard %d/%d: %v", k, n, err)
		}
		sc := bufio.NewScanner(&outs[k])
		for sc.Scan() {
			var rec struct {
				Input, Status string
				Summary       bool
				Total, Files  int
			}
			if err := json.Unmarshal(sc.Bytes(), &rec); err != nil {
				t.Fatalf("shard %d: %q: %v", k, sc.Text(), err)
			}
			if rec.Summary {
				if rec.Total != len(want) || rec.Files < len(want)/n || rec.Files > len(want)/n+1 {
					t.Errorf("shard %d: summary total %d files %d, want %d and about %d", k, rec.Total, rec.Files, len(want), len(want)/n)
				}
				continue
			}
			if rec.Status != "ok" {
				t.Errorf("shard %d: %s: %s", k, rec.Input, rec.Status)
			}
			if o, dup := owner[rec.Input]; dup {
				t.Errorf("%s done by shards %d and %d", rec.Input, o, k)
			}
			owner[rec.Input] = k
		}
	}
	if len(owner) != len(want) {
		t.Errorf("the shards did %d files, the tree has %d", len(owner), len(want))
	}

	whole, parts := files(t, filepath.Join(dir, "whole")), files(t, filepath.Join(dir, "parts"))
	var got []string
	for name := range parts {
		got = append(got, name)
	}
	sort.Strings(got)
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("outputs of the shards:\n%s\nwant:\n%s", strings.Join(got, " "), strings.Join(want, " "))
	}
	for name, b := range whole {
		if !bytes.Equal(parts[name], b) {
			t.Errorf("%s: the shards' output differs from the single process's", name)
		}
	}
	if len(whole) != len(want) {
		t.Errorf("single process wrote %d files, want %d", len(whole), len(want))
	}
}

// TestProgressBarInTmux runs a batch in a real terminal (a tmux pane) and
// reads the screen back: with --progress auto the finished bar is there,
// with files, percent, bytes, rate and time, above the summary; with
// --progress never only the summary is.
func TestProgressBarInTmux(t *testing.T) {
	tmux, err := exec.LookPath("tmux")
	if err != nil {
		if os.Getenv("CI") != "" {
			t.Fatal("tmux is required under CI (.ci/run installs it)")
		}
		t.Skip("tmux not installed")
	}
	depthspaceBin(t)
	dir := t.TempDir()
	for i := 0; i < 5; i++ {
		writeTensor(t, filepath.Join(dir, "data", fmt.Sprintf("d%d", i%2), fmt.Sprintf("x%d.npy", i)), "float32", i, 1, 3, 64, 64)
	}
	for _, c := range []struct {
		progress string
		want     []string
		not      []string
	}{
		{"auto", []string{"5/5 files 100% |████", "240.6 KiB/240.6 KiB, ", "/s, done in ", "depthspace: 5 files: 5 done, 0 skipped, 0 failed"}, nil},
		{"never", []string{"depthspace: 5 files: 5 done"}, []string{"files 100%", "█"}},
	} {
		t.Run(c.progress, func(t *testing.T) {
			screen := inTmux(t, tmux, dir, "depthspace s2d -b 2 --out-dir out-"+c.progress+" --progress "+c.progress+" data")
			for _, w := range c.want {
				if !strings.Contains(screen, w) {
					t.Errorf("%q not on the screen:\n%s", w, screen)
				}
			}
			for _, w := range c.not {
				if strings.Contains(screen, w) {
					t.Errorf("%q on the screen:\n%s", w, screen)
				}
			}
		})
	}
}

// inTmux runs a shell command in a new detached tmux server's pane and
// returns the pane's text once the command has finished.
func inTmux(t *testing.T, tmux, dir, command string) string {
	t.Helper()
	// A server of its own for each call: a socket is not reused while the
	// previous server shuts down.
	f, err := os.CreateTemp(dir, "tmux-*.sock")
	if err != nil {
		t.Fatal(err)
	}
	f.Close()
	sock := f.Name()
	os.Remove(sock)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	tm := func(args ...string) ([]byte, error) {
		cmd := exec.CommandContext(ctx, tmux, append([]string{"-f", "/dev/null", "-S", sock}, args...)...)
		cmd.Dir = dir
		cmd.Env = append(quickExit(), "TERM=xterm-256color", "TMUX=")
		return cmd.CombinedOutput()
	}
	// The pane stays open after the command (sleep) so it can be read;
	// wait-for -S tells the test that the command is done.
	script := fmt.Sprintf("cd %q && %s; echo EXIT=$?; %s -S %q wait-for -S ds-done; sleep 60", dir, command, tmux, sock)
	if out, err := tm("new-session", "-d", "-x", "160", "-y", "20", "sh", "-c", script); err != nil {
		t.Fatalf("tmux new-session: %v\n%s", err, out)
	}
	defer tm("kill-server")
	if out, err := tm("wait-for", "ds-done"); err != nil {
		t.Fatalf("tmux wait-for: %v\n%s", err, out)
	}
	out, err := tm("capture-pane", "-p", "-J")
	if err != nil {
		t.Fatalf("tmux capture-pane: %v\n%s", err, out)
	}
	screen := string(out)
	if !strings.Contains(screen, "EXIT=0") {
		t.Fatalf("the command failed:\n%s", screen)
	}
	return screen
}

// The hidden man command (built with -tags man, as the release does)
// writes one page per command, the batch flags among them, and stays out
// of --help; without the tag there is no man command at all.
func TestManPages(t *testing.T) {
	dir := t.TempDir()
	bin := filepath.Join(t.TempDir(), "depthspace-man")
	goBuild(t, bin, "../../cmd/depthspace", "-tags", "man")
	if out, err := exec.Command(bin, "man", dir).CombinedOutput(); err != nil {
		t.Fatalf("man: %v: %s", err, out)
	}
	var stdout, stderr bytes.Buffer
	if code := run([]string{"man", dir}, strings.NewReader(""), &stdout, &stderr); code != 2 {
		t.Errorf("man without the build tag: exit %d, want 2 (unknown command)", code)
	}
	for _, page := range []string{"depthspace.1", "depthspace-space-to-depth.1", "depthspace-depth-to-space.1", "depthspace-completion-bash.1"} {
		b, err := os.ReadFile(filepath.Join(dir, page))
		if err != nil {
			t.Fatal(err)
		}
		if !strings.HasPrefix(string(b), ".nh\n.TH \"DEPTHSPACE\" \"1\"") {
			t.Errorf("%s does not start like a man page: %.40q", page, b)
		}
		if strings.Contains(page, "-space") {
			for _, flag := range []string{"--out-dir", "--shard", "--skip-existing", "--progress", "--json", "out[n, ch, o1..oK] = in[n, c, o1*b1+k1, ..., oK*bK+kK]"} {
				if !strings.Contains(string(b), flag) {
					t.Errorf("%s does not mention %s", page, flag)
				}
			}
		}
	}
	stdout.Reset()
	if code := run([]string{"--help"}, strings.NewReader(""), &stdout, &stderr); code != 0 || strings.Contains(stdout.String(), "man ") {
		t.Errorf("--help (exit %d) lists the hidden man command:\n%s", code, stdout.String())
	}
}
