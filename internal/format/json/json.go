package json

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
	"bytes"
	"errors"
	"fmt"
	"io"
	"unicode/utf8"

	"github.com/depthspace/depthspace/internal/format"
)

// KindJSON is a tensor as JSON text.
const KindJSON format.Kind = "json"

// SniffJSON reports JSON's opening '[' or '{' after white space.
func SniffJSON(data []byte) bool {
	for _, c := range data[:min(len(data), 4096)] {
		switch c {
		case ' ', '\t', '\n', '\r':
			continue
		case '[', '{':
			return true
		}
		return false
	}
	return false
}

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

// UTF8BOM is the byte order mark a JSON text may start with.
var UTF8BOM = []byte{0xEF, 0xBB, 0xBF}

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
func DecodeJSON(data []byte, want *format.DType) (format.Header, []byte, error) {
	p := &jsonParser{data: data}
	if !utf8.Valid(data) {
		return format.Header{}, nil, p.errAt(firstInvalidUTF8(data), "the JSON text is not valid UTF-8")
	}
	if bytes.HasPrefix(data, UTF8BOM) {
		p.pos = len(UTF8BOM)
	}
	p.skipWS()
	if p.pos >= len(data) {
		return format.Header{}, nil, errors.New("empty input: expected a JSON array or object")
	}
	if want != nil {
		if err := checkJSONDType(*want); err != nil {
			return format.Header{}, nil, err
		}
	}

	var (
		dt       format.DType
		declared []int // the object's "shape", nil when absent
		w        *jsonWalker
	)
	switch data[p.pos] {
	case '[':
		w = newJSONWalker(p, want)
		if err := w.value(0); err != nil {
			return format.Header{}, nil, err
		}
		p.skipWS()
		if p.pos < len(data) {
			return format.Header{}, nil, p.errAt(p.pos, "unexpected data after the tensor")
		}
		if want != nil {
			dt = *want
		} else {
			var err error
			if dt, err = w.inf.result(p); err != nil {
				return format.Header{}, nil, err
			}
		}
	case '{':
		obj, err := p.object()
		if err != nil {
			return format.Header{}, nil, err
		}
		dt, err = format.ParseDType(obj.dtype)
		if err != nil {
			return format.Header{}, nil, p.errAt(obj.dtypeOff, "%v", err)
		}
		if err := checkJSONDType(dt); err != nil {
			return format.Header{}, nil, p.errAt(obj.dtypeOff, "%v", err)
		}
		if want != nil && (want.Kind != dt.Kind || want.Size != dt.Size || want.BFloat16 != dt.BFloat16) {
			return format.Header{}, nil, p.errAt(obj.dtypeOff, "dtype %s given but the file says %s", want.Name(), dt.Name())
		}
		declared = obj.shape
		p.pos = obj.dataOff
		w = newJSONWalker(p, &dt)
		if err := w.value(0); err != nil {
			return format.Header{}, nil, err
		}
	default:
		return format.Header{}, nil, p.errAt(p.pos, "expected a JSON array or object, found %s", p.describe(p.pos))
	}

	shape, err := w.tensorShape(dt, declared)
	if err != nil {
		return format.Header{}, nil, err
	}
	h := format.Header{DType: dt, Shape: shape}
	n := h.DataBytes()
	if n < 0 {
		return format.Header{}, nil, p.errAt(w.start, "shape [%s] is too large", format.ShapeString(shape))
	}
	if n > 16*int64(len(data))+maxJSONPadding {
		return format.Header{}, nil, p.errAt(w.start, "shape [%s] of %s would take %d bytes, too many for %d bytes of JSON",
			format.ShapeString(shape), dt.Name(), n, len(data))
	}
	leaves := h.Elements()
	if dt.Kind == 'c' {
		leaves *= 2
	}
	if leaves != w.leaves {
		// cannot happen: the shape was checked against the data
		return format.Header{}, nil, p.errAt(w.start, "internal error: %d values for %d elements", w.leaves, leaves)
	}
	out := make([]byte, n)
	if err := convertLeaves(p, w, dt, out); err != nil {
		return format.Header{}, nil, err
	}
	return h, out, nil
}

// checkJSONDType refuses dtypes that have no JSON text form.
func checkJSONDType(d format.DType) error {
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
	if !ok || d.Size > format.MaxElemSize || d.BFloat16 && d.Kind != 'V' {
		return fmt.Errorf("dtype %s (kind %q, %d bytes) has no JSON form", d.Name(), d.Kind, d.Size)
	}
	return nil
}

// ---------------------------------------------------------------------------
// Scanner

func init() {
	format.Register(format.Format{Kind: KindJSON, Text: true, Values: values, Metadata: metadata, Rank: 3, Doc: "a nested JSON array, or {dtype, shape, data}", Exts: []string{".json"}, Sniff: SniffJSON, SniffOrder: 90,
		Decode: func(b []byte, want *format.DType) (format.Header, []byte, string, error) {
			h, data, err := DecodeJSON(b, want)
			return h, data, "", err
		},
		Encode: func(w io.Writer, h format.Header, _ string, data []byte) error {
			return EncodeJSON(w, h.DType, h.Shape, data)
		}})
}
