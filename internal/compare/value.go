package compare

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"sync"

	"github.com/depthspace/depthspace/internal/format"
	"github.com/x448/float16"
)

// class is what a dtype's elements are to arithmetic.
type class uint8

const (
	opaque  class = iota // S<n>, U<n>, V<n>: compared as bytes only
	integer              // bool, int*, uint*: exact integers
	real                 // float16/32/64, bfloat16
	complexClass
)

// reader decodes elements of one dtype, in either byte order.
type reader struct {
	dt    format.DType
	class class
	big   bool
	unit  int // the byte-order unit: element size, half of it for complex, 4 for U<n>
}

func newReader(dt format.DType) reader {
	r := reader{dt: dt, big: dt.Order == '>', unit: dt.Size}
	switch {
	case dt.Kind == 'b' || dt.Kind == 'i' || dt.Kind == 'u':
		r.class = integer
	case dt.Kind == 'f' || dt.BFloat16 && dt.Size == 2:
		r.class = real
	case dt.Kind == 'c':
		r.class = complexClass
		r.unit = dt.Size / 2
	case dt.Kind == 'U':
		r.unit = 4
	}
	if dt.Size == 1 || dt.Kind == 'S' || dt.Kind == 'V' {
		r.big = false
		r.unit = 1
	}
	return r
}

func (r reader) numeric() bool { return r.class != opaque }

func uintOf(b []byte, big bool) uint64 {
	if n := len(b); n != 1 && n != 2 && n != 4 && n != 8 {
		panic(fmt.Sprintf("compare: %d-byte word", n))
	}
	return format.Uint(b, big)
}

// integer returns an integer element as sign and magnitude, exactly.
func (r reader) integer(b []byte) (neg bool, mag uint64) {
	u := uintOf(b, r.big)
	switch r.dt.Kind {
	case 'b':
		if u != 0 {
			return false, 1
		}
		return false, 0
	case 'i':
		sh := uint(64 - 8*len(b))
		v := int64(u<<sh) >> sh
		if v < 0 {
			return true, uint64(-v) // -MinInt64 wraps to itself: 1<<63, the right magnitude
		}
		return false, uint64(v)
	}
	return false, u
}

// float returns a real or integer element as a float64: exact for every
// float16, bfloat16, float32 and float64, and for integers up to 2^53;
// larger integers round to nearest, as numpy's conversion does.
func (r reader) float(b []byte) float64 {
	switch r.class {
	case integer:
		neg, mag := r.integer(b)
		if neg {
			return -float64(mag)
		}
		return float64(mag)
	case real:
		u := uintOf(b, r.big)
		switch {
		case r.dt.BFloat16:
			return float64(math.Float32frombits(uint32(u) << 16))
		case len(b) == 2:
			return float64(float16.Frombits(uint16(u)).Float32())
		case len(b) == 4:
			return float64(math.Float32frombits(uint32(u)))
		}
		return math.Float64frombits(u)
	}
	re, _ := r.complex(b)
	return re
}

// complex returns any numeric element as a complex value (imaginary part 0
// for reals), as numpy promotes a real array compared with a complex one.
func (r reader) complex(b []byte) (re, im float64) {
	if r.class != complexClass {
		return r.float(b), 0
	}
	h := len(b) / 2
	if h == 4 {
		return float64(math.Float32frombits(uint32(uintOf(b[:h], r.big)))),
			float64(math.Float32frombits(uint32(uintOf(b[h:], r.big))))
	}
	return math.Float64frombits(uintOf(b[:h], r.big)), math.Float64frombits(uintOf(b[h:], r.big))
}

// sameBits reports whether two elements of the same dtype hold the same
// bits, whatever the byte order each is stored in.
func sameBits(ra, rb reader, a, b []byte) bool {
	if ra.big == rb.big || ra.unit == 1 {
		return bytes.Equal(a, b)
	}
	u := ra.unit
	for off := 0; off < len(a); off += u {
		for i := 0; i < u; i++ {
			if a[off+i] != b[off+u-1-i] {
				return false
			}
		}
	}
	return true
}

// halfTable returns the float64 value of every float16 bit pattern, built
// on first use: building it at start-up cost every command 2 ms.
var halfTable = sync.OnceValue(func() *[1 << 16]float64 {
	var t [1 << 16]float64
	for i := range t {
		t[i] = float64(float16.Frombits(uint16(i)).Float32())
	}
	return &t
})

func finite(f float64) bool { return !math.IsNaN(f) && !math.IsInf(f, 0) }

// closeReal is numpy.isclose(x, y, rtol, atol, equal_nan=True) for one
// pair of reals, y being the reference, evaluated in float64 exactly as
// numpy 1.24 writes it: finite pairs by |x - y| <= atol + rtol*|y|, the
// others by equality (so inf equals inf of the same sign only), and NaN
// equals NaN.
func closeReal(x, y, rtol, atol float64) bool {
	if (x-x)+(y-y) == 0 { // both finite: inf-inf and NaN give NaN
		// The conversion keeps rtol*|y| a separate, rounded product: numpy
		// never fuses it with the addition.
		return math.Abs(x-y) <= atol+float64(rtol*math.Abs(y))
	}
	return x == y || math.IsNaN(x) && math.IsNaN(y)
}

// closeComplex is the same rule for complex values: numpy takes abs of
// the complex difference and of the reference, a value is finite when both
// parts are, equal when both parts are, and NaN when either part is.
func closeComplex(xr, xi, yr, yi, rtol, atol float64) bool {
	if finite(xr) && finite(xi) && finite(yr) && finite(yi) {
		return math.Hypot(xr-yr, xi-yi) <= atol+float64(rtol*math.Hypot(yr, yi))
	}
	if xr == yr && xi == yi {
		return true
	}
	return (math.IsNaN(xr) || math.IsNaN(xi)) && (math.IsNaN(yr) || math.IsNaN(yi))
}

// texts prints elements as depthspace's text output prints them (SPEC,
// Formats: the shortest float text, "NaN", "Infinity", [re, im],
// strings), asking the text format itself (format.Format.Values), so that
// the two can never disagree.
func texts(dt format.DType, elems [][]byte) ([]string, error) {
	values := format.ValueTexts()
	if values == nil {
		return nil, errors.New("internal error: no format prints values")
	}
	return values(dt, elems)
}

// text prints one element (see texts).
func text(dt format.DType, el []byte) string {
	t, err := texts(dt, [][]byte{el})
	if err != nil {
		return fmt.Sprintf("%q", fmt.Sprintf("%x", el))
	}
	return t[0]
}

// bitsText is an element's bits in hex as stored in native (big-endian
// digit) order: "0x7fc00001". For complex values, both parts.
func bitsText(r reader, el []byte) string {
	if r.class == opaque || len(el) > 16 {
		return ""
	}
	if r.class == complexClass {
		h := len(el) / 2
		return fmt.Sprintf("[0x%0*x, 0x%0*x]", 2*h, uintOf(el[:h], r.big), 2*h, uintOf(el[h:], r.big))
	}
	return fmt.Sprintf("0x%0*x", 2*len(el), uintOf(el, r.big))
}
