package format

// JSON tensors (SPEC, Formats, json): a bare nested array as printed in the
// seed pages, or {"dtype": "uint32", "shape": [1, 8, 2, 3], "data": [...]}.
//
// The decoder is a small byte-level scanner rather than encoding/json so
// that every error can name a line, a column and an element path, and so
// that integers are read from their exact text. It works in two passes over
// the data value: the first checks the structure (nesting, raggedness,
// syntax) and finds the shape without allocating anything sized by the
// input's claims; the second converts each leaf into the element bytes.

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"math"
	"math/big"
	"math/bits"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/x448/float16"
)

// maxJSONDepth bounds array nesting, like numpy's NPY_MAXDIMS (64).
const maxJSONDepth = 64

// maxJSONPadding bounds how far the decoded tensor may outgrow its text.
// A numeric element takes at most 16 bytes and at least 2 bytes of text, so
// only S<n>, U<n> and V<n> padding can grow past 16× the input; this keeps a
// hostile {"dtype": "S999999999", "data": ["", "", …]} from allocating
// gigabytes. A variable so that the fuzz test can lower it.
var maxJSONPadding int64 = 1 << 30

// JSONError is a malformed JSON tensor: what is wrong and where.
type JSONError struct {
	Line, Column int // 1-based; Column counts characters, not bytes
	Msg          string
}

func (e *JSONError) Error() string {
	return fmt.Sprintf("line %d, column %d: %s", e.Line, e.Column, e.Msg)
}

var utf8BOM = []byte{0xEF, 0xBB, 0xBF}

// DecodeJSON parses a JSON tensor from data: either a bare nested array
// ([[[[0, 18, 1]]]], whitespace anywhere) or the object form
// {"dtype": "uint32", "shape": [1, 8, 2, 3], "data": [...]}.
//
// want, when non-nil, is the dtype the user gave with --dtype: it types a
// bare array; for the object form it must agree with the object's "dtype"
// (same kind, size and bfloat16-ness) and the file's dtype, byte order
// included, is the one returned. With want == nil a bare array's dtype is
// inferred like numpy: all true/false → bool; integers (and booleans) →
// int64, or uint64 if some value exceeds int64 and none is negative; any
// float, NaN or ±Infinity → float64; an empty array → float64.
//
// Beyond strict JSON it accepts a leading UTF-8 byte order mark and the bare
// tokens NaN, Infinity and -Infinity that Python's json module writes.
// Returns the header (C order) and the element bytes in the dtype's byte
// order.
func DecodeJSON(data []byte, want *DType) (Header, []byte, error) {
	p := &jsonParser{data: data}
	if !utf8.Valid(data) {
		return Header{}, nil, p.errAt(firstInvalidUTF8(data), "the JSON text is not valid UTF-8")
	}
	if bytes.HasPrefix(data, utf8BOM) {
		p.pos = len(utf8BOM)
	}
	p.skipWS()
	if p.pos >= len(data) {
		return Header{}, nil, errors.New("empty input: expected a JSON array or object")
	}
	if want != nil {
		if err := checkJSONDType(*want); err != nil {
			return Header{}, nil, err
		}
	}

	var (
		dt       DType
		declared []int // the object's "shape", nil when absent
		w        *jsonWalker
	)
	switch data[p.pos] {
	case '[':
		w = newJSONWalker(p, want)
		if err := w.value(0); err != nil {
			return Header{}, nil, err
		}
		p.skipWS()
		if p.pos < len(data) {
			return Header{}, nil, p.errAt(p.pos, "unexpected data after the tensor")
		}
		if want != nil {
			dt = *want
		} else {
			var err error
			if dt, err = w.inf.result(p); err != nil {
				return Header{}, nil, err
			}
		}
	case '{':
		obj, err := p.object()
		if err != nil {
			return Header{}, nil, err
		}
		dt, err = ParseDType(obj.dtype)
		if err != nil {
			return Header{}, nil, p.errAt(obj.dtypeOff, "%v", err)
		}
		if err := checkJSONDType(dt); err != nil {
			return Header{}, nil, p.errAt(obj.dtypeOff, "%v", err)
		}
		if want != nil && (want.Kind != dt.Kind || want.Size != dt.Size || want.BFloat16 != dt.BFloat16) {
			return Header{}, nil, p.errAt(obj.dtypeOff, "dtype %s given but the file says %s", want.Name(), dt.Name())
		}
		declared = obj.shape
		p.pos = obj.dataOff
		w = newJSONWalker(p, &dt)
		if err := w.value(0); err != nil {
			return Header{}, nil, err
		}
	default:
		return Header{}, nil, p.errAt(p.pos, "expected a JSON array or object, found %s", p.describe(p.pos))
	}

	shape, err := w.tensorShape(dt, declared)
	if err != nil {
		return Header{}, nil, err
	}
	h := Header{DType: dt, Shape: shape}
	n := h.DataBytes()
	if n < 0 {
		return Header{}, nil, p.errAt(w.start, "shape [%s] is too large", ShapeString(shape))
	}
	if n > 16*int64(len(data))+maxJSONPadding {
		return Header{}, nil, p.errAt(w.start, "shape [%s] of %s would take %d bytes, too many for %d bytes of JSON",
			ShapeString(shape), dt.Name(), n, len(data))
	}
	leaves := h.Elements()
	if dt.Kind == 'c' {
		leaves *= 2
	}
	if leaves != w.leaves {
		// cannot happen: the shape was checked against the data
		return Header{}, nil, p.errAt(w.start, "internal error: %d values for %d elements", w.leaves, leaves)
	}
	out := make([]byte, n)
	if err := convertLeaves(p, w, dt, out); err != nil {
		return Header{}, nil, err
	}
	return h, out, nil
}

// checkJSONDType refuses dtypes that have no JSON text form.
func checkJSONDType(d DType) error {
	ok := false
	switch d.Kind {
	case 'b':
		ok = d.Size == 1
	case 'i', 'u':
		ok = d.Size == 1 || d.Size == 2 || d.Size == 4 || d.Size == 8
	case 'f':
		ok = d.Size == 2 || d.Size == 4 || d.Size == 8
	case 'c':
		ok = d.Size == 8 || d.Size == 16
	case 'S':
		ok = d.Size >= 1
	case 'U':
		ok = d.Size >= 4 && d.Size%4 == 0
	case 'V':
		ok = d.Size >= 1 && (!d.BFloat16 || d.Size == 2)
	}
	if !ok || d.Size > maxElemSize || d.BFloat16 && d.Kind != 'V' {
		return fmt.Errorf("dtype %s (kind %q, %d bytes) has no JSON form", d.Name(), d.Kind, d.Size)
	}
	return nil
}

// ---------------------------------------------------------------------------
// Scanner

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
	if start == 0 && bytes.HasPrefix(seg, utf8BOM) {
		seg = seg[len(utf8BOM):]
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

func hex4(b []byte) rune {
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
			r := hex4(d[i+2:])
			if r < 0 {
				return 0, p.errAt(i, "invalid \\u escape: it needs 4 hex digits")
			}
			switch {
			case r >= 0xDC00 && r <= 0xDFFF:
				return 0, p.errAt(i, "invalid \\u escape: lone surrogate \\u%04x", r)
			case r >= 0xD800 && r <= 0xDBFF:
				var lo rune = -1
				if i+7 < len(d) && d[i+6] == '\\' && d[i+7] == 'u' {
					lo = hex4(d[i+8:])
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
		r := hex4(d[i+2:])
		if r >= 0xD800 && r <= 0xDBFF && i+11 < len(d) {
			lo := hex4(d[i+8:])
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

// jsonWalker walks the data value once, checking that it is a regular
// nested array and finding its nesting shape. The first array met at each
// depth sets the length every later array at that depth must have; the
// first leaf (or the first empty innermost array) sets the depth.
type jsonWalker struct {
	p         *jsonParser
	start     int    // offset of the data value
	leafWord  string // what a leaf should be: "a number", "a string", …
	ndim      int    // nesting depth of the leaves, -1 until known
	shape     []int  // length of the first array at each depth
	firstPos  []int  // offset of the first array at each depth
	firstLeaf token  // the first leaf
	leaves    int
	idx       [maxJSONDepth + 1]int // the current element path
	inf       *inference            // non-nil when the dtype is inferred
}

func newJSONWalker(p *jsonParser, dt *DType) *jsonWalker {
	w := &jsonWalker{p: p, start: p.pos, ndim: -1, leafWord: "a number"}
	if dt == nil {
		w.inf = &inference{}
		return w
	}
	switch dt.Kind {
	case 'S', 'U':
		w.leafWord = "a string"
	case 'V':
		if !dt.BFloat16 {
			w.leafWord = "a string of hex digits"
		}
	case 'b':
		w.leafWord = "true or false"
	}
	return w
}

func (w *jsonWalker) value(depth int) error {
	p := w.p
	p.skipWS()
	off := p.pos
	t, err := p.lex(off)
	if err != nil {
		return err
	}
	if t.kind == tokArray {
		return w.array(depth)
	}
	if w.ndim >= 0 && depth < w.ndim {
		return p.errPath(off, w.idx[:depth], "expected an array, found %s", p.found(t))
	}
	if t.kind == tokNull || t.kind == tokObject {
		return p.errPath(off, w.idx[:depth], "expected %s, found %s", w.leafWord, p.found(t))
	}
	if w.ndim < 0 {
		w.ndim = depth
		w.firstLeaf = t
	}
	if w.inf != nil {
		if err := w.inf.add(p, t, w.idx[:depth]); err != nil {
			return err
		}
	}
	w.leaves++
	p.pos = t.end
	return nil
}

func (w *jsonWalker) array(depth int) error {
	p := w.p
	off := p.pos
	if w.ndim >= 0 && depth >= w.ndim {
		return p.errPath(off, w.idx[:depth], "expected %s, found an array", w.leafWord)
	}
	if depth >= maxJSONDepth {
		return p.errPath(off, w.idx[:depth], "arrays nested deeper than %d levels", maxJSONDepth)
	}
	first := depth == len(w.shape)
	if depth > len(w.shape) { // cannot happen: arrays open depth by depth
		return p.errPath(off, w.idx[:depth], "internal error: array at depth %d", depth)
	}
	if first {
		w.shape = append(w.shape, -1)
		w.firstPos = append(w.firstPos, off)
	}
	want := w.shape[depth]
	p.pos++
	p.skipWS()
	n := 0
	if p.peek() == ']' {
		p.pos++
	} else {
		for {
			if !first && n == want {
				total, err := w.countRest(n, depth)
				if err != nil {
					return err
				}
				return p.errAt(off, "ragged array at %s: expected %d elements, found %d", pathString(w.idx[:depth]), want, total)
			}
			w.idx[depth] = n
			if err := w.value(depth + 1); err != nil {
				return err
			}
			n++
			p.skipWS()
			switch p.peek() {
			case ',':
				p.pos++
				continue
			case ']':
				p.pos++
			default:
				return p.errAt(p.pos, "expected ',' or ']' after an array element, found %s", p.describe(p.pos))
			}
			break
		}
	}
	switch {
	case first:
		w.shape[depth] = n
		if n == 0 && w.ndim < 0 {
			w.ndim = depth + 1
		}
	case n != want:
		return p.errAt(off, "ragged array at %s: expected %d elements, found %d", pathString(w.idx[:depth]), want, n)
	}
	return nil
}

// countRest skips the rest of an array that is longer than its siblings,
// counting its elements for the error message.
func (w *jsonWalker) countRest(n, depth int) (int, error) {
	p := w.p
	for {
		if err := p.skipValue(depth + 1); err != nil {
			return 0, err
		}
		n++
		p.skipWS()
		switch p.peek() {
		case ',':
			p.pos++
			continue
		case ']':
			p.pos++
			return n, nil
		}
		return 0, p.errAt(p.pos, "expected ',' or ']' after an array element, found %s", p.describe(p.pos))
	}
}

// jshape is the nesting shape of the data as walked: the array lengths
// down to the leaves, or down to the first empty array.
func (w *jsonWalker) jshape() []int {
	if w.ndim < 0 || w.ndim > len(w.shape) {
		return w.shape
	}
	return w.shape[:w.ndim]
}

// expectedJShape is the nesting a declared shape asks for: a complex value
// adds the [re, im] level, and nothing below a zero-length dimension shows.
func expectedJShape(shape []int, complex bool) []int {
	e := append([]int(nil), shape...)
	if complex {
		e = append(e, 2)
	}
	for i, d := range e {
		if d == 0 {
			return e[:i+1]
		}
	}
	return e
}

func zeros(n int) []int { return make([]int, n) }

// tensorShape turns the walked nesting into the tensor's shape, checking it
// against the declared "shape" (if any) and the [re, im] level of complex
// values.
func (w *jsonWalker) tensorShape(dt DType, declared []int) ([]int, error) {
	p := w.p
	j := w.jshape()
	isComplex := dt.Kind == 'c'
	if declared != nil {
		if (Header{Shape: nonZero(declared)}).Elements() < 0 {
			return nil, p.errAt(w.start, "shape [%s] is too large", ShapeString(declared))
		}
		e := expectedJShape(declared, isComplex)
		mismatch := func(off, depth int, format string, args ...any) error {
			msg := fmt.Sprintf(format, args...)
			if depth > 0 {
				msg = "at " + pathString(zeros(depth)) + " " + msg
			}
			return p.errAt(off, "shape [%s] does not match data: %s", ShapeString(declared), msg)
		}
		for d := 0; d < len(e) && d < len(j); d++ {
			if e[d] != j[d] {
				return nil, mismatch(w.firstPos[d], d, "expected %d elements, found %d", e[d], j[d])
			}
		}
		switch {
		case len(j) < len(e):
			return nil, mismatch(w.firstLeaf.start, len(j), "expected an array, found %s", p.found(w.firstLeaf))
		case len(j) > len(e):
			return nil, mismatch(w.firstPos[len(e)], len(e), "expected %s, found an array", w.leafWord)
		}
		return declared, nil
	}
	if !isComplex || w.leaves == 0 {
		return append([]int{}, j...), nil
	}
	if len(j) == 0 {
		return nil, p.errAt(w.firstLeaf.start, "a %s value is an array [re, im], found a number", dt.Name())
	}
	if last := len(j) - 1; j[last] != 2 {
		return nil, p.errPath(w.firstPos[last], zeros(last), "a %s value is [re, im]: expected 2 numbers, found %d", dt.Name(), j[last])
	}
	return append([]int{}, j[:len(j)-1]...), nil
}

func nonZero(s []int) []int {
	var o []int
	for _, d := range s {
		if d != 0 {
			o = append(o, d)
		}
	}
	return o
}

// unravel is the element path of the i-th leaf of a nesting shape.
func unravel(i int, shape []int) []int {
	path := make([]int, len(shape))
	for d := len(shape) - 1; d >= 0; d-- {
		if shape[d] > 0 {
			path[d] = i % shape[d]
			i /= shape[d]
		}
	}
	return path
}

// inference collects what numpy needs to pick a dtype for a bare array.
type inference struct {
	bools, ints, floats int
	negative            bool     // some integer is below zero
	big                 *badLeaf // first integer above MaxInt64
	huge                *badLeaf // first integer that fits neither int64 nor uint64
}

type badLeaf struct {
	off  int
	path []int
	text string
}

func (in *inference) add(p *jsonParser, t token, path []int) error {
	switch t.kind {
	case tokTrue, tokFalse:
		in.bools++
	case tokNaN, tokInf, tokNegInf:
		in.floats++
	case tokString:
		if _, ok := specialFloat(p.data[t.start+1 : t.end-1]); ok {
			in.floats++
			return nil
		}
		return p.errPath(t.start, path, "strings need --dtype S<n> or U<n>")
	case tokNumber:
		if !t.isInt {
			in.floats++
			return nil
		}
		in.ints++
		neg, mag, st := exactInt(p.text(t))
		leafInfo := func() *badLeaf {
			return &badLeaf{off: t.start, path: append([]int(nil), path...), text: shortText(p.text(t))}
		}
		switch {
		case st != intOK || neg && mag > 1<<63:
			if in.huge == nil {
				in.huge = leafInfo()
			}
		case !neg && mag > math.MaxInt64:
			if in.big == nil {
				in.big = leafInfo()
			}
		case neg && mag > 0:
			in.negative = true
		}
	}
	return nil
}

func (in *inference) result(p *jsonParser) (DType, error) {
	switch {
	case in.floats > 0:
		return numpyNames["float64"], nil
	case in.ints > 0:
		if b := in.huge; b != nil {
			return DType{}, p.errPath(b.off, b.path, "value %s is out of range for int64 and uint64", b.text)
		}
		if b := in.big; b != nil {
			if in.negative {
				return DType{}, p.errPath(b.off, b.path, "value %s is out of range for int64, and other values are negative so uint64 cannot hold them", b.text)
			}
			return numpyNames["uint64"], nil
		}
		return numpyNames["int64"], nil
	case in.bools > 0:
		return numpyNames["bool"], nil
	}
	return numpyNames["float64"], nil
}

// specialFloat reads the text of NaN and ±Infinity as a string holds it:
// "NaN", "Infinity", "-Infinity", or case-insensitively nan, inf, +inf,
// -inf, infinity, +infinity, -infinity.
func specialFloat(s []byte) (float64, bool) {
	if len(s) > 9 {
		return 0, false
	}
	sign := 1.0
	t := s
	if len(t) > 0 && (t[0] == '+' || t[0] == '-') {
		if t[0] == '-' {
			sign = -1
		}
		t = t[1:]
	}
	switch strings.ToLower(string(t)) {
	case "nan":
		if len(t) == len(s) {
			return math.NaN(), true
		}
	case "inf", "infinity":
		return math.Inf(int(sign)), true
	}
	return 0, false
}

// ---------------------------------------------------------------------------
// Pass 2: values

// jsonLeaf converts leaf tokens to element bytes of one dtype.
type jsonLeaf struct {
	p     *jsonParser
	dt    DType
	kind  byte // 'b', 'i', 'u', 'f', 'S', 'U', 'V'; complex parts are 'f'
	size  int  // bytes per leaf
	small *floatSpec
	big   bool
}

func convertLeaves(p *jsonParser, w *jsonWalker, dt DType, out []byte) error {
	c := &jsonLeaf{p: p, dt: dt, kind: dt.Kind, size: dt.Size, big: dt.Order == '>'}
	switch {
	case dt.Kind == 'c':
		c.kind, c.size = 'f', dt.Size/2
	case dt.Kind == 'f' && dt.Size == 2:
		c.small = &halfSpec
	case dt.Kind == 'V' && dt.BFloat16:
		c.kind, c.small = 'f', &bfloat16Spec
	}
	j := w.jshape()
	pos := w.start
	d := p.data
	for i := 0; i < w.leaves; {
		if pos >= len(d) {
			return p.errAt(pos, "internal error: %d values found, %d expected", i, w.leaves)
		}
		switch d[pos] {
		case ' ', '\t', '\n', '\r', '[', ']', ',':
			pos++
			continue
		}
		t, err := p.lex(pos)
		if err != nil {
			return err
		}
		off := i * c.size
		if err := c.put(t, out[off:off+c.size], i, j); err != nil {
			return err
		}
		pos = t.end
		i++
	}
	return nil
}

func (c *jsonLeaf) put(t token, slot []byte, leaf int, jshape []int) error {
	p := c.p
	fail := func(format string, args ...any) error {
		return p.errPath(t.start, unravel(leaf, jshape), format, args...)
	}
	switch c.kind {
	case 'b':
		switch t.kind {
		case tokTrue:
			slot[0] = 1
			return nil
		case tokFalse:
			return nil
		case tokNumber:
			neg, mag, st := exactInt(p.text(t))
			switch {
			case st == intNotInteger:
				return fail("value %s is not valid for bool (true, false, 0 or 1)", shortText(p.text(t)))
			case st != intOK || mag > 1 || neg && mag != 0:
				return fail("value %s is out of range for bool", shortText(p.text(t)))
			}
			slot[0] = byte(mag)
			return nil
		}
		return fail("expected true or false, found %s", p.found(t))

	case 'i', 'u':
		var neg bool
		var mag uint64
		switch t.kind {
		case tokTrue:
			mag = 1
		case tokFalse:
		case tokNumber:
			var st intStatus
			neg, mag, st = exactInt(p.text(t))
			switch {
			case st == intNotInteger:
				return fail("value %s is not an integer, as %s needs", shortText(p.text(t)), c.dt.Name())
			case st != intOK || !intFits(c.kind, c.size, neg, mag):
				return fail("value %s is out of range for %s", shortText(p.text(t)), c.dt.Name())
			}
		case tokNaN, tokInf, tokNegInf:
			return fail("value %s is not an integer, as %s needs", p.text(t), c.dt.Name())
		default:
			if t.kind == tokString {
				if _, ok := specialFloat(p.data[t.start+1 : t.end-1]); ok {
					return fail("value %s is not an integer, as %s needs", p.text(t), c.dt.Name())
				}
			}
			return fail("expected a number, found %s", p.found(t))
		}
		v := mag
		if neg {
			v = -mag
		}
		putUint(slot, v, c.big)
		return nil

	case 'f':
		var v uint64
		switch t.kind {
		case tokTrue, tokFalse, tokNaN, tokInf, tokNegInf, tokString:
			var f float64
			switch t.kind {
			case tokTrue:
				f = 1
			case tokFalse:
				f = 0
			case tokNaN:
				f = math.NaN()
			case tokInf:
				f = math.Inf(1)
			case tokNegInf:
				f = math.Inf(-1)
			case tokString:
				var ok bool
				if f, ok = specialFloat(p.data[t.start+1 : t.end-1]); !ok {
					return fail("expected a number, found %s", p.found(t))
				}
			}
			v = floatBits(f, c.size, c.small)
		case tokNumber:
			var ok bool
			if v, ok = parseFloatBits(string(p.text(t)), c.size, c.small); !ok {
				return fail("value %s is out of range for %s", shortText(p.text(t)), c.dt.Name())
			}
		default:
			return fail("expected a number, found %s", p.found(t))
		}
		putUint(slot, v, c.big)
		return nil

	case 'S', 'U', 'V':
		if t.kind != tokString {
			return fail("expected %s, found %s", map[byte]string{'S': "a string", 'U': "a string", 'V': "a string of hex digits"}[c.kind], p.found(t))
		}
		return c.putString(t, slot, fail)
	}
	return fail("dtype %s has no JSON form", c.dt.Name())
}

func (c *jsonLeaf) putString(t token, slot []byte, fail func(string, ...any) error) error {
	p := c.p
	n := 0
	switch c.kind {
	case 'S':
		for i := t.start + 1; ; n++ {
			r, next, done := p.nextRune(i)
			if done {
				break
			}
			if r > 0xFF {
				return fail("character %U does not fit %s: its bytes are characters U+0000 to U+00FF", r, c.dt.Name())
			}
			if n < len(slot) {
				slot[n] = byte(r)
			}
			i = next
		}
		if n > len(slot) {
			return fail("string of %d bytes does not fit %s", n, c.dt.Name())
		}
	case 'U':
		for i := t.start + 1; ; n++ {
			r, next, done := p.nextRune(i)
			if done {
				break
			}
			if 4*n+4 <= len(slot) {
				putUint(slot[4*n:4*n+4], uint64(r), c.big)
			}
			i = next
		}
		if 4*n > len(slot) {
			return fail("string of %d characters does not fit %s", n, c.dt.Name())
		}
	case 'V':
		var hi byte
		for i := t.start + 1; ; n++ {
			r, next, done := p.nextRune(i)
			if done {
				break
			}
			var v byte
			switch {
			case r >= '0' && r <= '9':
				v = byte(r - '0')
			case r >= 'a' && r <= 'f':
				v = byte(r - 'a' + 10)
			case r >= 'A' && r <= 'F':
				v = byte(r - 'A' + 10)
			default:
				return fail("a %s value is %d hex digits, found %s", c.dt.Name(), 2*len(slot), p.found(t))
			}
			if n < 2*len(slot) {
				if n%2 == 0 {
					hi = v
				} else {
					slot[n/2] = hi<<4 | v
				}
			}
			i = next
		}
		if n != 2*len(slot) {
			return fail("a %s value is %d hex digits, found %d", c.dt.Name(), 2*len(slot), n)
		}
	}
	return nil
}

func putUint(b []byte, v uint64, big bool) {
	switch len(b) {
	case 1:
		b[0] = byte(v)
	case 2:
		if big {
			binary.BigEndian.PutUint16(b, uint16(v))
		} else {
			binary.LittleEndian.PutUint16(b, uint16(v))
		}
	case 4:
		if big {
			binary.BigEndian.PutUint32(b, uint32(v))
		} else {
			binary.LittleEndian.PutUint32(b, uint32(v))
		}
	case 8:
		if big {
			binary.BigEndian.PutUint64(b, v)
		} else {
			binary.LittleEndian.PutUint64(b, v)
		}
	}
}

// Uint reads an element word of 1, 2, 4 or 8 bytes in the given byte
// order (big-endian when big); any other length gives 0. Every package that
// interprets element bytes (JSON text, compare) reads them through here.
func Uint(b []byte, big bool) uint64 { return getUint(b, big) }

func getUint(b []byte, big bool) uint64 {
	switch len(b) {
	case 1:
		return uint64(b[0])
	case 2:
		if big {
			return uint64(binary.BigEndian.Uint16(b))
		}
		return uint64(binary.LittleEndian.Uint16(b))
	case 4:
		if big {
			return uint64(binary.BigEndian.Uint32(b))
		}
		return uint64(binary.LittleEndian.Uint32(b))
	case 8:
		if big {
			return binary.BigEndian.Uint64(b)
		}
		return binary.LittleEndian.Uint64(b)
	}
	return 0
}

// ---------------------------------------------------------------------------
// Exact integers

type intStatus uint8

const (
	intOK         intStatus = iota
	intNotInteger           // has a nonzero fraction
	intTooBig               // magnitude above MaxUint64
)

// exactInt reads a checked JSON number as an exact integer, with no float
// detour: 1.0, 1e3 and 12.5e1 are integers, 1.5 and 1e-1 are not. The
// exponent saturates, so 1e999999999999 is simply too big.
func exactInt(text []byte) (neg bool, mag uint64, st intStatus) {
	i := 0
	if len(text) > 0 && text[0] == '-' {
		neg = true
		i++
	}
	s := i
	for i < len(text) && isDigit(text[i]) {
		i++
	}
	intPart := text[s:i]
	var frac []byte
	if i < len(text) && text[i] == '.' {
		i++
		s = i
		for i < len(text) && isDigit(text[i]) {
			i++
		}
		frac = text[s:i]
	}
	exp := 0
	if i < len(text) && (text[i] == 'e' || text[i] == 'E') {
		i++
		eneg := false
		if i < len(text) && (text[i] == '+' || text[i] == '-') {
			eneg = text[i] == '-'
			i++
		}
		for ; i < len(text) && isDigit(text[i]); i++ {
			if exp < 1e9 {
				exp = exp*10 + int(text[i]-'0')
			}
		}
		if eneg {
			exp = -exp
		}
	}
	// The digits intPart+frac, read as an integer, times 10^(exp-len(frac)).
	digit := func(k int) byte {
		if k < len(intPart) {
			return intPart[k]
		}
		return frac[k-len(intPart)]
	}
	n := len(intPart) + len(frac)
	a, z := 0, n-1
	for a < n && digit(a) == '0' {
		a++
	}
	if a == n {
		return neg, 0, intOK
	}
	for digit(z) == '0' {
		z--
	}
	e10 := exp - len(frac) + (n - 1 - z)
	if e10 < 0 {
		return neg, 0, intNotInteger
	}
	if z-a+1+e10 > 20 {
		return neg, 0, intTooBig
	}
	for k := a; k <= z; k++ {
		hi, lo := bits.Mul64(mag, 10)
		lo, carry := bits.Add64(lo, uint64(digit(k)-'0'), 0)
		if hi != 0 || carry != 0 {
			return neg, 0, intTooBig
		}
		mag = lo
	}
	for ; e10 > 0; e10-- {
		hi, lo := bits.Mul64(mag, 10)
		if hi != 0 {
			return neg, 0, intTooBig
		}
		mag = lo
	}
	return neg, mag, intOK
}

func intFits(kind byte, size int, neg bool, mag uint64) bool {
	nb := uint(8 * size)
	if kind == 'u' {
		if neg {
			return mag == 0
		}
		return nb == 64 || mag < 1<<nb
	}
	lim := uint64(1) << (nb - 1)
	if neg {
		return mag <= lim
	}
	return mag < lim
}

// ---------------------------------------------------------------------------
// Floats

// floatSpec is a binary floating-point format narrower than float64.
type floatSpec struct {
	mant, exp uint // stored mantissa bits, exponent bits
	qnan      uint64
}

var (
	halfSpec     = floatSpec{mant: 10, exp: 5, qnan: 0x7e00}
	bfloat16Spec = floatSpec{mant: 7, exp: 8, qnan: 0x7fc0}
)

const (
	float32NaN = 0x7fc00000
	float64NaN = 0x7ff8000000000000 // numpy's NaN; math.NaN() sets a payload bit
)

// fromFloat64 rounds f to the format, round half to even, with subnormals,
// overflow to ±Inf and NaN kept NaN (quiet, sign and payload dropped).
// dir breaks an exact tie instead of "to even": +1 away from zero, -1
// toward zero (the value the float64 came from lay beyond or short of the
// halfway point); tie reports that f was exactly halfway.
func (s floatSpec) fromFloat64(f float64, dir int) (out uint64, tie bool) {
	b := math.Float64bits(f)
	sign := b >> 63 << (s.mant + s.exp)
	e := int(b >> 52 & 0x7ff)
	m := b & (1<<52 - 1)
	expMask := uint64(1)<<s.exp - 1
	inf := sign | expMask<<s.mant
	if e == 0x7ff {
		if m != 0 {
			return s.qnan, false
		}
		return inf, false
	}
	if e == 0 { // zero or a float64 subnormal, far below any target subnormal
		return sign, false
	}
	bias := 1<<(s.exp-1) - 1
	e -= 1023
	full := m | 1<<52
	if e < 1-bias { // a subnormal of the target
		sh := 52 - int(s.mant) + (1 - bias - e)
		if sh > 54 { // below a quarter of the smallest subnormal
			return sign, false
		}
		q, tie := roundShift(full, uint(sh), dir)
		return sign | q, tie // q == 1<<mant is the smallest normal: right bits
	}
	q, tie := roundShift(full, 52-s.mant, dir)
	if q == 1<<(s.mant+1) {
		q >>= 1
		e++
	}
	if e > bias {
		return inf, tie
	}
	return sign | uint64(e+bias)<<s.mant | q&(1<<s.mant-1), tie
}

func roundShift(x uint64, shift uint, dir int) (uint64, bool) {
	q := x >> shift
	rem := x & (1<<shift - 1)
	half := uint64(1) << (shift - 1)
	switch {
	case rem > half:
		q++
	case rem == half:
		if dir > 0 || dir == 0 && q&1 == 1 {
			q++
		}
		return q, true
	}
	return q, false
}

func (s floatSpec) toFloat64(b uint64) float64 {
	if s.exp == 5 {
		return float64(float16.Frombits(uint16(b)).Float32())
	}
	return float64(math.Float32frombits(uint32(b) << 16))
}

func (s floatSpec) isInf(b uint64) bool {
	return b&^(1<<(s.mant+s.exp)) == (1<<s.exp-1)<<s.mant
}

// parse reads a decimal literal into the format, correctly rounded: the
// literal goes to float64 first, and when that lands exactly halfway
// between two target values (where rounding twice can go wrong) the
// literal is compared exactly with the halfway point. ok is false when a
// finite literal rounds to infinity.
func (s floatSpec) parse(text string) (uint64, bool) {
	f, err := strconv.ParseFloat(text, 64)
	if err != nil {
		return 0, false // out of float64 range (syntax was checked)
	}
	b, tie := s.fromFloat64(f, 0)
	if tie && len(text) <= 1100 {
		if r, ok := new(big.Rat).SetString(text); ok {
			c := r.Cmp(new(big.Rat).SetFloat64(f))
			if f < 0 {
				c = -c
			}
			if c != 0 {
				b, _ = s.fromFloat64(f, c)
			}
		}
	}
	return b, !s.isInf(b)
}

// floatBits is the bit pattern of f (NaN, ±Inf, 0 or 1) in a float dtype.
func floatBits(f float64, size int, small *floatSpec) uint64 {
	if small != nil {
		if math.IsNaN(f) {
			return small.qnan
		}
		b, _ := small.fromFloat64(f, 0)
		return b
	}
	if size == 4 {
		if math.IsNaN(f) {
			return float32NaN
		}
		return uint64(math.Float32bits(float32(f)))
	}
	if math.IsNaN(f) {
		return float64NaN
	}
	return math.Float64bits(f)
}

// parseFloatBits reads a number literal into a float dtype; ok is false
// when it is out of the dtype's finite range.
func parseFloatBits(text string, size int, small *floatSpec) (uint64, bool) {
	if small != nil {
		return small.parse(text)
	}
	if size == 4 {
		f, err := strconv.ParseFloat(text, 32) // correctly rounded to float32
		if err != nil {
			return 0, false
		}
		return uint64(math.Float32bits(float32(f))), true
	}
	f, err := strconv.ParseFloat(text, 64)
	if err != nil {
		return 0, false
	}
	return math.Float64bits(f), true
}

// appendFloat writes a float32 or float64 as encoding/json does (ES6):
// the shortest text that reads back to the same value, in %f style for
// 1e-6 <= |f| < 1e21 and %e style otherwise, with "1e-07" cleaned to
// "1e-7". NaN and ±Inf are the strings "NaN", "Infinity", "-Infinity" (a
// NaN's sign and payload are not kept).
func appendFloat(b []byte, f float64, bitSize int) []byte {
	if s := specialText(f); s != "" {
		return append(b, s...)
	}
	abs := math.Abs(f)
	form := byte('f')
	if abs != 0 {
		if bitSize == 64 && (abs < 1e-6 || abs >= 1e21) || bitSize == 32 && (float32(abs) < 1e-6 || float32(abs) >= 1e21) {
			form = 'e'
		}
	}
	b = strconv.AppendFloat(b, f, form, -1, bitSize)
	if form == 'e' {
		n := len(b)
		if n >= 4 && b[n-4] == 'e' && b[n-3] == '-' && b[n-2] == '0' {
			b[n-2] = b[n-1]
			b = b[:n-1]
		}
	}
	return b
}

func specialText(f float64) string {
	switch {
	case math.IsNaN(f):
		return `"NaN"`
	case math.IsInf(f, 1):
		return `"Infinity"`
	case math.IsInf(f, -1):
		return `"-Infinity"`
	}
	return ""
}

// appendShortest writes a float16 or bfloat16 as the shortest decimal that
// parse reads back to the same bits, in the same style as appendFloat. For
// each length it tries the nearest decimal and its two neighbours, so that
// the lopsided rounding interval at a power of two is handled.
func (s floatSpec) appendShortest(b []byte, bits uint64) []byte {
	f := s.toFloat64(bits)
	if t := specialText(f); t != "" {
		return append(b, t...)
	}
	if f == 0 {
		if math.Signbit(f) {
			return append(b, "-0"...)
		}
		return append(b, '0')
	}
	abs := math.Abs(f)
	var buf [32]byte
	for prec := 1; prec <= 17; prec++ {
		e := strconv.AppendFloat(buf[:0], abs, 'e', prec-1, 64)
		k := bytes.IndexByte(e, 'e')
		x, _ := strconv.Atoi(string(e[k+1:]))
		m, _ := strconv.ParseInt(strings.Replace(string(e[:k]), ".", "", 1), 10, 64)
		x -= prec - 1 // value = m × 10^x
		for _, c := range [3]int64{m, m - 1, m + 1} {
			if c <= 0 {
				continue
			}
			lit := strconv.FormatInt(c, 10) + "e" + strconv.Itoa(x)
			if f < 0 {
				lit = "-" + lit
			}
			if got, ok := s.parse(lit); ok && got == bits {
				digits := strings.TrimRight(strconv.FormatInt(c, 10), "0")
				exp10 := x + len(strconv.FormatInt(c, 10)) - 1
				if f < 0 {
					b = append(b, '-')
				}
				return appendDecimal(b, digits, exp10, abs < 1e-6 || abs >= 1e21)
			}
		}
	}
	return appendFloat(b, f, 64) // not reached: 17 digits always read back
}

// appendDecimal writes d1.d2d3… × 10^exp10 in %f style, or %e style as
// encoding/json writes it ("1e-7", "1.5e+21").
func appendDecimal(b []byte, digits string, exp10 int, eStyle bool) []byte {
	if eStyle {
		b = append(b, digits[0])
		if len(digits) > 1 {
			b = append(b, '.')
			b = append(b, digits[1:]...)
		}
		b = append(b, 'e')
		if exp10 < 0 {
			b = append(b, '-')
			exp10 = -exp10
		} else {
			b = append(b, '+')
		}
		return strconv.AppendInt(b, int64(exp10), 10)
	}
	if exp10 < 0 {
		b = append(b, "0."...)
		for i := 0; i < -exp10-1; i++ {
			b = append(b, '0')
		}
		return append(b, digits...)
	}
	if len(digits) <= exp10+1 {
		b = append(b, digits...)
		for i := len(digits); i < exp10+1; i++ {
			b = append(b, '0')
		}
		return b
	}
	b = append(b, digits[:exp10+1]...)
	b = append(b, '.')
	return append(b, digits[exp10+1:]...)
}

// ---------------------------------------------------------------------------
// Encoding

// EncodeJSON writes the object form {"dtype": NAME, "shape": [..], "data":
// NESTED} followed by a newline. NAME is dt.Name(). The first line holds
// dtype, shape and the start of the data; each innermost row of the nested
// array is on its own line, indented like numpy:
//
//	{"dtype": "uint32", "shape": [1, 2, 2, 3], "data": [[[[0, 1, 2],
//	   [3, 4, 5]],
//	  [[9, 10, 11],
//	   [12, 13, 14]]]]}
//
// A 0-d tensor's data is the bare value; a zero-length dimension prints
// []. data is the C-order element bytes in dt's byte order. NaN prints as
// "NaN", dropping its sign and payload; everything else reads back with
// DecodeJSON to the same bytes (S<n> and U<n> lose trailing NULs, which
// decoding pads back).
func EncodeJSON(w io.Writer, dt DType, shape []int, data []byte) error {
	if err := checkJSONDType(dt); err != nil {
		return err
	}
	for _, d := range shape {
		if d < 0 {
			return fmt.Errorf("shape [%s] has a negative dimension", ShapeString(shape))
		}
	}
	depth := len(shape)
	if dt.Kind == 'c' {
		depth++
	}
	if depth > maxJSONDepth {
		return fmt.Errorf("shape [%s] of %s nests deeper than the %d levels JSON input allows", ShapeString(shape), dt.Name(), maxJSONDepth)
	}
	h := Header{DType: dt, Shape: shape}
	if n := h.DataBytes(); n < 0 || n != int64(len(data)) {
		return fmt.Errorf("%d bytes of data for a %s tensor of shape [%s], which needs %d", len(data), dt.Name(), ShapeString(shape), n)
	}
	if h.Elements() == 0 {
		// Only arrays are printed; refuse shapes like [1e15, 0] that would
		// print petabytes of "[]".
		arrays := int64(1)
		for _, d := range shape {
			if d == 0 {
				break
			}
			hi, lo := bits.Mul64(uint64(arrays), uint64(d))
			if hi != 0 || lo > 1<<28 {
				return fmt.Errorf("shape [%s] would print more than %d empty arrays", ShapeString(shape), 1<<28)
			}
			arrays = int64(lo)
		}
	}

	bw := bufio.NewWriterSize(w, 64<<10)
	e := &jsonEncoder{w: bw, dt: dt, shape: shape, data: data, big: dt.Order == '>'}
	e.strides = make([]int, len(shape))
	stride := 1
	for i := len(shape) - 1; i >= 0; i-- {
		e.strides[i] = stride
		stride *= shape[i]
	}
	bw.WriteString(`{"dtype": `)
	e.buf = appendJSONString(e.buf[:0], dt.Name())
	bw.Write(e.buf)
	bw.WriteString(`, "shape": [`)
	for i, d := range shape {
		if i > 0 {
			bw.WriteString(", ")
		}
		bw.WriteString(strconv.Itoa(d))
	}
	bw.WriteString(`], "data": `)
	var err error
	if len(shape) == 0 {
		err = e.elem(0)
	} else {
		err = e.array(0, 0)
	}
	if err != nil {
		return err
	}
	bw.WriteString("}\n")
	return bw.Flush()
}

type jsonEncoder struct {
	w       *bufio.Writer
	dt      DType
	shape   []int
	strides []int
	data    []byte
	big     bool
	buf     []byte
	memo    *[1 << 16]string // texts of 16-bit floats found so far
}

// memoElems is the tensor size from which the texts of 16-bit floats are
// memoised: finding the shortest decimal of one takes about a microsecond
// (float16 JSON of 1M elements took 1.31 s, float32 0.10 s), and there are
// only 65536 bit patterns. Below it the 1 MiB table costs more than it saves.
const memoElems = 4096

// appendShortest16 appends the shortest text of a float16 or bfloat16.
func (e *jsonEncoder) appendShortest16(b []byte, spec *floatSpec, v uint64) []byte {
	if len(e.data) < memoElems*2 {
		return spec.appendShortest(b, v)
	}
	if e.memo == nil {
		e.memo = new([1 << 16]string)
	}
	t := e.memo[v]
	if t == "" {
		t = string(spec.appendShortest(nil, v))
		e.memo[v] = t
	}
	return append(b, t...)
}

const jsonIndent = "                                                                 " // 65 spaces

func (e *jsonEncoder) array(depth, base int) error {
	n := e.shape[depth]
	e.w.WriteByte('[')
	if depth == len(e.shape)-1 {
		for i := 0; i < n; i++ {
			if i > 0 {
				e.w.WriteString(", ")
			}
			if err := e.elem(base + i); err != nil {
				return err
			}
		}
	} else {
		for i := 0; i < n; i++ {
			if i > 0 {
				e.w.WriteString(",\n")
				e.w.WriteString(jsonIndent[:depth+1])
			}
			if err := e.array(depth+1, base+i*e.strides[depth]); err != nil {
				return err
			}
		}
	}
	return e.w.WriteByte(']')
}

func (e *jsonEncoder) elem(i int) error {
	size := e.dt.Size
	el := e.data[i*size : (i+1)*size]
	b := e.buf[:0]
	switch e.dt.Kind {
	case 'b':
		if el[0] != 0 {
			b = append(b, "true"...)
		} else {
			b = append(b, "false"...)
		}
	case 'i':
		sh := uint(64 - 8*size)
		b = strconv.AppendInt(b, int64(getUint(el, e.big)<<sh)>>sh, 10)
	case 'u':
		b = strconv.AppendUint(b, getUint(el, e.big), 10)
	case 'f':
		b = e.appendFloatBits(b, getUint(el, e.big), size)
	case 'c':
		h := size / 2
		b = append(b, '[')
		b = e.appendFloatBits(b, getUint(el[:h], e.big), h)
		b = append(b, ", "...)
		b = e.appendFloatBits(b, getUint(el[h:], e.big), h)
		b = append(b, ']')
	case 'S':
		b = appendLatin1String(b, bytes.TrimRight(el, "\x00"))
	case 'U':
		n := len(el) / 4
		for n > 0 && getUint(el[4*n-4:4*n], e.big) == 0 {
			n--
		}
		b = append(b, '"')
		for k := 0; k < n; k++ {
			u := getUint(el[4*k:4*k+4], e.big)
			if u > utf8.MaxRune || !utf8.ValidRune(rune(u)) {
				return fmt.Errorf("%s element at flat index %d holds code unit 0x%X, which is not a Unicode character", e.dt.Name(), i, u)
			}
			b = appendJSONRune(b, rune(u))
		}
		b = append(b, '"')
	case 'V':
		if e.dt.BFloat16 {
			b = e.appendShortest16(b, &bfloat16Spec, getUint(el, e.big))
			break
		}
		b = append(b, '"')
		b = hex.AppendEncode(b, el)
		b = append(b, '"')
	}
	e.buf = b
	_, err := e.w.Write(b)
	return err
}

func (e *jsonEncoder) appendFloatBits(b []byte, v uint64, size int) []byte {
	switch size {
	case 2:
		return e.appendShortest16(b, &halfSpec, v)
	case 4:
		return appendFloat(b, float64(math.Float32frombits(uint32(v))), 32)
	}
	return appendFloat(b, math.Float64frombits(v), 64)
}

const hexDigits = "0123456789abcdef"

func appendJSONRune(b []byte, r rune) []byte {
	switch {
	case r == '"':
		return append(b, '\\', '"')
	case r == '\\':
		return append(b, '\\', '\\')
	case r < 0x20:
		return append(b, '\\', 'u', '0', '0', hexDigits[r>>4], hexDigits[r&0xF])
	}
	return utf8.AppendRune(b, r)
}

func appendJSONString(b []byte, s string) []byte {
	b = append(b, '"')
	for _, r := range s {
		b = appendJSONRune(b, r)
	}
	return append(b, '"')
}

// appendLatin1String writes bytes as a JSON string of the characters
// U+0000 to U+00FF, escaping controls, DEL and everything above ASCII so
// the text stays 7-bit and any byte reads back unchanged.
func appendLatin1String(b []byte, s []byte) []byte {
	b = append(b, '"')
	for _, c := range s {
		if c < 0x20 || c >= 0x7f {
			b = append(b, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xF])
			continue
		}
		b = appendJSONRune(b, rune(c))
	}
	return append(b, '"')
}
