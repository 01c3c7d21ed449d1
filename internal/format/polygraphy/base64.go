package polygraphy

import (
	"bytes"
	"encoding/base64"
	"encoding/binary"
	"errors"
	"io"
	"sync"

	"github.com/depthspace/depthspace/internal/format"
	"github.com/depthspace/depthspace/internal/format/npy"
)

// The base64 text of the arrays, decoded piece by piece as members' jobs
// ask for it.

// pgText gives a member's base64 text piece by piece: slices of the file
// when it holds no escapes, else unescaped into buf.
type pgText struct {
	a   *pgArray
	i   int // next byte of a.text
	buf []byte
}

// next returns the next n characters of text (fewer at the end).
func (t *pgText) next(n int) ([]byte, error) {
	if t.a.latin1 {
		return t.nextLatin1(n)
	}
	if !t.a.esc {
		s := t.a.text[t.i:min(len(t.a.text), t.i+n)]
		if t.a.file != nil && len(s) > 0 { // the same bytes, not faulted into the mapping
			if cap(t.buf) < n {
				t.buf = make([]byte, 0, n)
			}
			r := t.buf[:len(s)]
			if k, err := t.a.file.ReadAt(r, t.a.textOff+int64(t.i)); k < len(r) {
				return nil, pgErr(t.a.name, "reading the file: %v", err)
			}
			s = r
		}
		t.i += len(s)
		return s, nil
	}
	if cap(t.buf) < n {
		t.buf = make([]byte, 0, n)
	}
	out := t.buf[:0]
	for len(out) < n && t.i < len(t.a.text) {
		c := t.a.text[t.i]
		if c != '\\' { // anything not base64 is refused by the decoder
			out = append(out, c)
			t.i++
			continue
		}
		r, k, m := jsonEscape(t.a.text[t.i:])
		if m != "" {
			return nil, pgErr(t.a.name, "base64 text, character %d: %s", t.i, m)
		}
		if r >= 0x80 {
			return nil, pgErr(t.a.name, "base64 text, character %d: escape of U+%04X, which is not base64", t.i, r)
		}
		out = append(out, byte(r))
		t.i += k
	}
	return out, nil
}

// count is the text's unescaped length and its last two characters.
func (a *pgArray) count() (int64, [2]byte, error) {
	var last [2]byte
	if !a.esc {
		n := len(a.text)
		if n >= 2 {
			last = [2]byte{a.text[n-2], a.text[n-1]}
		}
		return int64(n), last, nil
	}
	t := &pgText{a: a}
	var n int64
	for {
		s, err := t.next(pgChunk)
		if err != nil {
			return 0, last, err
		}
		if len(s) == 0 {
			return n, last, nil
		}
		n += int64(len(s))
		if len(s) >= 2 {
			last = [2]byte{s[len(s)-2], s[len(s)-1]}
		} else {
			last = [2]byte{last[1], s[0]}
		}
	}
}

// open checks a member's text against its npy header: the header is
// decoded from the first characters, and the text's length must be that
// of exactly the preamble and the data the header describes, before any
// data are decoded or any memory is given to them.
func (a *pgArray) open() error {
	if bytes.HasPrefix(a.text, []byte(`PK\u0003\u0004`)) || bytes.HasPrefix(a.text, []byte(`\u0093NUMPY`)) {
		return a.openLatin1()
	}
	n, last, err := a.count()
	if err != nil {
		return err
	}
	a.length = n
	if n%4 != 0 {
		return pgErr(a.name, "base64 text of %d characters is not a whole number of 4-character groups (padding)", n)
	}
	pad := int64(0)
	if n >= 4 {
		if last[1] == '=' {
			pad++
			if last[0] == '=' {
				pad++
			}
		}
	}
	decoded := n/4*3 - pad
	t := &pgText{a: a}
	head, err := a.decodeText(t, 16)
	if err != nil {
		return err
	}
	switch {
	case bytes.HasPrefix(head, []byte("PK\x03\x04")):
		return pgErr(a.name, "the base64 payload is an npz archive, not an npy file (Polygraphy writes np.save's npy)")
	case !bytes.HasPrefix(head, []byte(npy.NpyMagic)):
		return pgErr(a.name, "the base64 payload is not an npy file (no \\x93NUMPY magic)")
	}
	fixed, hlen := 10, 0
	if len(head) < 10 {
		return pgErr(a.name, "the base64 payload is %d bytes, shorter than an npy preamble", len(head))
	}
	if head[6] == 1 {
		hlen = int(head[8]) | int(head[9])<<8
	} else {
		if len(head) < 12 {
			return pgErr(a.name, "the base64 payload is %d bytes, shorter than an npy preamble", len(head))
		}
		fixed, hlen = 12, int(head[8])|int(head[9])<<8|int(head[10])<<16|int(head[11])<<24
	}
	pre := head
	if hlen <= npy.MaxNpyHeader && int64(fixed+hlen) <= decoded {
		t = &pgText{a: a}
		if pre, err = a.decodeText(t, (fixed+hlen+2)/3*4); err != nil {
			return err
		}
	}
	npy, err := npy.ParseNpy(pre)
	if err != nil {
		return pgErr(a.name, "the base64 payload: %v", err)
	}
	want := npy.DataOffset + npy.DataBytes()
	switch {
	case decoded < want:
		return pgErr(a.name, "truncated: the npy header describes %d data bytes (shape %s, %s) but the base64 text holds %d", npy.DataBytes(), format.ShapeString(npy.Shape), npy.DType, max(0, decoded-npy.DataOffset))
	case decoded > want:
		return pgErr(a.name, "%d bytes beyond the %d data bytes the npy header describes (shape %s, %s)", decoded-want, npy.DataBytes(), format.ShapeString(npy.Shape), npy.DType)
	}
	a.npy = npy
	return nil
}

// decodeText decodes the first chars characters (a multiple of 4, or all)
// of t into bytes.
func (a *pgArray) decodeText(t *pgText, chars int) ([]byte, error) {
	s, err := t.next(chars)
	if err != nil {
		return nil, err
	}
	out := make([]byte, len(s)/4*3)
	n, err := a.decode(out, s, 0, len(s) < chars || int64(len(s)) == a.length)
	if err != nil {
		return nil, err
	}
	return out[:n], nil
}

// pgDec maps a base64 character to its 6 bits at each of a group's four
// places; anything else (line breaks, '=', non-ASCII) to pgBad.
var pgDec [4][256]uint32

const pgBad = 1 << 24

// pgEnc2 maps 12 bits to their two base64 characters.
var pgEnc2 [4096]uint16

// pgTables fills pgDec and pgEnc2 on first use (decode, pgEncode), not
// when the program starts: 12 KiB written by every run otherwise, three
// page faults and 5,000 stores before any command.
var pgTables sync.Once

func pgFillTables() {
	const alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"
	for v := range pgEnc2 {
		pgEnc2[v] = uint16(alphabet[v>>6])<<8 | uint16(alphabet[v&63])
	}
	for k := range pgDec {
		for c := range pgDec[k] {
			pgDec[k][c] = pgBad
		}
		for v, c := range []byte(alphabet) {
			pgDec[k][c] = uint32(v) << (18 - 6*k)
		}
	}
}

// decode decodes s (a whole number of 4-character groups) into dst, which
// has room for len(s)/4*3 bytes; at is s's place in the text, for
// messages. Python's b64decode(validate=True) takes the alphabet and '='
// padding at the very end only: so does this (padding when final).
// encoding/base64 would skip line breaks, and decodes 3x slower than
// these tables.
func (a *pgArray) decode(dst, s []byte, at int64, final bool) (int, error) {
	pgTables.Do(pgFillTables)
	body := s
	if final && len(s) >= 4 && s[len(s)-1] == '=' {
		body = s[:len(s)-4]
	}
	n := 0
	i := 0
	for ; i+8 <= len(body) && n+8 <= len(dst); i, n = i+8, n+6 {
		q := body[i : i+8 : i+8]
		v1 := pgDec[0][q[0]] | pgDec[1][q[1]] | pgDec[2][q[2]] | pgDec[3][q[3]]
		v2 := pgDec[0][q[4]] | pgDec[1][q[5]] | pgDec[2][q[6]] | pgDec[3][q[7]]
		if (v1|v2)&pgBad != 0 {
			break
		}
		binary.BigEndian.PutUint64(dst[n:], uint64(v1)<<40|uint64(v2)<<16)
	}
	for ; i+4 <= len(body); i, n = i+4, n+3 {
		q := body[i : i+4 : i+4]
		v := pgDec[0][q[0]] | pgDec[1][q[1]] | pgDec[2][q[2]] | pgDec[3][q[3]]
		if v&pgBad != 0 {
			for k, c := range q {
				if pgDec[k][c]&pgBad != 0 {
					return 0, a.badChar(c, at+int64(i+k))
				}
			}
		}
		dst[n], dst[n+1], dst[n+2] = byte(v>>16), byte(v>>8), byte(v)
	}
	if len(body) < len(s) { // the last group, with its padding
		q := s[len(body):]
		for k, c := range q {
			if c != '=' && pgDec[0][c]&pgBad != 0 || c == '=' && k < 2 {
				return 0, a.badChar(c, at+int64(len(body)+k))
			}
		}
		if q[2] == '=' && q[3] != '=' {
			return 0, a.badChar(q[2], at+int64(len(body)+2))
		}
		m, err := base64.StdEncoding.Decode(dst[n:], q)
		if err != nil {
			return 0, pgErr(a.name, "invalid base64 at character %d", at+int64(len(body)))
		}
		n += m
	}
	return n, nil
}

// pgEncode encodes src (a whole number of 3-byte groups) into dst
// (len(src)/3*4), as encoding/base64 does but 6 bytes at a time through
// pgEnc2 (about 1.8x its speed on this machine: 1.1-1.3 against
// 0.6-0.7 GB/s, benchmarked in turn on a loaded host).
func pgEncode(dst, src []byte) {
	pgTables.Do(pgFillTables)
	i, j := 0, 0
	for ; i+8 <= len(src) && j+8 <= len(dst); i, j = i+6, j+8 {
		v := binary.BigEndian.Uint64(src[i:]) // the top 48 bits are the 6 bytes
		binary.BigEndian.PutUint64(dst[j:], uint64(pgEnc2[v>>52])<<48|uint64(pgEnc2[v>>40&0xfff])<<32|
			uint64(pgEnc2[v>>28&0xfff])<<16|uint64(pgEnc2[v>>16&0xfff]))
	}
	for ; i+3 <= len(src); i, j = i+3, j+4 {
		v := uint32(src[i])<<16 | uint32(src[i+1])<<8 | uint32(src[i+2])
		binary.BigEndian.PutUint16(dst[j:], pgEnc2[v>>12])
		binary.BigEndian.PutUint16(dst[j+2:], pgEnc2[v&0xfff])
	}
}

func (a *pgArray) badChar(c byte, at int64) error {
	switch c {
	case '\r', '\n':
		return pgErr(a.name, "invalid base64: a line break at character %d", at)
	case '=':
		return pgErr(a.name, "invalid base64: padding '=' at character %d, before the end", at)
	}
	return pgErr(a.name, "invalid base64 at character %d (byte 0x%02x)", at, c)
}

// Inflate writes the member's element data to w: the base64 text decoded
// 64 KiB at a time, the npy preamble skipped, exactly DataBytes written.
func (a *pgArray) Inflate(w io.Writer) error {
	if a.latin1 {
		return a.inflateLatin1(w)
	}
	buf := make([]byte, pgChunk/4*3)
	t := &pgText{a: a}
	pre := a.npy.DataOffset
	// Start at the group holding the first data byte.
	skipText := pre / 3 * 4
	drop := int(pre % 3)
	for skipText > 0 { // escaped text: unescape and discard
		s, err := t.next(int(min(skipText, pgChunk)))
		if err != nil {
			return err
		}
		skipText -= int64(len(s))
	}
	at := pre / 3 * 4
	left := a.npy.DataBytes()
	for {
		s, err := t.next(pgChunk)
		if err != nil {
			return err
		}
		if len(s) == 0 {
			break
		}
		n, err := a.decode(buf, s, at, at+int64(len(s)) == a.length)
		if err != nil {
			return err
		}
		at += int64(len(s))
		out := buf[drop:n]
		drop = 0
		if int64(len(out)) > left {
			return pgErr(a.name, "the base64 text decodes to more than the %d data bytes its npy header describes", a.npy.DataBytes())
		}
		left -= int64(len(out))
		if _, err := w.Write(out); err != nil {
			return err
		}
	}
	if left != 0 {
		return pgErr(a.name, "the base64 text decodes to %d data bytes but its npy header describes %d", a.npy.DataBytes()-left, a.npy.DataBytes())
	}
	return nil
}

// lazy is the member's Lazy: the array itself, which also reads its data
// at any offset (io.ReaderAt), or, for text with JSON escapes (whose
// characters are not where their position says), a Lazy without ReadAt.
func (a *pgArray) lazy() format.Lazy {
	if a.esc || a.latin1 {
		return pgEscaped{a}
	}
	return a
}

type pgEscaped struct{ a *pgArray }

func (e pgEscaped) Inflate(w io.Writer) error    { return e.a.Inflate(w) }
func (e pgEscaped) InflateData() ([]byte, error) { return e.a.InflateData() }

// pgBufs are ReadAt's buffers: a piece of text and its decoded bytes.
var pgBufs = sync.Pool{New: func() any { return new([pgChunk + pgChunk/4*3]byte) }}

// ReadAt reads the member's element data at off without decoding what
// comes before (io.ReaderAt): base64 is 4 characters per 3 bytes, so the
// bytes of [off, off+len(p)) are decoded from the groups that hold them,
// read from the file by position (or the mapping), checked as Inflate
// checks them. A job can then read a member's data in chunks like a file
// input, from any number of goroutines, with no scratch copy.
func (a *pgArray) ReadAt(p []byte, off int64) (int, error) {
	size := a.npy.DataBytes()
	if off < 0 {
		return 0, pgErr(a.name, "internal error: negative offset %d", off)
	}
	want := p
	if off >= size {
		if len(p) == 0 {
			return 0, nil
		}
		return 0, io.EOF
	}
	if int64(len(p)) > size-off {
		want = p[:size-off]
	}
	bufs := pgBufs.Get().(*[pgChunk + pgChunk/4*3]byte)
	defer pgBufs.Put(bufs)
	text, dec := bufs[:pgChunk], bufs[pgChunk:]
	n := 0
	for n < len(want) {
		s := a.npy.DataOffset + off + int64(n) // in the decoded npy file
		k := min(len(want)-n, len(dec)-3)
		g0, g1 := s/3, (s+int64(k)+2)/3 // the groups holding [s, s+k)
		t := text[:(g1-g0)*4]
		if a.file != nil {
			if r, err := a.file.ReadAt(t, a.textOff+g0*4); r < len(t) {
				return n, pgErr(a.name, "reading the file: %v", err)
			}
		} else {
			copy(t, a.text[g0*4:g1*4])
		}
		m, err := a.decode(dec, t, g0*4, g1*4 == a.length)
		if err != nil {
			return n, err
		}
		lo := int(s - g0*3)
		if lo+k > m {
			return n, pgErr(a.name, "internal error: decoded %d bytes of group %d, need %d", m, g0, lo+k)
		}
		n += copy(want[n:], dec[lo:lo+k])
	}
	if len(want) < len(p) {
		return n, io.EOF
	}
	return n, nil
}

// InflateData is Inflate into memory.
func (a *pgArray) InflateData() ([]byte, error) {
	data := make([]byte, a.npy.DataBytes())
	w := &sliceFill{b: data}
	if err := a.Inflate(w); err != nil {
		return nil, err
	}
	return data, nil
}

type sliceFill struct {
	b []byte
	n int
}

func (s *sliceFill) Write(p []byte) (int, error) {
	if len(p) > len(s.b)-s.n {
		return 0, errors.New("internal error: more bytes than the tensor holds")
	}
	s.n += copy(s.b[s.n:], p)
	return len(p), nil
}
