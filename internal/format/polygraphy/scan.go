package polygraphy

import (
	"bytes"
	"fmt"
	"io"
	"unicode/utf16"
	"unicode/utf8"

	"github.com/depthspace/depthspace/internal/format/json"
)

// The JSON scanner: the structure of a file of any size, each string
// recorded by its span in the file, never copied.

// pjValue is one JSON value of the file: its span in b; for an object its
// keys (decoded) and values, for an array its elements. Strings are not
// decoded: esc says whether they hold escapes.
type pjValue struct {
	kind     byte // '{', '[', '"', or '0' for numbers and literals
	off, end int  // b[off:end] is the value's text (a string's with its quotes)
	esc      bool
	keys     []string
	keyOffs  []int
	elems    []*pjValue
}

type pjParser struct {
	b    []byte
	i    int
	n    int         // values made
	file io.ReaderAt // reads b by position, or nil
	buf  []byte      // window's
}

func (p *pjParser) errAt(off int, format string, a ...any) error {
	return &PolygraphyError{Offset: int64(off), Msg: fmt.Sprintf(format, a...)}
}

func (p *pjParser) space() {
	for p.i < len(p.b) {
		switch p.b[p.i] {
		case ' ', '\t', '\n', '\r':
			p.i++
		default:
			return
		}
	}
}

func (p *pjParser) value(depth int) (*pjValue, error) {
	p.space()
	if p.i >= len(p.b) {
		return nil, p.errAt(p.i, "unexpected end of the JSON text")
	}
	if p.n++; p.n > pgMaxValues {
		return nil, p.errAt(p.i, "more than %d JSON values: not a Polygraphy file", pgMaxValues)
	}
	switch c := p.b[p.i]; c {
	case '{', '[':
		if depth >= pgMaxDepth {
			return nil, p.errAt(p.i, "JSON nested more than %d deep", pgMaxDepth)
		}
		return p.container(c, depth)
	case '"':
		return p.str()
	default:
		return p.scalar()
	}
}

func (p *pjParser) container(open byte, depth int) (*pjValue, error) {
	v := &pjValue{kind: open, off: p.i}
	closer := byte(']')
	if open == '{' {
		closer = '}'
	}
	p.i++
	p.space()
	if p.i < len(p.b) && p.b[p.i] == closer {
		p.i++
		v.end = p.i
		return v, nil
	}
	for {
		if open == '{' {
			p.space()
			if p.i >= len(p.b) || p.b[p.i] != '"' {
				return nil, p.errAt(p.i, "expected a string key")
			}
			kv, err := p.str()
			if err != nil {
				return nil, err
			}
			key, err := pjString(p.b, kv)
			if err != nil {
				return nil, err
			}
			for _, k := range v.keys {
				if k == key {
					return nil, p.errAt(kv.off, "key %q appears twice in one object", key)
				}
			}
			v.keys = append(v.keys, key)
			v.keyOffs = append(v.keyOffs, kv.off)
			p.space()
			if p.i >= len(p.b) || p.b[p.i] != ':' {
				return nil, p.errAt(p.i, "expected ':' after key %q", key)
			}
			p.i++
		}
		e, err := p.value(depth + 1)
		if err != nil {
			return nil, err
		}
		v.elems = append(v.elems, e)
		p.space()
		if p.i >= len(p.b) {
			return nil, p.errAt(p.i, "unexpected end of the JSON text")
		}
		switch p.b[p.i] {
		case ',':
			p.i++
			continue
		case closer:
			p.i++
			v.end = p.i
			return v, nil
		}
		return nil, p.errAt(p.i, "expected ',' or '%c'", closer)
	}
}

// str finds a string's end without decoding it: linear in its length
// whatever escapes it holds (a base64 array is tens of MiB). With a file
// to read by position, the string is read through a buffer rather than
// the mapping, so that its pages are not faulted into the process (its
// text is read again, the same way, when the member is decoded).
func (p *pjParser) str() (*pjValue, error) {
	v := &pjValue{kind: '"', off: p.i}
	i := p.i + 1
	for {
		w, err := p.window(i)
		if err != nil {
			return nil, err
		}
		if len(w) == 0 {
			return nil, p.errAt(v.off, "unterminated string")
		}
		q := bytes.IndexByte(w, '"') // -1: none in the rest of w
		j := 0
		for {
			lim := len(w)
			if q >= 0 {
				lim = q
			}
			k := bytes.IndexByte(w[j:lim], '\\')
			if k < 0 {
				break
			}
			v.esc = true
			j += k + 2 // the backslash and the character it escapes
			if j >= len(w) {
				break
			}
			if q >= 0 && j > q { // that was our quote: find the next
				if q = bytes.IndexByte(w[j:], '"'); q >= 0 {
					q += j
				}
			}
		}
		if q >= 0 && j <= q {
			p.i = i + q + 1
			v.end = p.i
			return v, nil
		}
		i += max(j, len(w))
	}
}

// pjWindow is how much of a string is read at a time from the file.
const pjWindow = 1 << 20

// window gives the bytes from i on: the rest of the mapping, or the next
// pjWindow of them read from the file.
func (p *pjParser) window(i int) ([]byte, error) {
	if i >= len(p.b) {
		return nil, nil
	}
	if p.file == nil || len(p.b)-i <= 4096 {
		return p.b[i:], nil
	}
	if p.buf == nil {
		p.buf = make([]byte, pjWindow)
	}
	w := p.buf[:min(pjWindow, len(p.b)-i)]
	if n, err := p.file.ReadAt(w, int64(i)); n < len(w) {
		return nil, &PolygraphyError{Offset: int64(i), Msg: fmt.Sprintf("reading the file: %v", err)}
	}
	return w, nil
}

func (p *pjParser) scalar() (*pjValue, error) {
	start := p.i
	for p.i < len(p.b) {
		c := p.b[p.i]
		if c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c == '-' || c == '+' || c == '.' {
			p.i++
			continue
		}
		break
	}
	t := string(p.b[start:p.i])
	switch t {
	case "true", "false", "null", "NaN", "Infinity", "-Infinity": // Python writes the last three
	default:
		if !jsonNumber(t) {
			if t == "" {
				return nil, p.errAt(start, "unexpected character %q", p.b[start])
			}
			return nil, p.errAt(start, "%q is not a JSON value", t)
		}
	}
	p.n++
	return &pjValue{kind: '0', off: start, end: p.i}, nil
}

// jsonNumber: -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?
func jsonNumber(s string) bool {
	i := 0
	digits := func() int {
		n := 0
		for i < len(s) && s[i] >= '0' && s[i] <= '9' {
			i++
			n++
		}
		return n
	}
	if i < len(s) && s[i] == '-' {
		i++
	}
	if i < len(s) && s[i] == '0' {
		i++
	} else if digits() == 0 {
		return false
	}
	if i < len(s) && s[i] == '.' {
		i++
		if digits() == 0 {
			return false
		}
	}
	if i < len(s) && (s[i] == 'e' || s[i] == 'E') {
		i++
		if i < len(s) && (s[i] == '+' || s[i] == '-') {
			i++
		}
		if digits() == 0 {
			return false
		}
	}
	return i == len(s)
}

// pjString decodes a small string value (a key, a name), strictly: valid
// UTF-8, no control characters, valid escapes, no lone surrogates.
func pjString(b []byte, v *pjValue) (string, error) {
	if v.kind != '"' {
		return "", &PolygraphyError{Offset: int64(v.off), Msg: "expected a string"}
	}
	raw := b[v.off+1 : v.end-1]
	if len(raw) > pgMaxName {
		return "", &PolygraphyError{Offset: int64(v.off), Msg: fmt.Sprintf("a string of %d bytes where a name is expected", len(raw))}
	}
	s, at, msg := unescapeJSON(raw)
	if msg != "" {
		return "", &PolygraphyError{Offset: int64(v.off + 1 + at), Msg: msg}
	}
	return s, nil
}

func unescapeJSON(raw []byte) (s string, at int, msg string) {
	if !bytes.ContainsAny(raw, "\\") {
		for i, c := range raw {
			if c < 0x20 {
				return "", i, fmt.Sprintf("control character 0x%02x in a string", c)
			}
		}
		if !utf8.Valid(raw) {
			return "", 0, "string is not valid UTF-8"
		}
		return string(raw), 0, ""
	}
	out := make([]byte, 0, len(raw))
	for i := 0; i < len(raw); {
		c := raw[i]
		switch {
		case c < 0x20:
			return "", i, fmt.Sprintf("control character 0x%02x in a string", c)
		case c != '\\':
			r, n := utf8.DecodeRune(raw[i:])
			if r == utf8.RuneError && n == 1 {
				return "", i, "string is not valid UTF-8"
			}
			out = append(out, raw[i:i+n]...)
			i += n
			continue
		}
		r, n, m := jsonEscape(raw[i:])
		if m != "" {
			return "", i, m
		}
		out = utf8.AppendRune(out, r)
		i += n
	}
	return string(out), 0, ""
}

// jsonEscape decodes the escape at the start of s (which starts with a
// backslash): the rune, the bytes it took, or why it is invalid.
func jsonEscape(s []byte) (rune, int, string) {
	if len(s) < 2 {
		return 0, 0, "unterminated escape"
	}
	switch s[1] {
	case '"', '\\', '/':
		return rune(s[1]), 2, ""
	case 'b':
		return '\b', 2, ""
	case 'f':
		return '\f', 2, ""
	case 'n':
		return '\n', 2, ""
	case 'r':
		return '\r', 2, ""
	case 't':
		return '\t', 2, ""
	case 'u':
		r, ok := hex4ok(s[2:])
		if !ok {
			return 0, 0, "invalid \\u escape"
		}
		if utf16.IsSurrogate(r) {
			if len(s) >= 12 && s[6] == '\\' && s[7] == 'u' {
				if r2, ok := hex4ok(s[8:]); ok {
					if d := utf16.DecodeRune(r, r2); d != utf8.RuneError {
						return d, 12, ""
					}
				}
			}
			return 0, 0, "lone surrogate in a \\u escape"
		}
		return r, 6, ""
	}
	return 0, 0, fmt.Sprintf("invalid escape \\%c", s[1])
}

func (v *pjValue) get(key string) *pjValue {
	for i, k := range v.keys {
		if k == key {
			return v.elems[i]
		}
	}
	return nil
}

// class is an object's Polygraphy class: the "polygraphy_class" value, or
// the legacy "__polygraphy_encoded_CLASS" key (checked first, as
// serde.py's Decoder does); "" for a plain object.
func (v *pjValue) class(b []byte) (string, error) {
	if v.kind != '{' {
		return "", nil
	}
	const legacyPrefix, legacyMarker = "__polygraphy_encoded_", "polygraphy_serialized_json_type"
	for i, k := range v.keys {
		if len(k) > len(legacyPrefix) && k[:len(legacyPrefix)] == legacyPrefix && v.elems[i].kind == '"' {
			if s, err := pjString(b, v.elems[i]); err == nil && s == legacyMarker {
				return k[len(legacyPrefix):], nil
			}
		}
	}
	c := v.get("polygraphy_class")
	if c == nil {
		return "", nil
	}
	if c.kind != '"' {
		return "", &PolygraphyError{Offset: int64(c.off), Msg: "polygraphy_class is not a string"}
	}
	return pjString(b, c)
}

func isMarkerKey(k string) bool {
	return k == "polygraphy_class" || len(k) > 21 && k[:21] == "__polygraphy_encoded_"
}

// hex4ok is json.Hex4 with its -1 for "not four hex digits" as
// a bool.
func hex4ok(s []byte) (rune, bool) {
	r := json.Hex4(s)
	return r, r >= 0
}
