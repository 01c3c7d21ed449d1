package compare

import (
	"archive/tar"
	"bytes"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"

	"github.com/depthspace/depthspace/internal/format"
	"github.com/depthspace/depthspace/internal/format/npy"
)

// hostileNames are member and file names a report must show on one line:
// ESC (a terminal sequence), CR, LF, NUL, a byte that is not UTF-8, a tab
// and a line separator.
var hostileNames = []string{"a\x1b[31mred", "cr\rx", "lf\nx", "nul\x00x", "bad\xffx", "tab\tx", "ls\u2028x"}

func TestName(t *testing.T) {
	for in, want := range map[string]string{
		"out0": "out0", "sub/out 1": "sub/out 1", "é": "é",
		"a\x1b[31mred": `"a\x1b[31mred"`, "lf\nx": `"lf\nx"`, "bad\xffx": `"bad\xffx"`, "nul\x00x": `"nul\x00x"`, "ls\u2028x": `"ls\u2028x"`,
	} {
		if got := Name(in); got != want {
			t.Errorf("Name(%q) = %s, want %s", in, got, want)
		}
	}
	if got, want := Escaped("x: member a\x1b\nb\xff: bad"), `x: member a\x1b\nb\xff: bad`; got != want {
		t.Errorf("Escaped: %s, want %s", got, want)
	}
}

// checkLines fails when a text report has a line with a control
// character or a byte that is not UTF-8, or has not the lines it should.
func checkLines(t *testing.T, what, text string, lines int) {
	t.Helper()
	if !utf8.ValidString(text) {
		t.Errorf("%s: text not UTF-8:\n%s", what, text)
	}
	for _, r := range strings.TrimSuffix(text, "\n") {
		if r != '\n' && !unicode.IsGraphic(r) {
			t.Errorf("%s: text has %U:\n%s", what, r, text)
			break
		}
	}
	if n := strings.Count(text, "\n"); n != lines {
		t.Errorf("%s: %d lines, want %d:\n%s", what, n, lines, text)
	}
}

// Names with control characters and bytes that are not UTF-8, in npz,
// tar and directory pairs: every text line stays one line, --json and
// --junit carry the exact name, a JUnit failure message is the whole
// verdict line, and the report is valid against both schemas.
func TestHostileNames(t *testing.T) {
	t.Chdir(t.TempDir())
	a := make([][]float64, len(hostileNames))
	b := make([][]float64, len(hostileNames))
	for i := range hostileNames {
		a[i], b[i] = []float64{1, 2}, []float64{1, 2.5} // every pair differs
	}
	writeNpz(t, "a.npz", hostileNames, a)
	writeNpz(t, "b.npz", hostileNames, b)
	var docs [][]byte
	check := func(what string, j Job, memberLines int) {
		res, equal, err := Any(j)
		if err != nil || equal {
			t.Fatalf("%s: equal %v, %v", what, equal, err)
		}
		var text bytes.Buffer
		if err := res.WriteText(&text); err != nil {
			t.Fatal(err)
		}
		// Per pair: the verdict, max abs, max rel, mean, the list's
		// heading, the required tolerances and one difference; then the verdict
		// of the whole.
		checkLines(t, what, text.String(), len(hostileNames)*7+memberLines)
		var js bytes.Buffer
		if err := res.(interface{ WriteJSONLines(w io.Writer) error }).WriteJSONLines(&js); err != nil {
			t.Fatal(err)
		}
		got := map[string]bool{}
		for _, line := range strings.Split(strings.TrimSpace(js.String()), "\n") {
			var rec struct{ Member, File string }
			if err := json.Unmarshal([]byte(line), &rec); err != nil {
				t.Fatalf("%s: %v: %s", what, err, line)
			}
			got[rec.Member+rec.File] = true
		}
		doc, p, _ := junitOf(t, j)
		cases := map[string]string{}
		for _, c := range p.Suites[0].Cases {
			if c.Failure == nil {
				t.Fatalf("%s: case %q has no failure", what, c.Name)
			}
			cases[c.Name] = c.Failure.Message
		}
		for _, n := range hostileNames {
			key := n
			if what == "directories" {
				key = n + ".npy"
			}
			if !got[key] && !got[strings.ToValidUTF8(key, "\ufffd")] {
				t.Errorf("%s: no JSON record named %q", what, key)
			}
			msg, ok := cases[xmlSafe(key)]
			if !ok {
				t.Errorf("%s: no test case named %q", what, xmlSafe(key))
			}
			if !strings.HasSuffix(msg, "differ: 1 of 2 elements, shape 2, float64, bit for bit") {
				t.Errorf("%s: %q: failure message %q cut short", what, key, msg)
			}
		}
		docs = append(docs, doc)
	}
	check("npz", job("a.npz", "b.npz", exact()), 1)

	// A tar shard (no NUL: tar cannot carry it).
	for _, side := range []struct {
		name string
		v    []float64
	}{{"a.tar", a[0]}, {"b.tar", b[0]}} {
		var buf bytes.Buffer
		tw := tar.NewWriter(&buf)
		for _, n := range hostileNames {
			if strings.Contains(n, "\x00") {
				n = "nul-less"
			}
			h := format.Header{DType: dtype(t, "float64"), Shape: []int{2}}
			body := append(npy.EncodeNpy(h), f64s(side.v...)...)
			if err := tw.WriteHeader(&tar.Header{Name: n + ".npy", Mode: 0o644, Size: int64(len(body)), Format: tar.FormatPAX}); err != nil {
				t.Fatal(err)
			}
			if _, err := tw.Write(body); err != nil {
				t.Fatal(err)
			}
		}
		if err := tw.Close(); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(side.name, buf.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	res, equal, err := Any(job("a.tar", "b.tar", exact()))
	if err != nil || equal {
		t.Fatalf("tar: equal %v, %v", equal, err)
	}
	var text bytes.Buffer
	if err := res.WriteText(&text); err != nil {
		t.Fatal(err)
	}
	checkLines(t, "tar", text.String(), len(hostileNames)*7+1)

	// Directories (no NUL: a file name cannot hold it).
	for _, side := range []struct {
		dir string
		v   []float64
	}{{"da", a[0]}, {"db", b[0]}} {
		for _, n := range hostileNames {
			if strings.Contains(n, "\x00") {
				continue
			}
			h := format.Header{DType: dtype(t, "float64"), Shape: []int{2}}
			writeFile(t, filepath.Join(side.dir, n+".npy"), string(append(npy.EncodeNpy(h), f64s(side.v...)...)))
		}
	}
	hostile := hostileNames
	hostileNames = nil
	for _, n := range hostile {
		if !strings.Contains(n, "\x00") {
			hostileNames = append(hostileNames, n)
		}
	}
	defer func() { hostileNames = hostile }()
	check("directories", job("da", "db", exact()), 1)
	for _, doc := range docs {
		validateJUnit(t, doc)
	}
}
