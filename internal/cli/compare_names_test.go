package cli

import (
	"bytes"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"unicode"

	"github.com/depthspace/depthspace/internal/format"
	"github.com/depthspace/depthspace/internal/format/npy"
)

// oneLineEach fails when text has a character that is not printable
// other than the newlines ending its lines.
func oneLineEach(t *testing.T, what, text string) {
	t.Helper()
	for _, r := range strings.TrimSuffix(text, "\n") {
		if r != '\n' && !unicode.IsGraphic(r) {
			t.Errorf("%s: %U in\n%s", what, r, text)
			return
		}
	}
}

// writeInt16Npy writes a one-dimensional int16 npy file.
func writeInt16Npy(t *testing.T, path string, vals ...byte) {
	t.Helper()
	dt, _ := format.ParseDType("int16")
	h := format.Header{DType: dt, Shape: []int{len(vals) / 2}}
	if err := os.WriteFile(path, append(npy.EncodeNpy(h), vals...), 0o644); err != nil {
		t.Fatal(err)
	}
}

// Files named with ESC, CR, LF, a tab and a byte that is not UTF-8: info's
// rows stay one row each, their columns aligned; compare's report and
// error lines stay one line each, the names escaped.
func TestHostileNamesShown(t *testing.T) {
	dir := t.TempDir()
	names := []string{"a\x1b[2Jb", "cr\rx", "lf\nx", "tab\tx", "bad\xffx"}
	for _, side := range []string{"a", "b"} {
		if err := os.MkdirAll(filepath.Join(dir, side), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for _, n := range names {
		writeInt16Npy(t, filepath.Join(dir, "a", n+".npy"), 1, 0, 2, 0)
		writeInt16Npy(t, filepath.Join(dir, "b", n+".npy"), 1, 0, 3, 0)
	}
	var out, errb bytes.Buffer
	if code := run([]string{"info", filepath.Join(dir, "a")}, nil, &out, &errb); code != 0 {
		t.Fatalf("info: exit %d: %s", code, errb.String())
	}
	oneLineEach(t, "info", out.String())
	lines := strings.Split(strings.TrimSuffix(out.String(), "\n"), "\n")
	if len(lines) != len(names) {
		t.Fatalf("info: %d rows for %d files:\n%s", len(lines), len(names), out.String())
	}
	col := -1 // where the second column starts: the same on every row
	for _, l := range lines {
		i := strings.Index(l, "  npy 1.0")
		for i >= 0 && i+2 < len(l) && l[i+1] == ' ' {
			i++
		}
		if col >= 0 && i != col {
			t.Errorf("info: columns not aligned:\n%s", out.String())
			break
		}
		col = i
	}

	out.Reset()
	errb.Reset()
	if code := run([]string{"compare", filepath.Join(dir, "a"), filepath.Join(dir, "b")}, nil, &out, &errb); code != 1 {
		t.Fatalf("compare: exit %d: %s", code, errb.String())
	}
	oneLineEach(t, "compare", out.String())
	if n := strings.Count(out.String(), "\n"); n != 7*len(names)+1 {
		t.Errorf("compare: %d lines, want %d:\n%s", n, 7*len(names)+1, out.String())
	}
	if !strings.Contains(out.String(), `a\x1b[2Jb.npy" and "`) {
		t.Errorf("compare: name not escaped:\n%s", out.String())
	}

	// An error line naming a member: one line, escaped.
	out.Reset()
	errb.Reset()
	if code := run([]string{"compare", "--atol", "no\x1b\nx:1", filepath.Join(dir, "a"), filepath.Join(dir, "b")}, nil, &out, &errb); code != 2 {
		t.Fatalf("compare --atol: exit %d: %s", code, errb.String())
	}
	if got := errb.String(); strings.Count(got, "\n") != 1 || !strings.HasPrefix(got, `depthspace: --atol "no\x1b\nx":…: no member or file of either input is called "no\x1b\nx" (names: "a\x1b[2Jb", `) {
		t.Errorf("compare --atol: stderr %q", got)
	}
	oneLineEach(t, "compare --atol", errb.String())
}

// failWriter fails every write, as a full disk does.
type failWriter struct{}

func (failWriter) Write([]byte) (int, error) { return 0, syscall.ENOSPC }

// compare --json (and text) that cannot be written is exit 2, one line.
func TestCompareReportNotWritten(t *testing.T) {
	dir := t.TempDir()
	for _, side := range []string{"a", "b"} {
		if err := os.MkdirAll(filepath.Join(dir, side), 0o755); err != nil {
			t.Fatal(err)
		}
		writeInt16Npy(t, filepath.Join(dir, side, "x.npy"), 1, 0, 2, 0)
	}
	for _, args := range [][]string{
		{"compare", "--json", filepath.Join(dir, "a"), filepath.Join(dir, "b")},
		{"compare", "--json", filepath.Join(dir, "a", "x.npy"), filepath.Join(dir, "b", "x.npy")},
		{"compare", filepath.Join(dir, "a"), filepath.Join(dir, "b")},
	} {
		var errb bytes.Buffer
		if code := run(args, nil, failWriter{}, &errb); code != 2 || !strings.Contains(errb.String(), syscall.ENOSPC.Error()) {
			t.Errorf("%v: exit %d, stderr %q", args[1:], code, errb.String())
		}
	}
	if !errors.Is(shownError{syscall.ENOSPC}, syscall.ENOSPC) {
		t.Error("shownError hides its cause")
	}
}

// TestBatchFailureNameEscaped: a batch's failure line names its input
// escaped as %q escapes (a newline, an escape sequence), so that it is
// one line and nothing reaches the terminal raw; and a member list in an
// error line shows an empty name as "".
func TestBatchFailureNameEscaped(t *testing.T) {
	dir := t.TempDir()
	in := filepath.Join(dir, "in")
	if err := os.Mkdir(in, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(in, "x\ny\x1b[31m.npy"), []byte("junk"), 0o644); err != nil {
		t.Fatal(err)
	}
	var stderr strings.Builder
	code := run([]string{"s2d", "-b", "2", "--progress", "never", "--out-dir", filepath.Join(dir, "out"), in}, nil, io.Discard, &stderr)
	if code != 2 {
		t.Fatalf("exit %d, want 2; stderr %q", code, stderr.String())
	}
	oneLineEach(t, "batch stderr", stderr.String())
	if want := `in/x\ny\x1b[31m.npy: `; !strings.Contains(stderr.String(), want) {
		t.Errorf("stderr %q does not name the input as %q", stderr.String(), want)
	}
}
