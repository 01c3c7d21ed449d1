package json

import (
	"bytes"
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"
)

// The byte-level JSON scanner: tokens, numbers and strings read from their
// exact text, and errors that name a line, a column and an element path.

type jsonParser struct {
	data []byte
	pos  int
}

func (p *jsonParser) errAt(off int, format string, args ...any) error {
	line, col := lineCol(p.data, off)
	return &JSONError{Line: line, Column: col, Msg: fmt.Sprintf(format, args...)}
}

// errPath is errAt with the element path ("at [0][1]: ") in front.
func (p *jsonParser) errPath(off int, path []int, format string, args ...any) error {
	msg := fmt.Sprintf(format, args...)
	if len(path) > 0 {
		msg = "at " + pathString(path) + ": " + msg
	}
	line, col := lineCol(p.data, off)
	return &JSONError{Line: line, Column: col, Msg: msg}
}

func pathString(path []int) string {
	var sb strings.Builder
	for _, i := range path {
		sb.WriteByte('[')
		sb.WriteString(strconv.Itoa(i))
		sb.WriteByte(']')
	}
	return sb.String()
}

// lineCol turns a byte offset into a 1-based line and column (in
// characters; a byte order mark at the start does not count).
func lineCol(data []byte, off int) (int, int) {
	if off > len(data) {
		off = len(data)
	}
	if off < 0 {
		off = 0
	}
	line := 1 + bytes.Count(data[:off], []byte{'\n'})
	start := bytes.LastIndexByte(data[:off], '\n') + 1
	seg := data[start:off]
	if start == 0 && bytes.HasPrefix(seg, UTF8BOM) {
		seg = seg[len(UTF8BOM):]
	}
	return line, 1 + utf8.RuneCount(seg)
}

func firstInvalidUTF8(data []byte) int {
	for i := 0; i < len(data); {
		r, n := utf8.DecodeRune(data[i:])
		if r == utf8.RuneError && n <= 1 {
			return i
		}
		i += n
	}
	return len(data)
}

func (p *jsonParser) skipWS() {
	for p.pos < len(p.data) {
		switch p.data[p.pos] {
		case ' ', '\t', '\n', '\r':
			p.pos++
		default:
			return
		}
	}
}

// peek is the byte at pos, or 0 at the end of the input (0 is never valid
// JSON outside a string, and strings are scanned separately).
func (p *jsonParser) peek() byte {
	if p.pos < len(p.data) {
		return p.data[p.pos]
	}
	return 0
}

// describe names what is at off for a syntax error.
func (p *jsonParser) describe(off int) string {
	if off >= len(p.data) {
		return "the end of the input"
	}
	c := p.data[off]
	switch {
	case c == '"':
		return "a string"
	case c == '-' || c >= '0' && c <= '9':
		return "a number"
	case c == '[':
		return "an array"
	case c == '{':
		return "an object"
	}
	r, _ := utf8.DecodeRune(p.data[off:])
	return strconv.QuoteRune(r)
}

type tokKind uint8

const (
	tokNumber tokKind = iota + 1
	tokString
	tokTrue
	tokFalse
	tokNull
	tokNaN    // bare NaN (Python's json)
	tokInf    // bare Infinity
	tokNegInf // bare -Infinity
	tokObject // '{': only its start; never a valid tensor leaf
	tokArray  // '[': only its start
)

type token struct {
	kind       tokKind
	start, end int
	isInt      bool // a number with neither fraction nor exponent
}

func (p *jsonParser) text(t token) []byte { return p.data[t.start:t.end] }

// lex reads the scalar token at off (or notes the start of an array or
// object) and checks its syntax.
func (p *jsonParser) lex(off int) (token, error) {
	d := p.data
	if off >= len(d) {
		return token{}, p.errAt(off, "unexpected end of input")
	}
	word := func(w string, k tokKind) (token, error) {
		if end := off + len(w); end <= len(d) && string(d[off:end]) == w {
			return token{kind: k, start: off, end: end}, nil
		}
		return token{}, p.errAt(off, "invalid character %s", p.describe(off))
	}
	switch c := d[off]; {
	case c == '"':
		end, err := p.scanString(off)
		return token{kind: tokString, start: off, end: end}, err
	case c == '[':
		return token{kind: tokArray, start: off, end: off + 1}, nil
	case c == '{':
		return token{kind: tokObject, start: off, end: off + 1}, nil
	case c == 't':
		return word("true", tokTrue)
	case c == 'f':
		return word("false", tokFalse)
	case c == 'n':
		return word("null", tokNull)
	case c == 'N':
		return word("NaN", tokNaN)
	case c == 'I':
		return word("Infinity", tokInf)
	case c == '-' && off+1 < len(d) && d[off+1] == 'I':
		return word("-Infinity", tokNegInf)
	case c == '-' || c >= '0' && c <= '9':
		end, isInt, err := p.scanNumber(off)
		return token{kind: tokNumber, start: off, end: end, isInt: isInt}, err
	}
	return token{}, p.errAt(off, "invalid character %s", p.describe(off))
}

func isDigit(c byte) bool { return c >= '0' && c <= '9' }

// scanNumber checks JSON number syntax:
// -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?
func (p *jsonParser) scanNumber(off int) (end int, isInt bool, err error) {
	d := p.data
	i := off
	if i < len(d) && d[i] == '-' {
		i++
	}
	switch {
	case i < len(d) && d[i] == '0':
		i++
		if i < len(d) && isDigit(d[i]) {
			return 0, false, p.errAt(off, "invalid number: a leading zero")
		}
	case i < len(d) && isDigit(d[i]):
		for i < len(d) && isDigit(d[i]) {
			i++
		}
	default:
		return 0, false, p.errAt(off, "invalid number: no digits after '-'")
	}
	isInt = true
	if i < len(d) && d[i] == '.' {
		i++
		if i >= len(d) || !isDigit(d[i]) {
			return 0, false, p.errAt(off, "invalid number: no digits after the decimal point")
		}
		for i < len(d) && isDigit(d[i]) {
			i++
		}
		isInt = false
	}
	if i < len(d) && (d[i] == 'e' || d[i] == 'E') {
		i++
		if i < len(d) && (d[i] == '+' || d[i] == '-') {
			i++
		}
		if i >= len(d) || !isDigit(d[i]) {
			return 0, false, p.errAt(off, "invalid number: no digits in the exponent")
		}
		for i < len(d) && isDigit(d[i]) {
			i++
		}
		isInt = false
	}
	return i, isInt, nil
}

// Hex4 reads the four hex digits of a \u escape.
func Hex4(b []byte) rune {
	if len(b) < 4 {
		return -1
	}
	var r rune
	for _, c := range b[:4] {
		switch {
		case c >= '0' && c <= '9':
			r = r<<4 | rune(c-'0')
		case c >= 'a' && c <= 'f':
			r = r<<4 | rune(c-'a'+10)
		case c >= 'A' && c <= 'F':
			r = r<<4 | rune(c-'A'+10)
		default:
			return -1
		}
	}
	return r
}

// scanString checks the string starting with the quote at off and returns
// the offset after its closing quote. Escapes must name Unicode scalar
// values: a lone surrogate is refused, as no dtype can hold it.
func (p *jsonParser) scanString(off int) (int, error) {
	d := p.data
	for i := off + 1; i < len(d); {
		c := d[i]
		switch {
		case c == '"':
			return i + 1, nil
		case c < 0x20:
			return 0, p.errAt(i, "control character %s in a string; write it as an escape", strconv.QuoteRune(rune(c)))
		case c != '\\':
			i++
			continue
		}
		if i+1 >= len(d) {
			break
		}
		switch d[i+1] {
		case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
			i += 2
		case 'u':
			r := Hex4(d[i+2:])
			if r < 0 {
				return 0, p.errAt(i, "invalid \\u escape: it needs 4 hex digits")
			}
			switch {
			case r >= 0xDC00 && r <= 0xDFFF:
				return 0, p.errAt(i, "invalid \\u escape: lone surrogate \\u%04x", r)
			case r >= 0xD800 && r <= 0xDBFF:
				var lo rune = -1
				if i+7 < len(d) && d[i+6] == '\\' && d[i+7] == 'u' {
					lo = Hex4(d[i+8:])
				}
				if lo < 0xDC00 || lo > 0xDFFF {
					return 0, p.errAt(i, "invalid \\u escape: lone surrogate \\u%04x", r)
				}
				i += 12
			default:
				i += 6
			}
		default:
			return 0, p.errAt(i, "invalid escape %q in a string", d[i:i+2])
		}
	}
	return 0, p.errAt(off, "unterminated string")
}

// nextRune decodes one character of a string already checked by
// scanString; i is inside the string. done reports the closing quote.
func (p *jsonParser) nextRune(i int) (r rune, next int, done bool) {
	d := p.data
	if i >= len(d) || d[i] == '"' {
		return 0, i + 1, true
	}
	if d[i] != '\\' {
		r, n := utf8.DecodeRune(d[i:])
		return r, i + n, false
	}
	if i+1 >= len(d) {
		return 0, i + 1, true
	}
	switch d[i+1] {
	case 'b':
		return '\b', i + 2, false
	case 'f':
		return '\f', i + 2, false
	case 'n':
		return '\n', i + 2, false
	case 'r':
		return '\r', i + 2, false
	case 't':
		return '\t', i + 2, false
	case 'u':
		r := Hex4(d[i+2:])
		if r >= 0xD800 && r <= 0xDBFF && i+11 < len(d) {
			lo := Hex4(d[i+8:])
			return 0x10000 + (r-0xD800)<<10 + (lo - 0xDC00), i + 12, false
		}
		if r < 0 {
			r = utf8.RuneError
		}
		return r, i + 6, false
	}
	return rune(d[i+1]), i + 2, false
}

// goString decodes a checked string token.
func (p *jsonParser) goString(t token) string {
	var sb strings.Builder
	for i := t.start + 1; ; {
		r, next, done := p.nextRune(i)
		if done {
			return sb.String()
		}
		sb.WriteRune(r)
		i = next
	}
}

// found describes a leaf token for "expected …, found …".
func (p *jsonParser) found(t token) string {
	switch t.kind {
	case tokString:
		s := p.text(t)
		if len(s) > 40 {
			cut := 36
			for cut > 0 && !utf8.RuneStart(s[cut]) {
				cut--
			}
			return "a string " + string(s[:cut]) + `..."`
		}
		return "a string " + string(s)
	case tokTrue:
		return "true"
	case tokFalse:
		return "false"
	case tokNull:
		return "null"
	case tokObject:
		return "an object"
	case tokArray:
		return "an array"
	}
	return "a number"
}

// shortText is a literal for an error message, cut if very long.
func shortText(b []byte) string {
	if len(b) > 40 {
		return string(b[:36]) + "..."
	}
	return string(b)
}

// skipValue checks and skips any JSON value (used for the values the
// tensor does not need to understand structurally, such as the rest of a
// ragged array).
func (p *jsonParser) skipValue(depth int) error {
	p.skipWS()
	t, err := p.lex(p.pos)
	if err != nil {
		return err
	}
	switch t.kind {
	case tokArray, tokObject:
		if depth >= maxJSONDepth {
			return p.errAt(p.pos, "nested deeper than %d levels", maxJSONDepth)
		}
		closer := byte(']')
		if t.kind == tokObject {
			closer = '}'
		}
		p.pos++
		p.skipWS()
		if p.peek() == closer {
			p.pos++
			return nil
		}
		for {
			if t.kind == tokObject {
				p.skipWS()
				if p.peek() != '"' {
					return p.errAt(p.pos, "expected a string key, found %s", p.describe(p.pos))
				}
				end, err := p.scanString(p.pos)
				if err != nil {
					return err
				}
				p.pos = end
				p.skipWS()
				if p.peek() != ':' {
					return p.errAt(p.pos, "expected ':' after a key, found %s", p.describe(p.pos))
				}
				p.pos++
			}
			if err := p.skipValue(depth + 1); err != nil {
				return err
			}
			p.skipWS()
			switch p.peek() {
			case ',':
				p.pos++
				continue
			case closer:
				p.pos++
				return nil
			}
			return p.errAt(p.pos, "expected ',' or '%c', found %s", closer, p.describe(p.pos))
		}
	}
	p.pos = t.end
	return nil
}

// ---------------------------------------------------------------------------
// The object form

type jsonObject struct {
	dtype    string
	dtypeOff int
	shape    []int // nil when absent
	dataOff  int
}

// object reads {"dtype": …, "shape": […], "data": …} and checks that
// nothing follows it. The data value is only syntax-checked here.
func (p *jsonParser) object() (jsonObject, error) {
	var o jsonObject
	p.pos++
	seen := map[string]bool{}
	p.skipWS()
	if p.peek() == '}' {
		p.pos++
	} else {
		for {
			p.skipWS()
			if p.peek() != '"' {
				return o, p.errAt(p.pos, "expected a key in double quotes, found %s", p.describe(p.pos))
			}
			keyOff := p.pos
			end, err := p.scanString(p.pos)
			if err != nil {
				return o, err
			}
			kt := token{kind: tokString, start: keyOff, end: end}
			key := ""
			if end-keyOff < 64 {
				key = p.goString(kt)
			}
			switch key {
			case "dtype", "shape", "data":
			case "lst", "polygraphy_class":
				// A Polygraphy file that detection did not recognize.
				return o, p.errAt(keyOff, "unknown key %s (a JSON tensor has \"dtype\", \"shape\" and \"data\"; %s is a Polygraphy key: if this is a Polygraphy file, read it with --from polygraphy)", shortText(p.text(kt)), shortText(p.text(kt)))
			default:
				return o, p.errAt(keyOff, "unknown key %s (a JSON tensor has \"dtype\", \"shape\" and \"data\")", shortText(p.text(kt)))
			}
			if seen[key] {
				return o, p.errAt(keyOff, "duplicate key %q", key)
			}
			seen[key] = true
			p.pos = end
			p.skipWS()
			if p.peek() != ':' {
				return o, p.errAt(p.pos, "expected ':' after the key %q, found %s", key, p.describe(p.pos))
			}
			p.pos++
			p.skipWS()
			switch key {
			case "dtype":
				o.dtypeOff = p.pos
				if p.peek() != '"' {
					return o, p.errAt(p.pos, "\"dtype\" must be a string such as \"float32\", found %s", p.describe(p.pos))
				}
				end, err := p.scanString(p.pos)
				if err != nil {
					return o, err
				}
				if end-p.pos > 200 {
					return o, p.errAt(p.pos, "unknown dtype %s", shortText(p.data[p.pos:end]))
				}
				o.dtype = p.goString(token{kind: tokString, start: p.pos, end: end})
				p.pos = end
			case "shape":
				if o.shape, err = p.shapeValue(); err != nil {
					return o, err
				}
			case "data":
				o.dataOff = p.pos
				if err := p.skipValue(0); err != nil {
					return o, err
				}
			}
			p.skipWS()
			if p.peek() == ',' {
				p.pos++
				continue
			}
			if p.peek() == '}' {
				p.pos++
				break
			}
			return o, p.errAt(p.pos, "expected ',' or '}' in the object, found %s", p.describe(p.pos))
		}
	}
	closeOff := p.pos - 1
	p.skipWS()
	if p.pos < len(p.data) {
		return o, p.errAt(p.pos, "unexpected data after the tensor")
	}
	for _, k := range []string{"dtype", "data"} {
		if !seen[k] {
			return o, p.errAt(closeOff, "the object has no %q key", k)
		}
	}
	return o, nil
}

// shapeValue reads the "shape" array: at most 64 non-negative integers.
func (p *jsonParser) shapeValue() ([]int, error) {
	start := p.pos
	bad := func() error {
		return p.errAt(start, "\"shape\" must be an array of non-negative integers such as [1, 8, 2, 3]")
	}
	if p.peek() != '[' {
		return nil, bad()
	}
	p.pos++
	shape := []int{}
	p.skipWS()
	if p.peek() == ']' {
		p.pos++
		return shape, nil
	}
	for {
		p.skipWS()
		c := p.peek()
		if !isDigit(c) {
			return nil, bad()
		}
		end, isInt, err := p.scanNumber(p.pos)
		if err != nil {
			return nil, err
		}
		if !isInt {
			return nil, bad()
		}
		v, err := strconv.ParseInt(string(p.data[p.pos:end]), 10, 0)
		if err != nil {
			return nil, p.errAt(p.pos, "shape dimension %s is too large", shortText(p.data[p.pos:end]))
		}
		if len(shape) == maxJSONDepth {
			return nil, p.errAt(p.pos, "\"shape\" has more than %d dimensions", maxJSONDepth)
		}
		shape = append(shape, int(v))
		p.pos = end
		p.skipWS()
		switch p.peek() {
		case ',':
			p.pos++
			continue
		case ']':
			p.pos++
			return shape, nil
		}
		return nil, p.errAt(p.pos, "expected ',' or ']' in \"shape\", found %s", p.describe(p.pos))
	}
}

// ---------------------------------------------------------------------------
// Pass 1: structure
