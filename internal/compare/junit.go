package compare

import (
	"github.com/depthspace/depthspace/internal/pipeline"

	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	fileio "github.com/depthspace/depthspace/internal/io"
)

// --junit FILE: the comparison as a JUnit XML report, for CI systems
// (Jenkins, GitLab, GitHub test reporters). One <testsuite> inside
// <testsuites>; one <testcase> per member pair of two containers, per file
// pair of two directories, or one for a pair of tensors. A pair that
// differs has a <failure> whose text is the pair's text report (shape,
// dtype, the error statistics, the worst index, the tolerances); a member
// or file only one side has is an <error>, and so is a comparison that
// failed (exit status 2), so that a CI job never keeps a stale report.
//
// The report is valid against both the Jenkins xUnit plugin's
// junit-10.xsd and the stricter Ant schema (windyroad JUnit.xsd), which
// junit_test.go checks with xmllint: times in seconds with three
// decimals, a timestamp without zone (UTC), <properties>, <system-out>
// and <system-err> always present, <testsuites> without attributes.

type junitSuite struct {
	Name       string
	Package    string
	ID         int
	Timestamp  string
	Hostname   string
	Tests      int
	Failures   int
	Errors     int
	Skipped    int
	Time       string
	Properties []junitProperty
	Cases      []junitCase
	// The text of <system-out> and <system-err>, escaped by xmlText.
	SystemOut, SystemErr string
}

type junitProperty struct {
	Name  string
	Value string
}

type junitCase struct {
	Name      string
	Classname string
	Time      string
	Failure   *junitProblem
	Error     *junitProblem
}

// junitProblem is a <failure> or an <error>.
type junitProblem struct {
	Message string
	Type    string
	Text    string // escaped by xmlText
}

// JUnitRun is what the report says of the run besides its result.
type JUnitRun struct {
	Job
	Start    time.Time     // when the comparison started
	Elapsed  time.Duration // how long it took
	Hostname string        // "" is os.Hostname's, else "localhost"
}

// WriteJUnit writes the JUnit XML report of a comparison: result and equal
// as Any returns them, or runErr when the comparison failed.
func WriteJUnit(w io.Writer, run JUnitRun, result interface{ WriteText(io.Writer) error }, equal bool, runErr error) error {
	host := run.Hostname
	if host == "" {
		host, _ = os.Hostname()
		if strings.TrimSpace(host) == "" {
			host = "localhost"
		}
	}
	s := junitSuite{
		Name:       xmlSafe(strings.TrimSpace("depthspace compare " + run.A.Path + " " + run.B.Path)),
		Package:    "depthspace.compare",
		Timestamp:  run.Start.UTC().Format("2006-01-02T15:04:05"),
		Hostname:   xmlSafe(host),
		Time:       seconds(run.Elapsed),
		Properties: junitProps(run),
	}
	class := junitClass(run.A.Path)
	add := func(name string, d time.Duration, failure, errs *junitProblem) {
		c := junitCase{Name: xmlSafe(name), Classname: class, Time: seconds(d), Failure: failure, Error: errs}
		if failure != nil {
			s.Failures++
		}
		if errs != nil {
			s.Errors++
		}
		s.Cases = append(s.Cases, c)
	}
	// The single pair, or a run that failed, is named after A's file.
	single := filepath.Base(run.A.Path)
	if run.A.Path == "" { // a run refused before it had inputs (a flag error)
		single = "compare"
	}
	if runErr != nil {
		result = nil
	}
	switch r := result.(type) {
	case nil:
		if runErr == nil {
			return errors.New("internal error: a JUnit report of nothing")
		}
		msg := runErr.Error()
		add(single, run.Elapsed, nil, &junitProblem{Message: xmlSafe(msg), Type: "error", Text: xmlText(msg + "\n")})
		s.SystemErr = xmlText("depthspace: " + msg + "\n")
	case *Report:
		add(single, run.Elapsed, junitFailure(r, r.Equal), nil)
	case *ArchiveReport:
		for i, m := range r.Members {
			add(r.names[i], m.elapsed, junitFailure(m, m.Equal), nil)
		}
		for _, n := range r.OnlyA {
			add(n, 0, nil, junitOnly(n, "member", "a", r.A, "b", r.B))
		}
		for _, n := range r.OnlyB {
			add(n, 0, nil, junitOnly(n, "member", "b", r.B, "a", r.A))
		}
	case *RunsReport:
		for _, p := range r.Pairs {
			run := strings.TrimPrefix(p.B, r.Path+":")
			for i, m := range p.Members {
				add(run+": "+p.names[i], m.elapsed, junitFailure(m, m.Equal), nil)
			}
			for _, n := range p.OnlyA {
				add(run+": "+n, 0, nil, junitOnly(n, "member", "a", p.A, "b", p.B))
			}
			for _, n := range p.OnlyB {
				add(run+": "+n, 0, nil, junitOnly(n, "member", "b", p.B, "a", p.A))
			}
		}
	case *DirReport:
		for _, f := range r.Files {
			add(f.Rel, f.elapsed, junitFailure(f.Result, f.Equal), nil)
		}
		for _, n := range r.OnlyA {
			add(n, 0, nil, junitOnly(n, "file", "a", r.A, "b", r.B))
		}
		for _, n := range r.OnlyB {
			add(n, 0, nil, junitOnly(n, "file", "b", r.B, "a", r.A))
		}
	default:
		add(single, run.Elapsed, junitFailure(r, equal), nil)
	}
	s.Tests = len(s.Cases)
	if result != nil {
		var text bytes.Buffer
		if err := result.WriteText(&text); err != nil {
			return err
		}
		s.SystemOut = xmlText(text.String())
	}
	var b bytes.Buffer
	s.write(&b)
	_, err := w.Write(b.Bytes())
	return err
}

// write writes the report as encoding/xml's Encoder, indented by two
// spaces, did: a start and an end tag for every element, even empty,
// attributes escaped as its EscapeText escapes them. It is written by hand
// because encoding/xml's package initialisation (a map of 250 HTML
// entities) and its reflection cost every run of the program at start,
// --junit or not; TestJUnitEqualPair holds a whole document.
func (s *junitSuite) write(b *bytes.Buffer) {
	b.WriteString(`<?xml version="1.0" encoding="UTF-8"?>` + "\n<testsuites>\n")
	fmt.Fprintf(b, `  <testsuite name="%s" package="%s" id="%d" timestamp="%s" hostname="%s" tests="%d" failures="%d" errors="%d" skipped="%d" time="%s">`+"\n",
		attr(s.Name), attr(s.Package), s.ID, attr(s.Timestamp), attr(s.Hostname),
		s.Tests, s.Failures, s.Errors, s.Skipped, attr(s.Time))
	b.WriteString("    <properties>")
	for _, p := range s.Properties {
		fmt.Fprintf(b, `%s      <property name="%s" value="%s"></property>`, "\n", attr(p.Name), attr(p.Value))
	}
	if len(s.Properties) > 0 {
		b.WriteString("\n    ")
	}
	b.WriteString("</properties>\n")
	for _, c := range s.Cases {
		fmt.Fprintf(b, `    <testcase name="%s" classname="%s" time="%s">`, attr(c.Name), attr(c.Classname), attr(c.Time))
		for _, p := range []struct {
			tag string
			*junitProblem
		}{{"failure", c.Failure}, {"error", c.Error}} {
			if p.junitProblem != nil {
				fmt.Fprintf(b, `%s      <%s message="%s" type="%s">%s</%s>`, "\n", p.tag, attr(p.Message), attr(p.Type), p.Text, p.tag)
			}
		}
		if c.Failure != nil || c.Error != nil {
			b.WriteString("\n    ")
		}
		b.WriteString("</testcase>\n")
	}
	fmt.Fprintf(b, "    <system-out>%s</system-out>\n    <system-err>%s</system-err>\n  </testsuite>\n</testsuites>\n", s.SystemOut, s.SystemErr)
}

// attr escapes an attribute's value (xmlSafe already) as encoding/xml's
// EscapeText does.
func attr(s string) string { return attrEscaper().Replace(s) }

// The escapers are made on first use, not when the program starts.
var attrEscaper = sync.OnceValue(func() *strings.Replacer {
	return strings.NewReplacer(`"`, "&#34;", "'", "&#39;", "&", "&amp;", "<", "&lt;", ">", "&gt;", "\t", "&#x9;", "\n", "&#xA;", "\r", "&#xD;")
})

// junitFailure is the <failure> of a pair that differs (nil for an equal
// one): its message the report's verdict line, its text the whole report.
func junitFailure(r interface{ WriteText(io.Writer) error }, equal bool) *junitProblem {
	if equal {
		return nil
	}
	var b bytes.Buffer
	if err := r.WriteText(&b); err != nil {
		return &junitProblem{Message: xmlSafe(err.Error()), Type: "different"}
	}
	text := b.String()
	lines := strings.Split(strings.TrimRight(text, "\n"), "\n")
	msg, typ := lines[len(lines)-1], "different"
	switch r := r.(type) {
	case *Report:
		msg, typ = lines[0], "values"
		if r.Mismatch != "" {
			typ = r.Mismatch
		}
	case *ArchiveReport:
		typ = "members"
	case *BytesReport:
		typ = "bytes"
	}
	return &junitProblem{Message: xmlSafe(msg), Type: typ, Text: xmlText(text)}
}

// junitOnly is the <error> of a member or file only one side has.
func junitOnly(name, what, side, path, other, otherPath string) *junitProblem {
	msg := fmt.Sprintf("%s %s is only in %s (%s), not in %s (%s)", what, name, side, path, other, otherPath)
	return &junitProblem{Message: xmlSafe(msg), Type: "only-in-" + side, Text: xmlText(msg + "\n")}
}

// junitProps records the inputs and the tolerances of the run.
func junitProps(run JUnitRun) []junitProperty {
	p := []junitProperty{{"a", run.A.Path}, {"b", run.B.Path}}
	o := run.Options
	switch {
	case o.Func != "" && o.Func != FuncSimple:
		p = append(p, junitProperty{"mode", o.Func})
	case !o.Tolerant:
		p = append(p, junitProperty{"mode", "exact"})
	default:
		p = append(p, junitProperty{"mode", "isclose"},
			junitProperty{"rtol", numText(o.RTol)}, junitProperty{"atol", numText(o.ATol)})
		for _, m := range []struct {
			flag string
			tol  map[string]float64
		}{{"rtol", o.MemberRTol}, {"atol", o.MemberATol}} {
			names := make([]string, 0, len(m.tol))
			for n := range m.tol {
				names = append(names, n)
			}
			sort.Strings(names)
			for _, n := range names {
				p = append(p, junitProperty{m.flag + ":" + n, numText(m.tol[n])})
			}
		}
	}
	if fn := o.Func; fn != "" && fn != FuncSimple {
		p = append(p, junitProperty{"compare-func", fn}, junitProperty{strings.TrimPrefix(ThresholdFlag(fn), "--"), numText(o.Threshold)})
		for _, n := range sortedKeys(o.MemberThreshold) {
			p = append(p, junitProperty{strings.TrimPrefix(ThresholdFlag(fn), "--") + ":" + n, numText(o.MemberThreshold[n])})
		}
		if o.InfEqual {
			p = append(p, junitProperty{"infinities-compare-equal", "true"})
		}
	}
	stat := o.Stat
	if stat == "" {
		stat = "elemwise"
	}
	p = append(p, junitProperty{"check-error-stat", stat})
	if stat == "quantile" {
		p = append(p, junitProperty{"error-quantile", numText(o.Quantile)})
	}
	for i := range p {
		p[i].Name, p[i].Value = xmlSafe(p[i].Name), xmlSafe(p[i].Value)
	}
	return p
}

// junitClass is the classname of every test case: "depthspace.compare."
// and A's path with its dots made underscores, so that Jenkins, which
// takes what follows the last dot as the class, groups the cases under
// the package depthspace.compare and the class A (golden/out_npz).
func junitClass(a string) string {
	p := filepath.ToSlash(filepath.Clean(a))
	return xmlSafe("depthspace.compare." + strings.ReplaceAll(p, ".", "_"))
}

// seconds prints a duration as JUnit's time: seconds with three decimals
// (the Jenkins schema allows no more).
func seconds(d time.Duration) string {
	return strconv.FormatFloat(max(d, 0).Seconds(), 'f', 3, 64)
}

// xmlSafe makes s representable in XML 1.0: bytes that are not UTF-8 and
// characters XML forbids (controls other than tab, newline and carriage
// return, U+FFFE, U+FFFF) become \xNN or \uNNNN, so that a name made of
// any bytes still reads as what it was. encoding/xml escapes the rest.
func xmlSafe(s string) string {
	return pipeline.EscapeWhere(s, func(r rune) bool { return !xmlChar(r) }, func(b *strings.Builder, c string) {
		r, n := utf8.DecodeRuneInString(c)
		switch {
		case r == utf8.RuneError && n == 1:
			fmt.Fprintf(b, `\x%02x`, c[0])
		case r < 0x100:
			fmt.Fprintf(b, `\x%02x`, r)
		default:
			fmt.Fprintf(b, `\u%04x`, r)
		}
	})
}

// xmlText is s as the text of an element: xmlSafe, then escaped as
// encoding/xml does but for newlines and tabs, which stay as they are.
// A carriage return is written &#xD; (a parser would make it a newline).
func xmlText(s string) string {
	return textEscaper().Replace(xmlSafe(s))
}

var textEscaper = sync.OnceValue(func() *strings.Replacer {
	return strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;", "\r", "&#xD;")
})

// xmlChar: XML 1.0's Char production.
func xmlChar(r rune) bool {
	return r == 0x09 || r == 0x0A || r == 0x0D ||
		r >= 0x20 && r <= 0xD7FF || r >= 0xE000 && r <= 0xFFFD || r >= 0x10000 && r <= 0x10FFFF
}

// JUnitFile is a --junit report being written: made before the comparison,
// so that a path that cannot be written fails at once, and put in place
// (temporary file and rename, as every output) when Finish has written it.
type JUnitFile struct {
	out   *fileio.Output
	job   Job
	start time.Time
}

// CreateJUnit starts the --junit report of job at path. "-" is refused:
// standard output carries the text or --json report.
func CreateJUnit(path string, job Job) (*JUnitFile, error) {
	if path == "-" {
		return nil, errors.New("--junit -: standard output carries the comparison's report; give the JUnit report a file")
	}
	if fi, err := os.Stat(path); err == nil && fi.Mode().IsRegular() {
		for _, in := range []string{job.A.Path, job.B.Path} {
			if gi, err := os.Stat(in); err == nil && os.SameFile(fi, gi) {
				return nil, fmt.Errorf("--junit %s: %w", path, fileio.ErrIsInput)
			}
		}
	}
	out, err := fileio.Create(path, nil)
	if err != nil {
		return nil, fmt.Errorf("--junit %s: %w", path, err)
	}
	return &JUnitFile{out: out, job: job, start: time.Now()}, nil
}

// Finish writes the report of the comparison (result and equal as Any
// returns them, or its error) and puts the file in place. A nil
// *JUnitFile (no --junit) does nothing.
func (f *JUnitFile) Finish(result interface{ WriteText(io.Writer) error }, equal bool, runErr error) error {
	if f == nil {
		return nil
	}
	run := JUnitRun{Job: f.job, Start: f.start, Elapsed: time.Since(f.start)}
	if err := WriteJUnit(f.out, run, result, equal, runErr); err != nil {
		f.out.Abort()
		return fmt.Errorf("--junit %s: %w", f.out.Name, err)
	}
	if err := f.out.Commit(); err != nil {
		return fmt.Errorf("--junit %s: %w", f.out.Name, err)
	}
	return nil
}
