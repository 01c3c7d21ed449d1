// Package format reads and writes tensors as bytes: the npy container, raw
// element bytes and JSON text, plus the dtype table every command shares.
// It never reorders elements; that is the job of package ops.
package format

import (
	"fmt"
	"math"
	"math/bits"
	"strconv"
	"strings"
)

// Header describes a tensor's bytes: element type, logical shape, and
// whether the elements are stored in Fortran (column-major) order.
type Header struct {
	DType   DType
	Shape   []int
	Fortran bool
}

// nonZero multiplies the non-zero dimensions: a zero dimension makes a
// tensor empty but, as in numpy, does not make an absurd shape acceptable.
// It returns -1 on a negative dimension or overflow, and whether a zero was
// seen.
func (h Header) nonZero() (int, bool) {
	n, zero := 1, false
	for _, d := range h.Shape {
		if d == 0 {
			zero = true
			continue
		}
		hi, lo := bits.Mul64(uint64(n), uint64(d))
		if d < 0 || hi != 0 || lo > math.MaxInt64 {
			return -1, zero
		}
		n = int(lo)
	}
	return n, zero
}

// Elements is the number of elements, or -1 if it overflows.
func (h Header) Elements() int {
	n, zero := h.nonZero()
	if n >= 0 && zero {
		return 0
	}
	return n
}

// DataBytes is the size of the element data, or -1 if it (or the same
// shape without its zero dimensions) overflows int64, which numpy refuses
// as "array is too big".
func (h Header) DataBytes() int64 {
	n, zero := h.nonZero()
	if n < 0 {
		return -1
	}
	hi, lo := bits.Mul64(uint64(n), uint64(h.DType.Size))
	if hi != 0 || lo > math.MaxInt64 {
		return -1
	}
	if zero {
		return 0
	}
	return int64(lo)
}

// ShapeString prints a shape as users type it in --shape: 1,8,2,3.
func ShapeString(s []int) string {
	p := make([]string, len(s))
	for i, v := range s {
		p[i] = strconv.Itoa(v)
	}
	return strings.Join(p, ",")
}

// ParseShape reads "1,8,2,3" (also "1x8x2x3" or "[1, 8, 2, 3]").
func ParseShape(s string) ([]int, error) {
	t := strings.TrimSpace(s)
	t = strings.TrimPrefix(strings.TrimSuffix(t, "]"), "[")
	t = strings.TrimPrefix(strings.TrimSuffix(t, ")"), "(")
	if strings.TrimSpace(t) == "" {
		return []int{}, nil // a scalar
	}
	parts := strings.FieldsFunc(t, func(r rune) bool { return r == ',' || r == 'x' })
	out := make([]int, 0, len(parts))
	for _, p := range parts {
		v, err := strconv.ParseInt(strings.TrimSpace(p), 10, 64)
		if ne, ok := err.(*strconv.NumError); ok && ne.Err == strconv.ErrRange {
			return nil, fmt.Errorf("shape %q: dimension %s is too large", s, strings.TrimSpace(p))
		}
		if err != nil {
			return nil, fmt.Errorf("shape %q: %q is not an integer", s, strings.TrimSpace(p))
		}
		if v < 0 {
			return nil, fmt.Errorf("shape %q: dimension %d is negative", s, v)
		}
		out = append(out, int(v))
	}
	h := Header{DType: DType{Size: 1}, Shape: out}
	if h.Elements() < 0 {
		return nil, fmt.Errorf("shape %q is too large", s)
	}
	return out, nil
}
