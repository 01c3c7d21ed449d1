package json

import (
	"math"
	"math/big"
	"math/bits"
	"strconv"

	"github.com/x448/float16"
)

// Numbers as element bytes: integers from their exact text, and the
// rounding of decimal text to float16, bfloat16, float32 and float64.

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
