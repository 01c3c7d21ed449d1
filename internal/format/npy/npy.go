package npy

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"unicode/utf8"

	"github.com/depthspace/depthspace/internal/format"
)

// KindNpy is numpy's .npy file.
const KindNpy format.Kind = "npy"

// NpyMagic starts every npy file.
const NpyMagic = "\x93NUMPY"

// MaxNpyHeader bounds the header we accept. numpy itself refuses headers
// over 10000 bytes unless told otherwise; a shape of rank 1000 still fits.
const MaxNpyHeader = 1 << 20

// npyAlign is numpy's ARRAY_ALIGN: the data of a file numpy writes starts
// on a 64-byte boundary, which keeps mapped data aligned for every dtype.
const npyAlign = 64

// Npy is a parsed npy preamble.
type Npy = format.Preamble

// FormatError is a malformed file, with the byte offset where it went wrong.
type FormatError struct {
	Offset int64
	Msg    string
}

func (e *FormatError) Error() string {
	if e.Offset < 0 {
		return e.Msg
	}
	return fmt.Sprintf("npy header, byte %d: %s", e.Offset, e.Msg)
}

func errAt(off int, format string, a ...any) error {
	return &FormatError{Offset: int64(off), Msg: fmt.Sprintf(format, a...)}
}

// ReadNpy reads the preamble from r, consuming exactly DataOffset bytes.
func ReadNpy(r io.Reader) (Npy, error) {
	var pre [12]byte
	if n, err := io.ReadFull(r, pre[:10]); err != nil {
		return Npy{}, truncated(n, 10)
	}
	need, err := preambleLen(pre[:10])
	if err != nil {
		return Npy{}, err
	}
	fixed := 10
	if need < 0 { // v2/v3: four-byte length
		if n, err := io.ReadFull(r, pre[10:12]); err != nil {
			return Npy{}, truncated(10+n, 12)
		}
		fixed = 12
	}
	hlen := headerLen(pre[:fixed])
	if hlen > MaxNpyHeader {
		return Npy{}, errAt(8, "header length %d is larger than the %d bytes accepted", hlen, MaxNpyHeader)
	}
	buf := make([]byte, fixed+hlen)
	copy(buf, pre[:fixed])
	if n, err := io.ReadFull(r, buf[fixed:]); err != nil {
		return Npy{}, truncated(fixed+n, fixed+hlen)
	}
	return ParseNpy(buf)
}

func truncated(got, want int) error {
	return &FormatError{Offset: -1, Msg: fmt.Sprintf("truncated npy header: %d of %d bytes", got, want)}
}

// preambleLen checks magic and version; it returns 10 for a v1 file whose
// length field is two bytes, -1 when the length field is four bytes.
func preambleLen(b []byte) (int, error) {
	if !bytes.HasPrefix(b, []byte(NpyMagic)) {
		return 0, errAt(0, "not an npy file (no \\x93NUMPY magic)")
	}
	switch b[6] {
	case 1:
		if b[7] != 0 {
			return 0, errAt(7, "unsupported npy version %d.%d", b[6], b[7])
		}
		return 10, nil
	case 2, 3:
		if b[7] != 0 {
			return 0, errAt(7, "unsupported npy version %d.%d", b[6], b[7])
		}
		return -1, nil
	}
	return 0, errAt(6, "unsupported npy version %d.%d (1.0, 2.0 and 3.0 are supported)", b[6], b[7])
}

func headerLen(pre []byte) int {
	if len(pre) == 10 {
		return int(binary.LittleEndian.Uint16(pre[8:10]))
	}
	return int(binary.LittleEndian.Uint32(pre[8:12]))
}

// ParseNpy parses the preamble at the start of b (a mapped file may pass the
// whole file). It checks everything a header can get wrong; it does not look
// at the data.
func ParseNpy(b []byte) (Npy, error) {
	if len(b) < 10 {
		if !bytes.HasPrefix([]byte(NpyMagic), b[:min(len(b), 6)]) {
			return Npy{}, errAt(0, "not an npy file (no \\x93NUMPY magic)")
		}
		return Npy{}, truncated(len(b), 10)
	}
	need, err := preambleLen(b)
	if err != nil {
		return Npy{}, err
	}
	fixed := 10
	if need < 0 {
		if len(b) < 12 {
			return Npy{}, truncated(len(b), 12)
		}
		fixed = 12
	}
	hlen := headerLen(b[:fixed])
	if hlen > MaxNpyHeader {
		return Npy{}, errAt(8, "header length %d is larger than the %d bytes accepted", hlen, MaxNpyHeader)
	}
	if len(b) < fixed+hlen {
		return Npy{}, truncated(len(b), fixed+hlen)
	}
	text := b[fixed : fixed+hlen]
	major := int(b[6])
	if major == 3 {
		if !utf8.Valid(text) {
			return Npy{}, errAt(fixed, "npy 3.0 header is not valid UTF-8")
		}
	} else {
		for i, c := range text {
			if c >= 0x80 {
				return Npy{}, errAt(fixed+i, "non-ASCII byte 0x%02x in a version %d.0 header", c, major)
			}
		}
	}
	h, ok := sameHeader(text)
	if !ok {
		if h, err = parseDict(string(text), fixed); err != nil {
			return Npy{}, err
		}
	}
	return Npy{Header: h, Kind: KindNpy, Major: major, Minor: int(b[7]), DataOffset: int64(fixed + hlen)}, nil
}

// lastHeader is the header numpyHeader read last, with its text.
var lastHeader atomic.Pointer[knownHeader]

type knownHeader struct {
	text string
	h    format.Header
}

// sameHeader is numpyHeader(text), read again only when text is not the
// text it read last: the files of a batch mostly share one header, and
// comparing it costs a fraction of reading it (a descr looked up, the
// dimensions counted and parsed). A shape read again is the last one's,
// shared: shapes are never written once read, and its capacity is its
// length, so an append copies it.
func sameHeader(text []byte) (format.Header, bool) {
	if k := lastHeader.Load(); k != nil && k.text == string(text) {
		return k.h, true
	}
	h, ok := numpyHeader(text)
	if ok {
		k := &knownHeader{text: string(text), h: h}
		k.h.Shape = slices.Clip(slices.Clone(h.Shape))
		lastHeader.Store(k)
	}
	return h, ok
}

// numpyHeader reads a header written as numpy writes it, byte for byte:
//
//	{'descr': '<f4', 'fortran_order': False, 'shape': (1, 3, 64, 64), }
//
// then spaces and '\n'. It makes the shape and nothing else (a common
// descr comes from a table): a batch of tiny files parsed every header
// through parseDict, whose string copy, map of keys and growing shape
// were a tenth of such a file's allocations. ok is false for anything
// else, which parseDict reads and, if it is wrong, says where; a header
// numpyHeader takes, parseDict reads the same (TestNumpyHeaderAsParseDict).
func numpyHeader(b []byte) (h format.Header, ok bool) {
	const (
		descrKey   = "{'descr': '"
		fortranKey = "', 'fortran_order': "
		shapeKey   = ", 'shape': ("
	)
	if !bytes.HasPrefix(b, []byte(descrKey)) {
		return h, false
	}
	b = b[len(descrKey):]
	q := bytes.IndexByte(b, '\'')
	if q <= 0 {
		return h, false
	}
	descr := b[:q]
	if dt, known := commonDescrs()[string(descr)]; known {
		h.DType = dt
	} else {
		if bytes.ContainsAny(descr, "\\\n\"") {
			return h, false
		}
		dt, err := format.ParseDescr(string(descr))
		if err != nil {
			return h, false
		}
		h.DType = dt
	}
	b = b[q:]
	if !bytes.HasPrefix(b, []byte(fortranKey)) {
		return h, false
	}
	b = b[len(fortranKey):]
	switch {
	case bytes.HasPrefix(b, []byte("False")):
		b = b[5:]
	case bytes.HasPrefix(b, []byte("True")):
		h.Fortran = true
		b = b[4:]
	default:
		return h, false
	}
	if !bytes.HasPrefix(b, []byte(shapeKey)) {
		return h, false
	}
	b = b[len(shapeKey):]
	end := bytes.IndexByte(b, ')')
	if end < 0 || !bytes.HasPrefix(b[end:], []byte("), }")) {
		return h, false
	}
	dims := b[:end]
	// numpy writes (), (3,) and (1, 2, 3): n dimensions, n-1 ", ", and a
	// trailing ',' for one.
	n := 0
	if len(dims) > 0 {
		n = bytes.Count(dims, []byte(", ")) + 1
		if n == 1 {
			if dims[len(dims)-1] != ',' {
				return h, false
			}
			dims = dims[:len(dims)-1]
		}
	}
	if n > 1024 {
		return h, false
	}
	h.Shape = make([]int, n)
	for i := range h.Shape {
		digits := dims
		if i < n-1 {
			k := bytes.IndexByte(dims, ',')
			if k < 0 || k+1 >= len(dims) || dims[k+1] != ' ' {
				return h, false
			}
			digits, dims = dims[:k], dims[k+2:]
		}
		if len(digits) == 0 || len(digits) > 18 {
			return h, false // empty, or maybe past int64: parseDict says
		}
		v := 0
		for _, c := range digits {
			if c < '0' || c > '9' {
				return h, false
			}
			v = v*10 + int(c-'0')
		}
		h.Shape[i] = v
	}
	// Then padding: spaces, the newline numpy ends it with (and NULs,
	// which parseDict allows as well).
	for _, c := range b[end+len("), }"):] {
		if c != ' ' && c != '\n' && c != 0 {
			return h, false
		}
	}
	if h.Elements() < 0 || h.DataBytes() < 0 {
		return h, false
	}
	return h, true
}

// commonDescrs are the descrs of numpy's numeric dtypes in both byte
// orders, parsed once.
var commonDescrs = sync.OnceValue(func() map[string]format.DType {
	m := map[string]format.DType{}
	for _, d := range []string{"|b1", "|i1", "|u1", "|V1", "<V2"} {
		if dt, err := format.ParseDescr(d); err == nil {
			m[d] = dt
		}
	}
	for _, order := range "<>" {
		for _, code := range []string{"i2", "i4", "i8", "u2", "u4", "u8", "f2", "f4", "f8", "c8", "c16"} {
			d := string(order) + code
			if dt, err := format.ParseDescr(d); err == nil {
				m[d] = dt
			}
		}
	}
	return m
})

// parseDict reads the header: a Python dict literal with exactly the keys
// descr, fortran_order and shape, padded with spaces and ending in '\n'.
// It is deliberately strict: this is the only text a hostile file controls.
func parseDict(s string, base int) (format.Header, error) {
	p := &dictParser{s: s, base: base}
	var h format.Header
	seen := map[string]bool{}
	p.space()
	if !p.eat('{') {
		return h, p.err("header does not start with '{'")
	}
	for {
		p.space()
		if p.eat('}') {
			break
		}
		keyAt := p.i
		key, err := p.str()
		if err != nil {
			return h, err
		}
		if seen[key] {
			return h, errAt(base+keyAt, "key %q appears twice", key)
		}
		seen[key] = true
		p.space()
		if !p.eat(':') {
			return h, p.err("expected ':' after key %q", key)
		}
		p.space()
		switch key {
		case "descr":
			if p.peek() == '[' {
				return h, p.err("structured dtypes (a descr list) are not supported")
			}
			at := p.i
			d, err := p.str()
			if err != nil {
				return h, err
			}
			dt, err := format.ParseDescr(d)
			if err != nil {
				return h, errAt(base+at, "%v", err)
			}
			h.DType = dt
		case "fortran_order":
			switch {
			case strings.HasPrefix(s[p.i:], "True"):
				h.Fortran = true
				p.i += 4
			case strings.HasPrefix(s[p.i:], "False"):
				p.i += 5
			default:
				return h, p.err("fortran_order must be True or False")
			}
		case "shape":
			shape, err := p.tuple()
			if err != nil {
				return h, err
			}
			h.Shape = shape
		default:
			return h, errAt(base+keyAt, "unexpected key %q", key)
		}
		p.space()
		if p.eat(',') {
			continue
		}
		p.space()
		if !p.eat('}') {
			return h, p.err("expected ',' or '}'")
		}
		break
	}
	for _, k := range []string{"descr", "fortran_order", "shape"} {
		if !seen[k] {
			return h, errAt(base, "header has no %q key", k)
		}
	}
	// What follows is padding: spaces, then the newline numpy ends it with.
	rest := s[p.i:]
	if t := strings.TrimRight(rest, " \n\x00"); t != "" {
		return h, p.err("unexpected text after the header dict")
	}
	if h.Elements() < 0 || h.DataBytes() < 0 {
		return h, errAt(base, "shape (%s) of %s is too large", format.ShapeString(h.Shape), h.DType)
	}
	return h, nil
}

type dictParser struct {
	s    string
	i    int
	base int
}

func (p *dictParser) err(format string, a ...any) error {
	return errAt(p.base+p.i, format, a...)
}

func (p *dictParser) space() {
	for p.i < len(p.s) && (p.s[p.i] == ' ' || p.s[p.i] == '\t' || p.s[p.i] == '\n') {
		p.i++
	}
}

func (p *dictParser) peek() byte {
	if p.i < len(p.s) {
		return p.s[p.i]
	}
	return 0
}

func (p *dictParser) eat(c byte) bool {
	if p.peek() == c {
		p.i++
		return true
	}
	return false
}

// str reads a quoted string without escapes (none occur in valid headers).
func (p *dictParser) str() (string, error) {
	q := p.peek()
	if q != '\'' && q != '"' {
		return "", p.err("expected a quoted string")
	}
	end := strings.IndexByte(p.s[p.i+1:], q)
	if end < 0 {
		return "", p.err("unterminated string")
	}
	v := p.s[p.i+1 : p.i+1+end]
	if strings.ContainsAny(v, "\\\n") {
		return "", p.err("unexpected escape in string")
	}
	p.i += end + 2
	return v, nil
}

// tuple reads (), (3,) or (1, 2, 3); Python 2 numpy wrote longs as 3L.
func (p *dictParser) tuple() ([]int, error) {
	if !p.eat('(') {
		return nil, p.err("shape must be a tuple")
	}
	shape := []int{}
	for {
		p.space()
		if p.eat(')') {
			if len(shape) == 1 && !strings.HasSuffix(strings.TrimRight(p.s[:p.i-1], " "), ",") {
				// (3) is just 3 in Python, not a tuple; numpy never writes it.
				return nil, p.err("shape (%d) is not a tuple; numpy writes (%d,)", shape[0], shape[0])
			}
			return shape, nil
		}
		if len(shape) > 0 {
			if !p.eat(',') {
				return nil, p.err("expected ',' or ')' in shape")
			}
			p.space()
			if p.eat(')') {
				return shape, nil
			}
		}
		start := p.i
		for p.i < len(p.s) && p.s[p.i] >= '0' && p.s[p.i] <= '9' {
			p.i++
		}
		if p.i == start {
			if p.peek() == '-' {
				return nil, p.err("negative dimension in shape")
			}
			return nil, p.err("expected a dimension in shape")
		}
		v, err := strconv.ParseInt(p.s[start:p.i], 10, 64)
		if err != nil {
			return nil, errAt(p.base+start, "dimension %s is too large", p.s[start:p.i])
		}
		p.eat('L')
		if len(shape) >= 1024 {
			return nil, p.err("shape has more than 1024 dimensions")
		}
		shape = append(shape, int(v))
	}
}

// EncodeNpy returns the preamble numpy would write for a C-order tensor:
// version 1.0 unless the header needs more than 65535 bytes, padded with
// spaces and a newline so that the data starts on a 64-byte boundary.
func EncodeNpy(h format.Header) []byte { return encodeNpy(h, npyAlign) }

// EncodeNpyFile is the preamble of an npy file of our own: EncodeNpy's,
// except that a tensor of pageAlignBytes or more gets its header padded to
// 4096 bytes, so that the data starts on a page boundary. Writes of the
// data then fill whole pages of the page cache instead of starting and
// ending inside one; measured on W1 (1 GiB float32 s2d, median of 9 paired
// runs) 0.229 -> 0.195 s. The file is still what numpy.load reads (its
// header limit is 10000 bytes) and the padding is 4 KiB at most.
func EncodeNpyFile(h format.Header) []byte {
	if h.DataBytes() >= pageAlignBytes {
		return encodeNpy(h, pageSize)
	}
	return EncodeNpy(h)
}

const (
	pageSize       = 4096
	pageAlignBytes = 1 << 20
)

func encodeNpy(h format.Header, align int) []byte {
	// The text is made in a buffer on the stack, and the preamble is the
	// one allocation (fmt and a strings.Builder were four).
	var buf [256]byte
	text := append(buf[:0], "{'descr': '"...)
	text = append(text, h.DType.Descr()...)
	text = append(text, "', 'fortran_order': "...)
	text = append(text, pyBool(h.Fortran)...)
	text = append(text, ", 'shape': ("...)
	for i, d := range h.Shape {
		if i > 0 {
			text = append(text, ", "...)
		}
		text = strconv.AppendInt(text, int64(d), 10)
	}
	if len(h.Shape) == 1 {
		text = append(text, ',')
	}
	text = append(text, "), }"...)
	fixed, major := 10, byte(1)
	if total := 10 + len(text) + 1; (total+align-1)/align*align-10 > 0xffff {
		fixed, major = 12, 2
	}
	total := (fixed + len(text) + 1 + align - 1) / align * align
	out := make([]byte, total)
	copy(out, NpyMagic)
	out[6], out[7] = major, 0
	if fixed == 10 {
		binary.LittleEndian.PutUint16(out[8:], uint16(total-fixed))
	} else {
		binary.LittleEndian.PutUint32(out[8:], uint32(total-fixed))
	}
	n := copy(out[fixed:], text)
	for i := fixed + n; i < total-1; i++ {
		out[i] = ' '
	}
	out[total-1] = '\n'
	return out
}

// lastPreamble is the preamble Preamble made last, and what it depends
// on: a batch writes thousands of outputs of one shape, and each made
// the same bytes again (the text and an allocation a file). Preamble's
// bytes are written out, never changed, so outputs share them. An atomic
// pointer, as lastHeader: the workers of a batch read it for every file
// and share no lock.
var lastPreamble atomic.Pointer[knownPreamble]

type knownPreamble struct {
	descr   string
	size    int
	fortran bool
	shape   []int
	pre     []byte
}

// sharedPreamble is EncodeNpyFile(h), the same bytes as the last call's
// when h has that call's dtype, order and shape.
func sharedPreamble(h format.Header) []byte {
	descr := h.DType.Descr()
	if k := lastPreamble.Load(); k != nil && k.descr == descr && k.size == h.DType.Size && k.fortran == h.Fortran && slices.Equal(k.shape, h.Shape) {
		return k.pre
	}
	pre := EncodeNpyFile(h)
	lastPreamble.Store(&knownPreamble{descr: descr, size: h.DType.Size, fortran: h.Fortran, shape: slices.Clone(h.Shape), pre: pre})
	return pre
}

func pyBool(b bool) string {
	if b {
		return "True"
	}
	return "False"
}

func init() {
	format.Register(format.Format{Kind: KindNpy, InTar: true, ShardDefault: true, Plain: true, InPlace: inPlace, Rank: 1, Doc: "numpy .npy, every fixed-size dtype, C and Fortran order", Exts: []string{".npy"}, SniffOrder: 10,
		Sniff:    func(b []byte) bool { return strings.HasPrefix(string(b[:min(len(b), 6)]), NpyMagic) },
		Preamble: func(h format.Header, _ string) ([]byte, error) { return sharedPreamble(h), nil }})
}
