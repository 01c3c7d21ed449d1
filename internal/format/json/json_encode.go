package json

import (
	"bufio"
	"bytes"
	"encoding/hex"
	"fmt"
	"io"
	"math"
	"math/bits"
	"strconv"
	"unicode/utf8"

	"github.com/depthspace/depthspace/internal/format"
)

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
func EncodeJSON(w io.Writer, dt format.DType, shape []int, data []byte) error {
	if err := checkJSONDType(dt); err != nil {
		return err
	}
	for _, d := range shape {
		if d < 0 {
			return fmt.Errorf("shape [%s] has a negative dimension", format.ShapeString(shape))
		}
	}
	depth := len(shape)
	if dt.Kind == 'c' {
		depth++
	}
	if depth > maxJSONDepth {
		return fmt.Errorf("shape [%s] of %s nests deeper than the %d levels JSON input allows", format.ShapeString(shape), dt.Name(), maxJSONDepth)
	}
	h := format.Header{DType: dt, Shape: shape}
	if n := h.DataBytes(); n < 0 || n != int64(len(data)) {
		return fmt.Errorf("%d bytes of data for a %s tensor of shape [%s], which needs %d", len(data), dt.Name(), format.ShapeString(shape), n)
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
				return fmt.Errorf("shape [%s] would print more than %d empty arrays", format.ShapeString(shape), 1<<28)
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
	dt      format.DType
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
		b = strconv.AppendInt(b, int64(format.Uint(el, e.big)<<sh)>>sh, 10)
	case 'u':
		b = strconv.AppendUint(b, format.Uint(el, e.big), 10)
	case 'f':
		b = e.appendFloatBits(b, format.Uint(el, e.big), size)
	case 'c':
		h := size / 2
		b = append(b, '[')
		b = e.appendFloatBits(b, format.Uint(el[:h], e.big), h)
		b = append(b, ", "...)
		b = e.appendFloatBits(b, format.Uint(el[h:], e.big), h)
		b = append(b, ']')
	case 'S':
		b = appendLatin1String(b, bytes.TrimRight(el, "\x00"))
	case 'U':
		n := len(el) / 4
		for n > 0 && format.Uint(el[4*n-4:4*n], e.big) == 0 {
			n--
		}
		b = append(b, '"')
		for k := 0; k < n; k++ {
			u := format.Uint(el[4*k:4*k+4], e.big)
			if u > utf8.MaxRune || !utf8.ValidRune(rune(u)) {
				return fmt.Errorf("%s element at flat index %d holds code unit 0x%X, which is not a Unicode character", e.dt.Name(), i, u)
			}
			b = appendJSONRune(b, rune(u))
		}
		b = append(b, '"')
	case 'V':
		if e.dt.BFloat16 {
			b = e.appendShortest16(b, &bfloat16Spec, format.Uint(el, e.big))
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
