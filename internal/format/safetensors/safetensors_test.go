package safetensors

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"math/rand"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/depthspace/depthspace/internal/format"
)

// refSafetensors is the reference writer of the layout, as the format's
// documentation states it: an 8-byte little-endian length, a JSON header,
// the data back to back.
func refSafetensors(names, dtypes []string, shapes [][]int, data [][]byte, meta map[string]string) []byte {
	h := map[string]any{}
	if meta != nil {
		h["__metadata__"] = meta
	}
	off := 0
	for i, n := range names {
		h[n] = map[string]any{"dtype": dtypes[i], "shape": shapes[i], "data_offsets": []int{off, off + len(data[i])}}
		off += len(data[i])
	}
	j, _ := json.Marshal(h)
	var b bytes.Buffer
	binary.Write(&b, binary.LittleEndian, uint64(len(j)))
	b.Write(j)
	for _, d := range data {
		b.Write(d)
	}
	return b.Bytes()
}

// refRead is the reference reader: the header as a map, each tensor sliced
// at its offsets.
func refRead(t *testing.T, b []byte) (map[string]map[string]any, []byte) {
	t.Helper()
	n := binary.LittleEndian.Uint64(b)
	var h map[string]json.RawMessage
	if err := json.Unmarshal(b[8:8+n], &h); err != nil {
		t.Fatal(err)
	}
	out := map[string]map[string]any{}
	for k, v := range h {
		var m map[string]any
		json.Unmarshal(v, &m)
		out[k] = m
	}
	return out, b[8+n:]
}

var stNames = []string{"BOOL", "U8", "I8", "U16", "I16", "U32", "I32", "U64", "I64", "F16", "BF16", "F32", "F64", "C64", "F8_E4M3", "F8_E5M2", "F8_E8M0"}

func TestSafetensorsBothWays(t *testing.T) {
	rng := rand.New(rand.NewSource(16))
	for round := 0; round < 50; round++ {
		var names, dtypes []string
		var shapes [][]int
		var data [][]byte
		for i := 0; i < 1+rng.Intn(5); i++ {
			dt := stNames[rng.Intn(len(stNames))]
			shape := make([]int, rng.Intn(4))
			elems := 1
			for j := range shape {
				shape[j] = rng.Intn(4)
				elems *= shape[j]
			}
			b := make([]byte, elems*safetensorsTypes()[dt].Size)
			rng.Read(b)
			names = append(names, "layer."+string(rune('a'+i))+".weight")
			dtypes = append(dtypes, dt)
			shapes = append(shapes, shape)
			data = append(data, b)
		}
		meta := map[string]string{"format": "pt", "note": "ünïcode \"quoted\""}
		file := refSafetensors(names, dtypes, shapes, data, meta)
		st, err := ReadSafetensors(file)
		if err != nil {
			t.Fatalf("round %d: %v", round, err)
		}
		if len(st.Members) != len(names) {
			t.Fatalf("round %d: %d members", round, len(st.Members))
		}
		specs := make([]format.MemberSpec, len(st.Members))
		for i, m := range st.Members {
			if m.Name != names[i] || format.ShapeString(m.Shape) != format.ShapeString(shapes[i]) || !bytes.Equal(m.Data, data[i]) {
				t.Fatalf("round %d member %d: %q %v", round, i, m.Name, m.Shape)
			}
			if n, _ := SafetensorsName(m.DType); n != dtypes[i] {
				t.Fatalf("round %d member %d: dtype %s read as %s", round, i, dtypes[i], n)
			}
			specs[i] = format.MemberSpec{Name: m.Name, Header: format.Header{DType: m.DType, Shape: m.Shape}}
		}
		// Our writer, read back by the reference reader.
		var out bytes.Buffer
		w, err := NewSafetensorsWriter(&out, specs, st.Metadata)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range st.Members {
			mw, err := w.Member(m.Name, format.Header{DType: m.DType, Shape: m.Shape})
			if err != nil {
				t.Fatal(err)
			}
			mw.Write(m.Data)
		}
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
		h, body := refRead(t, out.Bytes())
		if hl := binary.LittleEndian.Uint64(out.Bytes()); (8+hl)%8 != 0 {
			t.Fatalf("data not 8-byte aligned: header %d", hl)
		}
		for i, n := range names {
			e := h[n]
			offs := e["data_offsets"].([]any)
			a, b := int(offs[0].(float64)), int(offs[1].(float64))
			if e["dtype"] != dtypes[i] || !bytes.Equal(body[a:b], data[i]) {
				t.Fatalf("round %d: %q written as %v", round, n, e)
			}
		}
		md := h["__metadata__"]
		if md["format"] != "pt" || md["note"] != meta["note"] {
			t.Fatalf("metadata %v", md)
		}
		if again, err := ReadSafetensors(out.Bytes()); err != nil || len(again.Metadata) != 2 {
			t.Fatalf("our own file: %v", err)
		}
	}
}

// stFile builds a file from a raw header text and data.
func stFile(header string, data []byte) []byte {
	b := make([]byte, 8, 8+len(header)+len(data))
	binary.LittleEndian.PutUint64(b, uint64(len(header)))
	return append(append(b, header...), data...)
}

func TestSafetensorsHostile(t *testing.T) {
	huge := make([]byte, 16)
	binary.LittleEndian.PutUint64(huge, 1<<40)
	past := make([]byte, 16)
	binary.LittleEndian.PutUint64(past, 100)
	for _, c := range []struct {
		file []byte
		want string
	}{
		{huge, "header length 1099511627776 is absurd"},
		{past, "header length 100 runs past the end of the 16-byte file"},
		{[]byte{1, 2, 3}, "has no 8-byte header length"},
		{stFile(`[1,2]`, nil), "header: is not a JSON object"},
		{stFile(`{"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},"b":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}}`, make([]byte, 8)), "hold 4 bytes|overlap"},
		{stFile(`{"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]},"b":{"dtype":"F32","shape":[1],"data_offsets":[2,6]}}`, make([]byte, 8)), `"b": data_offsets [2, 6] overlap`},
		{stFile(`{"a":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}}`, make([]byte, 8)), "leave a gap after byte 0"},
		{stFile(`{"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}}`, make([]byte, 4)), "run past the end of the 4 data bytes"},
		{stFile(`{"a":{"dtype":"F32","shape":[3],"data_offsets":[0,8]}}`, make([]byte, 8)), "hold 8 bytes but shape [3] of F32 needs 12"},
		{stFile(`{"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]}}`, make([]byte, 8)), "4 bytes after the last tensor's data"},
		{stFile(`{"a":{"dtype":"F4","shape":[2],"data_offsets":[0,1]}}`, make([]byte, 1)), "dtype F4 packs 4-bit elements"},
		{stFile(`{"a":{"dtype":"Q8","shape":[1],"data_offsets":[0,1]}}`, make([]byte, 1)), `unknown dtype "Q8"`},
		{stFile(`{"a":{"dtype":"U8","shape":[-1],"data_offsets":[0,1]}}`, make([]byte, 1)), "shape entry -1 is not a size"},
		{stFile(`{"a":{"dtype":"U8","shape":[4294967296,4294967296],"data_offsets":[0,1]}}`, make([]byte, 1)), "shape overflows"},
		{stFile(`{"a":{"dtype":"U8","shape":[1],"data_offsets":[1,0]}}`, make([]byte, 1)), "is not an offset at or after begin 1"},
		{stFile(`{"__metadata__":{"k":1}}`, nil), `__metadata__ "k" is not a string`},
		{stFile(`{"a":{"dtype":"U8","shape":[0],"data_offsets":[0,0]}} x`, nil), "2 bytes after the JSON object"},
	} {
		_, err := ReadSafetensors(c.file)
		if err == nil {
			t.Errorf("%q: accepted", c.want)
			continue
		}
		ok := false
		for _, w := range strings.Split(c.want, "|") {
			ok = ok || strings.Contains(err.Error(), w)
		}
		if !ok {
			t.Errorf("got %q, want %q", err, c.want)
		}
	}
	// A header that repeats a name (the JSON would keep the last one).
	if _, err := ReadSafetensors(stFile(`{"a":{"dtype":"U8","shape":[1],"data_offsets":[0,1]},"a":{"dtype":"U8","shape":[1],"data_offsets":[1,2]}}`, make([]byte, 2))); err == nil || !strings.Contains(err.Error(), "appears twice") {
		t.Errorf("duplicate name: %v", err)
	}
	// Big-endian data has no safetensors type.
	be, _ := format.ParseDType(">i4")
	if _, err := SafetensorsName(be); err == nil {
		t.Error(">i4 accepted")
	}
}

func FuzzSafetensors(f *testing.F) {
	f.Add(stFile(`{"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},"__metadata__":{"x":"y"}}`, make([]byte, 8)))
	f.Add(stFile(`{"a":{"dtype":"F8_E4M3","shape":[2,2],"data_offsets":[0,4]}}`, make([]byte, 4)))
	f.Add([]byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, '{'})
	f.Fuzz(func(t *testing.T, b []byte) {
		st, err := ReadSafetensors(b)
		if err != nil {
			return
		}
		total := 0
		for _, m := range st.Members {
			h := format.Header{DType: m.DType, Shape: m.Shape}
			if h.DataBytes() != int64(len(m.Data)) {
				t.Fatalf("%q: %d data bytes for %v", m.Name, len(m.Data), m.Shape)
			}
			total += len(m.Data)
		}
		n := binary.LittleEndian.Uint64(b)
		if uint64(total) != uint64(len(b))-8-n {
			t.Fatalf("members hold %d of %d data bytes", total, uint64(len(b))-8-n)
		}
	})
}

// A name that is not UTF-8 is refused, shown as its bytes, where
// encoding/json would have read it as U+FFFD (a tensor renamed without a
// word); so is a lone surrogate escape. U+FFFD itself is a name like any.
func TestSafetensorsNameNotUTF8(t *testing.T) {
	entry := `{"dtype":"U8","shape":[1],"data_offsets":[0,1]}`
	for _, c := range []struct {
		header, want string
	}{
		{"{\"a\xffb\":" + entry + "}", `header: tensor name "a\xffb" is not UTF-8`},
		{`{"ok":` + entry + ", \"\xc3\":" + `{"dtype":"U8","shape":[0],"data_offsets":[1,1]}}`, `header: tensor name "\xc3" is not UTF-8`},
		{"{\"__metadata__\":{\"k\x80\":\"v\"},\"a\":" + entry + "}", `header: __metadata__ key "k\x80" is not UTF-8`},
		{"{\"__metadata__\":{\"k\":\"\xfe\"},\"a\":" + entry + "}", `header: __metadata__ "k": value "\xfe" is not UTF-8`},
		{"{\"a\":{\"dtype\":\"U8\xff\",\"shape\":[1],\"data_offsets\":[0,1]}}", `unknown dtype`},
		{"{\"a\":{\"dtype\":\"U8\",\"shape\":[1],\"data_offsets\":[0,1],\"x\xff\":1}}", `header: is not UTF-8 (byte 54)`},
		{`{"a\ud800":` + entry + `}`, `tensor name a\ud800 holds a lone UTF-16 surrogate escape`},
	} {
		_, err := ReadSafetensors(stFile(c.header, make([]byte, 1)))
		if err == nil {
			t.Errorf("%q: accepted", c.header)
			continue
		}
		ok := false
		for _, w := range strings.Split(c.want, "|") {
			ok = ok || strings.Contains(err.Error(), w)
		}
		if !ok {
			t.Errorf("%q: got %q, want %q", c.header, err, c.want)
		}
	}
	for _, name := range []string{"\ufffd", `\ufffd`, `\uFFFD`, "é", `\u00e9`, `\ud83d\ude00`} {
		st, err := ReadSafetensors(stFile(`{"`+name+`":`+entry+`}`, make([]byte, 1)))
		if err != nil {
			t.Errorf("name %s: %v", name, err)
		} else if !utf8.ValidString(st.Members[0].Name) {
			t.Errorf("name %s read as %q", name, st.Members[0].Name)
		}
	}
	// Written: a name that is not UTF-8 (an npz member's can be) is refused.
	u8, _ := format.ParseDType("|u1")
	if _, err := SafetensorsPreamble([]format.MemberSpec{{Name: "x\xff", Header: format.Header{DType: u8, Shape: []int{1}}}}, nil); err == nil || !strings.Contains(err.Error(), `"x\xff": the name is not UTF-8`) {
		t.Errorf("writing a name that is not UTF-8: %v", err)
	}
}
