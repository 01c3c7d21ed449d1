package json

import (
	"fmt"
	"math"
	"strings"

	"github.com/depthspace/depthspace/internal/format"
)

// Decoding the data value: its shape (first pass, nothing allocated by the
// input's claims), the dtype it implies, and each leaf into element bytes
// (second pass).

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

func newJSONWalker(p *jsonParser, dt *format.DType) *jsonWalker {
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
func (w *jsonWalker) tensorShape(dt format.DType, declared []int) ([]int, error) {
	p := w.p
	j := w.jshape()
	isComplex := dt.Kind == 'c'
	if declared != nil {
		if (format.Header{Shape: nonZero(declared)}).Elements() < 0 {
			return nil, p.errAt(w.start, "shape [%s] is too large", format.ShapeString(declared))
		}
		e := expectedJShape(declared, isComplex)
		mismatch := func(off, depth int, pattern string, args ...any) error {
			msg := fmt.Sprintf(pattern, args...)
			if depth > 0 {
				msg = "at " + pathString(zeros(depth)) + " " + msg
			}
			return p.errAt(off, "shape [%s] does not match data: %s", format.ShapeString(declared), msg)
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

func (in *inference) result(p *jsonParser) (format.DType, error) {
	switch {
	case in.floats > 0:
		return format.NumpyNames()["float64"], nil
	case in.ints > 0:
		if b := in.huge; b != nil {
			return format.DType{}, p.errPath(b.off, b.path, "value %s is out of range for int64 and uint64", b.text)
		}
		if b := in.big; b != nil {
			if in.negative {
				return format.DType{}, p.errPath(b.off, b.path, "value %s is out of range for int64, and other values are negative so uint64 cannot hold them", b.text)
			}
			return format.NumpyNames()["uint64"], nil
		}
		return format.NumpyNames()["int64"], nil
	case in.bools > 0:
		return format.NumpyNames()["bool"], nil
	}
	return format.NumpyNames()["float64"], nil
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
	dt    format.DType
	kind  byte // 'b', 'i', 'u', 'f', 'S', 'U', 'V'; complex parts are 'f'
	size  int  // bytes per leaf
	small *floatSpec
	big   bool
}

func convertLeaves(p *jsonParser, w *jsonWalker, dt format.DType, out []byte) error {
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
	fail := func(msg string, args ...any) error {
		return p.errPath(t.start, unravel(leaf, jshape), msg, args...)
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
		format.PutUint(slot, v, c.big)
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
		format.PutUint(slot, v, c.big)
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
				format.PutUint(slot[4*n:4*n+4], uint64(r), c.big)
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
