package safetensors

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"sort"
	"strconv"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/depthspace/depthspace/internal/format"
)

// KindSafetensors is a Hugging Face safetensors file: named tensors
// and string metadata.
const KindSafetensors format.Kind = "safetensors"

// safetensors: Hugging Face's format. An 8-byte little-endian header
// length, a JSON header {NAME: {"dtype", "shape", "data_offsets"},
// "__metadata__": {…}} padded with spaces, then the members' bytes back to
// back. Reading checks the header against the file before anything is
// used: offsets that leave gaps, overlap, run past the end or disagree
// with shape × dtype are refused, and every member's data is a slice of
// the (mapped) file: nothing is copied.

// maxSafetensorsHeader is the largest header accepted: the reference
// implementation's own limit (100 MB).
const maxSafetensorsHeader = 100_000_000

// safetensorsTypes() maps the format's dtype names to element types. The
// FP8 types move as opaque bytes (npy: |V1) and keep their name (Tag).
var safetensorsTypes = sync.OnceValue(func() map[string]format.DType {
	return map[string]format.DType{
		"BOOL": format.NumpyNames()["bool"], "U8": format.NumpyNames()["uint8"], "I8": format.NumpyNames()["int8"],
		"U16": format.NumpyNames()["uint16"], "I16": format.NumpyNames()["int16"], "U32": format.NumpyNames()["uint32"],
		"I32": format.NumpyNames()["int32"], "U64": format.NumpyNames()["uint64"], "I64": format.NumpyNames()["int64"],
		"F16": format.NumpyNames()["float16"], "BF16": format.NumpyNames()["bfloat16"], "F32": format.NumpyNames()["float32"],
		"F64": format.NumpyNames()["float64"], "C64": format.NumpyNames()["complex64"],
		"F8_E4M3": {Kind: 'V', Size: 1, Order: '|', Tag: "F8_E4M3"},
		"F8_E5M2": {Kind: 'V', Size: 1, Order: '|', Tag: "F8_E5M2"},
		"F8_E8M0": {Kind: 'V', Size: 1, Order: '|', Tag: "F8_E8M0"},
	}
})

// subByteTypes() are refused by name: their elements are not whole bytes.
var subByteTypes = sync.OnceValue(func() map[string]string {
	return map[string]string{"F4": "4", "F6_E2M3": "6", "F6_E3M2": "6"}
})

// SafetensorsName is the safetensors dtype of d, or an error saying why
// the format cannot hold it.
func SafetensorsName(d format.DType) (string, error) {
	if d.Tag != "" {
		return d.Tag, nil
	}
	if d.Order == '>' {
		return "", fmt.Errorf("dtype %s is big-endian; safetensors holds little-endian data only (depthspace moves bytes, it does not swap them)", d.Name())
	}
	for name, t := range safetensorsTypes() {
		if t.Tag == "" && t.Kind == d.Kind && t.Size == d.Size && t.BFloat16 == d.BFloat16 {
			return name, nil
		}
	}
	return "", fmt.Errorf("dtype %s has no safetensors type (BOOL, U8…U64, I8…I64, F16, BF16, F32, F64, C64, F8_*)", d.Name())
}

// SafetensorsMember is one tensor of a safetensors file.
type SafetensorsMember struct {
	Name  string
	DType format.DType
	Shape []int
	Data  []byte // a slice of the file
	// Offset is where Data starts in the file.
	Offset int64
}

// Safetensors is a whole file: its members in data order, and its
// __metadata__ (string to string) in the order the header gives it.
type Safetensors struct {
	Members  []SafetensorsMember
	Metadata [][2]string
}

// SafetensorsError is a malformed safetensors file.
type SafetensorsError struct {
	Member string
	Msg    string
}

func (e *SafetensorsError) Error() string {
	if e.Member == "" {
		return "safetensors: " + e.Msg
	}
	return fmt.Sprintf("safetensors tensor %q: %s", e.Member, e.Msg)
}

// SniffSafetensors reports whether b starts like a safetensors file: a
// header length that fits in the file and a header that opens with '{'.
func SniffSafetensors(b []byte) bool {
	if len(b) < 10 {
		return false
	}
	n := binary.LittleEndian.Uint64(b)
	return n >= 2 && n <= maxSafetensorsHeader && b[8] == '{'
}

// SafetensorsHeaderLen reads the header length of a file of size bytes
// from its first 8 bytes, checked against the file.
func SafetensorsHeaderLen(first8 []byte, size int64) (int64, error) {
	if size < 8 || len(first8) < 8 {
		return 0, &SafetensorsError{Msg: fmt.Sprintf("a file of %d bytes has no 8-byte header length", size)}
	}
	n := binary.LittleEndian.Uint64(first8)
	switch {
	case n > maxSafetensorsHeader:
		return 0, &SafetensorsError{Msg: fmt.Sprintf("header length %d is absurd (at most %d)", n, maxSafetensorsHeader)}
	case n > uint64(size-8):
		return 0, &SafetensorsError{Msg: fmt.Sprintf("header length %d runs past the end of the %d-byte file", n, size)}
	}
	return int64(n), nil
}

// ReadSafetensors reads the file in b (mapped or in memory). Member data
// are slices of b.
func ReadSafetensors(b []byte) (*Safetensors, error) {
	n, err := SafetensorsHeaderLen(b, int64(len(b)))
	if err != nil {
		return nil, err
	}
	st, err := parseSafetensorsHeader(b[8 : 8+n])
	if err != nil {
		return nil, err
	}
	data := b[8+n:]
	if err := st.place(data); err != nil {
		return nil, err
	}
	for i := range st.Members {
		st.Members[i].Offset += 8 + n
	}
	return &st.Safetensors, nil
}

type stEntry struct {
	name   string
	dtype  format.DType
	shape  []int
	begin  int64
	end    int64
	nbytes int64
}

type stHeader struct {
	Safetensors
	entries []stEntry
}

// parseSafetensorsHeader reads the JSON header, keeping the order of its
// keys (encoding/json's tokens: the header is small and bounded).
func parseSafetensorsHeader(h []byte) (*stHeader, error) {
	dec := json.NewDecoder(bytes.NewReader(h))
	dec.UseNumber()
	bad := func(format string, args ...any) error {
		return &SafetensorsError{Msg: "header: " + fmt.Sprintf(format, args...)}
	}
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return nil, bad("is not a JSON object")
	}
	st := &stHeader{}
	seen := map[string]bool{}
	// encoding/json turns bytes that are not UTF-8 into U+FFFD, and so
	// would a lone surrogate escape (\ud800): a tensor renamed without a
	// word. The reference implementation refuses such a header (its JSON
	// is a Rust str), and so does this one, showing the name's bytes.
	valid := utf8.Valid(h)
	for dec.More() {
		from := dec.InputOffset()
		t, err := dec.Token()
		if err != nil {
			return nil, bad("%v", err)
		}
		name := t.(string)
		if err := jsonStringOK(h[from:dec.InputOffset()], name, valid, "tensor name"); err != nil {
			return nil, err
		}
		if seen[name] {
			return nil, &SafetensorsError{Member: name, Msg: "appears twice in the header"}
		}
		seen[name] = true
		if name == "__metadata__" {
			if t, err := dec.Token(); err != nil || t != json.Delim('{') {
				return nil, bad("__metadata__ is not an object")
			}
			for dec.More() {
				from := dec.InputOffset()
				k, err := dec.Token()
				if err != nil {
					return nil, bad("__metadata__: %v", err)
				}
				if err := jsonStringOK(h[from:dec.InputOffset()], k.(string), valid, "__metadata__ key"); err != nil {
					return nil, err
				}
				from = dec.InputOffset()
				v, err := dec.Token()
				vs, ok := v.(string)
				if err != nil || !ok {
					return nil, bad("__metadata__ %q is not a string", k)
				}
				if err := jsonStringOK(h[from:dec.InputOffset()], vs, valid, fmt.Sprintf("__metadata__ %q: value", k)); err != nil {
					return nil, err
				}
				st.Metadata = append(st.Metadata, [2]string{k.(string), vs})
			}
			if _, err := dec.Token(); err != nil {
				return nil, bad("__metadata__: %v", err)
			}
			continue
		}
		var e struct {
			DType       *string       `json:"dtype"`
			Shape       []json.Number `json:"shape"`
			DataOffsets []json.Number `json:"data_offsets"`
		}
		if err := dec.Decode(&e); err != nil {
			return nil, &SafetensorsError{Member: name, Msg: "header entry: " + err.Error()}
		}
		entry, err := checkEntry(name, e.DType, e.Shape, e.DataOffsets)
		if err != nil {
			return nil, err
		}
		st.entries = append(st.entries, entry)
	}
	if _, err := dec.Token(); err != nil {
		return nil, bad("%v", err)
	}
	// The reference writer pads the header with spaces to 8 bytes.
	if rest := bytes.TrimRight(h[dec.InputOffset():], " \t\r\n\x00"); len(rest) != 0 {
		return nil, bad("%d bytes after the JSON object", len(rest))
	}
	if !valid {
		// Elsewhere than in a name or __metadata__ (a dtype).
		for i := 0; i < len(h); {
			r, n := utf8.DecodeRune(h[i:])
			if r == utf8.RuneError && n == 1 {
				return nil, bad("is not UTF-8 (byte %d)", i)
			}
			i += n
		}
	}
	return st, nil
}

// jsonStringOK refuses a string of the header, decoded as s from raw (its
// JSON text, quotes included, maybe after a comma and spaces), that
// encoding/json made up: bytes that are not UTF-8 (checked only when the
// header has some: valid is false) or a lone surrogate escape, each
// become U+FFFD.
func jsonStringOK(raw []byte, s string, valid bool, what string) error {
	if i := bytes.IndexByte(raw, '"'); i >= 0 && len(raw) >= i+2 {
		raw = raw[i+1 : len(raw)-1]
	}
	if !valid && !utf8.Valid(raw) {
		return &SafetensorsError{Msg: fmt.Sprintf("header: %s %q is not UTF-8", what, raw)}
	}
	if n := strings.Count(s, "\uFFFD"); n > 0 {
		lower := strings.ToLower(string(raw))
		if n > strings.Count(lower, "\uFFFD")+strings.Count(lower, `\ufffd`) {
			return &SafetensorsError{Msg: fmt.Sprintf("header: %s %s holds a lone UTF-16 surrogate escape, not a character", what, raw)}
		}
	}
	return nil
}

func checkEntry(name string, dt *string, shape, offsets []json.Number) (stEntry, error) {
	e := stEntry{name: name}
	fail := func(format string, args ...any) (stEntry, error) {
		return stEntry{}, &SafetensorsError{Member: name, Msg: fmt.Sprintf(format, args...)}
	}
	if dt == nil {
		return fail("has no dtype")
	}
	if bits, ok := subByteTypes()[*dt]; ok {
		return fail("dtype %s packs %s-bit elements; depthspace moves whole-byte elements only", *dt, bits)
	}
	d, ok := safetensorsTypes()[*dt]
	if !ok {
		return fail("unknown dtype %q", *dt)
	}
	e.dtype = d
	if shape == nil {
		return fail("has no shape")
	}
	elems := int64(1)
	for _, s := range shape {
		v, err := strconv.ParseInt(s.String(), 10, 64)
		if err != nil || v < 0 {
			return fail("shape entry %s is not a size", s)
		}
		if v == 0 {
			elems = 0
		} else if elems != 0 {
			if elems > math.MaxInt64/v {
				return fail("shape overflows")
			}
			elems *= v
		}
		e.shape = append(e.shape, int(v))
	}
	if elems > math.MaxInt64/int64(d.Size) {
		return fail("shape overflows")
	}
	e.nbytes = elems * int64(d.Size)
	if len(offsets) != 2 {
		return fail("data_offsets must be [begin, end]")
	}
	var err error
	if e.begin, err = strconv.ParseInt(offsets[0].String(), 10, 64); err != nil || e.begin < 0 {
		return fail("data_offsets begin %s is not an offset", offsets[0])
	}
	if e.end, err = strconv.ParseInt(offsets[1].String(), 10, 64); err != nil || e.end < e.begin {
		return fail("data_offsets end %s is not an offset at or after begin %d", offsets[1], e.begin)
	}
	if e.end-e.begin != e.nbytes {
		return fail("data_offsets [%d, %d] hold %d bytes but shape [%s] of %s needs %d", e.begin, e.end, e.end-e.begin, format.ShapeString(e.shape), *dt, e.nbytes)
	}
	return e, nil
}

// place checks that the members tile the data exactly (no gap, no
// overlap, nothing past the end or after the last) and slices them out,
// in data order.
func (st *stHeader) place(data []byte) error {
	sort.SliceStable(st.entries, func(a, b int) bool { return st.entries[a].begin < st.entries[b].begin })
	at := int64(0)
	for _, e := range st.entries {
		switch {
		case e.end > int64(len(data)):
			return &SafetensorsError{Member: e.name, Msg: fmt.Sprintf("data_offsets [%d, %d] run past the end of the %d data bytes", e.begin, e.end, len(data))}
		case e.begin > at:
			return &SafetensorsError{Member: e.name, Msg: fmt.Sprintf("data_offsets [%d, %d] leave a gap after byte %d", e.begin, e.end, at)}
		case e.begin < at:
			return &SafetensorsError{Member: e.name, Msg: fmt.Sprintf("data_offsets [%d, %d] overlap the tensor before it (which ends at %d)", e.begin, e.end, at)}
		}
		at = e.end
		st.Members = append(st.Members, SafetensorsMember{Name: e.name, DType: e.dtype, Shape: e.shape, Data: data[e.begin:e.end:e.end], Offset: e.begin})
	}
	if at != int64(len(data)) {
		return &SafetensorsError{Msg: fmt.Sprintf("%d bytes after the last tensor's data", int64(len(data))-at)}
	}
	return nil
}

// SafetensorsWriter writes a safetensors file member by member: the
// header, with every member's offsets, goes first, so the members are
// declared up front and written in that order.
type SafetensorsWriter struct {
	w       io.Writer
	members []format.MemberSpec
	next    int
	left    int64
}

// NewSafetensorsWriter writes the header for members (in data order) and
// metadata, and returns the writer for their data.
func NewSafetensorsWriter(w io.Writer, members []format.MemberSpec, metadata [][2]string) (*SafetensorsWriter, error) {
	pre, err := SafetensorsPreamble(members, metadata)
	if err != nil {
		return nil, err
	}
	if _, err := w.Write(pre); err != nil {
		return nil, err
	}
	return &SafetensorsWriter{w: w, members: members}, nil
}

// SafetensorsPreamble is what precedes the data of a safetensors file of
// members (in data order) and metadata: the length and the header. Member
// i's data then starts at len(preamble) + the sizes of those before it.
func SafetensorsPreamble(members []format.MemberSpec, metadata [][2]string) ([]byte, error) {
	var h bytes.Buffer
	h.WriteByte('{')
	if len(metadata) > 0 {
		h.WriteString(`"__metadata__":{`)
		for i, kv := range metadata {
			if i > 0 {
				h.WriteByte(',')
			}
			writeJSONString(&h, kv[0])
			h.WriteByte(':')
			writeJSONString(&h, kv[1])
		}
		h.WriteByte('}')
	}
	seen := map[string]bool{}
	off := int64(0)
	for i, m := range members {
		if seen[m.Name] || m.Name == "__metadata__" {
			return nil, fmt.Errorf("safetensors tensor %q written twice", m.Name)
		}
		seen[m.Name] = true
		if !utf8.ValidString(m.Name) {
			// An npz member's name can be any bytes; JSON would write
			// U+FFFD in their place.
			return nil, fmt.Errorf("safetensors tensor %q: the name is not UTF-8, and a safetensors header (JSON) holds UTF-8 names only (name it with --rename-member)", m.Name)
		}
		name, err := SafetensorsName(m.Header.DType)
		if err != nil {
			return nil, fmt.Errorf("safetensors tensor %q: %w", m.Name, err)
		}
		if i > 0 || len(metadata) > 0 {
			h.WriteByte(',')
		}
		writeJSONString(&h, m.Name)
		n := m.Header.DataBytes()
		fmt.Fprintf(&h, `:{"dtype":%q,"shape":[`, name)
		for j, d := range m.Header.Shape {
			if j > 0 {
				h.WriteByte(',')
			}
			h.WriteString(strconv.Itoa(d))
		}
		fmt.Fprintf(&h, `],"data_offsets":[%d,%d]}`, off, off+n)
		off += n
	}
	h.WriteByte('}')
	for h.Len()%8 != 0 {
		h.WriteByte(' ') // as the reference writer: data 8-byte aligned
	}
	var n [8]byte
	binary.LittleEndian.PutUint64(n[:], uint64(h.Len()))
	return append(n[:], h.Bytes()...), nil
}

func writeJSONString(b *bytes.Buffer, s string) {
	q, _ := json.Marshal(s)
	b.Write(q)
}

// Member returns the writer for the next member's data; name and h must be
// those declared.
func (s *SafetensorsWriter) Member(name string, h format.Header) (io.Writer, error) {
	if s.left != 0 {
		return nil, fmt.Errorf("safetensors tensor %q: %d bytes missing", s.members[s.next-1].Name, s.left)
	}
	if s.next >= len(s.members) || s.members[s.next].Name != name {
		return nil, fmt.Errorf("internal error: safetensors tensor %q out of the declared order", name)
	}
	s.left = h.DataBytes()
	s.next++
	return (*stData)(s), nil
}

type stData SafetensorsWriter

func (d *stData) Write(p []byte) (int, error) {
	if int64(len(p)) > d.left {
		return 0, errors.New("internal error: more bytes than the tensor holds")
	}
	n, err := d.w.Write(p)
	d.left -= int64(n)
	return n, err
}

// Close checks that every declared member was written whole.
func (s *SafetensorsWriter) Close() error {
	if s.left != 0 || s.next != len(s.members) {
		return errors.New("internal error: safetensors file left incomplete")
	}
	return nil
}

func init() {
	format.Register(format.Format{Kind: KindSafetensors, InTar: true, Rank: 6, Doc: "Hugging Face safetensors, member by member, metadata kept", Noun: "a safetensors file", Aliases: []string{"st"}, Exts: []string{".safetensors"},
		Container: true, Sniff: SniffSafetensors, SniffOrder: 30,
		Open: openSafetensors, Create: createSafetensors, CreateAt: createSafetensorsAt,
		DTypeName: SafetensorsName})
}

// openSafetensors is safetensors' Open: every tensor in data order, its
// data a slice of the file; Meta is the __metadata__ ([][2]string).
func openSafetensors(b []byte, _ format.OpenOptions) (*format.Archive, error) {
	st, err := ReadSafetensors(b)
	if err != nil {
		return nil, err
	}
	a := &format.Archive{Members: make([]format.Member, len(st.Members))}
	if st.Metadata != nil {
		a.Meta = st.Metadata
	}
	for i, m := range st.Members {
		a.Members[i] = format.Member{Name: m.Name, Header: format.Header{DType: m.DType, Shape: m.Shape}, Data: m.Data, Offset: m.Offset, InFile: true}
	}
	return a, nil
}

// createSafetensors is safetensors' Create: the header for members, with
// the __metadata__ of a safetensors input (meta), then their data.
func createSafetensors(w io.Writer, members []format.MemberSpec, meta any) (format.MemberWriter, error) {
	md, _ := meta.([][2]string)
	return NewSafetensorsWriter(w, members, md)
}

// createSafetensorsAt is safetensors' CreateAt: the header first, every
// member's offsets known from it, the whole file reserved up front.
func createSafetensorsAt(f format.FileOut, members []format.MemberSpec, meta any) (format.PlacedWriter, error) {
	md, _ := meta.([][2]string)
	pre, err := SafetensorsPreamble(members, md)
	if err != nil {
		return nil, err
	}
	at := make([]int64, len(members))
	off := int64(len(pre))
	for i, m := range members {
		at[i] = off
		off += m.Header.DataBytes()
	}
	if err := f.Reserve(off); err != nil {
		return nil, err
	}
	if _, err := f.WriteAt(pre, 0); err != nil {
		return nil, err
	}
	return safetensorsPlaced(at), nil
}

// safetensorsPlaced are the members' data offsets.
type safetensorsPlaced []int64

func (p safetensorsPlaced) Place(i int) (int64, error) { return p[i], nil }
func (safetensorsPlaced) Placed(int) error             { return nil }
func (safetensorsPlaced) Close() error                 { return nil }
