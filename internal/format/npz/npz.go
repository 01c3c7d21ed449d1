package npz

import (
	"archive/zip"
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"github.com/depthspace/depthspace/internal/format"
	npyfmt "github.com/depthspace/depthspace/internal/format/npy"
	"github.com/klauspost/compress/flate"
)

// KindNpz is a numpy savez / savez_compressed archive: one npy tensor
// per member.
const KindNpz format.Kind = "npz"

// npz: numpy's savez / savez_compressed archives. An npz is a zip file
// whose members are npy files named KEY.npy; np.load gives them as
// KEY. Members are stored (savez) or deflated (savez_compressed).
//
// Reading keeps every member's bytes where they are when it can: a stored
// member's data is a slice of the (mapped) archive, checked against its
// CRC-32. A deflated member is decompressed into memory after its npy
// header has said how big it is, and that size has been checked against
// what deflate can produce from the member's compressed bytes; or, read
// with ReadNpzDeferred, left compressed until its job inflates it
// (Inflate), so that an archive of any size is worked on a member at a
// time in bounded memory.

const zipMagic = "PK\x03\x04"

// MaxDeflateRatio bounds what deflate can expand to: 258 bytes from one
// bit pair at best, about 1032:1. A header promising more than that from
// the member's compressed size is lying, and is refused before anything
// is allocated.
const MaxDeflateRatio = 1032

// NpzMember is one array of an npz archive.
type NpzMember struct {
	Name       string // the key np.load gives it: the member name without ".npy"
	Npy        npyfmt.Npy
	Data       []byte // the element data, as the npy header describes it
	Compressed bool   // the member was deflated
	// Offset is where a stored member's npy bytes start in the archive.
	Offset int64
	// deferred is the zip entry of a deflated member read by
	// ReadNpzDeferred: its header is checked, its data not yet inflated
	// (Data is nil).
	deferred *zip.File
	// modified is the member's modification time as the archive has it,
	// when that is a valid date (ok).
	modified dosTime
}

// Deferred says the member's data are still compressed: Inflate gives them.
func (m *NpzMember) Deferred() bool { return m.deferred != nil }

// NpzError is a malformed or unsupported npz archive.
type NpzError struct {
	Member string // "" for the archive as a whole
	Msg    string
}

func (e *NpzError) Error() string {
	if e.Member == "" {
		return "npz: " + e.Msg
	}
	return fmt.Sprintf("npz member %q: %s", e.Member, e.Msg)
}

// ReadNpz reads every member of the archive in b, in archive order.
func ReadNpz(b []byte) ([]NpzMember, error) { return ReadNpzThreads(b, 1) }

// ReadNpzThreads is ReadNpz inflating up to threads deflated members at
// once (inflating is most of the time a compressed archive takes).
func ReadNpzThreads(b []byte, threads int) ([]NpzMember, error) {
	return readNpz(b, nil, threads, false)
}

// ReadNpzDeferred is ReadNpz leaving deflated members compressed: their
// npy headers are read and checked against the archive, their data are
// inflated by the caller, member by member (NpzMember.Inflate). The
// archive's structure and compressed bytes are read from f, the same
// bytes as b (an open file: positioned reads leave no pages mapped in
// this process, whatever the archive's size), or from b when f is nil.
func ReadNpzDeferred(b []byte, f io.ReaderAt) ([]NpzMember, error) { return readNpz(b, f, 1, true) }

func readNpz(b []byte, f io.ReaderAt, threads int, deferData bool) ([]NpzMember, error) {
	if f == nil {
		f = bytes.NewReader(b)
	}
	zr, err := zip.NewReader(f, int64(len(b)))
	if err != nil && !errors.Is(err, zip.ErrInsecurePath) {
		// Names are never used as paths here, so "insecure" ones are fine.
		return nil, &NpzError{Msg: "not a valid zip archive: " + strings.TrimPrefix(err.Error(), "zip: ")}
	}
	zr.RegisterDecompressor(zip.Deflate, func(r io.Reader) io.ReadCloser { return flate.NewReader(r) })
	seen := map[string]bool{}
	var files []*zip.File
	for _, f := range zr.File {
		if strings.HasSuffix(f.Name, "/") {
			continue // a directory entry holds no array
		}
		if !strings.HasSuffix(f.Name, ".npy") {
			return nil, &NpzError{Member: f.Name, Msg: "is not an .npy array (np.savez writes NAME.npy members only)"}
		}
		key := strings.TrimSuffix(f.Name, ".npy")
		if seen[key] {
			return nil, &NpzError{Member: f.Name, Msg: "appears twice in the archive"}
		}
		seen[key] = true
		files = append(files, f)
	}
	out := make([]NpzMember, len(files))
	errs := make([]error, len(files))
	var next atomic.Int64
	var wg sync.WaitGroup
	for range max(1, min(threads, len(files))) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := int(next.Add(1) - 1); i < len(files); i = int(next.Add(1) - 1) {
				out[i], errs[i] = readMember(b, files[i], deferData, f)
			}
		}()
	}
	wg.Wait()
	for i, f := range files {
		key := strings.TrimSuffix(f.Name, ".npy")
		if errs[i] != nil {
			return nil, &NpzError{Member: key, Msg: errs[i].Error()}
		}
		out[i].Name = key
		// Modified is the MS-DOS fields' wall clock (in a zone that puts
		// it at the extended timestamp's instant, when there is one), so
		// toDOSTime gives them back; a date of 0 (month 0, day 0) comes
		// out as 1979-11-30, not a date: the member then has none.
		if t := f.Modified; !t.IsZero() && t.Year() >= 1980 && t.Year() <= 2107 {
			out[i].modified = toDOSTime(t)
		}
	}
	return out, nil
}

// dosTime is a zip member's modification time: the MS-DOS date and time
// fields of its headers, local time to the second (even seconds), years
// 1980 to 2107. numpy's savez writes them (Python's zipfile, the local
// time of writing) and reads them back as ZipInfo.date_time; a date of 0
// (month 0) is not a date: unzip -l shows 1980-00-00.
type dosTime struct {
	date, time uint16
	ok         bool
}

// toDOSTime is t in the MS-DOS fields (clamped to their years).
func toDOSTime(t time.Time) dosTime {
	switch {
	case t.Year() < 1980:
		t = time.Date(1980, 1, 1, 0, 0, 0, 0, time.UTC)
	case t.Year() > 2107:
		t = time.Date(2107, 12, 31, 23, 59, 58, 0, time.UTC)
	}
	return dosTime{
		date: uint16(t.Day() + int(t.Month())<<5 + (t.Year()-1980)<<9),
		time: uint16(t.Second()/2 + t.Minute()<<5 + t.Hour()<<11),
		ok:   true,
	}
}

// writeTime is the time of writing members get when they have none of
// their own: now, in local time as numpy writes it, or the time
// SOURCE_DATE_EPOCH gives (seconds since 1970, UTC), the reproducible
// builds convention for outputs that must not depend on when they were
// made.
func writeTime() dosTime {
	if s := os.Getenv("SOURCE_DATE_EPOCH"); s != "" {
		if sec, err := strconv.ParseInt(s, 10, 64); err == nil {
			return toDOSTime(time.Unix(sec, 0).UTC())
		}
	}
	return toDOSTime(time.Now())
}

// npzTimes are the modification times of an npz input's members by key:
// its Archive.Meta, so that an npz output keeps each member's time.
type npzTimes map[string]dosTime

func readMember(b []byte, f *zip.File, deferData bool, ra io.ReaderAt) (NpzMember, error) {
	if f.Flags&0x1 != 0 {
		return NpzMember{}, errors.New("is encrypted")
	}
	switch f.Method {
	case zip.Store:
		if f.CompressedSize64 != f.UncompressedSize64 {
			return NpzMember{}, fmt.Errorf("stored member has compressed size %d but size %d", f.CompressedSize64, f.UncompressedSize64)
		}
		off, err := f.DataOffset()
		if err != nil {
			return NpzMember{}, err
		}
		if off < 0 || uint64(off) > uint64(len(b)) || f.CompressedSize64 > uint64(len(b))-uint64(off) {
			return NpzMember{}, fmt.Errorf("its %d bytes run past the end of the archive", f.CompressedSize64)
		}
		body := b[off : off+int64(f.CompressedSize64)]
		crc := uint32(0)
		if deferData {
			// Read with pread, not through the mapping: its pages would
			// stay in this process's memory.
			if crc, err = CRC32At(ra, off, int64(len(body))); err != nil {
				return NpzMember{}, err
			}
		} else {
			crc = crc32.ChecksumIEEE(body)
		}
		if crc != f.CRC32 {
			return NpzMember{}, errors.New("CRC-32 mismatch: the archive is corrupt")
		}
		npy, err := npyfmt.ParseNpy(body)
		if err != nil {
			return NpzMember{}, err
		}
		if err := exactData(npy, int64(len(body))-npy.DataOffset); err != nil {
			return NpzMember{}, err
		}
		return NpzMember{Npy: npy, Data: body[npy.DataOffset:], Offset: off}, nil
	case zip.Deflate:
		r, npy, err := openDeflated(f)
		if err != nil {
			return NpzMember{}, err
		}
		defer r.Close()
		if deferData {
			return NpzMember{Npy: npy, Compressed: true, deferred: f}, nil
		}
		data := make([]byte, npy.DataBytes())
		if err := inflateInto(r, data); err != nil {
			return NpzMember{}, err
		}
		return NpzMember{Npy: npy, Data: data, Compressed: true}, nil
	}
	return NpzMember{}, fmt.Errorf("uses zip compression method %d; numpy writes stored (0) or deflate (8) members only", f.Method)
}

// CRC32At is the CRC-32 of the n bytes of r from off, read a piece at a
// time.
func CRC32At(r io.ReaderAt, off, n int64) (uint32, error) {
	buf := make([]byte, min(n, 1<<20))
	crc := uint32(0)
	for done := int64(0); done < n; {
		m, err := r.ReadAt(buf[:min(int64(len(buf)), n-done)], off+done)
		crc = crc32.Update(crc, crc32.IEEETable, buf[:m])
		done += int64(m)
		if err != nil && done < n {
			return 0, err
		}
	}
	return crc, nil
}

// openDeflated opens a deflated member and reads its npy header, whose
// size it checks against the archive before anything is allocated.
func openDeflated(f *zip.File) (io.ReadCloser, npyfmt.Npy, error) {
	r, err := f.Open()
	if err != nil {
		return nil, npyfmt.Npy{}, err
	}
	npy, err := npyfmt.ReadNpy(r)
	if err != nil {
		r.Close()
		return nil, npyfmt.Npy{}, err
	}
	size := npy.DataBytes()
	limit := int64(f.CompressedSize64)*MaxDeflateRatio + 1<<10
	if f.CompressedSize64 > 1<<50 || size > limit {
		r.Close()
		return nil, npyfmt.Npy{}, fmt.Errorf("the header describes %d data bytes (shape %s, %s), more than its %d compressed bytes can hold", size, format.ShapeString(npy.Shape), npy.DType, f.CompressedSize64)
	}
	if uint64(npy.DataOffset)+uint64(size) != f.UncompressedSize64 {
		r.Close()
		return nil, npyfmt.Npy{}, fmt.Errorf("its npy header and data need %d bytes but the archive says the member has %d", uint64(npy.DataOffset)+uint64(size), f.UncompressedSize64)
	}
	return r, npy, nil
}

// inflateInto reads a deflated member's data (after its npy header) into
// data, which has the size the header gives, then checks the end.
func inflateInto(r io.Reader, data []byte) error {
	if n, err := io.ReadFull(r, data); err != nil {
		return inflateErr(err, int64(len(data)), int64(n))
	}
	return inflateEnd(r, int64(len(data)))
}

// inflateTo is inflateInto writing the size data bytes to w a piece at a
// time.
func inflateTo(r io.Reader, size int64, w io.Writer) error {
	buf := make([]byte, min(size, 256<<10))
	for done := int64(0); done < size; {
		n, err := io.ReadFull(r, buf[:min(int64(len(buf)), size-done)])
		if err != nil {
			return inflateErr(err, size, done+int64(n))
		}
		if _, err := w.Write(buf[:n]); err != nil {
			return err
		}
		done += int64(n)
	}
	return inflateEnd(r, size)
}

func inflateErr(err error, size, got int64) error {
	if errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF) {
		return fmt.Errorf("truncated: the header describes %d data bytes but the member has %d", size, got)
	}
	return unzipError(err)
}

// inflateEnd reads past the data's end, which checks the CRC-32 and
// refuses extra bytes.
func inflateEnd(r io.Reader, size int64) error {
	var one [1]byte
	switch n, err := r.Read(one[:]); {
	case n > 0:
		return fmt.Errorf("bytes beyond the %d data bytes the header describes", size)
	case err != nil && err != io.EOF:
		return unzipError(err)
	}
	return nil
}

// Inflate writes the data bytes of a deferred member to w, checking
// their length and CRC-32 (a member that is not deferred writes Data).
func (m *NpzMember) Inflate(w io.Writer) error {
	if m.deferred == nil {
		_, err := w.Write(m.Data)
		return err
	}
	r, npy, err := openDeflated(m.deferred)
	if err != nil {
		return err
	}
	defer r.Close()
	return inflateTo(r, npy.DataBytes(), w)
}

// InflateData is Inflate into memory.
func (m *NpzMember) InflateData() ([]byte, error) {
	if m.deferred == nil {
		return m.Data, nil
	}
	r, npy, err := openDeflated(m.deferred)
	if err != nil {
		return nil, err
	}
	defer r.Close()
	data := make([]byte, npy.DataBytes())
	if err := inflateInto(r, data); err != nil {
		return nil, err
	}
	return data, nil
}

func unzipError(err error) error {
	if errors.Is(err, zip.ErrChecksum) {
		return errors.New("CRC-32 mismatch: the archive is corrupt")
	}
	return errors.New(strings.TrimPrefix(err.Error(), "zip: "))
}

func exactData(npy npyfmt.Npy, have int64) error {
	return npyfmt.CheckData(npy, have, "member")
}

// NpzWriter writes an npz archive member by member, as np.savez (stored)
// or np.savez_compressed (deflate) would. Each member is dated: with its
// input member's time when KeepTimes was given an npz input's, else with
// the time of writing.
type NpzWriter struct {
	zw       *zip.Writer
	compress bool
	names    map[string]bool
	place    *placeWriter // NewNpzWriterAt
	now      dosTime      // the time of writing
	times    npzTimes     // KeepTimes
}

// NewNpzWriter starts an archive on w; compress deflates every member.
func NewNpzWriter(w io.Writer, compress bool) *NpzWriter {
	return &NpzWriter{zw: zip.NewWriter(w), compress: compress, names: map[string]bool{}, now: writeTime()}
}

// KeepTimes dates the members with the times of an npz input's members
// of the same names: meta is that input's Archive.Meta (anything else,
// another format's or nil, leaves the time of writing).
func (n *NpzWriter) KeepTimes(meta any) {
	if t, ok := meta.(npzTimes); ok {
		n.times = t
	}
}

// date sets the modification time of the member KEY.npy in fh.
func (n *NpzWriter) date(key string, fh *zip.FileHeader) {
	t, ok := n.times[key]
	if !ok || !t.ok {
		t = n.now
	}
	// The MS-DOS fields themselves, which archive/zip writes as they
	// are. Modified, which replaces them, will not do: CreateRaw (Raw,
	// RawFrom, PlaceStored) ignores it, and CreateHeader (Member) adds
	// from it an extended timestamp, a UTC instant, where a time copied
	// from an input member is a wall clock in an unknown zone.
	//lint:ignore SA1019 see above: the fields are the only way to date a CreateRaw member, and the right one for a copied MS-DOS time
	fh.ModifiedDate, fh.ModifiedTime = t.date, t.time
}

// Member starts the member KEY.npy holding a C-order tensor h: it writes
// the npy preamble and returns the writer for exactly h.DataBytes() bytes
// of element data. The previous member is finished by this call.
func (n *NpzWriter) Member(key string, h format.Header) (io.Writer, error) {
	if n.names[key] {
		return nil, fmt.Errorf("npz member %q written twice", key)
	}
	n.names[key] = true
	method := zip.Store
	if n.compress {
		method = zip.Deflate
	}
	fh := &zip.FileHeader{Name: key + ".npy", Method: method}
	n.date(key, fh) // the MS-DOS fields only (Modified would add an extra field numpy does not write)
	w, err := n.zw.CreateHeader(fh)
	if err != nil {
		return nil, err
	}
	if _, err := w.Write(npyfmt.EncodeNpy(h)); err != nil {
		return nil, err
	}
	return w, nil
}

// DeflateNpy compresses the npy file of tensor h (its preamble, then
// data) into buf with deflate at archive/zip's level (5, what the members
// written through Member get), and returns the
// CRC-32 and size of the uncompressed bytes. Members compressed this way
// on several goroutines are then added in order with Raw.
func DeflateNpy(h format.Header, data []byte, buf *bytes.Buffer) (crc uint32, size uint64, err error) {
	return DeflateNpyTo(h, bytes.NewReader(data), int64(len(data)), buf)
}

// DeflateNpyTo is DeflateNpy for data too big to hold: it reads the size
// data bytes from data and writes the compressed member to dst.
func DeflateNpyTo(h format.Header, data io.Reader, size int64, dst io.Writer) (crc uint32, usize uint64, err error) {
	pre := npyfmt.EncodeNpy(h)
	fw, err := flate.NewWriter(dst, 6)
	if err != nil {
		return 0, 0, err
	}
	if _, err := fw.Write(pre); err != nil {
		return 0, 0, err
	}
	crc = crc32.Update(0, crc32.IEEETable, pre)
	buf := make([]byte, min(size, 1<<20))
	for done := int64(0); done < size; {
		n, err := io.ReadFull(data, buf[:min(int64(len(buf)), size-done)])
		if err != nil {
			return 0, 0, err
		}
		if _, err := fw.Write(buf[:n]); err != nil {
			return 0, 0, err
		}
		crc = crc32.Update(crc, crc32.IEEETable, buf[:n])
		done += int64(n)
	}
	return crc, uint64(int64(len(pre)) + size), fw.Close()
}

// Raw adds the member KEY.npy compressed by DeflateNpy.
func (n *NpzWriter) Raw(key string, compressed []byte, crc uint32, size uint64) error {
	return n.RawFrom(key, bytes.NewReader(compressed), int64(len(compressed)), crc, size)
}

// RawFrom adds the member KEY.npy whose compressed bytes (DeflateNpyTo)
// are the csize bytes of r.
func (n *NpzWriter) RawFrom(key string, r io.Reader, csize int64, crc uint32, size uint64) error {
	if n.names[key] {
		return fmt.Errorf("npz member %q written twice", key)
	}
	n.names[key] = true
	fh := rawHeader(key+".npy", zip.Deflate, crc, uint64(csize), size)
	n.date(key, fh)
	w, err := n.zw.CreateRaw(fh)
	if err != nil {
		return err
	}
	fh.Extra = nil // the local header's zip64 sizes: the central directory gets its own
	if m, err := io.Copy(w, io.LimitReader(r, csize)); err != nil {
		return err
	} else if m != csize {
		return fmt.Errorf("npz member %q: %d of its %d compressed bytes could be read back", key, m, csize)
	}
	return nil
}

// Close finishes the archive (the central directory).
func (n *NpzWriter) Close() error { return n.zw.Close() }

// A stored archive written to a file by position can have its members'
// bytes put in place by the caller — the kernel's workers writing a
// member's data where it goes, as for a single npy file — instead of
// streamed through the zip writer in order. archive/zip still writes
// every header and the central directory: the bytes already in place are
// passed through it as a count only (placeWriter.skip), so that its
// offsets stay its own.

// NewNpzWriterAt starts a stored archive on w, written from offset 0.
func NewNpzWriterAt(w io.WriterAt) *NpzWriter {
	pw := &placeWriter{w: w}
	n := NewNpzWriter(pw, false)
	n.place = pw
	return n
}

// StoredOffset is where the size npy bytes (preamble, then data) of the
// stored member KEY.npy go if it is the next member: after its local
// header (rawHeader).
func (n *NpzWriter) StoredOffset(key string, size int64) (int64, error) {
	if n.place == nil {
		return 0, errors.New("internal error: StoredOffset on an archive not written by position")
	}
	if err := n.zw.Flush(); err != nil {
		return 0, err
	}
	fh := rawHeader(key+".npy", zip.Store, 0, uint64(size), uint64(size))
	return n.place.off + 30 + int64(len(fh.Name)+len(fh.Extra)), nil
}

// rawHeader is the header of a member added with CreateRaw, with what
// CreateHeader would have set and CreateRaw does not: the versions, the
// UTF-8 flag of a name that is not ASCII, and for a member of 4 GiB or
// more the zip64 extra field of the local header, which holds its real
// sizes (the 32-bit fields say 0xFFFFFFFF). The caller drops that field
// once the local header is written: archive/zip adds its own to the
// central directory, and a second would hide the member's offset there.
func rawHeader(name string, method uint16, crc uint32, csize, usize uint64) *zip.FileHeader {
	fh := &zip.FileHeader{Name: name, Method: method, CRC32: crc,
		CompressedSize64: csize, UncompressedSize64: usize,
		CreatorVersion: 3<<8 | 20, ReaderVersion: 20} // made on Unix, as numpy's
	for _, r := range name {
		if r >= 0x80 {
			fh.Flags |= 0x800 // the name is UTF-8 (a Go string from numpy's key)
			break
		}
	}
	if csize >= 0xFFFFFFFF || usize >= 0xFFFFFFFF {
		fh.ReaderVersion = 45
		fh.Extra = binary.LittleEndian.AppendUint16(nil, 0x0001)
		fh.Extra = binary.LittleEndian.AppendUint16(fh.Extra, 16)
		fh.Extra = binary.LittleEndian.AppendUint64(fh.Extra, usize)
		fh.Extra = binary.LittleEndian.AppendUint64(fh.Extra, csize)
	}
	return fh
}

// PlaceStored adds the stored member KEY.npy whose size npy bytes, of
// CRC-32 crc, the caller has written at StoredOffset(key).
func (n *NpzWriter) PlaceStored(key string, size int64, crc uint32) error {
	at, err := n.StoredOffset(key, size)
	if err != nil {
		return err
	}
	if n.names[key] {
		return fmt.Errorf("npz member %q written twice", key)
	}
	n.names[key] = true
	fh := rawHeader(key+".npy", zip.Store, crc, uint64(size), uint64(size))
	n.date(key, fh)
	w, err := n.zw.CreateRaw(fh)
	if err != nil {
		return err
	}
	fh.Extra = nil // the local header's zip64 sizes: the central directory gets its own
	if err := n.zw.Flush(); err != nil {
		return err
	}
	if n.place.off != at {
		return fmt.Errorf("internal error: npz member %q placed at %d, its header ends at %d", key, at, n.place.off)
	}
	n.place.skip = true
	defer func() { n.place.skip = false }()
	for left := size; left > 0; {
		m, err := w.Write(placed[:min(left, int64(len(placed)))])
		if err != nil {
			return err
		}
		left -= int64(m)
	}
	// A short last piece sits in the zip writer's buffer: out with it
	// while skipping.
	return n.zw.Flush()
}

// placed stands for bytes already in place (never written).
var placed [64 << 10]byte

// placeWriter writes at a running offset of w; while skip is set it only
// counts. The zip writer's buffer is flushed before skipping starts and
// before it ends, so skipped bytes are never mixed with header bytes.
type placeWriter struct {
	w    io.WriterAt
	off  int64
	skip bool
}

func (p *placeWriter) Write(b []byte) (int, error) {
	if p.skip {
		p.off += int64(len(b))
		return len(b), nil
	}
	m, err := p.w.WriteAt(b, p.off)
	p.off += int64(m)
	return m, err
}

func init() {
	format.Register(format.Format{Kind: KindNpz, InTar: true, Rank: 5, Doc: "numpy savez / savez_compressed archives, member by member", Noun: "an npz archive", Exts: []string{".npz"}, Container: true, SniffOrder: 20,
		Sniff: func(b []byte) bool { return strings.HasPrefix(string(b[:min(len(b), 4)]), zipMagic) },
		Open:  openNpz, Create: createNpz, CreateAt: createNpzAt})
}

// openNpz is npz's Open: every member, stored ones in place, deflated
// ones inflated (on opt.Threads goroutines) or, with opt.Deferred, left
// compressed until their job inflates them. The archive's Meta is its
// members' modification times, which an npz output keeps (KeepTimes).
func openNpz(b []byte, opt format.OpenOptions) (*format.Archive, error) {
	var ms []NpzMember
	var err error
	if opt.Deferred {
		ms, err = ReadNpzDeferred(b, opt.File)
	} else {
		ms, err = ReadNpzThreads(b, opt.Threads)
	}
	if err != nil {
		return nil, err
	}
	times := npzTimes{}
	a := &format.Archive{Members: make([]format.Member, len(ms)), Meta: times}
	for i := range ms {
		m := &ms[i]
		times[m.Name] = m.modified
		npy := m.Npy
		a.Members[i] = format.Member{Name: m.Name, Header: npy.Header, Stored: &npy, Data: m.Data, Compressed: m.Compressed}
		if m.Deferred() {
			a.Members[i].Lazy = m
		} else if !m.Compressed {
			a.Members[i].Offset, a.Members[i].InFile = m.Offset+npy.DataOffset, true
		}
	}
	return a, nil
}

// npzNames refuses, before anything is written, a member name that an
// npz cannot carry: numpy would read back another name, or unzip would
// write another path, and nothing may be renamed behind the user's back.
func npzNames(members []format.MemberSpec) error {
	for _, m := range members {
		if err := NpzNameError(m.Name); err != nil {
			return fmt.Errorf("npz member %q: %w (name it with --rename-member)", m.Name, err)
		}
	}
	return nil
}

// NpzNameError says why an npz cannot carry a member name, or nil.
func NpzNameError(name string) error {
	switch {
	case name == "":
		return errors.New(`an empty name: the member would be the file ".npy"; an npz needs a name for every array`)
	case strings.IndexByte(name, 0) >= 0:
		return fmt.Errorf("the name holds a NUL, which a zip member's name cannot carry: numpy would read it back as %q", name[:strings.IndexByte(name, 0)])
	case !utf8.ValidString(name):
		return errors.New("the name is not UTF-8: a zip member's name is flagged UTF-8 or read as code page 437, and numpy would read back another name")
	case strings.HasPrefix(name, "/") || slices.Contains(strings.Split(name, "/"), ".."):
		return errors.New(`the name is an absolute path or has a ".." element, which unzip strips (with a warning) and extracts elsewhere`)
	}
	return nil
}

// createNpz is npz's Create: an archive deflated (np.savez_compressed)
// when any member comes from a compressed one, else stored (np.savez),
// so that a round trip keeps the archive's kind, and its members' times.
func createNpz(w io.Writer, members []format.MemberSpec, meta any) (format.MemberWriter, error) {
	if err := npzNames(members); err != nil {
		return nil, err
	}
	compress := false
	for _, m := range members {
		compress = compress || m.Compressed
	}
	nw := NewNpzWriter(w, compress)
	nw.KeepTimes(meta)
	return nw, nil
}

// createNpzAt is npz's CreateAt: a stored archive (np.savez) written by
// position, each member's npy bytes where its local header leaves them,
// their CRC-32 read back from the file for the header archive/zip
// writes. A compressed one (any member from a deflated one) is not.
func createNpzAt(f format.FileOut, members []format.MemberSpec, meta any) (format.PlacedWriter, error) {
	if err := npzNames(members); err != nil {
		return nil, err
	}
	if !f.Readable() {
		return nil, nil
	}
	for _, m := range members {
		if m.Compressed {
			return nil, nil
		}
	}
	nw := NewNpzWriterAt(f)
	nw.KeepTimes(meta) // an npz input's member times
	return &npzPlaced{f: f, nw: nw, members: members, at: make([]int64, len(members))}, nil
}

type npzPlaced struct {
	f       format.FileOut
	nw      *NpzWriter
	members []format.MemberSpec
	at      []int64 // where each member's npy bytes start
}

func (p *npzPlaced) size(i int) int64 {
	return int64(len(npyfmt.EncodeNpy(p.members[i].Header))) + p.members[i].Header.DataBytes()
}

func (p *npzPlaced) Place(i int) (int64, error) {
	m := p.members[i]
	pre := npyfmt.EncodeNpy(m.Header)
	at, err := p.nw.StoredOffset(m.Name, int64(len(pre))+m.Header.DataBytes())
	if err != nil {
		return 0, err
	}
	if _, err := p.f.WriteAt(pre, at); err != nil {
		return 0, err
	}
	p.at[i] = at
	return at + int64(len(pre)), nil
}

func (p *npzPlaced) Placed(i int) error {
	size := p.size(i)
	crc, err := CRC32At(p.f, p.at[i], size)
	if err != nil {
		return err
	}
	return p.nw.PlaceStored(p.members[i].Name, size, crc)
}

func (p *npzPlaced) Close() error { return p.nw.Close() }

// An NpzWriter is a format.Compressor: a deflated archive's members
// are compressed by DeflateNpyTo on the caller's goroutines and added in
// order by RawFrom.

func (n *NpzWriter) Compresses() bool { return n.compress }

func (n *NpzWriter) Compress(h format.Header, data io.Reader, size int64, dst io.Writer) (uint32, uint64, error) {
	return DeflateNpyTo(h, data, size, dst)
}

func (n *NpzWriter) AddCompressed(name string, r io.Reader, csize int64, sum uint32, usize uint64) error {
	return n.RawFrom(name, r, csize, sum, usize)
}
