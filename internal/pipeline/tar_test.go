package pipeline

import (
	"archive/tar"
	"bytes"
	"errors"
	"io"
	"math/rand"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/depthspace/depthspace/internal/format"
	"github.com/depthspace/depthspace/internal/format/npy"
	tarfmt "github.com/depthspace/depthspace/internal/format/tar"
	fileio "github.com/depthspace/depthspace/internal/io"
	"github.com/depthspace/depthspace/internal/ops"
)

// shardMember is one entry of a test shard: its header, its content, and
// the s2d -b 2 result expected for a tensor member.
type shardMember struct {
	hdr  tar.Header
	data []byte
	want []byte // nil: copied through unchanged
}

func npyBytes(t *testing.T, descr string, shape []int, rng *rand.Rand) (in, s2d []byte) {
	t.Helper()
	d, err := format.ParseDescr(descr)
	if err != nil {
		t.Fatal(err)
	}
	n := d.Size
	for _, s := range shape {
		n *= s
	}
	data := make([]byte, n)
	rng.Read(data)
	p, err := ops.NewPlan(ops.Request{Block: ops.Block{2}}, shape, d.Size, false)
	if err != nil {
		t.Fatal(err)
	}
	out := make([]byte, p.Bytes())
	if err := p.Run(out, data, 1); err != nil {
		t.Fatal(err)
	}
	return append(npy.EncodeNpy(format.Header{DType: d, Shape: shape}), data...),
		append(npy.EncodeNpy(format.Header{DType: d, Shape: p.Out}), out...)
}

// testShard has what the tar writer must handle: one-block headers (copied
// as they are), a PAX long name and PAX records, GNU format, a directory
// and a link (no content), and members larger than its staging buffers,
// tensor and not.
func testShard(t *testing.T) []shardMember {
	rng := rand.New(rand.NewSource(7))
	when := time.Unix(1_700_000_000, 0)
	reg := func(name string, data []byte) tar.Header {
		return tar.Header{Typeflag: tar.TypeReg, Name: name, Size: int64(len(data)), Mode: 0o640, ModTime: when, Uid: 1000, Gid: 100, Uname: "u", Gname: "g"}
	}
	var ms []shardMember
	add := func(h tar.Header, data, want []byte) { ms = append(ms, shardMember{h, data, want}) }
	in, want := npyBytes(t, "<f4", []int{1, 2, 4, 6}, rng)
	add(reg("000001.input.npy", in), in, want)
	add(reg("000001.cls", []byte("3")), []byte("3"), nil)
	add(tar.Header{Typeflag: tar.TypeDir, Name: "sub/", Mode: 0o755, ModTime: when}, nil, nil)
	add(tar.Header{Typeflag: tar.TypeSymlink, Name: "sub/link", Linkname: "../000001.cls", ModTime: when}, nil, nil)
	long := strings.Repeat("n", 120) + ".input.npy"
	in, want = npyBytes(t, "<i2", []int{2, 1, 2, 2}, rng)
	add(reg(long, in), in, want)
	h := reg("000002.json", []byte(`{"k": 1}`))
	h.PAXRecords = map[string]string{"comment": "kept"}
	add(h, []byte(`{"k": 1}`), nil)
	big := make([]byte, 3<<20+5)
	rng.Read(big)
	add(reg("big.bin", big), big, nil)
	in, want = npyBytes(t, "|u1", []int{1, 1, 2048, 1030}, rng)
	add(reg("big.input.npy", in), in, want)
	in, want = npyBytes(t, "<f8", []int{1, 1, 2, 2}, rng)
	h = reg("gnu.input.npy", in)
	h.Format = tar.FormatGNU
	add(h, in, want)
	return ms
}

func writeShard(t *testing.T, ms []shardMember) []byte {
	t.Helper()
	var b bytes.Buffer
	tw := tar.NewWriter(&b)
	for _, m := range ms {
		h := m.hdr
		if err := tw.WriteHeader(&h); err != nil {
			t.Fatal(err)
		}
		if _, err := tw.Write(m.data); err != nil {
			t.Fatal(err)
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// A shard converted from a file (mapped, headers sliced from it) and
// from a pipe (streamed through a tap) gives the same bytes, and every
// member reads back with its header and the expected content.
func TestTarFileAndPipeAgree(t *testing.T) {
	ms := testShard(t)
	shard := writeShard(t, ms)
	dir := t.TempDir()
	in := filepath.Join(dir, "shard.tar")
	if err := os.WriteFile(in, shard, 0o644); err != nil {
		t.Fatal(err)
	}
	req := ops.Request{Block: ops.Block{2}}
	fileOut := filepath.Join(dir, "out.tar")
	if _, err := Transform(Options{Request: req, Source: Source{Path: in}, Output: fileOut, Threads: 1}); err != nil {
		t.Fatal(err)
	}
	var piped bytes.Buffer
	if _, err := Transform(Options{Request: req, Source: Source{Path: "-", From: tarfmt.KindTar, Stdin: bytes.NewReader(shard)}, Output: "-", Stdout: &piped, Threads: 1}); err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(fileOut)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, piped.Bytes()) {
		t.Fatalf("file and pipe outputs differ (%d and %d bytes)", len(got), piped.Len())
	}
	if fi, err := os.Stat(fileOut); err != nil || fi.Size() != int64(len(got)) {
		t.Fatalf("output size %v, %v", fi, err)
	}
	tr := tar.NewReader(bytes.NewReader(got))
	for i, m := range ms {
		h, err := tr.Next()
		if err != nil {
			t.Fatalf("member %d: %v", i, err)
		}
		w := m.hdr
		if h.Name != w.Name || h.Typeflag != w.Typeflag || h.Mode != w.Mode || !h.ModTime.Equal(w.ModTime) ||
			h.Uid != w.Uid || h.Gid != w.Gid || h.Uname != w.Uname || h.Gname != w.Gname || h.Linkname != w.Linkname ||
			h.PAXRecords["comment"] != w.PAXRecords["comment"] {
			t.Errorf("member %d: header %+v, want %+v", i, h, w)
		}
		data, err := io.ReadAll(tr)
		if err != nil {
			t.Fatal(err)
		}
		want := m.want
		if want == nil {
			want = m.data
		}
		if !bytes.Equal(data, want) {
			t.Errorf("member %s: content differs (%d bytes, want %d)", h.Name, len(data), len(want))
		}
	}
	if _, err := tr.Next(); err != io.EOF {
		t.Errorf("after the last member: %v, want EOF", err)
	}
	// The tail is archive/tar's: two zero blocks, nothing more.
	if tail := got[len(got)-1024:]; !bytes.Equal(tail, make([]byte, 1024)) {
		t.Error("the archive does not end in two zero blocks")
	}
}

// A mapped shard truncated by another process while it is converted is an
// error, not a crash.
func TestTarTruncatedWhileMapped(t *testing.T) {
	shard := writeShard(t, testShard(t))
	path := filepath.Join(t.TempDir(), "shard.tar")
	if err := os.WriteFile(path, shard, 0o644); err != nil {
		t.Fatal(err)
	}
	in, err := fileio.Open(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close()
	if !in.Mapped {
		t.Skip("the shard was not mapped") // below 1 MiB; testShard is larger
	}
	if err := os.Truncate(path, 4096); err != nil {
		t.Fatal(err)
	}
	o := Options{Request: ops.Request{Block: ops.Block{2}}, Source: Source{Path: path}, Output: "-"}
	_, err = copyShard(o, format.Lookup(tarfmt.KindTar), bytes.NewReader(in.Data), in.Data, in.Drop, io.Discard)
	if err == nil || !strings.Contains(err.Error(), "truncated") {
		t.Fatalf("err = %v, want one about a truncated input", err)
	}
}

// FuzzTarShard: any bytes as a tar shard, from a file (mapped or read,
// plain headers read by plainMember) and from a pipe (archive/tar): no
// panic, and when both succeed they write the same shard.
func FuzzTarShard(f *testing.F) {
	rng := rand.New(rand.NewSource(3))
	in, _ := npyBytes(&testing.T{}, "<f4", []int{1, 1, 2, 2}, rng)
	when := time.Unix(1_700_000_000, 0)
	small := []shardMember{
		{hdr: tar.Header{Typeflag: tar.TypeReg, Name: "a.npy", Size: int64(len(in)), Mode: 0o644, ModTime: when}, data: in},
		{hdr: tar.Header{Typeflag: tar.TypeReg, Name: "a.cls", Size: 1, Mode: 0o644, ModTime: when}, data: []byte("1")},
		{hdr: tar.Header{Typeflag: tar.TypeReg, Name: strings.Repeat("p", 110) + ".npy", Size: int64(len(in)), ModTime: when}, data: in},
	}
	var b bytes.Buffer
	tw := tar.NewWriter(&b)
	for _, m := range small {
		h := m.hdr
		tw.WriteHeader(&h)
		tw.Write(m.data)
	}
	tw.Close()
	f.Add(b.Bytes())
	f.Add(b.Bytes()[:700])
	dir := f.TempDir()
	f.Fuzz(func(t *testing.T, shard []byte) {
		path := filepath.Join(dir, "f.tar")
		if err := os.WriteFile(path, shard, 0o644); err != nil {
			t.Fatal(err)
		}
		req := ops.Request{Op: ops.SpaceToDepth, Block: ops.Block{2}}
		var fromFile, fromPipe bytes.Buffer
		_, errFile := Transform(Options{Request: req, Source: Source{Path: path}, Output: "-", Stdout: &fromFile, Threads: 1})
		_, errPipe := Transform(Options{Request: req, Source: Source{Path: "-", From: tarfmt.KindTar, Stdin: bytes.NewReader(shard)}, Output: "-", Stdout: &fromPipe, Threads: 1})
		if errFile == nil && errPipe == nil && !bytes.Equal(fromFile.Bytes(), fromPipe.Bytes()) {
			t.Fatalf("file and pipe outputs differ")
		}
		if (errFile == nil) != (errPipe == nil) {
			t.Fatalf("file: %v; pipe: %v", errFile, errPipe)
		}
	})
}

// memberEnds gives, for every member of a shard, where its content ends
// and where its padding to the next block ends.
func memberEnds(t *testing.T, shard []byte) (names []string, dataEnd, padEnd []int64) {
	t.Helper()
	br := bytes.NewReader(shard)
	tr := tar.NewReader(br)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return
		}
		if err != nil {
			t.Fatal(err)
		}
		at := br.Size() - int64(br.Len())
		names = append(names, h.Name)
		dataEnd = append(dataEnd, at+h.Size)
		padEnd = append(padEnd, at+(h.Size+511)/512*512)
	}
}

// A shard cut after a member's content — inside the zeros padding it to
// the next block, or right after the content — is truncated (GNU tar:
// "Unexpected EOF in archive", exit status 2), from a file (mapped: the
// test shard is over 1 MiB) and from a pipe: an error naming the member,
// and no output file. Cut at a block boundary after a member, with no
// zero block or one, it ends there, as GNU tar reads it.
func TestTarTruncatedAfterMember(t *testing.T) {
	shard := writeShard(t, testShard(t))
	names, dataEnd, padEnd := memberEnds(t, shard)
	dir := t.TempDir()
	req := ops.Request{Block: ops.Block{2}}
	run := func(cut []byte) (outFile, pipeOut []byte, fromFile, fromPipe error) {
		t.Helper()
		in := filepath.Join(dir, "cut.tar")
		out := filepath.Join(dir, "out.tar")
		os.Remove(out)
		if err := os.WriteFile(in, cut, 0o644); err != nil {
			t.Fatal(err)
		}
		_, fromFile = Transform(Options{Request: req, Source: Source{Path: in}, Output: out, Threads: 1})
		outFile, _ = os.ReadFile(out)
		if fromFile != nil {
			if _, err := os.Stat(out); !os.IsNotExist(err) {
				t.Errorf("cut at %d: the failed run left %s (%v)", len(cut), out, err)
			}
		}
		var piped bytes.Buffer
		_, fromPipe = Transform(Options{Request: req, Source: Source{Path: "-", From: tarfmt.KindTar, Stdin: bytes.NewReader(cut)}, Output: "-", Stdout: &piped, Threads: 1})
		return outFile, piped.Bytes(), fromFile, fromPipe
	}
	cuts := 0
	for i, name := range names {
		if dataEnd[i] == padEnd[i] {
			continue // no padding
		}
		for _, at := range []int64{dataEnd[i], dataEnd[i] + 1, padEnd[i] - 1} {
			_, _, fromFile, fromPipe := run(shard[:at])
			for _, err := range []error{fromFile, fromPipe} {
				if err == nil || !strings.Contains(err.Error(), "truncated tar archive") || !strings.Contains(err.Error(), name) {
					t.Errorf("cut at %d, in the padding of %s: %v, want a truncated archive naming the member", at, name, err)
				}
			}
			cuts++
		}
	}
	if cuts < 6 {
		t.Fatalf("%d cuts inside paddings: the test shard has too few padded members", cuts)
	}
	// The whole shard converted, then cut after its last member's padding
	// with no zero block and with one: the same output.
	full, _, _, _ := run(shard)
	last := padEnd[len(padEnd)-1]
	for _, at := range []int64{last, last + 512} {
		got, piped, fromFile, fromPipe := run(shard[:at])
		if fromFile != nil || fromPipe != nil {
			t.Errorf("cut at %d (a block boundary after the last member): %v; %v", at, fromFile, fromPipe)
			continue
		}
		if !bytes.Equal(got, full) || !bytes.Equal(piped, full) {
			t.Errorf("cut at %d: output differs from the whole shard's", at)
		}
	}
	// info and compare read a shard through decodeShard.
	for i := range names {
		if dataEnd[i] == padEnd[i] {
			continue
		}
		_, err := decodeShard(format.Lookup(tarfmt.KindTar), Source{Path: "cut.tar"}, &fileio.Input{Data: shard[:dataEnd[i]+1]})
		if err == nil || !strings.Contains(err.Error(), "truncated tar archive") {
			t.Errorf("decodeShard, cut in the padding of %s: %v", names[i], err)
		}
	}
	if _, err := decodeShard(format.Lookup(tarfmt.KindTar), Source{Path: "cut.tar"}, &fileio.Input{Data: shard[:last]}); err != nil {
		t.Errorf("decodeShard, cut after the last member's padding: %v", err)
	}
}

// brokenOutput fails every write.
type brokenOutput struct{}

var errDiskFull = errors.New("disk full (test)")

func (brokenOutput) Write([]byte) (int, error) { return 0, errDiskFull }

// A failure to write the output while members are copied through is
// reported as it happens, naming the output — not lost, with the run
// going on to fail on a later member for another reason.
func TestTarWriteErrorReported(t *testing.T) {
	big := make([]byte, 3<<20)
	bad := []byte("not an npy file at all")
	when := time.Unix(1_700_000_000, 0)
	shard := writeShard(t, []shardMember{
		{hdr: tar.Header{Typeflag: tar.TypeReg, Name: "a.bin", Size: int64(len(big)), Mode: 0o644, ModTime: when}, data: big},
		{hdr: tar.Header{Typeflag: tar.TypeReg, Name: "b.npy", Size: int64(len(bad)), Mode: 0o644, ModTime: when}, data: bad},
	})
	o := Options{Request: ops.Request{Block: ops.Block{2}}, Source: Source{Path: "in.tar"}, Output: "out.tar"}
	for _, mapped := range []bool{true, false} {
		// Buffers larger than the shard writer's in the pool, as an
		// earlier job leaves them: the writer must still write (and
		// fail) while the first member is copied, not once it is past.
		fileio.PutBuffer(make([]byte, 8<<20))
		fileio.PutBuffer(make([]byte, 8<<20))
		var all []byte
		if mapped {
			all = shard
		}
		_, err := copyShard(o, format.Lookup(tarfmt.KindTar), bytes.NewReader(shard), all, func(int64) {}, brokenOutput{})
		var pe *PathError
		if !errors.Is(err, errDiskFull) || !errors.As(err, &pe) || pe.Path != "out.tar" {
			t.Errorf("mapped %v: %v, want the write error on out.tar", mapped, err)
		}
	}
}

// A member stored sparse (GNU tar --sparse, GNU and PAX formats) is
// refused, naming it, from a file and from a pipe: its bytes in the
// archive are not its content (copied as they were, it came out empty or
// corrupt; read from the mapping, the shard seemed truncated).
func TestTarSparseMemberRefused(t *testing.T) {
	tarBin, err := exec.LookPath("tar")
	if err != nil {
		t.Skip("needs GNU tar to write a sparse member")
	}
	dir := t.TempDir()
	holes := filepath.Join(dir, "holes.bin")
	if err := os.WriteFile(holes, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(holes, 1<<20); err != nil { // a hole after the first byte
		t.Fatal(err)
	}
	in, _ := npyBytes(t, "|u1", []int{1, 1, 2, 2}, rand.New(rand.NewSource(1)))
	if err := os.WriteFile(filepath.Join(dir, "a.npy"), in, 0o644); err != nil {
		t.Fatal(err)
	}
	req := ops.Request{Block: ops.Block{2}}
	for _, tarFormat := range []string{"gnu", "posix"} {
		shard := filepath.Join(dir, tarFormat+".tar")
		cmd := exec.Command(tarBin, "--sparse", "--format="+tarFormat, "-cf", shard, "holes.bin", "a.npy")
		cmd.Dir = dir
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Skipf("tar --sparse: %v\n%s", err, out)
		}
		b, err := os.ReadFile(shard)
		if err != nil {
			t.Fatal(err)
		}
		if h, err := tar.NewReader(bytes.NewReader(b)).Next(); err != nil || !storedSparse(h) {
			t.Skipf("tar did not store holes.bin sparse here (%v)", err)
		}
		out := filepath.Join(dir, "out.tar")
		_, errFile := Transform(Options{Request: req, Source: Source{Path: shard}, Output: out, Threads: 1})
		var piped bytes.Buffer
		_, errPipe := Transform(Options{Request: req, Source: Source{Path: "-", From: tarfmt.KindTar, Stdin: bytes.NewReader(b)}, Output: "-", Stdout: &piped, Threads: 1})
		for _, err := range []error{errFile, errPipe} {
			if err == nil || !strings.Contains(err.Error(), `member "holes.bin" is stored sparse`) {
				t.Errorf("%s format: %v, want holes.bin refused as sparse", tarFormat, err)
			}
		}
		if _, err := os.Stat(out); err == nil {
			t.Errorf("%s format: an output was written", tarFormat)
		}
		// info and compare skip it: not a tensor member.
		if _, err := decodeShard(format.Lookup(tarfmt.KindTar), Source{Path: shard}, &fileio.Input{Data: b}); err != nil {
			t.Errorf("%s format: decodeShard: %v", tarFormat, err)
		}
	}
}

// storedSparse says whether tar stored h sparse: a GNU sparse header, or
// GNU's PAX records for it.
func storedSparse(h *tar.Header) bool {
	for k := range h.PAXRecords {
		if strings.HasPrefix(k, "GNU.sparse.") {
			return true
		}
	}
	return h.Typeflag == tar.TypeGNUSparse
}

// TestTarNamesCarried: a shard's output is a copy of its input, and tar
// carries every name archive/tar reads exactly, as bytes: "../x.npy" (as
// TestTarPython's ../escape.npy), an absolute one, one that is not UTF-8,
// an empty one. A NUL in a PAX path is refused by archive/tar itself.
func TestTarNamesCarried(t *testing.T) {
	in, _ := npyBytes(t, "|u1", []int{1, 1, 2, 2}, rand.New(rand.NewSource(1)))
	req := ops.Request{Block: ops.Block{2}}
	dir := t.TempDir()
	for _, c := range []struct{ name, want string }{
		{"é\x00b.npy", "not a valid tar archive (bad header)"},
		{"", ""},
		{"../x.npy", ""},
		{"/abs/x.npy", ""},
		{"d/../../x.cls", ""},
		{"a\xffb.npy", ""},
		{"a..b/c..npy", ""},
	} {
		// archive/tar writes no NUL: a \x01 in the PAX path record (not in
		// the checksummed header block) is made one.
		name := strings.ReplaceAll(c.name, "\x00", "\x01")
		h := tar.Header{Typeflag: tar.TypeReg, Name: name, Size: int64(len(in)), Mode: 0o644, Format: tar.FormatPAX}
		shard := writeShard(t, []shardMember{{h, in, nil}, {tar.Header{Typeflag: tar.TypeReg, Name: "ok.npy", Size: int64(len(in)), Mode: 0o644}, in, nil}})
		if name != c.name {
			shard = bytes.Replace(shard, []byte("path="+name), []byte("path="+c.name), 1)
		}
		path := filepath.Join(dir, "in.tar")
		if err := os.WriteFile(path, shard, 0o644); err != nil {
			t.Fatal(err)
		}
		out := filepath.Join(dir, "out.tar")
		_, errFile := Transform(Options{Request: req, Source: Source{Path: path}, Output: out, Threads: 1})
		var piped bytes.Buffer
		_, errPipe := Transform(Options{Request: req, Source: Source{Path: "-", From: tarfmt.KindTar, Stdin: bytes.NewReader(shard)}, Output: "-", Stdout: &piped, Threads: 1})
		for _, err := range []error{errFile, errPipe} {
			switch {
			case c.want == "" && err != nil:
				t.Errorf("%q: %v", c.name, err)
			case c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)):
				t.Errorf("%q: %v, want %q", c.name, err, c.want)
			}
		}
		if c.want != "" {
			continue
		}
		b, err := os.ReadFile(out)
		if err != nil {
			t.Fatal(err)
		}
		for _, got := range [][]byte{b, piped.Bytes()} {
			h, err := tar.NewReader(bytes.NewReader(got)).Next()
			if err != nil || h.Name != c.name {
				t.Errorf("%q: read back %v, %v", c.name, h, err)
			}
		}
	}
}

// countingReader counts the bytes read through it, and hides every
// method of its reader but Read (a pipe's).
type countingReader struct {
	r io.Reader
	n int64
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += int64(n)
	return n, err
}
