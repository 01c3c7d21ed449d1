package polygraphy

import (
	"bytes"
	"encoding/base64"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"strconv"
	"sync"
	"unicode/utf16"
	"unicode/utf8"

	"github.com/depthspace/depthspace/internal/format"
	"github.com/depthspace/depthspace/internal/format/json"
	"github.com/depthspace/depthspace/internal/format/npy"
)

// Polygraphy's JSON files (NVIDIA TensorRT, tools/Polygraphy:
// polygraphy/json/serde.py and polygraphy/comparator/struct.py), read and
// written as a container of named tensors.
//
// Polygraphy encodes objects with json.dumps(indent=4), each custom class
// as an object whose last key is "polygraphy_class" (before Polygraphy
// 0.30: a key "__polygraphy_encoded_CLASS" with the value
// "polygraphy_serialized_json_type"):
//
//   - an array (np.ndarray) is {"array": base64 of a whole .npy file (np.save,
//     allow_pickle=False), "polygraphy_class": "ndarray"};
//   - LazyArray (formerly LazyNumpyArray, still an alias) is {"values": ARRAY};
//   - IterationResult is {"outputs": {NAME: LazyArray or ARRAY, …},
//     "runtime": float, "runner_name": str};
//   - RunResults (--save-outputs) is {"lst": [[RUNNER, [IterationResult,
//     …]], …]};
//   - an input list (--save-inputs, `polygraphy data to-input`) is a plain
//     list of plain objects {NAME: ARRAY}, one per iteration.
//
// A torch Tensor ({"tensor": base64 of torch.save, "polygraphy_class":
// "Tensor"}) is a pickle: refused by name, never unpickled; so is an npy
// payload of dtype object (ParseNpy). The latin-1 text of an npz that
// Polygraphy 0.29 wrote is read too (polygraphy_latin1.go).
//
// Open parses the JSON structure without decoding the arrays: a scanner
// records each base64 string's span in the (mapped) file, only the first
// bytes of each are decoded for the npy header, and the element data are
// decoded in 64 KiB pieces of text when the member's job asks for them
// (Lazy), or up front on opt.Threads goroutines without opt.Deferred.

// KindPolygraphy is a Polygraphy JSON file: RunResults or an input list.
const KindPolygraphy format.Kind = "polygraphy"

// PolygraphyMeta is what a Polygraphy file holds besides its arrays: the
// structure Create needs to write the file back as it was.
type PolygraphyMeta struct {
	// Inputs says the file is an input list rather than RunResults; its
	// iterations are then those of Runners[0], whose Name is "".
	Inputs  bool
	Runners []PolygraphyRunner
	// Extra are RunResults' keys besides "lst" and its class, in order
	// (Polygraphy writes none).
	Extra []PolygraphyKey
	// Names are the member names in file order, and Places where each
	// member is (same index).
	Names  []string
	Places []PolygraphyPlace
}

// PolygraphyRunner is one runner of a RunResults: its name and its
// iterations in order.
type PolygraphyRunner struct {
	Name       string
	Iterations []PolygraphyIteration
}

// PolygraphyIteration is one IterationResult (or one feed dict of an
// input list): its outputs in order, and its other keys (runtime,
// runner_name, anything else) as JSON text in file order; the key
// "outputs" appears in Keys with a nil Raw to keep its position.
type PolygraphyIteration struct {
	Outputs []PolygraphyOutput
	Keys    []PolygraphyKey
}

// Key returns the raw JSON text of an iteration's key (runtime,
// runner_name), or nil.
func (it *PolygraphyIteration) Key(k string) []byte {
	for _, kv := range it.Keys {
		if kv.Key == k {
			return kv.Raw
		}
	}
	return nil
}

// PolygraphyOutput is one array of an iteration: its name and the class
// that wraps the ndarray ("LazyArray", "LazyNumpyArray", or "" when the
// ndarray is the value itself, as in input lists).
type PolygraphyOutput struct {
	Name    string
	Wrapper string
}

// PolygraphyKey is a key and its value's JSON text.
type PolygraphyKey struct {
	Key string
	Raw []byte
}

// PolygraphyPlace says where a member is: runner, iteration and output
// indices.
type PolygraphyPlace struct{ Runner, Iteration, Output int }

// PolygraphyError is a malformed Polygraphy file: at a byte offset of the
// JSON text, or in one member.
type PolygraphyError struct {
	Member string
	Offset int64 // -1: none
	Msg    string
}

func (e *PolygraphyError) Error() string {
	switch {
	case e.Member != "":
		return fmt.Sprintf("polygraphy member %q: %s", e.Member, e.Msg)
	case e.Offset >= 0:
		return fmt.Sprintf("polygraphy JSON, byte %d: %s", e.Offset, e.Msg)
	}
	return "polygraphy: " + e.Msg
}

func pgErr(member string, format string, a ...any) error {
	return &PolygraphyError{Member: member, Offset: -1, Msg: fmt.Sprintf(format, a...)}
}

// Limits on what a hostile file can make us build: the nesting depth and
// the number of JSON values (Polygraphy needs 8 levels and a handful of
// values per array), and the length of a name.
const (
	pgMaxDepth  = 128
	pgMaxValues = 1 << 20
	pgMaxName   = 1 << 20
	// pgChunk is how much base64 text is decoded at a time (a multiple
	// of 4).
	pgChunk = 64 << 10
)

// ---- JSON scanning ----

// pjValue is one JSON value of the file: its span in b; for an object its
// keys (decoded) and values, for an array its elements. Strings are not
// decoded: esc says whether they hold escapes.
type pjValue struct {
	kind     byte // '{', '[', '"', or '0' for numbers and literals
	off, end int  // b[off:end] is the value's text (a string's with its quotes)
	esc      bool
	keys     []string
	keyOffs  []int
	elems    []*pjValue
}

type pjParser struct {
	b    []byte
	i    int
	n    int         // values made
	file io.ReaderAt // reads b by position, or nil
	buf  []byte      // window's
}

func (p *pjParser) errAt(off int, format string, a ...any) error {
	return &PolygraphyError{Offset: int64(off), Msg: fmt.Sprintf(format, a...)}
}

func (p *pjParser) space() {
	for p.i < len(p.b) {
		switch p.b[p.i] {
		case ' ', '\t', '\n', '\r':
			p.i++
		default:
			return
		}
	}
}

func (p *pjParser) value(depth int) (*pjValue, error) {
	p.space()
	if p.i >= len(p.b) {
		return nil, p.errAt(p.i, "unexpected end of the JSON text")
	}
	if p.n++; p.n > pgMaxValues {
		return nil, p.errAt(p.i, "more than %d JSON values: not a Polygraphy file", pgMaxValues)
	}
	switch c := p.b[p.i]; c {
	case '{', '[':
		if depth >= pgMaxDepth {
			return nil, p.errAt(p.i, "JSON nested more than %d deep", pgMaxDepth)
		}
		return p.container(c, depth)
	case '"':
		return p.str()
	default:
		return p.scalar()
	}
}

func (p *pjParser) container(open byte, depth int) (*pjValue, error) {
	v := &pjValue{kind: open, off: p.i}
	closer := byte(']')
	if open == '{' {
		closer = '}'
	}
	p.i++
	p.space()
	if p.i < len(p.b) && p.b[p.i] == closer {
		p.i++
		v.end = p.i
		return v, nil
	}
	for {
		if open == '{' {
			p.space()
			if p.i >= len(p.b) || p.b[p.i] != '"' {
				return nil, p.errAt(p.i, "expected a string key")
			}
			kv, err := p.str()
			if err != nil {
				return nil, err
			}
			key, err := pjString(p.b, kv)
			if err != nil {
				return nil, err
			}
			for _, k := range v.keys {
				if k == key {
					return nil, p.errAt(kv.off, "key %q appears twice in one object", key)
				}
			}
			v.keys = append(v.keys, key)
			v.keyOffs = append(v.keyOffs, kv.off)
			p.space()
			if p.i >= len(p.b) || p.b[p.i] != ':' {
				return nil, p.errAt(p.i, "expected ':' after key %q", key)
			}
			p.i++
		}
		e, err := p.value(depth + 1)
		if err != nil {
			return nil, err
		}
		v.elems = append(v.elems, e)
		p.space()
		if p.i >= len(p.b) {
			return nil, p.errAt(p.i, "unexpected end of the JSON text")
		}
		switch p.b[p.i] {
		case ',':
			p.i++
			continue
		case closer:
			p.i++
			v.end = p.i
			return v, nil
		}
		return nil, p.errAt(p.i, "expected ',' or '%c'", closer)
	}
}

// str finds a string's end without decoding it: linear in its length
// whatever escapes it holds (a base64 array is tens of MiB). With a file
// to read by position, the string is read through a buffer rather than
// the mapping, so that its pages are not faulted into the process (its
// text is read again, the same way, when the member is decoded).
func (p *pjParser) str() (*pjValue, error) {
	v := &pjValue{kind: '"', off: p.i}
	i := p.i + 1
	for {
		w, err := p.window(i)
		if err != nil {
			return nil, err
		}
		if len(w) == 0 {
			return nil, p.errAt(v.off, "unterminated string")
		}
		q := bytes.IndexByte(w, '"') // -1: none in the rest of w
		j := 0
		for {
			lim := len(w)
			if q >= 0 {
				lim = q
			}
			k := bytes.IndexByte(w[j:lim], '\\')
			if k < 0 {
				break
			}
			v.esc = true
			j += k + 2 // the backslash and the character it escapes
			if j >= len(w) {
				break
			}
			if q >= 0 && j > q { // that was our quote: find the next
				if q = bytes.IndexByte(w[j:], '"'); q >= 0 {
					q += j
				}
			}
		}
		if q >= 0 && j <= q {
			p.i = i + q + 1
			v.end = p.i
			return v, nil
		}
		i += max(j, len(w))
	}
}

// pjWindow is how much of a string is read at a time from the file.
const pjWindow = 1 << 20

// window gives the bytes from i on: the rest of the mapping, or the next
// pjWindow of them read from the file.
func (p *pjParser) window(i int) ([]byte, error) {
	if i >= len(p.b) {
		return nil, nil
	}
	if p.file == nil || len(p.b)-i <= 4096 {
		return p.b[i:], nil
	}
	if p.buf == nil {
		p.buf = make([]byte, pjWindow)
	}
	w := p.buf[:min(pjWindow, len(p.b)-i)]
	if n, err := p.file.ReadAt(w, int64(i)); n < len(w) {
		return nil, &PolygraphyError{Offset: int64(i), Msg: fmt.Sprintf("reading the file: %v", err)}
	}
	return w, nil
}

func (p *pjParser) scalar() (*pjValue, error) {
	start := p.i
	for p.i < len(p.b) {
		c := p.b[p.i]
		if c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c == '-' || c == '+' || c == '.' {
			p.i++
			continue
		}
		break
	}
	t := string(p.b[start:p.i])
	switch t {
	case "true", "false", "null", "NaN", "Infinity", "-Infinity": // Python writes the last three
	default:
		if !jsonNumber(t) {
			if t == "" {
				return nil, p.errAt(start, "unexpected character %q", p.b[start])
			}
			return nil, p.errAt(start, "%q is not a JSON value", t)
		}
	}
	p.n++
	return &pjValue{kind: '0', off: start, end: p.i}, nil
}

// jsonNumber: -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?
func jsonNumber(s string) bool {
	i := 0
	digits := func() int {
		n := 0
		for i < len(s) && s[i] >= '0' && s[i] <= '9' {
			i++
			n++
		}
		return n
	}
	if i < len(s) && s[i] == '-' {
		i++
	}
	if i < len(s) && s[i] == '0' {
		i++
	} else if digits() == 0 {
		return false
	}
	if i < len(s) && s[i] == '.' {
		i++
		if digits() == 0 {
			return false
		}
	}
	if i < len(s) && (s[i] == 'e' || s[i] == 'E') {
		i++
		if i < len(s) && (s[i] == '+' || s[i] == '-') {
			i++
		}
		if digits() == 0 {
			return false
		}
	}
	return i == len(s)
}

// pjString decodes a small string value (a key, a name), strictly: valid
// UTF-8, no control characters, valid escapes, no lone surrogates.
func pjString(b []byte, v *pjValue) (string, error) {
	if v.kind != '"' {
		return "", &PolygraphyError{Offset: int64(v.off), Msg: "expected a string"}
	}
	raw := b[v.off+1 : v.end-1]
	if len(raw) > pgMaxName {
		return "", &PolygraphyError{Offset: int64(v.off), Msg: fmt.Sprintf("a string of %d bytes where a name is expected", len(raw))}
	}
	s, at, msg := unescapeJSON(raw)
	if msg != "" {
		return "", &PolygraphyError{Offset: int64(v.off + 1 + at), Msg: msg}
	}
	return s, nil
}

func unescapeJSON(raw []byte) (s string, at int, msg string) {
	if !bytes.ContainsAny(raw, "\\") {
		for i, c := range raw {
			if c < 0x20 {
				return "", i, fmt.Sprintf("control character 0x%02x in a string", c)
			}
		}
		if !utf8.Valid(raw) {
			return "", 0, "string is not valid UTF-8"
		}
		return string(raw), 0, ""
	}
	out := make([]byte, 0, len(raw))
	for i := 0; i < len(raw); {
		c := raw[i]
		switch {
		case c < 0x20:
			return "", i, fmt.Sprintf("control character 0x%02x in a string", c)
		case c != '\\':
			r, n := utf8.DecodeRune(raw[i:])
			if r == utf8.RuneError && n == 1 {
				return "", i, "string is not valid UTF-8"
			}
			out = append(out, raw[i:i+n]...)
			i += n
			continue
		}
		r, n, m := jsonEscape(raw[i:])
		if m != "" {
			return "", i, m
		}
		out = utf8.AppendRune(out, r)
		i += n
	}
	return string(out), 0, ""
}

// jsonEscape decodes the escape at the start of s (which starts with a
// backslash): the rune, the bytes it took, or why it is invalid.
func jsonEscape(s []byte) (rune, int, string) {
	if len(s) < 2 {
		return 0, 0, "unterminated escape"
	}
	switch s[1] {
	case '"', '\\', '/':
		return rune(s[1]), 2, ""
	case 'b':
		return '\b', 2, ""
	case 'f':
		return '\f', 2, ""
	case 'n':
		return '\n', 2, ""
	case 'r':
		return '\r', 2, ""
	case 't':
		return '\t', 2, ""
	case 'u':
		r, ok := hex4ok(s[2:])
		if !ok {
			return 0, 0, "invalid \\u escape"
		}
		if utf16.IsSurrogate(r) {
			if len(s) >= 12 && s[6] == '\\' && s[7] == 'u' {
				if r2, ok := hex4ok(s[8:]); ok {
					if d := utf16.DecodeRune(r, r2); d != utf8.RuneError {
						return d, 12, ""
					}
				}
			}
			return 0, 0, "lone surrogate in a \\u escape"
		}
		return r, 6, ""
	}
	return 0, 0, fmt.Sprintf("invalid escape \\%c", s[1])
}

func (v *pjValue) get(key string) *pjValue {
	for i, k := range v.keys {
		if k == key {
			return v.elems[i]
		}
	}
	return nil
}

// class is an object's Polygraphy class: the "polygraphy_class" value, or
// the legacy "__polygraphy_encoded_CLASS" key (checked first, as
// serde.py's Decoder does); "" for a plain object.
func (v *pjValue) class(b []byte) (string, error) {
	if v.kind != '{' {
		return "", nil
	}
	const legacyPrefix, legacyMarker = "__polygraphy_encoded_", "polygraphy_serialized_json_type"
	for i, k := range v.keys {
		if len(k) > len(legacyPrefix) && k[:len(legacyPrefix)] == legacyPrefix && v.elems[i].kind == '"' {
			if s, err := pjString(b, v.elems[i]); err == nil && s == legacyMarker {
				return k[len(legacyPrefix):], nil
			}
		}
	}
	c := v.get("polygraphy_class")
	if c == nil {
		return "", nil
	}
	if c.kind != '"' {
		return "", &PolygraphyError{Offset: int64(c.off), Msg: "polygraphy_class is not a string"}
	}
	return pjString(b, c)
}

func isMarkerKey(k string) bool {
	return k == "polygraphy_class" || len(k) > 21 && k[:21] == "__polygraphy_encoded_"
}

// ---- the file's structure ----

// SniffPolygraphy reports whether b starts like a Polygraphy JSON file:
// JSON whose first 4 KiB hold a Polygraphy class marker, or an "array"
// key whose string starts with the base64 of the npy magic (an array of
// any size whose marker comes after it).
//
// A UTF-8 byte order mark before it is skipped (the reader then says
// what is wrong with it), and where the first 4 KiB hold no marker, as
// behind a runner or output name of 4 KiB or more, the file's opening is
// read: RunResults' {"lst": [[ and an input list's [{NAME: {"array": with
// an npy's text, the name skipped whatever its length.
func SniffPolygraphy(b []byte) bool {
	b = bytes.TrimPrefix(b, json.UTF8BOM)
	head := b[:min(len(b), 4096)]
	if !json.SniffJSON(head) {
		return false
	}
	if pgOpening(b) {
		return true
	}
	if bytes.Contains(head, []byte(`"polygraphy_class"`)) || bytes.Contains(head, []byte(`"__polygraphy_encoded_`)) {
		return true
	}
	for rest := head; ; {
		i := bytes.Index(rest, []byte(`"array"`))
		if i < 0 {
			return false
		}
		rest = rest[i+7:]
		t := bytes.TrimLeft(rest, " \t\r\n")
		if len(t) > 0 && t[0] == ':' {
			t = bytes.TrimLeft(t[1:], " \t\r\n")
			if bytes.HasPrefix(t, []byte(`"k05VTVBZ`)) || // base64 of "\x93NUMPY"
				bytes.HasPrefix(t, []byte(`"PK\u0003\u0004`)) || bytes.HasPrefix(t, []byte(`"\u0093NUMPY`)) { // latin-1 (Polygraphy 0.29)
				return true
			}
		}
	}
}

// pgOpening reports whether b opens as a Polygraphy file does: {"lst":
// [[" (RunResults, its first runner's name next) or [{NAME: {"array": and
// the text of an npy file (an input list). Only the opening is read; a
// name is skipped to its closing quote, whatever its length.
func pgOpening(b []byte) bool {
	i := 0
	ws := func() {
		for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\n' || b[i] == '\r') {
			i++
		}
	}
	tok := func(t string) bool {
		ws()
		if !bytes.HasPrefix(b[i:], []byte(t)) {
			return false
		}
		i += len(t)
		return true
	}
	str := func() bool { // any string, escapes included
		ws()
		if i >= len(b) || b[i] != '"' {
			return false
		}
		for i++; i < len(b); i++ {
			switch b[i] {
			case '\\':
				i++
			case '"':
				i++
				return true
			}
		}
		return false
	}
	if tok("{") {
		return tok(`"lst"`) && tok(":") && tok("[") && tok("[") && tok(`"`)
	}
	if !(tok("[") && tok("{") && str() && tok(":") && tok("{") && tok(`"array"`) && tok(":") && tok(`"`)) {
		return false
	}
	for _, p := range []string{"k05VTVBZ", `\u0093NUMPY`, `PK\u0003\u0004`} {
		if bytes.HasPrefix(b[i:], []byte(p)) {
			return true
		}
	}
	return false
}

// pgArray is one member: its base64 text in the file and its npy header.
type pgArray struct {
	name string
	text []byte // the string's content, between the quotes
	// file reads the same bytes by position (OpenOptions.File), the text
	// starting at textOff; nil: the text is read from the mapping.
	file    io.ReaderAt
	textOff int64
	// latin1: the text is the file's bytes as latin-1 characters
	// (Polygraphy 0.29 and older), the data starting at byte start of
	// them (polygraphy_latin1.go).
	latin1 bool
	start  int64
	esc    bool
	npy    npy.Npy
	length int64 // the text's length once unescaped
}

type pgReader struct {
	b       []byte
	file    io.ReaderAt
	meta    *PolygraphyMeta
	arrays  []*pgArray
	seen    map[string]bool
	prefixR bool // names carry the runner
	prefixI bool // names carry the iteration
}

// ReadPolygraphy parses a Polygraphy file's structure and every member's
// npy header; the element data are left encoded (pgArray's Inflate).
func readPolygraphy(b []byte, file io.ReaderAt) (*PolygraphyMeta, []*pgArray, error) {
	p := &pjParser{b: b, file: file}
	if len(b) >= 3 && string(b[:3]) == "\xef\xbb\xbf" {
		return nil, nil, p.errAt(0, "a UTF-8 byte order mark (EF BB BF) before the JSON: Polygraphy, through Python's json, refuses it; remove those 3 bytes")
	}
	top, err := p.value(0)
	if err != nil {
		return nil, nil, err
	}
	p.space()
	if p.i != len(b) {
		return nil, nil, p.errAt(p.i, "text after the JSON value")
	}
	r := &pgReader{b: b, file: file, meta: &PolygraphyMeta{}, seen: map[string]bool{}}
	switch top.kind {
	case '[':
		err = r.inputs(top)
	case '{':
		err = r.runResults(top)
	default:
		err = pgErr("", "the file is a JSON %s, not RunResults or an input list", pjKindName(top.kind))
	}
	if err != nil {
		return nil, nil, err
	}
	return r.meta, r.arrays, nil
}

func pjKindName(k byte) string {
	switch k {
	case '{':
		return "object"
	case '[':
		return "list"
	case '"':
		return "string"
	}
	return "number or literal"
}

func (r *pgReader) inputs(top *pjValue) error {
	r.meta.Inputs = true
	run := PolygraphyRunner{}
	for i, feed := range top.elems {
		if feed.kind != '{' {
			return pgErr("", "input list item %d is a JSON %s, not an object of arrays", i, pjKindName(feed.kind))
		}
		if c, err := feed.class(r.b); err != nil || c != "" {
			if err != nil {
				return err
			}
			return pgErr("", "input list item %d is a %s, not an object of arrays", i, c)
		}
		it := PolygraphyIteration{Keys: []PolygraphyKey{{Key: "outputs"}}}
		for _, name := range feed.keys {
			it.Outputs = append(it.Outputs, PolygraphyOutput{Name: name})
		}
		run.Iterations = append(run.Iterations, it)
	}
	r.meta.Runners = []PolygraphyRunner{run}
	r.prefixI = len(run.Iterations) > 1
	for i, feed := range top.elems {
		for j, v := range feed.elems {
			name := feed.keys[j]
			full := r.memberName("", i, name)
			w, err := r.array(v, full)
			if err != nil {
				return err
			}
			run.Iterations[i].Outputs[j].Wrapper = w
			r.meta.Places = append(r.meta.Places, PolygraphyPlace{0, i, j})
		}
	}
	return nil
}

func (r *pgReader) memberName(runner string, iter int, out string) string {
	name := out
	if r.prefixI {
		name = strconv.Itoa(iter) + "/" + name
	}
	if r.prefixR {
		name = runner + "/" + name
	}
	return name
}

func (r *pgReader) runResults(top *pjValue) error {
	c, err := top.class(r.b)
	if err != nil {
		return err
	}
	switch c {
	case "RunResults":
	case "":
		return pgErr("", "the JSON object has no polygraphy_class: not RunResults (an input list is a JSON list)")
	case "Tensor":
		return pgErr("", "the file is a torch Tensor (a pickle, torch.save): refused, never unpickled")
	default:
		return pgErr("", "the file holds a Polygraphy %s, not RunResults or an input list", c)
	}
	lst := top.get("lst")
	if lst == nil {
		return pgErr("", "RunResults has no \"lst\"")
	}
	if lst.kind != '[' {
		return pgErr("", "RunResults' \"lst\" is a JSON %s, not a list", pjKindName(lst.kind))
	}
	for i, k := range top.keys {
		if k != "lst" && !isMarkerKey(k) {
			r.meta.Extra = append(r.meta.Extra, PolygraphyKey{Key: k, Raw: bytes.Clone(r.b[top.elems[i].off:top.elems[i].end])})
		}
	}
	// First the structure (runner names, iteration counts), to know the
	// member names' prefixes; then the arrays.
	names := map[string]bool{}
	var iters [][]*pjValue
	for i, e := range lst.elems {
		if e.kind != '[' || len(e.elems) != 2 {
			return pgErr("", "RunResults' lst item %d is not a [runner name, iterations] pair", i)
		}
		name, err := pjString(r.b, e.elems[0])
		if err != nil {
			return pgErr("", "RunResults' lst item %d: the runner name is not a string", i)
		}
		if names[name] {
			return pgErr("", "runner %q appears twice", name)
		}
		names[name] = true
		if e.elems[1].kind != '[' {
			return pgErr("", "runner %q: the iterations are a JSON %s, not a list", name, pjKindName(e.elems[1].kind))
		}
		r.meta.Runners = append(r.meta.Runners, PolygraphyRunner{Name: name})
		iters = append(iters, e.elems[1].elems)
		if len(e.elems[1].elems) > 1 {
			r.prefixI = true
		}
	}
	r.prefixR = len(lst.elems) > 1
	for ri, its := range iters {
		run := &r.meta.Runners[ri]
		for ii, it := range its {
			where := fmt.Sprintf("runner %q iteration %d", run.Name, ii)
			c, err := it.class(r.b)
			if err != nil {
				return err
			}
			if c != "IterationResult" {
				if c == "" {
					return pgErr("", "%s is not an IterationResult", where)
				}
				return pgErr("", "%s is a %s, not an IterationResult", where, c)
			}
			var iter PolygraphyIteration
			var outs *pjValue
			for ki, k := range it.keys {
				switch {
				case isMarkerKey(k):
				case k == "outputs":
					outs = it.elems[ki]
					iter.Keys = append(iter.Keys, PolygraphyKey{Key: k})
				default:
					v := it.elems[ki]
					iter.Keys = append(iter.Keys, PolygraphyKey{Key: k, Raw: bytes.Clone(r.b[v.off:v.end])})
				}
			}
			for _, k := range []string{"outputs", "runtime", "runner_name"} {
				if it.get(k) == nil {
					return pgErr("", "%s has no %q", where, k)
				}
			}
			if outs.kind != '{' {
				return pgErr("", "%s: outputs are a JSON %s, not an object", where, pjKindName(outs.kind))
			}
			if c, err := outs.class(r.b); err != nil || c != "" {
				if err != nil {
					return err
				}
				return pgErr("", "%s: outputs are a %s, not an object of arrays", where, c)
			}
			for oi, name := range outs.keys {
				full := r.memberName(run.Name, ii, name)
				w, err := r.array(outs.elems[oi], full)
				if err != nil {
					return err
				}
				iter.Outputs = append(iter.Outputs, PolygraphyOutput{Name: name, Wrapper: w})
				r.meta.Places = append(r.meta.Places, PolygraphyPlace{ri, ii, oi})
			}
			run.Iterations = append(run.Iterations, iter)
		}
	}
	return nil
}

// array reads one output: an ndarray, or a LazyArray holding one; it
// returns the wrapper's class.
func (r *pgReader) array(v *pjValue, name string) (string, error) {
	if r.seen[name] {
		return "", pgErr(name, "two members have this name")
	}
	r.seen[name] = true
	c, err := v.class(r.b)
	if err != nil {
		return "", pgErr(name, "%v", err)
	}
	wrapper := ""
	if c == "LazyArray" || c == "LazyNumpyArray" {
		wrapper = c
		if v = v.get("values"); v == nil {
			return "", pgErr(name, "%s has no \"values\"", c)
		}
		if c, err = v.class(r.b); err != nil {
			return "", pgErr(name, "%v", err)
		}
	}
	switch c {
	case "ndarray":
	case "Tensor":
		return "", pgErr(name, "is a torch Tensor (a pickle, torch.save): refused, never unpickled; save it as a numpy array")
	case "":
		return "", pgErr(name, "is a JSON %s, not a Polygraphy array (no polygraphy_class)", pjKindName(v.kind))
	default:
		return "", pgErr(name, "is a Polygraphy %s, not an array", c)
	}
	s := v.get("array")
	if s == nil {
		return "", pgErr(name, "the ndarray has no \"array\"")
	}
	if s.kind != '"' {
		return "", pgErr(name, "the ndarray's \"array\" is a JSON %s, not a string", pjKindName(s.kind))
	}
	a := &pgArray{name: name, text: r.b[s.off+1 : s.end-1], esc: s.esc, file: r.file, textOff: int64(s.off + 1)}
	if err := a.open(); err != nil {
		return "", err
	}
	r.meta.Names = append(r.meta.Names, name)
	r.arrays = append(r.arrays, a)
	return wrapper, nil
}

// ---- the base64 text ----

// pgText gives a member's base64 text piece by piece: slices of the file
// when it holds no escapes, else unescaped into buf.
type pgText struct {
	a   *pgArray
	i   int // next byte of a.text
	buf []byte
}

// next returns the next n characters of text (fewer at the end).
func (t *pgText) next(n int) ([]byte, error) {
	if t.a.latin1 {
		return t.nextLatin1(n)
	}
	if !t.a.esc {
		s := t.a.text[t.i:min(len(t.a.text), t.i+n)]
		if t.a.file != nil && len(s) > 0 { // the same bytes, not faulted into the mapping
			if cap(t.buf) < n {
				t.buf = make([]byte, 0, n)
			}
			r := t.buf[:len(s)]
			if k, err := t.a.file.ReadAt(r, t.a.textOff+int64(t.i)); k < len(r) {
				return nil, pgErr(t.a.name, "reading the file: %v", err)
			}
			s = r
		}
		t.i += len(s)
		return s, nil
	}
	if cap(t.buf) < n {
		t.buf = make([]byte, 0, n)
	}
	out := t.buf[:0]
	for len(out) < n && t.i < len(t.a.text) {
		c := t.a.text[t.i]
		if c != '\\' { // anything not base64 is refused by the decoder
			out = append(out, c)
			t.i++
			continue
		}
		r, k, m := jsonEscape(t.a.text[t.i:])
		if m != "" {
			return nil, pgErr(t.a.name, "base64 text, character %d: %s", t.i, m)
		}
		if r >= 0x80 {
			return nil, pgErr(t.a.name, "base64 text, character %d: escape of U+%04X, which is not base64", t.i, r)
		}
		out = append(out, byte(r))
		t.i += k
	}
	return out, nil
}

// count is the text's unescaped length and its last two characters.
func (a *pgArray) count() (int64, [2]byte, error) {
	var last [2]byte
	if !a.esc {
		n := len(a.text)
		if n >= 2 {
			last = [2]byte{a.text[n-2], a.text[n-1]}
		}
		return int64(n), last, nil
	}
	t := &pgText{a: a}
	var n int64
	for {
		s, err := t.next(pgChunk)
		if err != nil {
			return 0, last, err
		}
		if len(s) == 0 {
			return n, last, nil
		}
		n += int64(len(s))
		if len(s) >= 2 {
			last = [2]byte{s[len(s)-2], s[len(s)-1]}
		} else {
			last = [2]byte{last[1], s[0]}
		}
	}
}

// open checks a member's text against its npy header: the header is
// decoded from the first characters, and the text's length must be that
// of exactly the preamble and the data the header describes, before any
// data are decoded or any memory is given to them.
func (a *pgArray) open() error {
	if bytes.HasPrefix(a.text, []byte(`PK\u0003\u0004`)) || bytes.HasPrefix(a.text, []byte(`\u0093NUMPY`)) {
		return a.openLatin1()
	}
	n, last, err := a.count()
	if err != nil {
		return err
	}
	a.length = n
	if n%4 != 0 {
		return pgErr(a.name, "base64 text of %d characters is not a whole number of 4-character groups (padding)", n)
	}
	pad := int64(0)
	if n >= 4 {
		if last[1] == '=' {
			pad++
			if last[0] == '=' {
				pad++
			}
		}
	}
	decoded := n/4*3 - pad
	t := &pgText{a: a}
	head, err := a.decodeText(t, 16)
	if err != nil {
		return err
	}
	switch {
	case bytes.HasPrefix(head, []byte("PK\x03\x04")):
		return pgErr(a.name, "the base64 payload is an npz archive, not an npy file (Polygraphy writes np.save's npy)")
	case !bytes.HasPrefix(head, []byte(npy.NpyMagic)):
		return pgErr(a.name, "the base64 payload is not an npy file (no \\x93NUMPY magic)")
	}
	fixed, hlen := 10, 0
	if len(head) < 10 {
		return pgErr(a.name, "the base64 payload is %d bytes, shorter than an npy preamble", len(head))
	}
	if head[6] == 1 {
		hlen = int(head[8]) | int(head[9])<<8
	} else {
		if len(head) < 12 {
			return pgErr(a.name, "the base64 payload is %d bytes, shorter than an npy preamble", len(head))
		}
		fixed, hlen = 12, int(head[8])|int(head[9])<<8|int(head[10])<<16|int(head[11])<<24
	}
	pre := head
	if hlen <= npy.MaxNpyHeader && int64(fixed+hlen) <= decoded {
		t = &pgText{a: a}
		if pre, err = a.decodeText(t, (fixed+hlen+2)/3*4); err != nil {
			return err
		}
	}
	npy, err := npy.ParseNpy(pre)
	if err != nil {
		return pgErr(a.name, "the base64 payload: %v", err)
	}
	want := npy.DataOffset + npy.DataBytes()
	switch {
	case decoded < want:
		return pgErr(a.name, "truncated: the npy header describes %d data bytes (shape %s, %s) but the base64 text holds %d", npy.DataBytes(), format.ShapeString(npy.Shape), npy.DType, max(0, decoded-npy.DataOffset))
	case decoded > want:
		return pgErr(a.name, "%d bytes beyond the %d data bytes the npy header describes (shape %s, %s)", decoded-want, npy.DataBytes(), format.ShapeString(npy.Shape), npy.DType)
	}
	a.npy = npy
	return nil
}

// decodeText decodes the first chars characters (a multiple of 4, or all)
// of t into bytes.
func (a *pgArray) decodeText(t *pgText, chars int) ([]byte, error) {
	s, err := t.next(chars)
	if err != nil {
		return nil, err
	}
	out := make([]byte, len(s)/4*3)
	n, err := a.decode(out, s, 0, len(s) < chars || int64(len(s)) == a.length)
	if err != nil {
		return nil, err
	}
	return out[:n], nil
}

// pgDec maps a base64 character to its 6 bits at each of a group's four
// places; anything else (line breaks, '=', non-ASCII) to pgBad.
var pgDec [4][256]uint32

const pgBad = 1 << 24

// pgEnc2 maps 12 bits to their two base64 characters.
var pgEnc2 [4096]uint16

// pgTables fills pgDec and pgEnc2 on first use (decode, pgEncode), not
// when the program starts: 12 KiB written by every run otherwise, three
// page faults and 5,000 stores before any command.
var pgTables sync.Once

func pgFillTables() {
	const alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"
	for v := range pgEnc2 {
		pgEnc2[v] = uint16(alphabet[v>>6])<<8 | uint16(alphabet[v&63])
	}
	for k := range pgDec {
		for c := range pgDec[k] {
			pgDec[k][c] = pgBad
		}
		for v, c := range []byte(alphabet) {
			pgDec[k][c] = uint32(v) << (18 - 6*k)
		}
	}
}

// decode decodes s (a whole number of 4-character groups) into dst, which
// has room for len(s)/4*3 bytes; at is s's place in the text, for
// messages. Python's b64decode(validate=True) takes the alphabet and '='
// padding at the very end only: so does this (padding when final).
// encoding/base64 would skip line breaks, and decodes 3x slower than
// these tables.
func (a *pgArray) decode(dst, s []byte, at int64, final bool) (int, error) {
	pgTables.Do(pgFillTables)
	body := s
	if final && len(s) >= 4 && s[len(s)-1] == '=' {
		body = s[:len(s)-4]
	}
	n := 0
	i := 0
	for ; i+8 <= len(body) && n+8 <= len(dst); i, n = i+8, n+6 {
		q := body[i : i+8 : i+8]
		v1 := pgDec[0][q[0]] | pgDec[1][q[1]] | pgDec[2][q[2]] | pgDec[3][q[3]]
		v2 := pgDec[0][q[4]] | pgDec[1][q[5]] | pgDec[2][q[6]] | pgDec[3][q[7]]
		if (v1|v2)&pgBad != 0 {
			break
		}
		binary.BigEndian.PutUint64(dst[n:], uint64(v1)<<40|uint64(v2)<<16)
	}
	for ; i+4 <= len(body); i, n = i+4, n+3 {
		q := body[i : i+4 : i+4]
		v := pgDec[0][q[0]] | pgDec[1][q[1]] | pgDec[2][q[2]] | pgDec[3][q[3]]
		if v&pgBad != 0 {
			for k, c := range q {
				if pgDec[k][c]&pgBad != 0 {
					return 0, a.badChar(c, at+int64(i+k))
				}
			}
		}
		dst[n], dst[n+1], dst[n+2] = byte(v>>16), byte(v>>8), byte(v)
	}
	if len(body) < len(s) { // the last group, with its padding
		q := s[len(body):]
		for k, c := range q {
			if c != '=' && pgDec[0][c]&pgBad != 0 || c == '=' && k < 2 {
				return 0, a.badChar(c, at+int64(len(body)+k))
			}
		}
		if q[2] == '=' && q[3] != '=' {
			return 0, a.badChar(q[2], at+int64(len(body)+2))
		}
		m, err := base64.StdEncoding.Decode(dst[n:], q)
		if err != nil {
			return 0, pgErr(a.name, "invalid base64 at character %d", at+int64(len(body)))
		}
		n += m
	}
	return n, nil
}

// pgEncode encodes src (a whole number of 3-byte groups) into dst
// (len(src)/3*4), as encoding/base64 does but 6 bytes at a time through
// pgEnc2 (about 1.8x its speed on this machine: 1.1-1.3 against
// 0.6-0.7 GB/s, benchmarked in turn on a loaded host).
func pgEncode(dst, src []byte) {
	pgTables.Do(pgFillTables)
	i, j := 0, 0
	for ; i+8 <= len(src) && j+8 <= len(dst); i, j = i+6, j+8 {
		v := binary.BigEndian.Uint64(src[i:]) // the top 48 bits are the 6 bytes
		binary.BigEndian.PutUint64(dst[j:], uint64(pgEnc2[v>>52])<<48|uint64(pgEnc2[v>>40&0xfff])<<32|
			uint64(pgEnc2[v>>28&0xfff])<<16|uint64(pgEnc2[v>>16&0xfff]))
	}
	for ; i+3 <= len(src); i, j = i+3, j+4 {
		v := uint32(src[i])<<16 | uint32(src[i+1])<<8 | uint32(src[i+2])
		binary.BigEndian.PutUint16(dst[j:], pgEnc2[v>>12])
		binary.BigEndian.PutUint16(dst[j+2:], pgEnc2[v&0xfff])
	}
}

func (a *pgArray) badChar(c byte, at int64) error {
	switch c {
	case '\r', '\n':
		return pgErr(a.name, "invalid base64: a line break at character %d", at)
	case '=':
		return pgErr(a.name, "invalid base64: padding '=' at character %d, before the end", at)
	}
	return pgErr(a.name, "invalid base64 at character %d (byte 0x%02x)", at, c)
}

// Inflate writes the member's element data to w: the base64 text decoded
// 64 KiB at a time, the npy preamble skipped, exactly DataBytes written.
func (a *pgArray) Inflate(w io.Writer) error {
	if a.latin1 {
		return a.inflateLatin1(w)
	}
	buf := make([]byte, pgChunk/4*3)
	t := &pgText{a: a}
	pre := a.npy.DataOffset
	// Start at the group holding the first data byte.
	skipText := pre / 3 * 4
	drop := int(pre % 3)
	for skipText > 0 { // escaped text: unescape and discard
		s, err := t.next(int(min(skipText, pgChunk)))
		if err != nil {
			return err
		}
		skipText -= int64(len(s))
	}
	at := pre / 3 * 4
	left := a.npy.DataBytes()
	for {
		s, err := t.next(pgChunk)
		if err != nil {
			return err
		}
		if len(s) == 0 {
			break
		}
		n, err := a.decode(buf, s, at, at+int64(len(s)) == a.length)
		if err != nil {
			return err
		}
		at += int64(len(s))
		out := buf[drop:n]
		drop = 0
		if int64(len(out)) > left {
			return pgErr(a.name, "the base64 text decodes to more than the %d data bytes its npy header describes", a.npy.DataBytes())
		}
		left -= int64(len(out))
		if _, err := w.Write(out); err != nil {
			return err
		}
	}
	if left != 0 {
		return pgErr(a.name, "the base64 text decodes to %d data bytes but its npy header describes %d", a.npy.DataBytes()-left, a.npy.DataBytes())
	}
	return nil
}

// lazy is the member's Lazy: the array itself, which also reads its data
// at any offset (io.ReaderAt), or, for text with JSON escapes (whose
// characters are not where their position says), a Lazy without ReadAt.
func (a *pgArray) lazy() format.Lazy {
	if a.esc || a.latin1 {
		return pgEscaped{a}
	}
	return a
}

type pgEscaped struct{ a *pgArray }

func (e pgEscaped) Inflate(w io.Writer) error    { return e.a.Inflate(w) }
func (e pgEscaped) InflateData() ([]byte, error) { return e.a.InflateData() }

// pgBufs are ReadAt's buffers: a piece of text and its decoded bytes.
var pgBufs = sync.Pool{New: func() any { return new([pgChunk + pgChunk/4*3]byte) }}

// ReadAt reads the member's element data at off without decoding what
// comes before (io.ReaderAt): base64 is 4 characters per 3 bytes, so the
// bytes of [off, off+len(p)) are decoded from the groups that hold them,
// read from the file by position (or the mapping), checked as Inflate
// checks them. A job can then read a member's data in chunks like a file
// input, from any number of goroutines, with no scratch copy.
func (a *pgArray) ReadAt(p []byte, off int64) (int, error) {
	size := a.npy.DataBytes()
	if off < 0 {
		return 0, pgErr(a.name, "internal error: negative offset %d", off)
	}
	want := p
	if off >= size {
		if len(p) == 0 {
			return 0, nil
		}
		return 0, io.EOF
	}
	if int64(len(p)) > size-off {
		want = p[:size-off]
	}
	bufs := pgBufs.Get().(*[pgChunk + pgChunk/4*3]byte)
	defer pgBufs.Put(bufs)
	text, dec := bufs[:pgChunk], bufs[pgChunk:]
	n := 0
	for n < len(want) {
		s := a.npy.DataOffset + off + int64(n) // in the decoded npy file
		k := min(len(want)-n, len(dec)-3)
		g0, g1 := s/3, (s+int64(k)+2)/3 // the groups holding [s, s+k)
		t := text[:(g1-g0)*4]
		if a.file != nil {
			if r, err := a.file.ReadAt(t, a.textOff+g0*4); r < len(t) {
				return n, pgErr(a.name, "reading the file: %v", err)
			}
		} else {
			copy(t, a.text[g0*4:g1*4])
		}
		m, err := a.decode(dec, t, g0*4, g1*4 == a.length)
		if err != nil {
			return n, err
		}
		lo := int(s - g0*3)
		if lo+k > m {
			return n, pgErr(a.name, "internal error: decoded %d bytes of group %d, need %d", m, g0, lo+k)
		}
		n += copy(want[n:], dec[lo:lo+k])
	}
	if len(want) < len(p) {
		return n, io.EOF
	}
	return n, nil
}

// InflateData is Inflate into memory.
func (a *pgArray) InflateData() ([]byte, error) {
	data := make([]byte, a.npy.DataBytes())
	w := &sliceFill{b: data}
	if err := a.Inflate(w); err != nil {
		return nil, err
	}
	return data, nil
}

type sliceFill struct {
	b []byte
	n int
}

func (s *sliceFill) Write(p []byte) (int, error) {
	if len(p) > len(s.b)-s.n {
		return 0, errors.New("internal error: more bytes than the tensor holds")
	}
	s.n += copy(s.b[s.n:], p)
	return len(p), nil
}

// openPolygraphy is the format's Open.
func openPolygraphy(b []byte, opt format.OpenOptions) (*format.Archive, error) {
	meta, arrays, err := readPolygraphy(b, opt.File)
	if err != nil {
		return nil, err
	}
	a := &format.Archive{Meta: meta, Members: make([]format.Member, len(arrays))}
	for i, arr := range arrays {
		npy := arr.npy
		a.Members[i] = format.Member{Name: arr.name, Header: npy.Header, Stored: &npy, Lazy: arr.lazy()}
	}
	if opt.Deferred {
		return a, nil
	}
	// Decode every member now, up to opt.Threads at a time.
	threads := max(1, opt.Threads)
	var (
		wg    sync.WaitGroup
		mu    sync.Mutex
		first error
		next  = make(chan int)
	)
	for range min(threads, len(arrays)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				data, err := arrays[i].InflateData()
				mu.Lock()
				if err != nil && first == nil {
					first = err
				}
				mu.Unlock()
				a.Members[i].Data, a.Members[i].Lazy = data, nil
			}
		}()
	}
	for i := range arrays {
		next <- i
	}
	close(next)
	wg.Wait()
	if first != nil {
		return nil, first
	}
	return a, nil
}

// ---- writing ----

// Create writes what Polygraphy's json.dumps(indent=4) writes, each array
// np.save's npy file (version 1.0 preamble, the member's descr, C order)
// in base64, streamed as the member's data come.
//
// With the Meta of a Polygraphy input whose members are the ones written
// (same names, same order), the file has the input's structure: its
// runners, iterations, runtimes, runner names, other keys and output
// order, an input list staying an input list. Without it (converting an
// npz, say) the file is RunResults of one runner "depthspace" with one
// iteration of runtime 0.0 holding every member as an output, each in a
// LazyArray as Polygraphy writes them: what `polygraphy run
// --load-outputs` and depthspace compare read (`polygraphy data to-input`
// turns it into an input list).
func createPolygraphy(w io.Writer, members []format.MemberSpec, meta any) (format.MemberWriter, error) {
	for _, m := range members {
		if !utf8.ValidString(m.Name) {
			// An npz member's name can be any bytes; JSON would write
			// U+FFFD in their place, another name.
			return nil, fmt.Errorf("polygraphy member %q: the name is not UTF-8, and a Polygraphy file (JSON) holds UTF-8 names only", m.Name)
		}
	}
	m, _ := meta.(*PolygraphyMeta)
	if m != nil && !sameNames(m.Names, members) {
		m = nil
	}
	if m == nil {
		m = defaultPolygraphyMeta(members)
	}
	pw := &pgWriter{w: w, members: members}
	pw.layout(m)
	return pw, nil
}

func sameNames(names []string, members []format.MemberSpec) bool {
	if len(names) != len(members) {
		return false
	}
	for i := range names {
		if names[i] != members[i].Name {
			return false
		}
	}
	return true
}

func defaultPolygraphyMeta(members []format.MemberSpec) *PolygraphyMeta {
	const runner = "depthspace"
	it := PolygraphyIteration{Keys: []PolygraphyKey{
		{Key: "outputs"}, {Key: "runtime", Raw: []byte("0.0")},
		{Key: "runner_name", Raw: []byte(pyJSONString(runner))},
	}}
	m := &PolygraphyMeta{}
	for i, s := range members {
		it.Outputs = append(it.Outputs, PolygraphyOutput{Name: s.Name, Wrapper: "LazyArray"})
		m.Names = append(m.Names, s.Name)
		m.Places = append(m.Places, PolygraphyPlace{0, 0, i})
	}
	m.Runners = []PolygraphyRunner{{Name: runner, Iterations: []PolygraphyIteration{it}}}
	return m
}

// pgWriter writes the JSON text around the arrays (pieces[i] before
// member i, the last after all) and each member's npy file in base64.
type pgWriter struct {
	w       io.Writer
	members []format.MemberSpec
	pieces  [][]byte
	next    int
	left    int64 // data bytes the current member still takes
	open    bool
	enc     pgEncoder
}

// layout prints the structure with a cut where each array's base64 goes.
func (pw *pgWriter) layout(m *PolygraphyMeta) {
	var b bytes.Buffer
	ind := func(level int) {
		b.WriteByte('\n')
		for range level {
			b.WriteString("    ")
		}
	}
	cut := func() {
		pw.pieces = append(pw.pieces, bytes.Clone(b.Bytes()))
		b.Reset()
	}
	// output writes one array (at its key) at level l.
	output := func(o PolygraphyOutput, l int) {
		b.WriteString(pyJSONString(o.Name))
		b.WriteString(": {")
		if o.Wrapper != "" {
			ind(l + 1)
			b.WriteString(`"values": {`)
			l++
		}
		ind(l + 1)
		b.WriteString(`"array": "`)
		cut()
		b.WriteString(`",`)
		ind(l + 1)
		b.WriteString(`"polygraphy_class": "ndarray"`)
		ind(l)
		b.WriteByte('}')
		if o.Wrapper != "" {
			b.WriteByte(',')
			ind(l)
			b.WriteString(`"polygraphy_class": ` + pyJSONString(o.Wrapper))
			ind(l - 1)
			b.WriteByte('}')
		}
	}
	outputs := func(it PolygraphyIteration, l int) {
		if len(it.Outputs) == 0 {
			b.WriteString("{}")
			return
		}
		b.WriteByte('{')
		for i, o := range it.Outputs {
			if i > 0 {
				b.WriteByte(',')
			}
			ind(l + 1)
			output(o, l+1)
		}
		ind(l)
		b.WriteByte('}')
	}
	if m.Inputs {
		var its []PolygraphyIteration
		if len(m.Runners) > 0 {
			its = m.Runners[0].Iterations
		}
		if len(its) == 0 {
			b.WriteString("[]")
		} else {
			b.WriteByte('[')
			for i, it := range its {
				if i > 0 {
					b.WriteByte(',')
				}
				ind(1)
				outputs(it, 1)
			}
			ind(0)
			b.WriteByte(']')
		}
		cut()
		return
	}
	b.WriteString("{")
	ind(1)
	b.WriteString(`"lst": `)
	if len(m.Runners) == 0 {
		b.WriteString("[]")
	} else {
		b.WriteByte('[')
		for ri, run := range m.Runners {
			if ri > 0 {
				b.WriteByte(',')
			}
			ind(2)
			b.WriteByte('[')
			ind(3)
			b.WriteString(pyJSONString(run.Name))
			b.WriteByte(',')
			ind(3)
			if len(run.Iterations) == 0 {
				b.WriteString("[]")
			} else {
				b.WriteByte('[')
				for ii, it := range run.Iterations {
					if ii > 0 {
						b.WriteByte(',')
					}
					ind(4)
					b.WriteByte('{')
					for _, kv := range it.Keys {
						ind(5)
						b.WriteString(pyJSONString(kv.Key))
						b.WriteString(": ")
						if kv.Raw == nil {
							outputs(it, 5)
						} else {
							b.Write(kv.Raw)
						}
						b.WriteByte(',')
					}
					ind(5)
					b.WriteString(`"polygraphy_class": "IterationResult"`)
					ind(4)
					b.WriteByte('}')
				}
				ind(3)
				b.WriteByte(']')
			}
			ind(2)
			b.WriteByte(']')
		}
		ind(1)
		b.WriteByte(']')
	}
	b.WriteByte(',')
	for _, kv := range m.Extra {
		ind(1)
		b.WriteString(pyJSONString(kv.Key) + ": ")
		b.Write(kv.Raw)
		b.WriteByte(',')
	}
	ind(1)
	b.WriteString(`"polygraphy_class": "RunResults"`)
	ind(0)
	b.WriteByte('}')
	cut()
}

// pyJSONString quotes s as Python's json.dumps does (ensure_ascii):
// everything outside printable ASCII as \uXXXX (surrogate pairs beyond
// the BMP), the usual short escapes, '/' as it is.
func pyJSONString(s string) string {
	var b []byte
	b = append(b, '"')
	for _, r := range s { // invalid UTF-8 reads as U+FFFD
		switch r {
		case '"':
			b = append(b, `\"`...)
		case '\\':
			b = append(b, `\\`...)
		case '\n':
			b = append(b, `\n`...)
		case '\r':
			b = append(b, `\r`...)
		case '\t':
			b = append(b, `\t`...)
		case '\b':
			b = append(b, `\b`...)
		case '\f':
			b = append(b, `\f`...)
		default:
			switch {
			case r >= 0x20 && r < 0x7f:
				b = append(b, byte(r))
			case r > 0xffff:
				r1, r2 := utf16.EncodeRune(r)
				b = fmt.Appendf(b, `\u%04x\u%04x`, r1, r2)
			default:
				b = fmt.Appendf(b, `\u%04x`, r)
			}
		}
	}
	return string(append(b, '"'))
}

// Member starts the next member's array: the text before it, then the
// npy preamble in base64; the writer returned takes its data.
func (pw *pgWriter) Member(name string, h format.Header) (io.Writer, error) {
	if err := pw.finish(); err != nil {
		return nil, err
	}
	if pw.next >= len(pw.members) || pw.members[pw.next].Name != name {
		return nil, fmt.Errorf("internal error: polygraphy member %q out of the declared order", name)
	}
	if _, err := pw.w.Write(pw.pieces[pw.next]); err != nil {
		return nil, err
	}
	pw.next++
	pw.open = true
	pw.left = h.DataBytes()
	pw.enc.reset(pw.w)
	c := h
	c.Fortran = false // the data come in C order
	if _, err := pw.enc.Write(npy.EncodeNpy(c)); err != nil {
		return nil, err
	}
	return (*pgData)(pw), nil
}

// finish ends the current member's base64 text.
func (pw *pgWriter) finish() error {
	if !pw.open {
		return nil
	}
	if pw.left != 0 {
		return fmt.Errorf("polygraphy member %q: %d bytes missing", pw.members[pw.next-1].Name, pw.left)
	}
	pw.open = false
	return pw.enc.close()
}

// Close ends the file: the last member, the text after it.
func (pw *pgWriter) Close() error {
	if err := pw.finish(); err != nil {
		return err
	}
	if pw.next != len(pw.members) {
		return errors.New("internal error: polygraphy file left incomplete")
	}
	_, err := pw.w.Write(pw.pieces[len(pw.pieces)-1])
	return err
}

type pgData pgWriter

func (d *pgData) Write(p []byte) (int, error) {
	if int64(len(p)) > d.left {
		return 0, errors.New("internal error: more bytes than the tensor holds")
	}
	n, err := d.enc.Write(p)
	d.left -= int64(n)
	return n, err
}

// pgEncoder encodes to base64 in big blocks (encoding/base64's encoder
// writes 1 KiB at a time): up to 2 bytes carried between writes.
type pgEncoder struct {
	w     io.Writer
	carry [3]byte
	nc    int
	out   []byte
}

const pgEncBlock = 3 << 16 // 192 KiB of bytes, 256 KiB of text

func (e *pgEncoder) reset(w io.Writer) {
	e.w, e.nc = w, 0
	if e.out == nil {
		e.out = make([]byte, pgEncBlock/3*4)
	}
}

func (e *pgEncoder) Write(p []byte) (int, error) {
	n := len(p)
	if e.nc > 0 {
		k := copy(e.carry[e.nc:], p)
		e.nc += k
		p = p[k:]
		if e.nc < 3 {
			return n, nil
		}
		base64.StdEncoding.Encode(e.out, e.carry[:])
		if _, err := e.w.Write(e.out[:4]); err != nil {
			return 0, err
		}
		e.nc = 0
	}
	for len(p) >= 3 {
		k := min(len(p)/3*3, pgEncBlock)
		pgEncode(e.out[:k/3*4], p[:k])
		if _, err := e.w.Write(e.out[:k/3*4]); err != nil {
			return 0, err
		}
		p = p[k:]
	}
	e.nc = copy(e.carry[:], p)
	return n, nil
}

func (e *pgEncoder) close() error {
	if e.nc == 0 {
		return nil
	}
	base64.StdEncoding.Encode(e.out, e.carry[:e.nc])
	_, err := e.w.Write(e.out[:4])
	e.nc = 0
	return err
}

func init() {
	format.Register(format.Format{Kind: KindPolygraphy, Rank: 9, Noun: "a Polygraphy file",
		Doc:  "Polygraphy run results and input lists (JSON of base64 npy arrays), member by member",
		Exts: []string{".json"}, ByContent: true, Container: true, Sniff: SniffPolygraphy, SniffOrder: 80,
		Open: openPolygraphy, Create: createPolygraphy})
}

// RunNames names a RunResults' runners (format.Runs, for compare of one
// file); an input list has one run.
func (m *PolygraphyMeta) RunNames() []string {
	n := make([]string, len(m.Runners))
	for i, r := range m.Runners {
		n[i] = r.Name
	}
	return n
}

// RunOf says which runner a member belongs to and its name without the
// runner's prefix (which members carry only when there are several).
func (m *PolygraphyMeta) RunOf(member string) (int, string, bool) {
	for i, n := range m.Names {
		if n != member || i >= len(m.Places) {
			continue
		}
		run := m.Places[i].Runner
		if len(m.Runners) > 1 && run < len(m.Runners) {
			if p := m.Runners[run].Name + "/"; len(member) > len(p) && member[:len(p)] == p {
				member = member[len(p):]
			}
			return run, member, true
		}
		return run, member, true
	}
	return 0, "", false
}

// hex4ok is json.Hex4 with its -1 for "not four hex digits" as
// a bool.
func hex4ok(s []byte) (rune, bool) {
	r := json.Hex4(s)
	return r, r >= 0
}
