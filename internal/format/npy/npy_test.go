package npy

import (
	"bytes"
	"encoding/binary"
	"reflect"
	"strings"
	"testing"

	"github.com/depthspace/depthspace/internal/format"
	"github.com/sbinet/npyio/npy"
)

func TestNpyRoundTrip(t *testing.T) {
	for _, descr := range []string{"<f4", ">i2", "|u1", "|b1", "<c16", "|S7", "<U3", ">U2", "|V2", "<V2", "<f2", ">f8"} {
		for _, shape := range [][]int{{}, {0}, {3}, {1, 8, 2, 3}, {2, 0, 5}} {
			for _, fortran := range []bool{false, true} {
				dt, err := format.ParseDescr(descr)
				if err != nil {
					t.Fatal(err)
				}
				h := format.Header{DType: dt, Shape: shape, Fortran: fortran}
				pre := EncodeNpy(h)
				if len(pre)%64 != 0 {
					t.Errorf("%s %v: preamble of %d bytes is not 64-aligned", descr, shape, len(pre))
				}
				got, err := ParseNpy(pre)
				if err != nil {
					t.Fatalf("%s %v: %v", descr, shape, err)
				}
				if got.DType.Descr() != descr || format.ShapeString(got.Shape) != format.ShapeString(shape) || got.Fortran != fortran || got.DataOffset != int64(len(pre)) {
					t.Errorf("%s %v %v: read back %+v", descr, shape, fortran, got)
				}
				viaReader, err := ReadNpy(bytes.NewReader(pre))
				if err != nil || viaReader.DataOffset != got.DataOffset {
					t.Errorf("ReadNpy: %v %+v", err, viaReader)
				}
			}
		}
	}
}

// Our own files put the data of a tensor of 1 MiB or more on a page
// boundary; smaller ones keep numpy's 64-byte layout, byte for byte.
func TestEncodeNpyFile(t *testing.T) {
	f4, _ := format.ParseDescr("<f4")
	for _, c := range []struct {
		shape []int
		want  int // preamble length; 0: EncodeNpy's
	}{
		{[]int{1, 8, 2, 3}, 0},
		{[]int{255, 1024}, 0},    // just under 1 MiB
		{[]int{256, 1024}, 4096}, // 1 MiB
		{[]int{4, 64, 1024, 1024}, 4096},
		{append(make([]int, 1000), 1<<18), 4096}, // rank 1001: a 3 KiB header still fits
	} {
		for i := range c.shape {
			c.shape[i] = max(c.shape[i], 1)
		}
		h := format.Header{DType: f4, Shape: c.shape}
		pre := EncodeNpyFile(h)
		want := c.want
		if want == 0 {
			want = len(EncodeNpy(h))
			if !bytes.Equal(pre, EncodeNpy(h)) {
				t.Errorf("%v: small tensor preamble differs from numpy's layout", len(c.shape))
			}
		}
		if len(pre) != want {
			t.Errorf("rank %d: preamble of %d bytes, want %d", len(c.shape), len(pre), want)
		}
		got, err := ParseNpy(pre)
		if err != nil || got.DataOffset != int64(len(pre)) || format.ShapeString(got.Shape) != format.ShapeString(c.shape) {
			t.Errorf("rank %d: read back %+v, %v", len(c.shape), got, err)
		}
	}
}

// The header text numpy writes, exactly (numpy 1.x and 2.x agree).
func TestNpyHeaderText(t *testing.T) {
	dt, _ := format.ParseDescr("<u4")
	pre := EncodeNpy(format.Header{DType: dt, Shape: []int{1, 8, 2, 3}})
	want := "{'descr': '<u4', 'fortran_order': False, 'shape': (1, 8, 2, 3), }"
	if !strings.HasPrefix(string(pre[10:]), want) || pre[len(pre)-1] != '\n' || string(pre[:8]) != "\x93NUMPY\x01\x00" {
		t.Fatalf("got %q", pre)
	}
	pre = EncodeNpy(format.Header{DType: dt, Shape: []int{5}})
	if !strings.Contains(string(pre), "'shape': (5,), }") {
		t.Fatalf("1-D shape: %q", pre)
	}
}

// Files written by an independent implementation (sbinet/npyio) parse, and
// npyio reads what we write.
func TestNpyioInterop(t *testing.T) {
	var buf bytes.Buffer
	data := []float32{1, 2, 3, 4, 5, 6}
	if err := npy.Write(&buf, data); err != nil {
		t.Fatal(err)
	}
	n, err := ParseNpy(buf.Bytes())
	if err != nil {
		t.Fatal(err)
	}
	if n.DType.Descr() != "<f4" || format.ShapeString(n.Shape) != "6" || int64(buf.Len())-n.DataOffset != 24 {
		t.Fatalf("npyio file read as %+v", n)
	}
	if binary.LittleEndian.Uint32(buf.Bytes()[n.DataOffset+4:]) != 0x40000000 {
		t.Fatal("data offset points at the wrong bytes")
	}

	dt, _ := format.ParseDescr("<i8")
	var ours bytes.Buffer
	ours.Write(EncodeNpy(format.Header{DType: dt, Shape: []int{2, 3}}))
	for i := int64(0); i < 6; i++ {
		binary.Write(&ours, binary.LittleEndian, i*10-20)
	}
	r, err := npy.NewReader(bytes.NewReader(ours.Bytes()))
	if err != nil {
		t.Fatal(err)
	}
	if r.Header.Descr.Type != "<i8" || len(r.Header.Descr.Shape) != 2 || r.Header.Descr.Shape[1] != 3 {
		t.Fatalf("npyio read our header as %+v", r.Header)
	}
	var got []int64
	if err := r.Read(&got); err != nil {
		t.Fatal(err)
	}
	if len(got) != 6 || got[0] != -20 || got[5] != 30 {
		t.Fatalf("npyio read %v", got)
	}
}

func npyWith(major byte, header string) []byte {
	b := []byte(NpyMagic)
	b = append(b, major, 0)
	if major == 1 {
		b = binary.LittleEndian.AppendUint16(b, uint16(len(header)))
	} else {
		b = binary.LittleEndian.AppendUint32(b, uint32(len(header)))
	}
	return append(b, header...)
}

func TestNpyVersions(t *testing.T) {
	h := "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }       \n"
	for _, v := range []byte{1, 2, 3} {
		n, err := ParseNpy(npyWith(v, h))
		if err != nil || n.Major != int(v) || format.ShapeString(n.Shape) != "2,3" {
			t.Errorf("version %d: %+v %v", v, n, err)
		}
	}
	// Python 2 era numpy wrote long integers.
	n, err := ParseNpy(npyWith(1, "{'descr': '<f8', 'fortran_order': True, 'shape': (2L, 3L), }\n"))
	if err != nil || !n.Fortran || format.ShapeString(n.Shape) != "2,3" {
		t.Errorf("py2 header: %+v %v", n, err)
	}
}

func TestNpyMalformed(t *testing.T) {
	cases := map[string]struct {
		file []byte
		want string
	}{
		"not npy":      {[]byte("PK\x03\x04 zip"), "not an npy file"},
		"short":        {[]byte("\x93NUM"), "truncated npy header"},
		"version 4":    {npyWith(1, "")[:6:6], "truncated"},
		"bad version":  {append([]byte(NpyMagic), 9, 0, 0, 0), "unsupported npy version 9.0"},
		"cut header":   {npyWith(1, "{'descr': '<f4', 'fortran_order': False, 'shape': (2,), }\n")[:30], "truncated npy header"},
		"object":       {npyWith(1, "{'descr': '|O', 'fortran_order': False, 'shape': (2,), }\n"), "object arrays"},
		"structured":   {npyWith(1, "{'descr': [('a', '<f4')], 'fortran_order': False, 'shape': (2,), }\n"), "structured dtypes"},
		"negative":     {npyWith(1, "{'descr': '<f4', 'fortran_order': False, 'shape': (-2,), }\n"), "negative dimension"},
		"huge":         {npyWith(1, "{'descr': '<f4', 'fortran_order': False, 'shape': (99999999999, 99999999999), }\n"), "too large"},
		"huge dim":     {npyWith(1, "{'descr': '<f4', 'fortran_order': False, 'shape': (99999999999999999999,), }\n"), "too large"},
		"missing key":  {npyWith(1, "{'descr': '<f4', 'shape': (2,), }\n"), "no \"fortran_order\" key"},
		"extra key":    {npyWith(1, "{'descr': '<f4', 'fortran_order': False, 'shape': (2,), 'x': 1}\n"), "unexpected key \"x\""},
		"twice":        {npyWith(1, "{'descr': '<f4', 'descr': '<f4', 'fortran_order': False, 'shape': (2,), }\n"), "appears twice"},
		"bad bool":     {npyWith(1, "{'descr': '<f4', 'fortran_order': 0, 'shape': (2,), }\n"), "True or False"},
		"not tuple":    {npyWith(1, "{'descr': '<f4', 'fortran_order': False, 'shape': (2), }\n"), "not a tuple"},
		"list shape":   {npyWith(1, "{'descr': '<f4', 'fortran_order': False, 'shape': [2], }\n"), "shape must be a tuple"},
		"trailing":     {npyWith(1, "{'descr': '<f4', 'fortran_order': False, 'shape': (2,), } junk\n"), "unexpected text"},
		"bad descr":    {npyWith(1, "{'descr': '<f3', 'fortran_order': False, 'shape': (2,), }\n"), "unknown dtype"},
		"non-ascii v1": {npyWith(1, "{'descr': '<f4', 'fortran_order': False, 'shape': (2,), }\xe9\n"), "non-ASCII"},
		"bad utf8 v3":  {npyWith(3, "{'descr': '<f4', 'fortran_order': False, 'shape': (2,), }\xff\n"), "not valid UTF-8"},
		"big header":   {append([]byte(NpyMagic), 2, 0, 0xff, 0xff, 0xff, 0x7f), "larger than"},
		"no brace":     {npyWith(1, "descr\n"), "does not start with '{'"},
	}
	for name, c := range cases {
		_, err := ParseNpy(c.file)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: got %v, want %q", name, err, c.want)
		}
		_, err = ReadNpy(bytes.NewReader(c.file))
		if err == nil {
			t.Errorf("%s: ReadNpy accepted it", name)
		}
	}
}

func TestParseDType(t *testing.T) {
	good := map[string]string{
		"float32": "<f4", "f4": "<f4", "<f4": "<f4", ">i2": ">i2", "uint8": "|u1", "bool": "|b1", "?": "|b1",
		"complex64": "<c8", "S8": "|S8", "a5": "|S5", "U3": "<U3", "V2": "|V2", "bfloat16": "<V2",
		"FLOAT": "<f4", "DOUBLE": "<f8", "FLOAT16": "<f2", "float16": "<f2", "BFLOAT16": "<V2", "INT64": "<i8",
		"int64": "<i8", "DML_TENSOR_DATA_TYPE_UINT32": "<u4", "UINT32": "<u4", "uint32": "<u4", "Uint16": "<u2",
		"dml_tensor_data_type_float16": "<f2", "e": "<f2", "B": "|u1", "b": "|i1", "D": "<c16", "double": "<f8",
		"FLOAT32": "<f4", "float64": "<f8", "=i4": "<i4", "|u1": "|u1", "c16": "<c16",
	}
	for name, want := range good {
		d, err := format.ParseDType(name)
		if err != nil || d.Descr() != want {
			t.Errorf("ParseDType(%q) = %v (%v), want %s", name, d.Descr(), err, want)
		}
	}
	bad := map[string]string{
		"float": "ambiguous", "Float": "ambiguous", "O": "object", "object": "object", "f3": "unknown dtype",
		"i16": "unknown dtype", "string": "no fixed size", "": "unknown dtype", "S0": "unknown dtype", "|i4": "byte order",
		"S99999999999": "too large", "U999999999": "too large", "<": "no type",
	}
	for name, want := range bad {
		if _, err := format.ParseDType(name); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("ParseDType(%q) = %v, want error containing %q", name, err, want)
		}
	}
}

// Every name the table knows round-trips through its descr and its name.
func TestDTypeNamesRoundTrip(t *testing.T) {
	for name := range format.NumpyNames() {
		d, _ := format.ParseDType(name)
		back, err := format.ParseDType(d.Name())
		if err != nil || !back.SameLayout(d) {
			t.Errorf("%s -> %s -> %v (%v)", name, d.Name(), back, err)
		}
		viaDescr, err := format.ParseDescr(d.Descr())
		if err != nil || viaDescr.Size != d.Size || viaDescr.Kind != d.Kind {
			t.Errorf("%s -> %s -> %v (%v)", name, d.Descr(), viaDescr, err)
		}
	}
}

// numpyHeader (the fast path) takes the headers numpy writes, and reads
// every header it takes as parseDict (the strict, general parser) does.
func TestNumpyHeaderAsParseDict(t *testing.T) {
	taken := []string{
		"{'descr': '<f4', 'fortran_order': False, 'shape': (1, 3, 64, 64), }" + strings.Repeat(" ", 23) + "\n",
		"{'descr': '|u1', 'fortran_order': False, 'shape': (1, 1, 4, 4), }          \n",
		"{'descr': '<f8', 'fortran_order': True, 'shape': (2, 3), }\n",
		"{'descr': '>i2', 'fortran_order': False, 'shape': (7,), }\n",
		"{'descr': '<U3', 'fortran_order': False, 'shape': (), }\n",
		"{'descr': '|V7', 'fortran_order': False, 'shape': (0, 5), }\n",
		"{'descr': '<c16', 'fortran_order': False, 'shape': (123456789012345678,), }\n",
		"{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }\x00\x00\n",
	}
	left := []string{ // to parseDict: it reads or refuses them
		"{'descr': '<f4', 'fortran_order': False, 'shape': (2L, 3L), }\n",
		"{'descr': '<f4', 'fortran_order': False, 'shape': (2,3), }\n",
		"{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3,), }\n",
		"{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3, ), }\n",
		"{'descr': '<f4', 'fortran_order': False, 'shape': (3), }\n",
		"{'descr': '<f4', 'fortran_order': False, 'shape': (1,2, 3), }\n",
		"{'descr': '<f4', 'fortran_order': False, 'shape': (-1,), }\n",
		"{'descr': '<f4', 'fortran_order': False, 'shape': (9999999999999999999,), }\n",
		"{'descr': '<f8', 'fortran_order': False, 'shape': (4611686018427387904, 4), }\n",
		"{'descr': '<f4', 'fortran_order': false, 'shape': (2,), }\n",
		"{'descr': '<f4', 'fortran_order': False, 'shape': (2,), } x\n",
		"{'descr': '<f4', 'fortran_order': False, 'shape': (2,)}\n",
		"{'shape': (2,), 'descr': '<f4', 'fortran_order': False, }\n",
		"{\"descr\": \"<f4\", \"fortran_order\": False, \"shape\": (2,), }\n",
		"{'descr': '', 'fortran_order': False, 'shape': (2,), }\n",
		"{'descr': '<q9', 'fortran_order': False, 'shape': (2,), }\n",
		"{'descr': '<f4', 'fortran_order': False, 'shape': (2,), 'x': 1}\n",
		" {'descr': '<f4', 'fortran_order': False, 'shape': (2,), }\n",
	}
	for i, text := range append(taken, left...) {
		h, ok := numpyHeader([]byte(text))
		if ok != (i < len(taken)) {
			t.Errorf("numpyHeader(%q): taken %v", text, ok)
		}
		if !ok {
			continue
		}
		want, err := parseDict(text, 10)
		if err != nil || !reflect.DeepEqual(h, want) {
			t.Errorf("%q: numpyHeader %+v, parseDict %+v, %v", text, h, want, err)
		}
	}
	// Every header EncodeNpy writes is one numpyHeader takes.
	for _, shape := range [][]int{{}, {5}, {1, 3, 64, 64}, {1 << 40, 0}} {
		for _, descr := range []string{"<f4", "|u1", ">c8", "|S12", "<V2"} {
			dt, err := format.ParseDescr(descr)
			if err != nil {
				t.Fatal(err)
			}
			pre := EncodeNpy(format.Header{DType: dt, Shape: shape})
			if _, ok := numpyHeader(pre[10:]); !ok {
				t.Errorf("numpyHeader does not take EncodeNpy's %q", pre)
			}
		}
	}
}

// The preamble of an npy output is shared with the last output of the
// same header: headers that differ only in the dtype, the byte order,
// the order, the shape or its rank, taken in turn, must each get their
// own bytes, and a caller changing its shape after the call must not
// change what the next call gets.
func TestPreambleSharedPerHeader(t *testing.T) {
	pre := format.Lookup(KindNpy).Preamble
	dtype := func(descr string) format.DType {
		d, err := format.ParseDescr(descr)
		if err != nil {
			t.Fatal(err)
		}
		return d
	}
	// Each differs from the one before in one thing only.
	headers := []format.Header{
		{DType: dtype("<f4"), Shape: []int{1, 3, 64, 64}},
		{DType: dtype("<f4"), Shape: []int{1, 3, 64, 64}, Fortran: true},
		{DType: dtype("<f4"), Shape: []int{1, 3, 64, 64}},
		{DType: dtype("<f4"), Shape: []int{1, 3, 64, 32}},
		{DType: dtype("<i4"), Shape: []int{1, 3, 64, 32}},
		{DType: dtype(">i4"), Shape: []int{1, 3, 64, 32}},
		{DType: dtype(">i4"), Shape: []int{3, 64, 32}},
		{DType: dtype("|V2"), Shape: []int{3, 64, 32}},
		{DType: dtype("<f2"), Shape: []int{3, 64, 32}},
		{DType: dtype("<f4"), Shape: []int{1, 64, 64, 64}}, // 1 MiB: padded to a page
		{DType: dtype("|u1"), Shape: []int{1, 64, 64, 64}}, // 256 KiB: not padded
	}
	for round := range 3 {
		for i, h := range headers {
			for range 2 { // once made, once shared
				got, err := pre(h, "")
				if err != nil {
					t.Fatal(err)
				}
				if want := EncodeNpyFile(h); !bytes.Equal(got, want) {
					t.Fatalf("round %d, header %d (%s %v fortran=%v): preamble %q, want %q", round, i, h.DType.Descr(), h.Shape, h.Fortran, got, want)
				}
			}
		}
	}
	shape := []int{2, 4, 8, 8}
	h := format.Header{DType: dtype("<f4"), Shape: shape}
	first, _ := pre(h, "")
	shape[3] = 16
	got, _ := pre(h, "")
	if want := EncodeNpyFile(h); !bytes.Equal(got, want) || bytes.Equal(got, first) {
		t.Fatalf("after the caller's shape changed: preamble %q, want %q", got, want)
	}
}

// ParseNpy reads a header that is the last one's again from what it
// read then: headers that differ in one thing, taken in turn and each
// three times, read as the strict parser reads them; a shape known again is
// shared, so no caller can grow it into another's.
func TestParseNpySameHeaderAgain(t *testing.T) {
	texts := []string{
		"{'descr': '<f4', 'fortran_order': False, 'shape': (1, 3, 64, 64), }",
		"{'descr': '<f4', 'fortran_order': True, 'shape': (1, 3, 64, 64), }",
		"{'descr': '<f4', 'fortran_order': True, 'shape': (1, 3, 64, 32), }",
		"{'descr': '<i4', 'fortran_order': True, 'shape': (1, 3, 64, 32), }",
		"{'descr': '<i4', 'fortran_order': True, 'shape': (3, 64, 32), }",
		"{'descr': '<i4', 'fortran_order': True, 'shape': (3, 64, 32, 2, 2), }",
		"{'descr': '<i4', 'fortran_order': True, 'shape': (3,), }",
		"{'descr': '<i4', 'fortran_order': True, 'shape': (), }",
		"{'descr': '|V2', 'fortran_order': True, 'shape': (), }",
		"{'descr': '|V2', 'fortran_order': False, 'shape': (2, 2), }",
	}
	for round := range 2 {
		for _, text := range texts {
			for again := range 3 { // read, then known twice
				file := npyWith(1, text+strings.Repeat(" ", 63-(len(text)+10)%64)+"\n")
				got, err := ParseNpy(file)
				if err != nil {
					t.Fatal(err)
				}
				want, err := parseDict(text, 10)
				if err != nil {
					t.Fatal(err)
				}
				if !reflect.DeepEqual(got.Header, want) {
					t.Fatalf("round %d, %s: read %+v, want %+v", round, text, got.Header, want)
				}
				if again > 0 && cap(got.Shape) != len(got.Shape) {
					t.Fatalf("%s: a shared shape of length %d has capacity %d: an append would write into the next read's", text, len(got.Shape), cap(got.Shape))
				}
				// Grown by its caller: the next read is not.
				_ = append(got.Shape, 99)
			}
		}
	}
}
