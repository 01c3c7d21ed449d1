package compare

import (
	"archive/zip"
	"bytes"
	"encoding/xml"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/depthspace/depthspace/internal/format"
	"github.com/depthspace/depthspace/internal/format/npy"
	fileio "github.com/depthspace/depthspace/internal/io"
	"github.com/depthspace/depthspace/internal/pipeline"
)

// The schemas the reports must be valid against (testdata/README.md says
// where they come from).
// Absolute: the tests change directory.
var junitSchemas = []string{abs("testdata/junit-10.xsd"), abs("testdata/windyroad-junit.xsd")}

func abs(p string) string {
	a, err := filepath.Abs(p)
	if err != nil {
		panic(err)
	}
	return a
}

// validateJUnit checks doc against both schemas with xmllint (Debian
// package libxml2-utils). Without xmllint the test is skipped, unless it
// runs under CI (CI=true), where that is a failure. Call it last.
func validateJUnit(t *testing.T, doc []byte) {
	t.Helper()
	lint, err := exec.LookPath("xmllint")
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("xmllint is needed to validate the JUnit reports (apt-get install libxml2-utils)")
		}
		t.Skip("no xmllint (libxml2-utils): the JUnit report is not validated against the schemas")
	}
	p := filepath.Join(t.TempDir(), "report.xml")
	if err := os.WriteFile(p, doc, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, xsd := range junitSchemas {
		out, err := exec.Command(lint, "--noout", "--schema", xsd, p).CombinedOutput()
		if err != nil {
			t.Errorf("%s: not valid: %v\n%s\n%s", filepath.Base(xsd), err, out, doc)
		}
	}
}

// parsed is a report read back, to check what it says.
type parsed struct {
	Suites []struct {
		Name      string `xml:"name,attr"`
		Tests     int    `xml:"tests,attr"`
		Failures  int    `xml:"failures,attr"`
		Errors    int    `xml:"errors,attr"`
		Time      string `xml:"time,attr"`
		Timestamp string `xml:"timestamp,attr"`
		Hostname  string `xml:"hostname,attr"`
		Props     []struct {
			Name  string `xml:"name,attr"`
			Value string `xml:"value,attr"`
		} `xml:"properties>property"`
		Cases []struct {
			Name      string `xml:"name,attr"`
			Classname string `xml:"classname,attr"`
			Time      string `xml:"time,attr"`
			Failure   *struct {
				Message string `xml:"message,attr"`
				Type    string `xml:"type,attr"`
				Text    string `xml:",chardata"`
			} `xml:"failure"`
			Error *struct {
				Message string `xml:"message,attr"`
				Type    string `xml:"type,attr"`
				Text    string `xml:",chardata"`
			} `xml:"error"`
		} `xml:"testcase"`
		SystemOut string `xml:"system-out"`
		SystemErr string `xml:"system-err"`
	} `xml:"testsuite"`
}

var junitStart = time.Date(2026, 11, 25, 21, 30, 5, 123e6, time.UTC)

// junitOf compares job as the command does and returns its JUnit report,
// read back too.
func junitOf(t *testing.T, job Job) ([]byte, *parsed, bool) {
	t.Helper()
	res, equal, err := Any(job)
	var b bytes.Buffer
	run := JUnitRun{Job: job, Start: junitStart, Elapsed: 1234567 * time.Microsecond, Hostname: "ci-runner"}
	if err := WriteJUnit(&b, run, res, equal, err); err != nil {
		t.Fatal(err)
	}
	p := &parsed{}
	if err := xml.Unmarshal(b.Bytes(), p); err != nil {
		t.Fatalf("not well-formed: %v\n%s", err, b.Bytes())
	}
	if len(p.Suites) != 1 {
		t.Fatalf("%d test suites, want 1\n%s", len(p.Suites), b.Bytes())
	}
	return b.Bytes(), p, equal
}

func writeFile(t *testing.T, path, text string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
}

// writeNpz writes an npz of float64 vectors, one member per name, in the
// order given.
func writeNpz(t *testing.T, path string, names []string, vals [][]float64) {
	t.Helper()
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	z := zip.NewWriter(f)
	for i, n := range names {
		w, err := z.CreateHeader(&zip.FileHeader{Name: n + ".npy", Method: zip.Store})
		if err != nil {
			t.Fatal(err)
		}
		h := format.Header{DType: dtype(t, "float64"), Shape: []int{len(vals[i])}}
		if _, err := w.Write(append(npy.EncodeNpy(h), f64s(vals[i]...)...)); err != nil {
			t.Fatal(err)
		}
	}
	if err := z.Close(); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
}

func job(a, b string, o Options) Job {
	return Job{A: pipeline.Source{Path: a}, B: pipeline.Source{Path: b}, Options: o}
}

// times blanks the durations, which depend on the machine.
var times = regexp.MustCompile(` time="[0-9]+\.[0-9]{3}"`)

// An equal pair: the whole document.
func TestJUnitEqualPair(t *testing.T) {
	t.Chdir(t.TempDir())
	writeFile(t, "ref.json", "[[1.5, 2], [3, 4]]")
	writeFile(t, "got.json", "[[1.5, 2], [3, 4]]")
	doc, _, equal := junitOf(t, job("ref.json", "got.json", exact()))
	if !equal {
		t.Fatal("not equal")
	}
	want := `<?xml version="1.0" encoding="UTF-8"?>
<testsuites>
  <testsuite name="depthspace compare ref.json got.json" package="depthspace.compare" id="0" timestamp="2026-11-25T21:30:05" hostname="ci-runner" tests="1" failures="0" errors="0" skipped="0" time="1.235">
    <properties>
      <property name="a" value="ref.json"></property>
      <property name="b" value="got.json"></property>
      <property name="mode" value="exact"></property>
      <property name="check-error-stat" value="elemwise"></property>
    </properties>
    <testcase name="ref.json" classname="depthspace.compare.ref_json" time="1.235"></testcase>
    <system-out>ref.json and got.json are equal: 4 elements, shape 2,2, float64, bit for bit
</system-out>
    <system-err></system-err>
  </testsuite>
</testsuites>
`
	if string(doc) != want {
		t.Errorf("got\n%s\nwant\n%s", doc, want)
	}
	validateJUnit(t, doc)
}

// A pair that differs is a failure whose text has the statistics of the
// text report; a shape mismatch is a failure of type shape.
func TestJUnitDifferentPair(t *testing.T) {
	t.Chdir(t.TempDir())
	writeFile(t, "ref.json", "[[1, 2, 3], [4, 5, 6]]")
	writeFile(t, "got.json", "[[1, 2.25, 3], [4, 5, 9]]")
	writeFile(t, "flat.json", "[1, 2, 3, 4, 5, 6]")
	o := isclose(0, 0.1)
	doc, p, equal := junitOf(t, job("ref.json", "got.json", o))
	s := p.Suites[0]
	if equal || s.Tests != 1 || s.Failures != 1 || s.Errors != 0 || len(s.Cases) != 1 {
		t.Fatalf("equal %v, tests %d failures %d errors %d\n%s", equal, s.Tests, s.Failures, s.Errors, doc)
	}
	c := s.Cases[0]
	if c.Name != "ref.json" || c.Classname != "depthspace.compare.ref_json" || c.Failure == nil || c.Error != nil {
		t.Fatalf("%+v", c)
	}
	const verdict = "ref.json and got.json differ: 2 of 6 elements, shape 2,3, int64 and float64, rtol 0, atol 0.1"
	if c.Failure.Message != verdict || c.Failure.Type != "values" {
		t.Errorf("message %q type %q", c.Failure.Message, c.Failure.Type)
	}
	for _, want := range []string{
		verdict + "\n",
		"max abs diff 3 at [1, 2]\n",
		"max rel diff 0.5 at [1, 2]\n",
		"mean abs diff 0.5416666666666666, median abs diff 0; 2 mismatching (0.3333333333333333 of the elements)\n",
		"  [0, 1]: 2 vs 2.25\n",
	} {
		if !strings.Contains(c.Failure.Text, want) {
			t.Errorf("failure text lacks %q:\n%s", want, c.Failure.Text)
		}
	}
	// Newlines stay newlines in the file, for people reading it.
	if !strings.Contains(string(doc), "int64 and float64, rtol 0, atol 0.1\nmax abs diff 3 at [1, 2]\n") {
		t.Errorf("text not kept as lines:\n%s", doc)
	}
	var text bytes.Buffer
	res, _, _ := Any(job("ref.json", "got.json", o))
	if err := res.WriteText(&text); err != nil {
		t.Fatal(err)
	}
	if c.Failure.Text != text.String() || s.SystemOut != text.String() {
		t.Errorf("failure text and system-out are not the text report:\n%s\n%s", c.Failure.Text, text.String())
	}
	props := map[string]string{}
	for _, pr := range s.Props {
		props[pr.Name] = pr.Value
	}
	if props["mode"] != "isclose" || props["rtol"] != "0" || props["atol"] != "0.1" {
		t.Errorf("properties %v", props)
	}
	validateJUnit(t, doc)

	doc, p, _ = junitOf(t, job("ref.json", "flat.json", exact()))
	if f := p.Suites[0].Cases[0].Failure; f == nil || f.Type != "shape" || f.Message != "ref.json and flat.json differ in shape: 2,3 and 6" {
		t.Errorf("shape mismatch: %+v\n%s", f, doc)
	}
	validateJUnit(t, doc)
}

// npz archives: a test case per member, named by it; a member on one side
// only is an error that says which side has it. Names of any bytes make a
// well-formed document.
func TestJUnitNpzOneSided(t *testing.T) {
	t.Chdir(t.TempDir())
	odd := "odd <&\"'> \x00\x1b\xff\u2028 name"
	writeNpz(t, "a.npz", []string{"x", "y", "only_a", odd}, [][]float64{{1, 2}, {3, 4}, {5}, {6}})
	writeNpz(t, "b.npz", []string{"y", "x", "only_b", odd}, [][]float64{{3, 4.5}, {1, 2}, {7}, {6}})
	doc, p, equal := junitOf(t, job("a.npz", "b.npz", exact()))
	s := p.Suites[0]
	if equal || s.Tests != 5 || s.Failures != 1 || s.Errors != 2 {
		t.Fatalf("equal %v, tests %d failures %d errors %d\n%s", equal, s.Tests, s.Failures, s.Errors, doc)
	}
	oddShown := `odd <&"'> \x00\x1b\xff` + "\u2028" + ` name`
	type want struct{ name, failure, error string }
	wants := []want{
		{"x", "", ""},
		{"y", "values", ""},
		{oddShown, "", ""},
		{"only_a", "", "only-in-a"},
		{"only_b", "", "only-in-b"},
	}
	for i, c := range s.Cases {
		got := want{name: c.Name}
		if c.Failure != nil {
			got.failure = c.Failure.Type
		}
		if c.Error != nil {
			got.error = c.Error.Type
		}
		if i >= len(wants) || got != wants[i] {
			t.Errorf("case %d: %+v", i, got)
		}
		if c.Classname != "depthspace.compare.a_npz" {
			t.Errorf("classname %q", c.Classname)
		}
	}
	if f := s.Cases[1].Failure; f == nil || f.Message != "a.npz:y and b.npz:y differ: 1 of 2 elements, shape 2, float64, bit for bit" ||
		!strings.Contains(f.Text, "max abs diff 0.5 at [1]\n") {
		t.Errorf("member y: %+v", f)
	}
	if e := s.Cases[3].Error; e == nil || e.Message != "member only_a is only in a (a.npz), not in b (b.npz)" {
		t.Errorf("only_a: %+v", e)
	}
	if e := s.Cases[4].Error; e == nil || e.Message != "member only_b is only in b (b.npz), not in a (a.npz)" {
		t.Errorf("only_b: %+v", e)
	}
	if !strings.Contains(s.SystemOut, "archives a.npz and b.npz differ (3 members compared)") {
		t.Errorf("system-out: %q", s.SystemOut)
	}
	validateJUnit(t, doc)
}

// Directories: a test case per file pair, named by its relative path
// (an npz pair is one case), a file on one side only an error.
func TestJUnitDirectories(t *testing.T) {
	t.Chdir(t.TempDir())
	writeFile(t, "a/x.json", "[1, 2]")
	writeFile(t, "b/x.json", "[1, 2]")
	writeFile(t, "a/sub/y.json", "[[1, 2], [3, 4]]")
	writeFile(t, "b/sub/y.json", "[[1, 2], [3, 5]]")
	writeFile(t, "a/gone.json", "[0]")
	writeFile(t, "b/new.json", "[0]")
	writeNpz(t, "a/m.npz", []string{"p", "q"}, [][]float64{{1}, {2}})
	writeNpz(t, "b/m.npz", []string{"p"}, [][]float64{{1}})
	writeFile(t, "a/meta.json", `{"id": 1}`) // not a tensor: compared byte for byte
	writeFile(t, "b/meta.json", `{"id": 2}`)
	doc, p, equal := junitOf(t, job("a", "b", exact()))
	s := p.Suites[0]
	if equal || s.Tests != 6 || s.Failures != 3 || s.Errors != 2 {
		t.Fatalf("equal %v, tests %d failures %d errors %d\n%s", equal, s.Tests, s.Failures, s.Errors, doc)
	}
	got := map[string]string{}
	for _, c := range s.Cases {
		switch {
		case c.Failure != nil:
			got[c.Name] = c.Failure.Type + ": " + c.Failure.Message
		case c.Error != nil:
			got[c.Name] = c.Error.Type + ": " + c.Error.Message
		default:
			got[c.Name] = "pass"
		}
		if c.Classname != "depthspace.compare.a" {
			t.Errorf("classname %q", c.Classname)
		}
	}
	want := map[string]string{
		"x.json":     "pass",
		"sub/y.json": "values: a/sub/y.json and b/sub/y.json differ: 1 of 4 elements, shape 2,2, int64, bit for bit",
		"m.npz":      "members: archives a/m.npz and b/m.npz differ (1 members compared)",
		"meta.json":  "bytes: a/meta.json and b/meta.json differ in their bytes (not compared as tensors: ",
		"gone.json":  "only-in-a: file gone.json is only in a (a), not in b (b)",
		"new.json":   "only-in-b: file new.json is only in b (b), not in a (a)",
	}
	for k, v := range want {
		if got[k] != v && !(strings.HasSuffix(v, ": ") && strings.HasPrefix(got[k], v)) {
			t.Errorf("%s: %q, want %q", k, got[k], v)
		}
	}
	for _, c := range s.Cases {
		if c.Name == "m.npz" && !strings.Contains(c.Failure.Text, "only in a/m.npz: q\n") {
			t.Errorf("m.npz: %q", c.Failure.Text)
		}
	}
	validateJUnit(t, doc)
}

// A comparison that fails (exit status 2) is one error case, so that CI
// does not keep the report of an earlier run.
func TestJUnitRunError(t *testing.T) {
	t.Chdir(t.TempDir())
	writeFile(t, "ref.json", "[1]")
	doc, p, _ := junitOf(t, job("ref.json", "missing.json", exact()))
	s := p.Suites[0]
	if s.Tests != 1 || s.Errors != 1 || s.Failures != 0 {
		t.Fatalf("%s", doc)
	}
	e := s.Cases[0].Error
	if e == nil || e.Type != "error" || !strings.Contains(e.Message, "missing.json") || !strings.Contains(s.SystemErr, "depthspace: ") {
		t.Errorf("%+v\n%s", e, doc)
	}
	validateJUnit(t, doc)
}

// The file is written through a temporary file and renamed when
// complete; "-" and an input as the report are refused, a directory that
// does not exist fails before the comparison.
func TestJUnitFile(t *testing.T) {
	t.Chdir(t.TempDir())
	writeFile(t, "ref.json", "[1, 2]")
	writeFile(t, "got.json", "[1, 3]")
	writeFile(t, "report.xml", "old")
	j := job("ref.json", "got.json", exact())
	f, err := CreateJUnit("report.xml", j)
	if err != nil {
		t.Fatal(err)
	}
	res, equal, err := Any(j)
	if b, _ := os.ReadFile("report.xml"); string(b) != "old" {
		t.Errorf("the report was touched before Finish: %q", b)
	}
	if err := f.Finish(res, equal, err); err != nil {
		t.Fatal(err)
	}
	doc, err := os.ReadFile("report.xml")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(doc, []byte(`failures="1"`)) || times.FindIndex(doc) == nil {
		t.Errorf("%s", doc)
	}
	if left, _ := filepath.Glob(".*.tmp"); len(left) > 0 {
		t.Errorf("temporary files left: %v", left)
	}
	if _, err := CreateJUnit("-", j); err == nil || !strings.Contains(err.Error(), "standard output carries") {
		t.Errorf("-: %v", err)
	}
	if _, err := CreateJUnit("got.json", j); !errors.Is(err, fileio.ErrIsInput) {
		t.Errorf("an input as the report: %v", err)
	}
	if _, err := CreateJUnit("none/report.xml", j); err == nil || !strings.Contains(err.Error(), "none") {
		t.Errorf("a missing directory: %v", err)
	}
	var nothing *JUnitFile
	if err := nothing.Finish(res, equal, nil); err != nil {
		t.Error(err)
	}
	validateJUnit(t, doc)
}

// xmlSafe escapes what XML cannot hold and nothing else.
func TestJUnitXMLSafe(t *testing.T) {
	for in, want := range map[string]string{
		"plain/name.npy":       "plain/name.npy",
		"tab\tnl\ncr\r":        "tab\tnl\ncr\r",
		"nul\x00esc\x1b":       `nul\x00esc\x1b`,
		"bad\xff\xfeutf8":      `bad\xff\xfeutf8`,
		"\ufffe\uffff":         `\ufffe\uffff`,
		"ok \ufffd \U0001F600": "ok \ufffd \U0001F600",
	} {
		if got := xmlSafe(in); got != want {
			t.Errorf("xmlSafe(%q) = %q, want %q", in, got, want)
		}
	}
	if got := xmlText("a<b>&c\r\n"); got != "a&lt;b&gt;&amp;c&#xD;\n" {
		t.Errorf("xmlText: %q", got)
	}
}

// The report is written by hand (junitSuite.write): its attributes are
// escaped as encoding/xml escapes them, and read back the same.
func TestJUnitAttributeEscaping(t *testing.T) {
	s := xmlSafe("a\"b'c&d<e>f\tg\nh\ri é \x00 \u2028 end")
	var want bytes.Buffer
	if err := xml.EscapeText(&want, []byte(s)); err != nil {
		t.Fatal(err)
	}
	if got := attr(s); got != want.String() {
		t.Errorf("attr: %q, encoding/xml: %q", got, want.String())
	}
	var v struct {
		A string `xml:"a,attr"`
	}
	if err := xml.Unmarshal([]byte(`<x a="`+attr(s)+`"></x>`), &v); err != nil || v.A != s {
		t.Errorf("read back: %q, %v; want %q", v.A, err, s)
	}
}
