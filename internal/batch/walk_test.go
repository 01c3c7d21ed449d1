package batch

import (
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/depthspace/depthspace/internal/format"
	"github.com/depthspace/depthspace/internal/format/json"
	"github.com/depthspace/depthspace/internal/format/npy"
	"github.com/depthspace/depthspace/internal/format/raw"
	"github.com/depthspace/depthspace/internal/pipeline"
)

func TestOutputName(t *testing.T) {
	for _, c := range []struct {
		rel  string
		to   format.Kind
		want string
	}{
		{"a/x.npy", "", "a/x.npy"},
		{"a/x.npy", npy.KindNpy, "a/x.npy"},
		{"a/x.npy", json.KindJSON, "a/x.json"},
		{"a/x.JSON", npy.KindNpy, "a/x.npy"},
		{"x.json", raw.KindRaw, "x.raw"},
		{"x.bin", raw.KindRaw, "x.bin"},
		{"x.raw", raw.KindRaw, "x.raw"},
		{"x.bin", npy.KindNpy, "x.npy"},
		{"frames.dat", npy.KindNpy, "frames.dat.npy"},
		{"noext", json.KindJSON, "noext.json"},
		{"v1.2/x.npy", json.KindJSON, "v1.2/x.json"},
		{"x.npy", format.Kind("onnx"), "x.pb"},
		{"x.pb", format.Kind("npz"), "x.npz"},
		{"x.npz", npy.KindNpy, "x.npy"},
	} {
		if got := OutputName(c.rel, c.to); got != c.want {
			t.Errorf("OutputName(%q, %q) = %q, want %q", c.rel, c.to, got, c.want)
		}
	}
}

func touch(t *testing.T, names ...string) {
	t.Helper()
	for _, n := range names {
		if err := os.MkdirAll(filepath.Dir(n), 0o777); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(n, []byte("x"), 0o666); err != nil {
			t.Fatal(err)
		}
	}
}

func chdir(t *testing.T) string {
	dir := t.TempDir()
	t.Chdir(dir)
	return dir
}

func inputs(items []item) string {
	var b strings.Builder
	for _, it := range items {
		b.WriteString(filepath.ToSlash(it.input))
		if it.err != nil {
			b.WriteString("!")
		} else {
			b.WriteString(">" + filepath.ToSlash(it.output))
		}
		b.WriteString(" ")
	}
	return strings.TrimSpace(b.String())
}

// Walking: recursive, byte-wise sorted by relative path (not by
// directory first, not by locale), only tensor extensions, relative paths
// kept, command-line files by their base name.
func TestListOrderAndNames(t *testing.T) {
	chdir(t)
	touch(t, "d/b.npy", "d/a/z.json", "d/a.npy", "d/Z.npy", "d/a-b.raw", "d/notes.txt", "d/.hidden.npy",
		"d/.x.npy.depthspace-123.tmp", "d/sub/deep/er/x.BIN", "f/one.dat")
	items, err := list([]string{"d", "f/one.dat"}, "out", nil, "")
	if err != nil {
		t.Fatal(err)
	}
	want := "d/.hidden.npy>out/.hidden.npy d/Z.npy>out/Z.npy d/a-b.raw>out/a-b.raw d/a.npy>out/a.npy d/a/z.json>out/a/z.json " +
		"d/b.npy>out/b.npy f/one.dat>out/one.dat d/sub/deep/er/x.BIN>out/sub/deep/er/x.BIN"
	if got := inputs(items); got != want {
		t.Errorf("list:\n got %s\nwant %s", got, want)
	}
	items, err = list([]string{"d/a"}, "out", nil, npy.KindNpy)
	if err != nil {
		t.Fatal(err)
	}
	if got := inputs(items); got != "d/a/z.json>out/z.npy" {
		t.Errorf("--to npy: %s", got)
	}
}

// Two inputs that would write one output: the later one in the batch's
// order is a failure item naming both, whatever the distance between
// them in the order (a subdirectory's files may come between).
func TestListCollision(t *testing.T) {
	chdir(t)
	touch(t, "a/x.npy", "b/x.npy", "c/x.json", "c/x.npy.d/deep.npy", "c/x.npz")
	collided := func(items []item) string {
		var n []string
		for _, it := range items {
			if it.err != nil {
				n = append(n, it.input+": "+it.err.Error())
			}
		}
		return strings.Join(n, "; ")
	}
	items, err := list([]string{"a", "b"}, "out", nil, "")
	if err != nil || !strings.Contains(collided(items), "b/x.npy: b/x.npy: not written: its output out/x.npy is a/x.npy's") {
		t.Errorf("collision of directories: %v %s", err, collided(items))
	}
	if items, _ := list([]string{"a/x.npy", "b"}, "out", nil, ""); collided(items) == "" {
		t.Error("collision of a file and a directory: no error")
	}
	if items, _ := list([]string{"a", "c"}, "out", nil, npy.KindNpy); !strings.Contains(collided(items), "out/x.npy") {
		t.Errorf("collision made by --to: %s", collided(items))
	}
	// x.json and x.npz of one directory, with x.npy.d/ between them in
	// the order: both --to npy.
	if items, _ := list([]string{"c"}, "out", nil, npy.KindNpy); !strings.Contains(collided(items), "c/x.npz: not written: its output out/x.npy is c/x.json's") {
		t.Errorf("collision across a subdirectory: %s", collided(items))
	}
	if items, err := list([]string{"a", "c"}, "out", nil, ""); err != nil || collided(items) != "" {
		t.Errorf("x.npy and x.json: %v %s", err, collided(items))
	}
}

// The output directory is never walked, even inside an input directory
// or reached through a link; an input that is the output directory is
// refused.
func TestListSkipsOutDir(t *testing.T) {
	chdir(t)
	touch(t, "d/x.npy", "d/out/x.npy", "d/out/y.npy")
	fi, err := os.Stat("d/out")
	if err != nil {
		t.Fatal(err)
	}
	items, err := list([]string{"d"}, "d/out", fi, "")
	if err != nil {
		t.Fatal(err)
	}
	if got := inputs(items); got != "d/x.npy>d/out/x.npy" {
		t.Errorf("got %s", got)
	}
	if _, err := list([]string{"d/out"}, "d/out", fi, ""); err == nil {
		t.Error("the output directory as an input: no error")
	}
	if runtime.GOOS != "windows" {
		if err := os.Symlink("out", "d/link"); err != nil {
			t.Fatal(err)
		}
		items, _ := list([]string{"d"}, "d/out", fi, "")
		if got := inputs(items); got != "d/x.npy>d/out/x.npy" {
			t.Errorf("through a link: got %s", got)
		}
	}
}

// Links to files and directories are followed; a loop is one failure
// item, not an endless walk; a dangling link named like a tensor is a
// failure, others are ignored; a missing argument is a failure item.
func TestListLinks(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("symbolic links need privileges on Windows")
	}
	chdir(t)
	touch(t, "d/a/x.npy", "elsewhere/y.npy", "z.npy")
	for _, l := range [][2]string{
		{"..", "d/a/up"}, {".", "d/self"}, {"../../elsewhere", "d/a/other"}, {"../z.npy", "d/z.npy"},
		{"nowhere.npy", "d/dangling.npy"}, {"nowhere", "d/dangling"}, {"loop.npy", "d/loop.npy"},
	} {
		if err := os.Symlink(l[0], l[1]); err != nil {
			t.Fatal(err)
		}
	}
	items, err := list([]string{"d", "missing.npy"}, "out", nil, "")
	if err != nil {
		t.Fatal(err)
	}
	want := "d/a/other/y.npy>out/a/other/y.npy d/a/up! d/a/x.npy>out/a/x.npy d/dangling.npy! d/loop.npy! missing.npy! d/self! d/z.npy>out/z.npy"
	if got := inputs(items); got != want {
		t.Errorf("list:\n got %s\nwant %s", got, want)
	}
	for _, it := range items {
		if it.err != nil && !strings.HasPrefix(it.err.Error(), it.input+": ") {
			t.Errorf("%s: error %q does not start with the path", it.input, it.err)
		}
	}
}

func TestThreadsFor(t *testing.T) {
	const chunk = pipeline.DefaultChunkBytes // a thread per chunk
	for _, c := range []struct {
		size          int64
		threads, want int
	}{{0, 8, 1}, {100, 8, 1}, {3 * chunk / 2, 8, 1}, {2 * chunk, 8, 2}, {8 * chunk, 8, 8}, {1 << 40, 8, 8}, {1 << 40, 1, 1}} {
		if got := threadsFor(c.size, c.threads); got != c.want {
			t.Errorf("threadsFor(%d, %d) = %d, want %d", c.size, c.threads, got, c.want)
		}
	}
}
