package json

import (
	"bytes"
	"math"
	"strconv"
	"strings"
)

// Printing floats as the shortest text that reads back to the same value.

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
