package pipeline

import (
	"archive/zip"
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"iter"
	"math/rand"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	fileio "github.com/depthspace/depthspace/internal/io"
	"github.com/depthspace/depthspace/internal/ops"
)

// heldPlace serves objects "held://b/KEY" from memory. A download is
// held at byte held until the first byte of an output object is written
// or holdMax has passed (then heldByClock is set), and fails at byte fail
// if that is not negative. Output objects are written by position into
// a file and kept at Commit; wroteEarly says output data (past the
// first KiB, the header) were written before the download had ended.
type heldPlace struct {
	mu          sync.Mutex
	objects     map[string][]byte
	held, fail  int64
	holdMax     time.Duration
	wrote       chan struct{} // closed at the first output byte
	wroteOnce   sync.Once
	heldByClock bool
	downloaded  atomic.Bool
	wroteEarly  atomic.Bool
	aborted     int
}

var errBrokeOff = errors.New("the connection broke off")

var held = &heldPlace{objects: map[string][]byte{}}

func init() { fileio.Register("held://", held) }

func (p *heldPlace) reset(held, fail int64) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.held, p.fail, p.wrote, p.wroteOnce, p.heldByClock, p.aborted = held, fail, make(chan struct{}), sync.Once{}, false, 0
	p.holdMax = time.Minute // the test fails rather than hangs
	p.downloaded.Store(false)
	p.wroteEarly.Store(false)
}

func (p *heldPlace) object(name string) ([]byte, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	b, ok := p.objects[name]
	return b, ok
}

func (p *heldPlace) Parse(name string) (bool, error) { return strings.HasSuffix(name, "/"), nil }
func (p *heldPlace) Ready() error                    { return nil }
func (p *heldPlace) ReadFirst(name string, b []byte) (int, int64, error) {
	data, ok := p.object(name)
	if !ok {
		return 0, 0, os.ErrNotExist
	}
	return copy(b, data), int64(len(data)), nil
}

func (p *heldPlace) Download(ctx context.Context, name string, f *os.File, from, size int64, arrived func(off, n int64)) error {
	data, _ := p.object(name)
	const piece = 1 << 20
	for off := from; off < size; off += piece {
		if off == p.held {
			select {
			case <-p.wrote:
			case <-time.After(p.holdMax):
				p.heldByClock = true
			case <-ctx.Done():
				return ctx.Err()
			}
		}
		if off == p.fail {
			return errBrokeOff
		}
		n := min(piece, size-off)
		if _, err := f.WriteAt(data[off:off+n], off); err != nil {
			return err
		}
		arrived(off, n)
	}
	p.downloaded.Store(true)
	return nil
}

func (p *heldPlace) Writer(name string, scratch func() (*os.File, error)) fileio.ObjectWriter {
	f, err := scratch()
	return &heldWriter{p: p, name: name, f: f, err: err}
}

// heldWriter is an output object in a file, kept at Commit.
type heldWriter struct {
	p    *heldPlace
	name string
	f    *os.File
	err  error
	mu   sync.Mutex
	size int64
	once [2]int64 // OnceIn's range
}

func (w *heldWriter) Write(b []byte) (int, error) { return w.WriteAt(b, w.Size()) }
func (w *heldWriter) WriteAt(b []byte, off int64) (int, error) {
	if w.err != nil {
		return 0, w.err
	}
	w.p.wroteOnce.Do(func() { close(w.p.wrote) })
	if off >= 1024 && !w.p.downloaded.Load() {
		w.p.wroteEarly.Store(true) // data, not the header
	}
	n, err := w.f.WriteAt(b, off)
	w.mu.Lock()
	w.size = max(w.size, off+int64(n))
	w.mu.Unlock()
	return n, err
}
func (w *heldWriter) ReadAt(b []byte, off int64) (int, error) {
	w.mu.Lock()
	once := w.once
	w.mu.Unlock()
	if off < once[1] && off+int64(len(b)) > once[0] {
		// A real object writer may have freed these bytes (OnceIn).
		return 0, fmt.Errorf("bytes [%d, %d) read back, said written once in [%d, %d)", off, off+int64(len(b)), once[0], once[1])
	}
	return w.f.ReadAt(b, off)
}

// OnceIn records the range whose bytes the writer was told are never
// read back.
func (w *heldWriter) OnceIn(from, to int64) {
	w.mu.Lock()
	w.once = [2]int64{from, to}
	w.mu.Unlock()
}
func (w *heldWriter) Reserve(size int64) error {
	_, err := w.File(size)
	return err
}
func (w *heldWriter) File(size int64) (*os.File, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.size = max(w.size, size)
	return w.f, w.f.Truncate(w.size)
}
func (w *heldWriter) Size() int64 {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.size
}
func (w *heldWriter) Commit() error {
	defer w.f.Close()
	data := make([]byte, w.Size())
	if _, err := w.f.ReadAt(data, 0); err != nil && len(data) > 0 {
		return err
	}
	w.p.mu.Lock()
	w.p.objects[w.name] = data
	w.p.mu.Unlock()
	return nil
}
func (w *heldWriter) Abort() {
	w.f.Close()
	w.p.mu.Lock()
	w.p.aborted++
	w.p.mu.Unlock()
}

func (p *heldPlace) AbortAll()                                  {}
func (p *heldPlace) Exists(name string) (bool, error)           { _, ok := p.object(name); return ok, nil }
func (p *heldPlace) IsDir(string) bool                          { return false }
func (p *heldPlace) List(string) iter.Seq2[fileio.Entry, error] { return nil }

// putHeld makes held://b/in.npy an npy of float32 [1, 4, 1024, 1024]
// (16 MiB: more than the first GET's 8 MiB) and returns the s2d -b 2 of
// it, made from a local copy.
func putHeld(t *testing.T) []byte {
	t.Helper()
	dir := t.TempDir()
	data := make([]byte, 4<<20*4)
	rand.New(rand.NewSource(3)).Read(data)
	in, out := filepath.Join(dir, "in.npy"), filepath.Join(dir, "out.npy")
	writeNpy(t, in, "<f4", []int{1, 4, 1024, 1024}, false, data)
	if _, err := Transform(Options{Request: ops.Request{Op: ops.SpaceToDepth, Block: ops.Block{2}}, Source: Source{Path: in}, Output: out, Threads: 2}); err != nil {
		t.Fatal(err)
	}
	obj, _ := os.ReadFile(in)
	held.mu.Lock()
	held.objects["held://b/in.npy"] = obj
	held.mu.Unlock()
	want, _ := os.ReadFile(out)
	return want
}

// A large object input is worked on while it arrives, and an object
// output is written while it is computed: the download held at 9 MiB
// goes on only once the output's first byte is written, and the result
// is the local one's. Waiting for the whole input first would hold the
// run until the clock released it. Into a local file (nothing held) the
// result is the same.
func TestObjectWorkedOnWhileItArrives(t *testing.T) {
	want := putHeld(t)
	for _, out := range []string{"held://b/out.npy", filepath.Join(t.TempDir(), "out.npy")} {
		hold := int64(9 << 20)
		if !fileio.IsObject(out) {
			hold = -1
		}
		held.reset(hold, -1)
		if _, err := Transform(Options{Request: ops.Request{Op: ops.SpaceToDepth, Block: ops.Block{2}}, Source: Source{Path: "held://b/in.npy"}, Output: out, Threads: 2}); err != nil {
			t.Fatal(err)
		}
		if held.heldByClock {
			t.Errorf("-o %s: no output byte was written before the whole input had come", out)
		}
		got, ok := held.object(out)
		if !ok {
			got, _ = os.ReadFile(out)
		}
		if !bytes.Equal(got, want) {
			t.Errorf("-o %s: the output differs from the local run's (%d bytes, want %d)", out, len(got), len(want))
		}
	}
}

// A later range of the input that fails after the work has begun: one
// error naming the input and the failure, and no output object.
func TestObjectLaterRangeFails(t *testing.T) {
	putHeld(t)
	held.reset(-1, 12<<20)
	_, err := Transform(Options{Request: ops.Request{Op: ops.SpaceToDepth, Block: ops.Block{2}}, Source: Source{Path: "held://b/in.npy"}, Output: "held://b/failed.npy", Threads: 2})
	if err == nil || !strings.HasPrefix(err.Error(), "held://b/in.npy: ") || !strings.Contains(err.Error(), errBrokeOff.Error()) || strings.Contains(err.Error(), "\n") {
		t.Errorf("error %q, want one line naming held://b/in.npy and %q", err, errBrokeOff)
	}
	if _, ok := held.object("held://b/failed.npy"); ok || held.aborted != 1 {
		t.Errorf("output object made: %v; aborted %d times, want 1", ok, held.aborted)
	}
}

// A plan that does not run in chunks (a pad: s2d -b 3 --pad edge of 1024 rows) is
// computed from the whole input, which it waits for (its download held
// at 9 MiB for a moment, no output byte is written before it has all
// come), into an object
// output made a batch of items at a time by position or, past the
// buffer limit, through a mapping of its scratch file: the same bytes as
// the local run's either way.
func TestObjectWholeTensorJob(t *testing.T) {
	putHeld(t)
	req := ops.Request{Op: ops.SpaceToDepth, Block: ops.Block{3}, Pad: ops.PadEdge}
	dir := t.TempDir()
	local := filepath.Join(dir, "in.npy")
	obj, _ := held.object("held://b/in.npy")
	if err := os.WriteFile(local, obj, 0o644); err != nil {
		t.Fatal(err)
	}
	want := filepath.Join(dir, "want.npy")
	if _, err := Transform(Options{Request: req, Source: Source{Path: local}, Output: want, Threads: 2}); err != nil {
		t.Fatal(err)
	}
	wantBytes, _ := os.ReadFile(want)
	for _, limit := range []int{0, 1 << 20} {
		held.reset(9<<20, -1)
		held.holdMax = 200 * time.Millisecond
		out := "held://b/crop.npy"
		if _, err := Transform(Options{Request: req, Source: Source{Path: "held://b/in.npy"}, Output: out, Threads: 2, BufferLimit: limit}); err != nil {
			t.Fatal(err)
		}
		if held.wroteEarly.Load() {
			t.Errorf("buffer limit %d: an output byte was written before the whole input had come", limit)
		}
		if got, _ := held.object(out); !bytes.Equal(got, wantBytes) {
			t.Errorf("buffer limit %d: the output object differs from the local run's (%d bytes, want %d)", limit, len(got), len(wantBytes))
		}
	}
}

// storedNpz is an npz of npy members of 16 MiB of random float32 (seed),
// stored, each of names holding the same bytes.
func storedNpz(t *testing.T, seed int64, names ...string) []byte {
	t.Helper()
	data := make([]byte, 4<<20*4)
	rand.New(rand.NewSource(seed)).Read(data)
	npy := filepath.Join(t.TempDir(), "m.npy")
	writeNpy(t, npy, "<f4", []int{1, 4, 1024, 1024}, false, data)
	member, err := os.ReadFile(npy)
	if err != nil {
		t.Fatal(err)
	}
	var z bytes.Buffer
	zw := zip.NewWriter(&z)
	for _, name := range names {
		w, err := zw.CreateHeader(&zip.FileHeader{Name: name, Method: zip.Store})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := w.Write(member); err != nil {
			t.Fatal(err)
		}
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return z.Bytes()
}

// An npz output on a place: its stored members are streamed into place,
// then read back for their CRC-32, so the writer is not told they are
// written once (a real one would have freed them: "internal error").
func TestObjectNpzOutputReadsBack(t *testing.T) {
	opts, want := localNpzRun(t, "in.npz", storedNpz(t, 5, "a.npy", "b.npy"))
	opts.Output = "held://b/out.npz"
	if _, err := Transform(opts); err != nil {
		t.Fatal(err)
	}
	if got, _ := held.object(opts.Output); !bytes.Equal(withoutZipTimes(t, got), withoutZipTimes(t, want)) {
		t.Errorf("the npz object differs from the local run's (%d bytes, want %d)", len(got), len(want))
	}
}

// localNpzRun writes the npz input b as a file named name, runs s2d by 2
// of it to a local npz and returns that output's bytes, with the
// options (the held place reset) for the object run to compare.
func localNpzRun(t *testing.T, name string, b []byte) (Options, []byte) {
	t.Helper()
	dir := t.TempDir()
	in := filepath.Join(dir, name)
	if err := os.WriteFile(in, b, 0o644); err != nil {
		t.Fatal(err)
	}
	local := filepath.Join(dir, "out.npz")
	opts := Options{Request: ops.Request{Op: ops.SpaceToDepth, Block: ops.Block{2}}, Source: Source{Path: in}, Output: local, Threads: 2}
	if _, err := Transform(opts); err != nil {
		t.Fatal(err)
	}
	want, err := os.ReadFile(local)
	if err != nil {
		t.Fatal(err)
	}
	held.reset(-1, -1)
	return opts, want
}

// withoutZipTimes is a zip file (no comment, no zip64) with every entry's
// MS-DOS time and date zeroed: two runs' npz outputs are the same bytes
// but for the clock when they were written, which may tick between them.
func withoutZipTimes(t *testing.T, b []byte) []byte {
	t.Helper()
	b = bytes.Clone(b)
	if len(b) < 22 || binary.LittleEndian.Uint32(b[len(b)-22:]) != 0x06054b50 {
		t.Fatalf("not a zip file ending in its directory (%d bytes)", len(b))
	}
	eocd := b[len(b)-22:]
	n, off := int(binary.LittleEndian.Uint16(eocd[10:])), int(binary.LittleEndian.Uint32(eocd[16:]))
	for range n {
		e := b[off:]
		if binary.LittleEndian.Uint32(e) != 0x02014b50 {
			t.Fatalf("no central directory entry at %d", off)
		}
		clear(e[12:16])
		local := int(binary.LittleEndian.Uint32(e[42:]))
		clear(b[local+10 : local+14])
		off += 46 + int(binary.LittleEndian.Uint16(e[28:])) + int(binary.LittleEndian.Uint16(e[30:])) + int(binary.LittleEndian.Uint16(e[32:]))
	}
	return b
}

// Two entries of an npz input that point at one stored member (Go's zip
// reader takes such a file): as an object worked on while it arrives,
// the first member's run must not free bytes the second still reads.
func TestObjectSharedMemberBytesKept(t *testing.T) {
	b := storedNpz(t, 7, "a.npy")
	// The central directory's one entry again, named b.npy.
	eocd := b[len(b)-22:]
	cdSize, cdOff := binary.LittleEndian.Uint32(eocd[12:]), binary.LittleEndian.Uint32(eocd[16:])
	entry := bytes.Clone(b[cdOff : cdOff+cdSize])
	entry = bytes.Replace(entry, []byte("a.npy"), []byte("b.npy"), 1)
	alias := append(bytes.Clone(b[:cdOff+cdSize]), entry...)
	end := bytes.Clone(eocd)
	binary.LittleEndian.PutUint16(end[8:], 2)
	binary.LittleEndian.PutUint16(end[10:], 2)
	binary.LittleEndian.PutUint32(end[12:], 2*cdSize)
	alias = append(alias, end...)
	opts, want := localNpzRun(t, "alias.npz", alias)
	held.mu.Lock()
	held.objects["held://b/alias.npz"] = alias
	held.mu.Unlock()
	opts.Source.Path, opts.Output = "held://b/alias.npz", "held://b/alias-out.npz"
	if _, err := Transform(opts); err != nil {
		t.Fatal(err)
	}
	if got, _ := held.object(opts.Output); !bytes.Equal(withoutZipTimes(t, got), withoutZipTimes(t, want)) {
		t.Errorf("the output of the aliased npz object differs from the local run's (%d bytes, want %d)", len(got), len(want))
	}
}
