package npz

import (
	"archive/zip"
	"bytes"
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/depthspace/depthspace/internal/format"
	"github.com/depthspace/depthspace/internal/format/npy"
)

type npzArray struct {
	name  string
	descr string
	shape []int
}

// makeNpz writes arrays with NpzWriter; element byte i of array a is a+i.
func makeNpz(t testing.TB, compress bool, arrays ...npzArray) ([]byte, [][]byte) {
	var buf bytes.Buffer
	w := NewNpzWriter(&buf, compress)
	var datas [][]byte
	for a, arr := range arrays {
		dt, err := format.ParseDescr(arr.descr)
		if err != nil {
			t.Fatal(err)
		}
		h := format.Header{DType: dt, Shape: arr.shape}
		data := make([]byte, h.DataBytes())
		for i := range data {
			data[i] = byte(a + i)
		}
		mw, err := w.Member(arr.name, h)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := mw.Write(data); err != nil {
			t.Fatal(err)
		}
		datas = append(datas, data)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes(), datas
}

func TestNpzRoundTrip(t *testing.T) {
	arrays := []npzArray{
		{"x", "<f4", []int{1, 4, 2, 3}},
		{"labels", ">i2", []int{5}},
		{"empty", "|u1", []int{0, 3}},
		{"s", "|S3", []int{2}},
		{"dir/odd name", "<c16", []int{}},
	}
	for _, compress := range []bool{false, true} {
		b, datas := makeNpz(t, compress, arrays...)
		ms, err := ReadNpz(b)
		if err != nil {
			t.Fatalf("compress %v: %v", compress, err)
		}
		if len(ms) != len(arrays) {
			t.Fatalf("%d members, want %d", len(ms), len(arrays))
		}
		for i, m := range ms {
			a := arrays[i]
			if m.Name != a.name || m.Npy.DType.Descr() != a.descr || format.ShapeString(m.Npy.Shape) != format.ShapeString(a.shape) ||
				!bytes.Equal(m.Data, datas[i]) || m.Compressed != compress {
				t.Errorf("compress %v member %d: %q %s [%s] compressed %v", compress, i, m.Name, m.Npy.DType.Descr(), format.ShapeString(m.Npy.Shape), m.Compressed)
			}
		}
		if format.Sniff(b) != KindNpz {
			t.Errorf("Sniff does not see an npz")
		}
	}
}

// A stored member's data is the archive's own bytes, not a copy.
func TestNpzStoredIsNotCopied(t *testing.T) {
	b, _ := makeNpz(t, false, npzArray{"a", "<i4", []int{64}})
	ms, err := ReadNpz(b)
	if err != nil {
		t.Fatal(err)
	}
	d := ms[0].Data
	start := len(b) - len(d)
	for start >= 0 && &b[start] != &d[0] {
		start--
	}
	if start < 0 {
		t.Fatal("stored member data was copied")
	}
}

// rawZip builds an archive whose members' bytes are given as is.
func rawZip(t testing.TB, method uint16, members map[string][]byte, order ...string) []byte {
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	for _, name := range order {
		w, err := zw.CreateHeader(&zip.FileHeader{Name: name, Method: method})
		if err != nil {
			t.Fatal(err)
		}
		w.Write(members[name])
	}
	zw.Close()
	return buf.Bytes()
}

func npyBytes(descr string, shape []int, dataBytes int) []byte {
	dt, _ := format.ParseDescr(descr)
	return append(npy.EncodeNpy(format.Header{DType: dt, Shape: shape}), make([]byte, dataBytes)...)
}

func TestNpzErrors(t *testing.T) {
	good := npyBytes("<f4", []int{2}, 8)
	stored, _ := makeNpz(t, false, npzArray{"a", "<f4", []int{4}})
	corrupt := append([]byte(nil), stored...)
	// Flip a data byte of the stored member: its CRC no longer matches.
	corrupt[bytes.Index(corrupt, []byte("), }"))+70] ^= 0xff
	// A deflated member whose header promises a terabyte.
	bomb := rawZip(t, zip.Deflate, map[string][]byte{"a.npy": npy.EncodeNpy(format.Header{DType: format.NumpyNames()["uint8"], Shape: []int{1 << 40}})}, "a.npy")
	for _, c := range []struct {
		name string
		b    []byte
		want string
	}{
		{"not zip", []byte("PK\x03\x04garbage"), "not a valid zip archive"},
		{"not npy member", rawZip(t, zip.Store, map[string][]byte{"a.txt": []byte("hi")}, "a.txt"), `member "a.txt": is not an .npy array`},
		{"duplicate", rawZip(t, zip.Store, map[string][]byte{"a.npy": good}, "a.npy", "a.npy"), "appears twice"},
		{"empty member", rawZip(t, zip.Store, map[string][]byte{"o.npy": nil}, "o.npy"), `member "o": truncated npy header: 0 of 10 bytes`},
		{"short stored", rawZip(t, zip.Store, map[string][]byte{"a.npy": npyBytes("<f4", []int{2}, 7)}, "a.npy"), "truncated: the header describes 8 data bytes"},
		{"long stored", rawZip(t, zip.Store, map[string][]byte{"a.npy": npyBytes("<f4", []int{2}, 9)}, "a.npy"), "1 bytes beyond the 8 data bytes"},
		{"short deflated", rawZip(t, zip.Deflate, map[string][]byte{"a.npy": npyBytes("<f4", []int{2}, 7)}, "a.npy"), "need 136 bytes but the archive says the member has 135"},
		{"crc", corrupt, "CRC-32 mismatch"},
		{"bomb", bomb, "more than its"},
		{"bad header", rawZip(t, zip.Store, map[string][]byte{"a.npy": []byte("\x93NUMPY\x01\x00\x04\x00{}\n ")}, "a.npy"), `npz member "a": npy header`},
	} {
		for _, threads := range []int{1, 3} {
			_, err := ReadNpzThreads(c.b, threads)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("%s (%d threads): got %v, want %q", c.name, threads, err, c.want)
			}
		}
	}
	// Several bad members inflated at once: the error is the first one's
	// in archive order, whichever goroutine found it first.
	many := map[string][]byte{}
	var order []string
	for i := 0; i < 9; i++ {
		name := fmt.Sprintf("m%d.npy", i)
		n := 8
		if i == 3 || i == 7 {
			n = 7 // short
		}
		many[name] = npyBytes("<f4", []int{2}, n)
		order = append(order, name)
	}
	b := rawZip(t, zip.Deflate, many, order...)
	for _, threads := range []int{1, 2, 4} {
		_, err := ReadNpzThreads(b, threads)
		if err == nil || !strings.Contains(err.Error(), `member "m3"`) {
			t.Errorf("%d threads: got %v, want member m3's error", threads, err)
		}
	}
}

// A member with another compression method is refused by name.
func TestNpzOtherMethod(t *testing.T) {
	b := rawZip(t, zip.Store, map[string][]byte{"a.npy": npyBytes("<f4", []int{1}, 4)}, "a.npy")
	// Patch the method in the local header and the central directory to 12
	// (bzip2).
	for _, sig := range []string{"PK\x03\x04", "PK\x01\x02"} {
		i := bytes.Index(b, []byte(sig))
		off := 8
		if sig == "PK\x01\x02" {
			off = 10
		}
		binary.LittleEndian.PutUint16(b[i+off:], 12)
	}
	_, err := ReadNpz(b)
	if err == nil || !strings.Contains(err.Error(), "compression method 12") {
		t.Fatalf("got %v", err)
	}
}

// FuzzNpz: hostile archives never panic and never allocate past what the
// member's compressed bytes can hold; what reads describes its data.
func FuzzNpz(f *testing.F) {
	a, _ := makeNpz(f, false, npzArray{"a", "<f4", []int{2, 2}}, npzArray{"b", "|u1", []int{3}})
	c, _ := makeNpz(f, true, npzArray{"a", "<i8", []int{4}})
	f.Add(a)
	f.Add(c)
	f.Add([]byte("PK\x05\x06" + strings.Repeat("\x00", 18)))
	f.Fuzz(func(t *testing.T, b []byte) {
		ms, err := ReadNpz(b)
		if err != nil {
			return
		}
		for _, m := range ms {
			if int64(len(m.Data)) != m.Npy.DataBytes() {
				t.Fatalf("member %q: %d bytes for %d", m.Name, len(m.Data), m.Npy.DataBytes())
			}
		}
	})
}

// Members placed by position get what archive/zip's CreateHeader would
// give them: a member of 4 GiB or more has its real sizes in a zip64
// extra field of its local header (and one zip64 block in the central
// directory, which holds its offset), versions 4.5 / 2.0, and a name
// that is not ASCII the UTF-8 flag. The 4 GiB member is never written:
// the file is sparse.
func TestPlacedHeaders(t *testing.T) {
	path := filepath.Join(t.TempDir(), "big.npz")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	nw := NewNpzWriterAt(f)
	const big = int64(1)<<32 + 10
	at, err := nw.StoredOffset("big", big)
	if err != nil {
		t.Fatal(err)
	}
	if want := int64(30 + len("big.npy") + 20); at != want {
		t.Errorf("a 4 GiB member's bytes start at %d, want %d (its local header with a zip64 field)", at, want)
	}
	if err := nw.PlaceStored("big", big, 0x12345678); err != nil {
		t.Fatal(err)
	}
	small := []byte("\x93NUMPY placed bytes")
	at2, err := nw.StoredOffset("é", int64(len(small)))
	if err != nil {
		t.Fatal(err)
	}
	if at2 <= at+big {
		t.Fatalf("the second member at %d, before the first ends at %d", at2, at+big)
	}
	if _, err := f.WriteAt(small, at2); err != nil {
		t.Fatal(err)
	}
	if err := nw.PlaceStored("é", int64(len(small)), crc32.ChecksumIEEE(small)); err != nil {
		t.Fatal(err)
	}
	if err := nw.Close(); err != nil {
		t.Fatal(err)
	}

	var local [30 + 7 + 20]byte
	if _, err := f.ReadAt(local[:], 0); err != nil {
		t.Fatal(err)
	}
	le := binary.LittleEndian
	if v := le.Uint16(local[4:]); v != 45 {
		t.Errorf("local header: version needed %d, want 45", v)
	}
	if c, u := le.Uint32(local[18:]), le.Uint32(local[22:]); c != 0xFFFFFFFF || u != 0xFFFFFFFF {
		t.Errorf("local header: 32-bit sizes %#x %#x, want 0xFFFFFFFF", c, u)
	}
	extra := local[37:]
	if le.Uint16(local[28:]) != 20 || le.Uint16(extra) != 1 || le.Uint16(extra[2:]) != 16 ||
		int64(le.Uint64(extra[4:])) != big || int64(le.Uint64(extra[12:])) != big {
		t.Errorf("local header: extra field % x, want a zip64 field with both sizes %d", extra, big)
	}

	zr, err := zip.OpenReader(path)
	if err != nil {
		t.Fatal(err)
	}
	defer zr.Close()
	if len(zr.File) != 2 {
		t.Fatalf("%d members, want 2", len(zr.File))
	}
	b, e := zr.File[0], zr.File[1]
	if b.Name != "big.npy" || int64(b.UncompressedSize64) != big || b.CRC32 != 0x12345678 || b.ReaderVersion != 45 {
		t.Errorf("big: %s, %d bytes, CRC %#x, version %d", b.Name, b.UncompressedSize64, b.CRC32, b.ReaderVersion)
	}
	if n := bytes.Count(b.Extra, []byte{1, 0}); len(b.Extra) != 28 || n < 1 || le.Uint16(b.Extra) != 1 {
		t.Errorf("big: central directory extra % x, want one zip64 block of 24 bytes", b.Extra)
	}
	if off, _ := b.DataOffset(); off != at {
		t.Errorf("big: data at %d, placed at %d", off, at)
	}
	if e.Name != "é.npy" || e.Flags&0x800 == 0 || e.NonUTF8 {
		t.Errorf("é: name %q, flags %#x", e.Name, e.Flags)
	}
	r, err := e.Open()
	if err != nil {
		t.Fatal(err)
	}
	got, err := io.ReadAll(r) // checks the CRC-32
	if err != nil || !bytes.Equal(got, small) {
		t.Errorf("é: %q, %v", got, err)
	}
}

// npzDates gives each member's MS-DOS date and time fields, as they are
// in the local header and in the central directory.
func npzDates(t *testing.T, b []byte) map[string][2]dosTime {
	t.Helper()
	zr, err := zip.NewReader(bytes.NewReader(b), int64(len(b)))
	if err != nil {
		t.Fatal(err)
	}
	out := map[string][2]dosTime{}
	le := binary.LittleEndian
	for _, f := range zr.File {
		off, err := f.DataOffset()
		if err != nil {
			t.Fatal(err)
		}
		// The member's local header: the last signature before its data
		// (the test's data are zeros).
		local := b[bytes.LastIndex(b[:off], []byte("PK\x03\x04")):]
		cd := dosTime{} // not a date: 1979-11-30
		if f.Modified.Year() >= 1980 {
			cd = toDOSTime(f.Modified)
		}
		out[strings.TrimSuffix(f.Name, ".npy")] = [2]dosTime{
			{date: le.Uint16(local[12:]), time: le.Uint16(local[10:]), ok: true},
			cd,
		}
	}
	return out
}

// Every way an npz is written dates its members (np.savez does; a date
// of 0 is month 0, which unzip shows as 1980-00-00): with the time of
// writing (SOURCE_DATE_EPOCH when set), or with the input member's time
// (KeepTimes, an npz input's Archive.Meta), and a member whose input
// time is not a date gets the time of writing.
func TestNpzDates(t *testing.T) {
	t.Setenv("SOURCE_DATE_EPOCH", "1700000000") // 2023-11-14 22:13:20 UTC
	epoch := dosTime{date: (2023-1980)<<9 | 11<<5 | 14, time: 22<<11 | 13<<5 | 20/2, ok: true}
	in := dosTime{date: (2001-1980)<<9 | 2<<5 | 3, time: 4<<11 | 5<<5 | 6/2, ok: true}
	dt, _ := format.ParseDescr("<f4")
	h := format.Header{DType: dt, Shape: []int{2, 2}}
	data := make([]byte, h.DataBytes())
	pre := npy.EncodeNpy(h)
	file := append(append([]byte{}, pre...), data...)
	var z bytes.Buffer
	crc, size, err := DeflateNpy(h, data, &z)
	if err != nil {
		t.Fatal(err)
	}
	// The three writers: Member (stored or deflated, to any writer),
	// Raw/RawFrom (deflated on -j goroutines) and PlaceStored (a stored
	// archive written by position).
	write := func(meta any) map[string][]byte {
		out := map[string][]byte{}
		for _, compress := range []bool{false, true} {
			var b bytes.Buffer
			w := NewNpzWriter(&b, compress)
			w.KeepTimes(meta)
			for _, key := range []string{"a", "b"} {
				mw, err := w.Member(key, h)
				if err != nil {
					t.Fatal(err)
				}
				mw.Write(data)
			}
			w.Close()
			out[fmt.Sprintf("Member (compress %v)", compress)] = b.Bytes()
		}
		var b bytes.Buffer
		w := NewNpzWriter(&b, true)
		w.KeepTimes(meta)
		if err := w.Raw("a", z.Bytes(), crc, size); err != nil {
			t.Fatal(err)
		}
		if err := w.RawFrom("b", bytes.NewReader(z.Bytes()), int64(z.Len()), crc, size); err != nil {
			t.Fatal(err)
		}
		w.Close()
		out["Raw"] = b.Bytes()
		path := filepath.Join(t.TempDir(), "placed.npz")
		f, err := os.Create(path)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		pw := NewNpzWriterAt(f)
		pw.KeepTimes(meta)
		for _, key := range []string{"a", "b"} {
			at, err := pw.StoredOffset(key, int64(len(file)))
			if err != nil {
				t.Fatal(err)
			}
			f.WriteAt(file, at)
			if err := pw.PlaceStored(key, int64(len(file)), crc32.ChecksumIEEE(file)); err != nil {
				t.Fatal(err)
			}
		}
		pw.Close()
		out["PlaceStored"], _ = os.ReadFile(path)
		return out
	}
	check := func(what string, b []byte, want map[string]dosTime) {
		t.Helper()
		got := npzDates(t, b)
		for key, w := range want {
			if g := got[key]; g[0] != w || g[1] != w {
				t.Errorf("%s: member %s dated %+v (local header) and %+v (central directory), want %+v", what, key, g[0], g[1], w)
			}
		}
		if _, err := ReadNpz(b); err != nil {
			t.Errorf("%s: %v", what, err)
		}
	}
	for what, b := range write(nil) {
		check(what+", new", b, map[string]dosTime{"a": epoch, "b": epoch})
	}
	// An npz input's times, read back by openNpz: "b" has a date of 0.
	var b bytes.Buffer
	zw := zip.NewWriter(&b)
	for _, m := range []struct {
		key string
		t   time.Time
	}{{"a", time.Date(2001, 2, 3, 4, 5, 6, 0, time.UTC)}, {"b", time.Time{}}} { // b: a date of 0
		w, err := zw.CreateHeader(&zip.FileHeader{Name: m.key + ".npy", Method: zip.Store, Modified: m.t})
		if err != nil {
			t.Fatal(err)
		}
		w.Write(file)
	}
	zw.Close()
	a, err := openNpz(b.Bytes(), format.OpenOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for what, b := range write(a.Meta) {
		check(what+", from an npz", b, map[string]dosTime{"a": in, "b": epoch})
	}
	// The time of writing, without SOURCE_DATE_EPOCH: now, a valid date.
	t.Setenv("SOURCE_DATE_EPOCH", "")
	for what, b := range write(nil) {
		for key, d := range npzDates(t, b) {
			if d[0] != toDOSTime(time.Now()) && d[0] != toDOSTime(time.Now().Add(-2*time.Second)) {
				t.Errorf("%s: member %s dated %+v, want now", what, key, d[0])
			}
		}
	}
}
