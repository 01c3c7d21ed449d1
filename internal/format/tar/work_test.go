package tar

import (
	"archive/tar"
	"bytes"
	"errors"
	"go/build"
	"io"
	"strings"
	"testing"

	"github.com/depthspace/depthspace/internal/format"
)

// upperWork is a MemberWork that upper-cases a member: Sized for the
// names ending in ".sz", Whole (renamed to ".out") for the others.
type upperWork struct{ sized, whole []string }

func (w *upperWork) Sized(name string, data []byte) (int, func([]byte) error, bool, error) {
	if !strings.HasSuffix(name, ".sz") {
		return 0, nil, false, nil
	}
	w.sized = append(w.sized, name)
	return len(data), func(dst []byte) error {
		copy(dst, bytes.ToUpper(data))
		return nil
	}, true, nil
}

func (w *upperWork) Whole(name string, data []byte) ([]byte, string, error) {
	if string(data) == "fail" {
		return nil, "", errors.New("cannot")
	}
	w.whole = append(w.whole, name)
	return append(bytes.ToUpper(data), '!'), strings.TrimSuffix(name, ".x") + ".out", nil
}

// The codec hands the members --member picks to the MemberWork, Sized
// first, and writes what it returns, with a new header where the size or
// the name changed; the other members are copied through as they are;
// from a file and from a pipe alike.
func TestCopyShardThroughMemberWork(t *testing.T) {
	var in bytes.Buffer
	tw := tar.NewWriter(&in)
	for _, m := range []struct{ name, data string }{{"a.sz", "abc"}, {"a.cls", "7"}, {"b.x", "hello"}, {"c.sz", ""}} {
		tw.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: m.name, Size: int64(len(m.data)), Mode: 0o600})
		tw.Write([]byte(m.data))
	}
	tw.Close()
	for _, mapped := range []bool{true, false} {
		w := &upperWork{}
		var out bytes.Buffer
		job := format.ShardJob{In: bytes.NewReader(in.Bytes()), Out: &out, Drop: func(int64) {}, Members: []string{"*.sz", "b.*"}, Work: w}
		if mapped {
			job.All = in.Bytes()
		} else {
			job.In = struct{ io.Reader }{bytes.NewReader(in.Bytes())}
		}
		worked, err := copyShard(job)
		if err != nil || worked != 3 {
			t.Fatalf("mapped %v: worked %d, %v", mapped, worked, err)
		}
		if strings.Join(w.sized, " ") != "a.sz c.sz" || strings.Join(w.whole, " ") != "b.x" {
			t.Errorf("mapped %v: sized %q, whole %q", mapped, w.sized, w.whole)
		}
		var got []string
		tr := tar.NewReader(&out)
		for {
			h, err := tr.Next()
			if err == io.EOF {
				break
			}
			if err != nil {
				t.Fatal(err)
			}
			b, _ := io.ReadAll(tr)
			got = append(got, h.Name+"="+string(b))
			if h.Mode != 0o600 {
				t.Errorf("%s: mode %o, want the input's 600", h.Name, h.Mode)
			}
		}
		if want := "a.sz=ABC a.cls=7 b.out=HELLO! c.sz="; strings.Join(got, " ") != want {
			t.Errorf("mapped %v: output %q, want %q", mapped, strings.Join(got, " "), want)
		}
	}
}

// A MemberWork's error names the member; a failure to write the output
// is a ShardOutputError; a shard with nothing picked says so.
func TestCopyShardErrors(t *testing.T) {
	var in bytes.Buffer
	tw := tar.NewWriter(&in)
	tw.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: "b.x", Size: 4, Mode: 0o600})
	tw.Write([]byte("fail"))
	tw.Close()
	_, err := copyShard(format.ShardJob{In: bytes.NewReader(in.Bytes()), All: in.Bytes(), Drop: func(int64) {}, Out: io.Discard, Members: []string{"*.x"}, Work: &upperWork{}})
	if err == nil || err.Error() != `member "b.x": cannot` {
		t.Errorf("work error: %v", err)
	}
	_, err = copyShard(format.ShardJob{In: bytes.NewReader(in.Bytes()), All: in.Bytes(), Drop: func(int64) {}, Out: io.Discard, Members: []string{"*.y"}, Work: &upperWork{}})
	if err == nil || err.Error() != "the tar shard has no member matching --member *.y: nothing to do" {
		t.Errorf("nothing picked: %v", err)
	}
	in.Reset()
	tw = tar.NewWriter(&in)
	tw.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: "b.x", Size: 2, Mode: 0o600})
	tw.Write([]byte("ok"))
	tw.Close()
	broken := errors.New("disk full")
	_, err = copyShard(format.ShardJob{In: bytes.NewReader(in.Bytes()), All: in.Bytes(), Drop: func(int64) {}, Out: failWriter{broken}, Members: []string{"*.x"}, Work: &upperWork{}})
	var oe *format.ShardOutputError
	if !errors.As(err, &oe) || !errors.Is(err, broken) {
		t.Errorf("output error: %v, want a ShardOutputError of the writer's", err)
	}
}

type failWriter struct{ err error }

func (f failWriter) Write([]byte) (int, error) { return 0, f.err }

// The codec reaches the pipeline only through format.MemberWork: it
// imports no package of the command's beyond the format core and io.
func TestCodecImportsNoPipeline(t *testing.T) {
	pkg, err := build.ImportDir(".", 0)
	if err != nil {
		t.Fatal(err)
	}
	for _, imp := range pkg.Imports {
		if strings.Contains(imp, "depthspace/internal/") && !strings.HasSuffix(imp, "/internal/format") && !strings.HasSuffix(imp, "/internal/io") {
			t.Errorf("format/tar imports %s", imp)
		}
	}
}
