package polygraphy

import (
	"bytes"
	"encoding/binary"
	"io"
	"unicode/utf8"

	"github.com/depthspace/depthspace/internal/format"
	"github.com/depthspace/depthspace/internal/format/npy"
)

// Polygraphy 0.29 and older wrote an array as the bytes of np.savez's npz
// (one stored member, arr_0.npy) taken as latin-1 text, each byte one
// character, which json.dumps writes with escapes: "PK\u0003\u0004…".
// serde.py still reads them (b64decode fails, then .encode("latin-1"),
// then np.load, an npz's first member); so does this, lazily: the text is
// unescaped into bytes as the member's job reads it, the zip's local
// header and the npy preamble skipped, exactly the data taken. An npy
// file as latin-1 text ("\u0093NUMPY…", which serde.py's fallback reads
// too) is taken the same way.

// nextLatin1 gives the next n bytes the latin-1 text stands for.
func (t *pgText) nextLatin1(n int) ([]byte, error) {
	if cap(t.buf) < n {
		t.buf = make([]byte, 0, n)
	}
	out := t.buf[:0]
	text := t.a.text
	for len(out) < n && t.i < len(text) {
		c := text[t.i]
		switch {
		case c == '\\':
			r, k, m := jsonEscape(text[t.i:])
			if m != "" {
				return nil, pgErr(t.a.name, "latin-1 text, character %d: %s", t.i, m)
			}
			if r > 0xff {
				return nil, pgErr(t.a.name, "latin-1 text, character %d: U+%04X is not a latin-1 character", t.i, r)
			}
			out = append(out, byte(r))
			t.i += k
		case c < 0x20:
			return nil, pgErr(t.a.name, "latin-1 text, character %d: control character 0x%02x in a string", t.i, c)
		case c < 0x80:
			out = append(out, c)
			t.i++
		default: // written without ensure_ascii: UTF-8
			r, k := utf8.DecodeRune(text[t.i:])
			if r == utf8.RuneError && k <= 1 || r > 0xff {
				return nil, pgErr(t.a.name, "latin-1 text, character %d: not a latin-1 character", t.i)
			}
			out = append(out, byte(r))
			t.i += k
		}
	}
	return out, nil
}

// openLatin1 finds where a latin-1 array's data start and checks that the
// text holds them all: npz, its local header, then the npy preamble; or
// an npy file with nothing after its data.
func (a *pgArray) openLatin1() error {
	a.latin1 = true
	var total int64
	t := &pgText{a: a}
	for {
		s, err := t.next(pgChunk)
		if err != nil {
			return err
		}
		if len(s) == 0 {
			break
		}
		total += int64(len(s))
	}
	a.length = total
	t = &pgText{a: a}
	head, err := t.next(int(min(total, 30+0xffff+0xffff+npy.MaxNpyHeader+12)))
	if err != nil {
		return err
	}
	zip := bytes.HasPrefix(head, []byte("PK\x03\x04"))
	if zip {
		if len(head) < 30 {
			return pgErr(a.name, "latin-1 npz (Polygraphy 0.29): truncated zip header")
		}
		if m := binary.LittleEndian.Uint16(head[8:]); m != 0 {
			return pgErr(a.name, "latin-1 npz (Polygraphy 0.29): member compressed (method %d); np.savez stores", m)
		}
		nl, el := int(binary.LittleEndian.Uint16(head[26:])), int(binary.LittleEndian.Uint16(head[28:]))
		a.start = int64(30 + nl + el)
		if a.start > int64(len(head)) {
			return pgErr(a.name, "latin-1 npz (Polygraphy 0.29): truncated zip header")
		}
	}
	npy, err := npy.ParseNpy(head[a.start:])
	if err != nil {
		return pgErr(a.name, "latin-1 array (Polygraphy 0.29): %v", err)
	}
	end := a.start + npy.DataOffset + npy.DataBytes()
	switch {
	case total < end:
		return pgErr(a.name, "truncated: the npy header describes %d data bytes (shape %s, %s) but the latin-1 text holds %d", npy.DataBytes(), format.ShapeString(npy.Shape), npy.DType, max(0, total-a.start-npy.DataOffset))
	case !zip && total > end:
		return pgErr(a.name, "%d bytes beyond the %d data bytes the npy header describes (shape %s, %s)", total-end, npy.DataBytes(), format.ShapeString(npy.Shape), npy.DType)
	}
	a.start += npy.DataOffset
	a.npy = npy
	return nil
}

// inflateLatin1 writes a latin-1 array's data.
func (a *pgArray) inflateLatin1(w io.Writer) error {
	t := &pgText{a: a}
	for skip := a.start; skip > 0; {
		s, err := t.next(int(min(skip, pgChunk)))
		if err != nil {
			return err
		}
		if len(s) == 0 {
			return pgErr(a.name, "latin-1 text ends before its data")
		}
		skip -= int64(len(s))
	}
	for left := a.npy.DataBytes(); left > 0; {
		s, err := t.next(int(min(left, pgChunk)))
		if err != nil {
			return err
		}
		if len(s) == 0 {
			return pgErr(a.name, "latin-1 text ends %d bytes before the end of its data", left)
		}
		if _, err := w.Write(s); err != nil {
			return err
		}
		left -= int64(len(s))
	}
	return nil
}
